/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authenticated reconnection. An end whose endpoints changed (its address
 * was removed, or "rackctl peer" named a new one for the peer) first
 * splices its own side, then sends RECONNECT from the new endpoints: a
 * zero-length segment of the connection carrying racks' option with the
 * connection id, a counter and a MAC under the connection's key.
 *
 *   mover                                        peer
 *   splice (socket <-> new wire endpoints)
 *   RECONNECT(id, n, mac)  ------------------>   verify MAC, n > last n
 *                                                splice onto the segment's
 *                                                source and destination
 *                          <------------------   RECONNECT_ACK(id, n, mac)
 *   resume                                       resume
 *
 * Nothing changes on the peer before the MAC and the counter check out,
 * so a forger without the key, or a replay of an old reconnection, leaves
 * the connection untouched. Reconnections accepted together are spliced
 * in one nft transaction before any of them is answered.
 */
#ifndef RACKS_RECONNECT_H
#define RACKS_RECONNECT_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "event.h"
#include "option.h"
#include "packet.h"
#include "timer.h"

struct reconnect_stats {
	uint64_t sent, acks_in;
	uint64_t accepted;		/* the peer moved (or we did) */
	uint64_t refused_mac;		/* not under the connection's key */
	uint64_t refused_replay;	/* counter not above the last one */
	uint64_t refused_other;		/* wrong port or family, bad state */
	uint64_t manual;		/* rackctl peer */
};

struct reconnect_state {
	struct conn **accepted;		/* to splice, answer and resume */
	uint32_t *counters;		/* the counter each one answers */
	unsigned naccepted, cap;
	struct timer flush;
	struct reconnect_stats stats;
};

struct rackd;

void reconnect_init(struct rackd *d);
void reconnect_free(struct rackd *d);
/* C's wire endpoints changed: unconfirmed until the peer answers a
 * reconnection sent from now on. */
void reconnect_begin(struct conn *c);
/* Ask C's peer to follow C to its current wire endpoints. */
void reconnect_send(struct rackd *d, struct conn *c);
/* RECONNECT and RECONNECT_ACK go to reconnection (channel.h); 0 or
 * -errno. */
int reconnect_handle_messages(struct rackd *d);
/* C is going away: forget any pending answer for it. */
void reconnect_forget(struct rackd *d, struct conn *c);
/* Subscriber (ARG: the rackd): reconnect_forget() when C closes or goes. */
#define RECONNECT_EVENTS (EVENT_BIT(EVENT_CLOSING) | EVENT_BIT(EVENT_GONE))
void reconnect_event(void *arg, enum event_type type, struct conn *c,
		     const char *reason);
/*
 * "rackctl peer": C's peer is now at PEER (port included only when
 * WITH_PORT; without it every connection to C's peer host moves). Returns
 * the number of connections moved, or -errno.
 */
int reconnect_set_peer(struct rackd *d, struct conn *c,
		       const struct endpoint *peer, bool with_port);

#endif
