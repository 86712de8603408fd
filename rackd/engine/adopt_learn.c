// SPDX-License-Identifier: GPL-2.0-only
#include "adopt_learn.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adoptset.h"
#include "inject.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "ruleset.h"
#include "sockdiag.h"
#include "splice.h"

/*
 * Measured on Linux 6.18 (tests/test_adopt.py, which checks every learnt
 * value against the ISNs the other end saw in the handshake):
 *  - an established socket answers an injected SYN, whatever its
 *    sequence number, with a challenge ACK carrying seq = snd_nxt and
 *    ack = rcv_nxt, at most one per 500 ms (TcpExtTCPChallengeACK and
 *    TcpExtTCPSYNChallenge count them; the global challenge ACK limit is
 *    off by default since 6.0);
 *  - tcpi_bytes_sent counts payload only (no SYN, no FIN), retransmissions
 *    included, which tcpi_bytes_retrans counts again: snd_nxt = ISN + 1 +
 *    bytes_sent - bytes_retrans;
 *  - bytes_acked counts the active opener's SYN (conn.c), so with nothing
 *    in flight bytes_acked - (bytes_sent - bytes_retrans) is 1 for the
 *    end that sent the SYN and 0 for the other.
 */

/* Sequence order: A after B (RFC 1982 arithmetic). */
static bool seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

static void rules(struct rackd *d, bool on)
{
	char *buf = NULL, err[256];
	size_t len = 0;
	FILE *f;

	if (d->adopt_rules == on)
		return;
	f = open_memstream(&buf, &len);
	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	ruleset_chains_write(f, d->cfg, d->splice->mapped > 0, d->held > 0, on);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	if (ruleset_run(buf, err, sizeof(err))) {
		d->adopt->stats.set_errors++;
		log_warnx("adoption rules: %s", err);
	} else {
		d->adopt_rules = on;
	}
	free(buf);
}

static struct adopt_state *st(struct rackd *d)
{
	return d->adopt;
}

/* Into the list of flows leaving the sets at the next kick. */
static void leave_set(struct rackd *d, struct adopt_learning *l)
{
	struct adopt_state *a = st(d);

	if (!l->in_set)
		return;
	l->in_set = false;
	if (a->learning)
		a->learning--;
	if (a->nleaving == a->leaving_cap) {
		a->leaving_cap = a->leaving_cap ? 2 * a->leaving_cap : 64;
		a->leaving = xreallocarray(a->leaving, a->leaving_cap,
					   sizeof(*a->leaving));
	}
	a->leaving[a->nleaving].local = l->c->local;
	a->leaving[a->nleaving].remote = l->c->remote;
	a->nleaving++;
	loop_timer_arm(d->loop, &a->kick, 0);
}

static void unqueue(struct rackd *d, struct adopt_learning *l)
{
	struct adopt_state *a = st(d);

	if (!l->queued)
		return;
	l->queued = false;
	for (unsigned i = 0; i < a->npending; i++)
		if (a->pending[i] == l)
			a->pending[i] = NULL;
}

void adopt_learn_stop(struct rackd *d, struct adopt_learning *l)
{
	if (!l->c)
		return;
	loop_timer_cancel(d->loop, &l->round_timer);
	unqueue(d, l);
	leave_set(d, l);
	l->active = false;
}

/* The handshake's options, as tcp_info says they were agreed: what a
 * reconnection's SYN announces again (rcsyn.c), so that middleboxes
 * tracking windows scale them as the peer does. */
static void handshake_options(const struct adopt_learning *l,
			      struct adopt_learnt *out)
{
	bool ws = l->options & SOCKDIAG_OPT_WSCALE;
	bool sack = l->options & SOCKDIAG_OPT_SACK;
	bool ts = l->options & SOCKDIAG_OPT_TIMESTAMPS;

	out->lend = (struct conn_end){
		.seen = true, .has_mss = l->advmss > 0,
		.mss = (uint16_t)l->advmss, .has_wscale = ws,
		.wscale = l->rcv_wscale, .sack_permitted = sack,
		.has_timestamp = ts,
	};
	out->rend = (struct conn_end){
		.seen = true, .has_mss = l->snd_mss > 0,
		.mss = (uint16_t)l->snd_mss, .has_wscale = ws,
		.wscale = l->snd_wscale, .sack_permitted = sack,
		.has_timestamp = ts,
	};
}

static void finish(struct rackd *d, struct adopt_learning *l, bool ok,
		   const char *why)
{
	struct adopt_learnt out = { 0 };

	if (!l->active)
		return;
	if (ok) {
		out.x_snd = l->max_snd;
		out.x_rcv = l->max_rcv;
		/* Unknown: assume active, whose snd_una is the lower. */
		out.active = l->opener != 0;
		out.active_known = l->opener >= 0;
		handshake_options(l, &out);
		st(d)->stats.learnt++;
	}
	adopt_learn_stop(d, l);
	l->done(d, l->c, ok, &out, why);
}

/* A SYN in the peer's name: the socket answers with a challenge ACK. */
static int elicit(struct rackd *d, struct adopt_learning *l)
{
	struct conn *c = l->c;
	struct sockdiag_progress pr;
	struct inject_segment seg = {
		.src = &c->remote, .dst = &c->local,
		.seq = (uint32_t)loop_now() * 2654435761u,
		.flags = TCP_FLAG_SYN, .window = 0,
	};
	int ret = sockdiag_progress(&c->local, &c->remote, &pr);

	if (ret)
		return ret;
	/* Only an established socket: a SYN may reopen a TIME_WAIT one,
	 * and a half-open one (the peer's ADOPT overtook the handshake's
	 * last ACK) is asked again next round. */
	if (pr.state != TCP_STATE_ESTABLISHED)
		return -EAGAIN;
	st(d)->stats.rounds++;
	if (inject_send(d->inject, &seg))
		d->edp.send_errors++;
	return 0;
}

static void round_tick(struct timer *t, void *arg)
{
	struct adopt_learning *l = arg;
	struct rackd *d = rackd_of_conn(l->c);
	int ret;

	(void)t;
	if (l->round >= ADOPT_MAX_ROUNDS) {
		finish(d, l, false, "sequence numbers not settled");
		return;
	}
	l->round++;
	l->round_samples = 0;
	ret = elicit(d, l);
	if (ret && ret != -EAGAIN) {
		finish(d, l, false, ret == -ENOENT ? "no such socket"
						   : "socket unreadable");
		return;
	}
	loop_timer_arm(d->loop, &l->round_timer, ADOPT_ROUND_MS);
}

void adopt_learn_start(struct rackd *d, struct conn *c,
		       struct adopt_learning *l, adopt_learn_done done)
{
	struct adopt_state *a = st(d);

	l->c = c;
	l->done = done;
	l->active = true;
	l->opener = -1;
	timer_init(&l->round_timer, round_tick, l);
	if (a->npending == a->pending_cap) {
		a->pending_cap = a->pending_cap ? 2 * a->pending_cap : 64;
		a->pending = xreallocarray(a->pending, a->pending_cap,
					   sizeof(*a->pending));
	}
	a->pending[a->npending++] = l;
	l->queued = true;
	loop_timer_arm(d->loop, &a->kick, 0);
}

/* V, a lower bound of a stream's X, seen in round ROUND. */
static void sample(uint32_t v, unsigned round, bool *have, uint32_t *max,
		   unsigned *hits, unsigned *last)
{
	if (!*have || seq_after(v, *max)) {
		*have = true;
		*max = v;
		*hits = 1;
		*last = round;
	} else if (v == *max && round != *last) {
		(*hits)++;
		*last = round;
	}
}

uint32_t adopt_learn_segment(struct rackd *d, struct adopt_learning *l,
			     const struct packet *p)
{
	struct sockdiag_progress pr;
	uint64_t fresh;

	if (!l->active || !l->in_set || l->round == 0)
		return NF_ACCEPT;
	if (p->flags & (TCP_FLAG_FIN | TCP_FLAG_RST)) {
		finish(d, l, false, "socket closing");
		return NF_ACCEPT;
	}
	/* A busy flow sends many: a few per round tell as much. A pure
	 * ACK (the challenge ACK among them) is always read. */
	if ((l->round_samples >= ADOPT_ROUND_SAMPLES && p->payload_len) ||
	    !(p->flags & TCP_FLAG_ACK))
		return NF_ACCEPT;
	if (sockdiag_progress(&l->c->local, &l->c->remote, &pr) ||
	    pr.state != TCP_STATE_ESTABLISHED)
		return NF_ACCEPT;
	l->round_samples++;
	st(d)->stats.samples++;
	l->options = pr.options;
	l->advmss = pr.advmss;
	l->snd_mss = pr.snd_mss;
	l->snd_wscale = (uint8_t)pr.snd_wscale;
	l->rcv_wscale = (uint8_t)pr.rcv_wscale;
	fresh = pr.bytes_sent - pr.bytes_retrans;
	sample(p->ack - (uint32_t)pr.bytes_received, l->round, &l->have_rcv,
	       &l->max_rcv, &l->rcv_hits, &l->rcv_round);
	sample(p->seq + (uint32_t)p->payload_len - (uint32_t)fresh, l->round,
	       &l->have_snd, &l->max_snd, &l->snd_hits, &l->snd_round);
	if (pr.unacked == 0) {
		if (pr.bytes_acked == fresh + 1)
			l->opener = 1;
		else if (pr.bytes_acked == fresh)
			l->opener = 0;
	}
	if (l->snd_hits >= 2 && l->rcv_hits >= 2)
		finish(d, l, true, NULL);
	return NF_ACCEPT;
}

/* Flows leaving the sets go in one transaction; ENOENT (expired) or not,
 * they are gone from our books. */
static void flush_leaving(struct rackd *d)
{
	struct adopt_state *a = st(d);
	int ret;

	if (!a->nleaving)
		return;
	ret = d->adoptset ? adoptset_update(d->adoptset, a->leaving,
					    a->nleaving, false) : 0;
	if (ret && ret != -ENOENT)
		log_debug("adopt sets: deleting %u flow(s): %s", a->nleaving,
			  strerror(-ret));
	a->nleaving = 0;
}

/* Up to ADOPT_BATCH queued flows join the sets, then their first round. */
static void start_batch(struct rackd *d)
{
	struct adopt_state *a = st(d);
	struct flowset_flow flows[ADOPT_BATCH];
	struct adopt_learning *batch[ADOPT_BATCH];
	unsigned n = 0, used = 0;
	int ret;

	while (used < a->npending && n < ADOPT_BATCH) {
		struct adopt_learning *l = a->pending[used++];

		if (!l)
			continue;
		flows[n].local = l->c->local;
		flows[n].remote = l->c->remote;
		batch[n++] = l;
	}
	memmove(a->pending, a->pending + used,
		(a->npending - used) * sizeof(*a->pending));
	a->npending -= used;
	if (a->npending)
		loop_timer_arm(d->loop, &a->kick, 1);
	if (!n)
		return;
	rules(d, true);
	ret = d->adoptset ? adoptset_update(d->adoptset, flows, n, true)
			  : -ENOTCONN;
	if (ret) {
		st(d)->stats.set_errors++;
		log_warnx("adopt sets: adding %u flow(s): %s", n,
			  strerror(-ret));
	}
	for (unsigned i = 0; i < n; i++) {
		struct adopt_learning *l = batch[i];

		l->queued = false;
		if (ret) {
			finish(d, l, false, "adopt set not written");
			continue;
		}
		l->in_set = true;
		a->learning++;
		round_tick(&l->round_timer, l);
	}
}

void adopt_learn_kick(struct timer *t, void *arg)
{
	struct rackd *d = arg;

	(void)t;
	flush_leaving(d);
	start_batch(d);
	if (st(d)->learning == 0 && st(d)->npending == 0)
		rules(d, false);
}
