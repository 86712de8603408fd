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
#include "keystate.h"
#include "option.h"
#include "packet.h"
#include "timer.h"

#define SETUP_RETRY_MS 250

/* What a managed connection's messages need, for the state file. */
struct setup_saved {
	uint64_t conn_id;
	uint8_t key[EDP_SECRET_LEN];
	struct edp_transcript t;
	uint32_t hb_out, hb_acked, hb_in, rc_base;
	/* How its key was made and with whom (absent from a state file
	 * written before host keys: anonymous, no peer host). */
	enum key_source source;
	bool have_peer_host;
	uint8_t peer_host[32];
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
/* KEY, CONFIRM and DONE go to set-up (channel.h); 0 or -errno. */
int setup_handle_messages(struct rackd *d);
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
