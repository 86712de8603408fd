/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authenticated connection set-up between two rackds, after a handshake
 * in which both ends offered racks' option:
 *
 *   client                                  server
 *   KEY(pk_c)            ------------->
 *                        <-------------     KEY(pk_s), CONFIRM(mac_s)
 *   CONFIRM(mac_c)       ------------->     -> connected
 *   connected <-         <-------------     DONE(mac_d)
 *
 * Every message is a zero-length segment of the connection carrying only
 * racks' option; the peer rackd consumes it, so neither socket ever sees
 * it and the connection's sequence space is untouched. The client
 * retransmits until it hears back (doubling from SETUP_RETRY_MS); either
 * end releases the connection when set-up has not completed within
 * setup_timeout, and the application never notices.
 */
#ifndef RACKS_SETUP_H
#define RACKS_SETUP_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "event.h"
#include "keys.h"
#include "option.h"
#include "packet.h"
#include "timer.h"

#define SETUP_RETRY_MS 250

enum setup_phase {
	SETUP_WAIT_KEY,		/* client: KEY sent; server: waiting for it */
	SETUP_WAIT_CONFIRM,	/* server: keyed, waiting for CONFIRM */
	SETUP_WAIT_DONE,	/* client: CONFIRM sent */
	SETUP_COMPLETE,
};

struct conn_edp {
	struct edp_keypair kp;
	struct edp_transcript t;
	uint8_t key[EDP_SECRET_LEN];
	bool have_peer_key;
	bool keyed;
	enum setup_phase phase;
	uint64_t conn_id;
	char fingerprint[EDP_FINGERPRINT_STRLEN];
	struct timer retry;
	uint32_t retry_ms;
	uint32_t sent, received;
	uint64_t setup_ms;	/* time set-up took */
	uint32_t hb_out;	/* our last heartbeat's counter */
	uint32_t hb_acked;	/* the last one answered */
	uint32_t hb_in;		/* the peer's last heartbeat */
	uint32_t rc_base;	/* hb_out when our endpoints last changed:
				 * an answer to any later counter confirms */
	uint64_t started;	/* monotonic ms */
};

/* What a managed connection's messages need, for the state file. */
struct setup_saved {
	uint64_t conn_id;
	uint8_t key[EDP_SECRET_LEN];
	struct edp_transcript t;
	uint32_t hb_out, hb_acked, hb_in, rc_base;
};

struct rackd;

/* C's keys and counters (C is managed: its set-up is complete). */
void setup_save(const struct conn *c, struct setup_saved *out);
/* A managed connection taken over from a state file: keyed, set up,
 * indexed by its id. The caller moves its outgoing counter ahead of any
 * the last rackd may have sent after writing the file. */
void setup_restore(struct rackd *d, struct conn *c,
		   const struct setup_saved *k);

/* Both ends offered racks: start set-up (the client sends KEY). */
void setup_begin(struct rackd *d, struct conn *c);
/* A set-up message for C (NULL when no connection matches). Returns the
 * verdict for the segment that carried it. */
uint32_t setup_input(struct rackd *d, struct conn *c, const struct packet *p,
		     const struct edp_msg *m);
/* Send M as a zero-length segment of C carrying only racks' option;
 * returns 0 or -errno. */
int setup_send_message(struct rackd *d, const struct conn *c,
		       const struct edp_msg *m);
/* A numbered message (heartbeat, reconnection) of TYPE with COUNTER, its
 * MAC under C's key; returns 0 or -errno. */
int setup_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			uint32_t counter);
/* Whether M's MAC proves that C's peer sent it (counted when not). */
bool setup_numbered_valid(struct rackd *d, struct conn *c,
			  const struct edp_msg *m);
/* Give up on racks for C: state released, peer none, keys wiped. */
void setup_release(struct rackd *d, struct conn *c, const char *why);
/* Wipe and free C's key state (the connection is going away). */
void setup_free(struct rackd *d, struct conn *c);
/* Subscriber (ARG: the rackd): setup_free() when C goes; subscribed
 * last, since the others may still read its keys. */
#define SETUP_EVENTS EVENT_BIT(EVENT_GONE)
void setup_event(void *arg, enum event_type type, struct conn *c,
		 const char *reason);

#endif
