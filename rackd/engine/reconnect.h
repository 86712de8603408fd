/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authenticated reconnection. An end whose endpoints changed (its address
 * was removed, or "rackctl peer" named a new one for the peer) first
 * splices its own side, then sends RECONNECT from the new endpoints: a
 * SYN that rackd crafts (rcsyn.h), whose payload is racks' option with
 * the connection id, a counter and a MAC under the connection's key. The
 * peer rackd answers in a SYN-ACK to where the SYN came from, with a
 * random challenge; only the mover's third segment, from there and with
 * a MAC over the challenge, makes the peer follow (return routability,
 * as QUIC validates a path): the key proves who asks, the challenge that
 * it receives at the address it names. Every NAT and stateful firewall on
 * the new path sees a flow open as any other.
 *
 *   mover                                        peer
 *   splice (socket <-> new wire endpoints)
 *   SYN RECONNECT(id, n, mac)  -------------->   verify MAC, n > last n;
 *                                                remember the source and
 *                     <-----------------------   a challenge C
 *                          SYN-ACK RECONNECT_ACK(id, n, mac), C
 *   ACK RECONNECT_CONFIRM(id, n + 1,
 *       mac over C)  ------------------------>   from that source, MAC:
 *                                                splice onto it
 *                     <-----------------------   RECONNECT_ACK(n + 1)
 *   resume                                       resume
 *
 * Nothing changes on the peer before the confirmation checks out, so a
 * forger without the key, a replay of an old reconnection, or a peer
 * naming someone else's address leaves the connection untouched; the
 * mover's socket stays held until the peer has spliced, so nothing it
 * sends can meet a kernel without the connection. Reconnections
 * confirmed together are spliced in one nft transaction before any of
 * them is answered.
 */
#ifndef RACKS_RECONNECT_H
#define RACKS_RECONNECT_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "event.h"
#include "option.h"
#include "packet.h"
#include "ratelimit.h"
#include "rcsyn.h"
#include "timer.h"

struct reconnect_stats {
	uint64_t sent, acks_in;
	uint64_t accepted;		/* the peer moved (or we did) */
	uint64_t refused_mac;		/* not under the connection's key */
	uint64_t refused_replay;	/* counter not above the last one */
	uint64_t refused_other;		/* wrong port or family, bad state */
	uint64_t manual;		/* rackctl peer */
	uint64_t malformed;		/* reconnection SYN without a message */
	uint64_t unknown;		/* reconnection SYN for no connection */
	uint64_t acks_out;		/* third segments (confirmations) sent */
	uint64_t challenges_out;	/* SYN-ACKs with a challenge sent */
	uint64_t refused_address;	/* a SYN from an address no peer has:
					 * ours, loopback, broadcast, ... */
	uint64_t refused_left;		/* a SYN to the address we moved
					 * away from (kept on lo only) */
	uint64_t refused_unproven;	/* a confirmation from elsewhere than
					 * the SYN, or without a SYN */
	uint64_t paced;			/* SYNs held back by reconnect_rate */
	uint64_t refused_collision;	/* onto another connection's tuple */
	uint64_t stalls;		/* connections re-opened alone: their
					 * sockets retransmitted unanswered on
					 * a path that answers */
	uint64_t reset_by_path;		/* our SYNs answered by a reset (a
					 * NAT or firewall in front of the
					 * peer that forgot the flow) */
};

/* How long the peer has to confirm a reconnection from where its SYN
 * came (the SYN-ACK's challenge is kept that long). */
#define RECONNECT_CLAIM_MS 10000

/* A confirmed reconnection, to splice, answer and resume. */
struct reconnect_pending {
	struct conn *c;
	uint32_t counter;		/* the counter the answer carries */
	/* The handshake's own numbers, from its third segment: the answer
	 * goes with them (reconnect.c, reconnect_flush). */
	uint32_t seq, ack;
};

struct reconnect_state {
	struct reconnect_pending *accepted;
	unsigned naccepted, cap;
	struct timer flush;
	struct conn **resumes;		/* followed: to resume together */
	unsigned nresumes, rcap;
	struct timer resume;
	struct ratelimit pace;		/* reconnection SYNs sent */
	struct reconnect_stats stats;
};

/* The first retry of an unanswered reconnection (then doubling, up to
 * retry_interval). */
#define RECONNECT_RETRY_MS 200

struct rackd;

void reconnect_init(struct rackd *d);
/* The configuration changed (reload): its reconnect_rate from now on. */
void reconnect_configure(struct rackd *d);
void reconnect_free(struct rackd *d);
/* C's wire endpoints changed: unconfirmed until the peer answers a
 * reconnection sent from now on. */
void reconnect_begin(struct conn *c);
/* C's path is re-opened (liveness.c): C is unconfirmed until the peer
 * answers a reconnection on its own endpoints, or its segments arrive
 * there (hold.c). */
void reconnect_reopen(struct conn *c);
/* Retransmission timeouts in a row after which a connection whose path
 * still answers is re-opened alone (reconnect_stalled()). */
#define RECONNECT_STALL_RETRANSMITS 3
/* A stall first seen longer ago than this is seen anew. */
#define RECONNECT_STALL_FORGET_MS 60000
/* C's socket retransmits unanswered (RETRANSMITS timeouts in a row)
 * while its path answers: re-open C alone. */
void reconnect_stalled(struct rackd *d, struct conn *c, unsigned retransmits);
/* Ask C's peer to follow C to its current wire endpoints, if C's last
 * attempt is old enough; false when reconnect_rate holds it back (the
 * caller tries again soon). */
bool reconnect_send(struct rackd *d, struct conn *c);
/* RECONNECT, RECONNECT_ACK and RECONNECT_CONFIRM go to reconnection
 * (channel.h); 0 or -errno. */
int reconnect_handle_messages(struct rackd *d);
/* Whether P, a reset arriving for held C, answers our reconnection SYN
 * (it is then ours, not the socket's: counted, said in rackctl list). */
bool reconnect_reset(struct rackd *d, struct conn *c, const struct packet *p);
/* A reconnection SYN or SYN-ACK (rcsyn_carried()) arriving in P: always
 * consumed, whatever it says; returns the verdict (NF_DROP). */
uint32_t reconnect_syn_input(struct rackd *d, const struct packet *p);
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
