/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Suspension: keeping a socket whose peer cannot be reached alive for
 * days. Its outgoing segments are diverted (an nft set of held flows) and
 * dropped, and each is answered in the peer's name with an ACK that
 * acknowledges exactly what the peer had acknowledged (snd_una, read from
 * the kernel's tcp_info) and closes the window. The kernel then treats its
 * retransmissions as zero-window probes, whose answers keep it from ever
 * timing out; nothing it holds is ever acknowledged falsely, so nothing is
 * lost. On resumption the hold is lifted: the kernel's next retransmission
 * reaches the peer, whose ACK reopens the window (see hold_end()).
 */
#ifndef RACKS_HOLD_H
#define RACKS_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "packet.h"

struct conn_hold {
	uint64_t since;		/* monotonic ms */
	bool known;		/* snd_una / rcv_nxt read from the kernel */
	uint32_t snd_una, rcv_nxt;
	bool have_ts;
	uint32_t peer_tsval;	/* the socket's TSecr: what it last saw */
	uint32_t own_tsval;	/* the socket's own latest TSval */
	uint32_t answered;
	bool rto_seen;		/* the socket counted a retransmission */
	bool resuming;		/* peer reachable, our retransmission not yet
				 * acknowledged: its window is kept closed */
};

struct rackd;

/* "none", "held" (suspended: its segments are answered here), or
 * "resuming" (the peer is back, its window stays closed until it
 * acknowledges our retransmission): for rackctl show. */
const char *hold_phase(const struct conn *c);

/* Suspend connections: hold their sockets (one nft transaction). */
void hold_begin(struct rackd *d, struct conn **conns, unsigned n);
/* C, taken over suspended from a state file, held again (suspended for
 * HELD_MS already); the caller's table transaction holds its set entry. */
void hold_restore(struct rackd *d, struct conn *c, uint64_t held_ms);
/* Resume them: release the hold and reopen the sockets' windows. */
void hold_end(struct rackd *d, struct conn **conns, unsigned n);
/* An outgoing segment of a held connection: answered, then dropped. */
uint32_t hold_segment(struct rackd *d, struct conn *c, const struct packet *p);
/* A segment from the peer of a held or resuming connection; the verdict
 * may replace the packet (DATA, LEN) with a rewritten copy in OUT. */
int hold_inbound(struct rackd *d, struct conn *c, const struct packet *p,
		 uint8_t *out, size_t outsize);
/* An unheld connection whose segments went where the peer no longer was:
 * wind back its backed-off retransmission timer. */
void hold_nudge(struct rackd *d, struct conn *c);
/* Resumption took too long: let go of the window regardless. */
void hold_finish(struct rackd *d, struct conn *c);
/* Give up after max_suspend: reset the local socket, deliberately. */
void hold_abort(struct rackd *d, struct conn *c);
/* Forget the hold of a connection that is going away. */
void hold_free(struct rackd *d, struct conn *c);

#endif
