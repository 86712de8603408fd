/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Adoption's first step (adopt.h): learning a live socket's first
 * sequence numbers. The flows being learnt are in the adopt sets, whose
 * rule is in the output chain while there are any; set writes are
 * batched. When learning ends, well or not, the module calls the DONE
 * callback given at start (adopt.c), never adopt.c by name.
 */
#ifndef RACKS_ADOPT_LEARN_H
#define RACKS_ADOPT_LEARN_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "packet.h"
#include "timer.h"

/* Between elicitations: above the kernel's 500 ms rate limit. */
#define ADOPT_ROUND_MS 550
/* Elicitations before learning gives up. */
#define ADOPT_MAX_ROUNDS 8
/* Flows whose learning starts per batch (one set transaction each). */
#define ADOPT_BATCH 256
/* Samples read per round: a busy flow sends many segments. */
#define ADOPT_ROUND_SAMPLES 16

struct rackd;
struct conn;
struct flowset_flow;
struct adopt_learning;
struct adopt_ops;

struct adopt_stats {
	uint64_t started;	/* adoptions begun */
	uint64_t completed;	/* managed in the end */
	uint64_t unanswered;	/* the peer never answered: plain */
	uint64_t failed;	/* not learnt, disagreement, set-up failed */
	uint64_t learnt;	/* sequence numbers learnt from a socket */
	uint64_t rounds;	/* elicitations (SYNs injected) */
	uint64_t samples;	/* segments read while learning */
	uint64_t msgs_out, msgs_in;
	uint64_t disagreed;	/* an ADOPT with other numbers than ours */
	uint64_t refused;	/* an ADOPT for a flow we do not consider */
	uint64_t readopted;	/* a managed connection the peer forgot */
	uint64_t readopt_asked;	/* ADOPTs for a managed connection: the
				 * peer asked with a heartbeat first */
	uint64_t readopt_refused;	/* ... whose peer holds the key after
					 * all, or that is held: nothing done */
	uint64_t unchecked_dropped;	/* an unknown flow's ADOPT whose numbers
					 * the learnt ones proved wrong */
	uint64_t set_errors;	/* adopt set or chain not written */
};

/* Adoption's own state (main.c provides it as d->adopt). */
struct adopt_state {
	struct adopt_stats stats;
	const struct adopt_ops *ops;	/* adopt.h */
	struct timer kick;	/* batched set writes and learning starts */
	struct timer scan;	/* the start-up scan */
	struct adopt_learning **pending;	/* to start learning */
	unsigned npending, pending_cap;
	struct flowset_flow *leaving;	/* to leave the adopt sets */
	unsigned nleaving, leaving_cap;
	unsigned learning;	/* flows in the adopt sets */
};

/* What learning found (valid when the callback's OK is true). */
struct adopt_learnt {
	uint32_t x_snd, x_rcv;	/* first byte sent / received */
	bool active;		/* the socket sent the SYN (or assumed) */
	bool active_known;	/* measured rather than assumed */
	struct conn_end lend, rend;	/* the handshake's options, as the
					 * socket says they were agreed */
};

/* Learning ended for C: OK, or not (WHY: a log line). */
typedef void (*adopt_learn_done)(struct rackd *d, struct conn *c, bool ok,
				 const struct adopt_learnt *l, const char *why);

/* A flow's learning state (hangs off adoption's per-connection state). */
struct adopt_learning {
	struct timer round_timer;
	struct conn *c;
	adopt_learn_done done;
	bool queued, in_set, active;
	unsigned round;		/* elicitations so far */
	unsigned round_samples;
	bool have_snd, have_rcv;
	uint32_t max_snd, max_rcv;
	unsigned snd_hits, rcv_hits;	/* rounds that reached the max */
	unsigned snd_round, rcv_round;	/* the last such round */
	int8_t opener;		/* -1 unknown, 1 active, 0 passive */
	uint32_t options, advmss, snd_mss;	/* last tcp_info read */
	uint8_t snd_wscale, rcv_wscale;
};

/* Start learning C (L zeroed by the caller); DONE is called once. */
void adopt_learn_start(struct rackd *d, struct conn *c,
		       struct adopt_learning *l, adopt_learn_done done);
/* Stop without calling DONE (the connection goes). */
void adopt_learn_stop(struct rackd *d, struct adopt_learning *l);
/* A segment the socket sent; returns the verdict (accept). */
uint32_t adopt_learn_segment(struct rackd *d, struct adopt_learning *l,
			     const struct packet *p);
/* The batch timer (adopt.h's kick): write the sets, start rounds. */
void adopt_learn_kick(struct timer *t, void *arg);

#endif
