/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A racks connection's keys and message counters: what set-up (setup.h)
 * agrees on and every later message is authenticated and numbered with
 * (channel.h). It hangs off struct conn as c->edp, only while (or once)
 * the peer is racks.
 */
#ifndef RACKS_KEYSTATE_H
#define RACKS_KEYSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "keys.h"
#include "timer.h"

enum setup_phase {
	SETUP_WAIT_KEY,		/* client: KEY sent; server: waiting for it
				 * (or for the host handshake) */
	SETUP_WAIT_HS,		/* client: host handshake under way */
	SETUP_WAIT_PAIR,	/* client: waits for the host pair another
				 * connection's handshake is making */
	SETUP_WAIT_CONFIRM,	/* server: keyed, waiting for CONFIRM */
	SETUP_WAIT_DONE,	/* client: CONFIRM sent */
	SETUP_COMPLETE,
};

/* How a connection's key was made (rackctl show: key_source). */
enum key_source {
	KEY_SOURCE_NONE,
	KEY_SOURCE_ANONYMOUS,	/* an unauthenticated X25519 exchange */
	KEY_SOURCE_EXCHANGE,	/* derived from a host pair made just now */
	KEY_SOURCE_DERIVED,	/* derived from a host pair made before */
};

static inline const char *key_source_name(enum key_source s)
{
	static const char *const names[] = {
		[KEY_SOURCE_NONE] = "none", [KEY_SOURCE_ANONYMOUS] = "anonymous",
		[KEY_SOURCE_EXCHANGE] = "exchange",
		[KEY_SOURCE_DERIVED] = "derived",
	};

	return (unsigned)s <= KEY_SOURCE_DERIVED ? names[s] : "none";
}

struct hs_state;

struct conn_edp {
	enum key_source source;
	/* The peer host (its static key) and the host pair the key came
	 * from, unless anonymous. */
	bool have_peer_host;
	uint8_t peer_host[32];
	uint32_t hp_id;
	struct hs_state *hs;	/* only during a host handshake */
	bool anonymous_seen;	/* the peer sent KEY where trust forbids */
	struct edp_keypair kp;
	bool have_own_key;	/* kp made (the server's: at the first KEY) */
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
	/* Reconnections (rackctl show): never silent when unanswered. */
	uint32_t rc_attempts;	/* sent, over the connection's life */
	uint32_t rc_answers;	/* answers that confirmed one */
	uint32_t rc_pending;	/* sent since the last confirmation */
	uint64_t rc_first_ms;	/* monotonic ms of the first of those */
	uint64_t rc_last_ms;	/* and of the last */
	bool rc_warned;		/* logged as unanswered on a working path */
	uint32_t rc_syn_end;	/* our last reconnection SYN's end */
	uint64_t stall_ms;	/* when its socket was first seen stalled
				 * on a path that answered (reconnect.c) */
	bool rc_reopen;		/* unconfirmed only to re-open its path, on
				 * the endpoints the peer knows (liveness.c) */
	/* The hop count the peer's authenticated segments arrive with
	 * (0: none yet), and a reset from elsewhere held back (rstguard.h). */
	uint8_t peer_ttl;
	bool rst_held;
	uint8_t rst_flags;
	uint32_t rst_seq, rst_ack;
	uint64_t rst_ms;
	uint64_t rc_refused_ms;	/* when a reset last answered one */
	uint32_t rc_refusals;
	/* The peer's reconnection SYN came from here (reconnect.c): the
	 * challenge our SYN-ACK took there, until it is confirmed. */
	bool rc_claim;
	struct endpoint rc_claim_local, rc_claim_remote;
	uint8_t rc_challenge[EDP_CHALLENGE_LEN];
	uint64_t rc_claim_ms;
	bool rc_queued;		/* confirmed, in the batch to splice */
	bool rc_resume_queued;	/* followed, in the batch to resume */
	/* An ADOPT said the peer forgot this connection (adopt.c): the
	 * heartbeat that asks whether it still holds the key, and when. */
	uint32_t readopt_hb;
	uint64_t readopt_ms;
	uint64_t started;	/* monotonic ms */
};

#endif
