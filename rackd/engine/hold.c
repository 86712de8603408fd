// SPDX-License-Identifier: GPL-2.0-only
#include "hold.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "inject.h"
#include "keystate.h"
#include "liveness.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "rewrite.h"
#include "ruleset.h"
#include "sockdiag.h"
#include "splice.h"

#define TCP_OPT_NOP 1
#define TCP_OPT_TS_LEN 10
/* The window reopened at resumption: the kernel scales it by the peer's
 * shift; the peer's real window arrives with its first ACK anyway. */
#define HOLD_OPEN_WINDOW 65535
/* A resumption whose retransmission is never acknowledged lets go. */
#define HOLD_RESUME_MAX_MS 10000

static uint32_t progress_snd_una(const struct conn *c,
				 const struct sockdiag_progress *pr)
{
	uint32_t snd_una, rcv_nxt;

	conn_seq_progress(c, pr, &snd_una, &rcv_nxt);
	return snd_una;
}

/* snd_una and rcv_nxt from the kernel's counters: they never change
 * while the peer is unreachable, and only they may be acknowledged. */
static void hold_apply_progress(struct conn *c,
				const struct sockdiag_progress *pr)
{
	struct conn_hold *h = c->hold;

	conn_seq_progress(c, pr, &h->snd_una, &h->rcv_nxt);
	h->known = true;
}

/* Read the socket's progress; returns its segments in flight, or -1 if
 * it could not be read. */
static int hold_read_progress(struct conn *c)
{
	struct sockdiag_progress pr;

	if (sockdiag_progress(&c->local, &c->remote, &pr))
		return -1;
	hold_apply_progress(c, &pr);
	return (int)pr.unacked;
}

/* An ACK in the peer's name to the local socket. */
static void hold_ack(struct rackd *d, struct conn *c, uint16_t window)
{
	struct conn_hold *h = c->hold;
	uint8_t ts[12];
	struct inject_segment seg = {
		.src = &c->remote, .dst = &c->local,
		.seq = h->rcv_nxt, .ack = h->snd_una,
		.flags = TCP_FLAG_ACK, .window = window,
	};

	if (h->have_ts) {
		/* TSval = what the socket last saw from the peer: never
		 * older, so PAWS (RFC 7323) accepts it. */
		ts[0] = ts[1] = TCP_OPT_NOP;
		ts[2] = TCP_OPT_TIMESTAMP;
		ts[3] = TCP_OPT_TS_LEN;
		for (int i = 0; i < 4; i++) {
			ts[4 + i] = (uint8_t)(h->peer_tsval >> (24 - 8 * i));
			ts[8 + i] = (uint8_t)(h->own_tsval >> (24 - 8 * i));
		}
		seg.options = ts;
		seg.optlen = sizeof(ts);
	}
	if (inject_send(d->inject, &seg))
		d->edp.send_errors++;
}

/* Into or out of the held sets; the chains consulting them exist only
 * while some connection is held. */
static int held_sets(struct rackd *d, struct conn *const *conns, unsigned n,
		     bool add, char *err, size_t errlen)
{
	unsigned before = d->held;
	unsigned after = add ? before + n : (before >= n ? before - n : 0);
	bool chains = add ? (before == 0 && after > 0)
			  : (before > 0 && after == 0);
	int ret;

	if (n == 0)
		return 0;
	ret = ruleset_held(d->cfg, conns, n, add, chains, d->splice->mapped > 0,
			   d->adopt_rules, err, errlen);
	/* A failed release still releases: the holds are gone either way,
	 * and the chain writers are idempotent. */
	if (ret == 0 || !add)
		d->held = after;
	return ret;
}

/* C held from now on, in memory; the caller puts it in the held sets. */
static void hold_take(struct rackd *d, struct conn *c)
{
	c->hold = xcalloc(1, sizeof(*c->hold));
	c->hold->since = loop_now();
	hold_read_progress(c);
	c->state = CONN_SUSPENDED;
	c->state_since = c->hold->since;
	c->suspensions++;
	d->live->stats.suspensions++;
	event_post(&d->events, EVENT_SUSPEND, c, NULL);
	loop_timer_arm(d->loop, &c->expiry, d->cfg->max_suspend_ms);
}

static void hold_again(struct rackd *d, struct conn *c)
{
	c->hold->resuming = false;
	c->state = CONN_SUSPENDED;
	c->state_since = loop_now();
	c->suspensions++;
	d->live->stats.suspensions++;
	event_post(&d->events, EVENT_SUSPEND, c, NULL);
	loop_timer_arm(d->loop, &c->expiry, d->cfg->max_suspend_ms);
}

void hold_begin(struct rackd *d, struct conn **conns, unsigned n)
{
	char err[256];
	unsigned held = 0;

	for (unsigned i = 0; i < n; i++) {
		struct conn *c = conns[i];

		if (c->hold) {
			/* Still resuming when its path went silent again: held
			 * again (it never left the set), as suspended as the
			 * others, and counted so. */
			if (c->hold->resuming)
				hold_again(d, c);
			continue;
		}
		conns[held++] = c;	/* only these join the set */
		hold_take(d, c);
	}
	if (held_sets(d, conns, held, true, err, sizeof(err)))
		log_warnx("holding %u connection(s): %s", held, err);
}

void hold_restore(struct rackd *d, struct conn *c, uint64_t held_ms)
{
	uint64_t now = loop_now();

	if (c->hold)
		return;
	hold_take(d, c);
	c->suspensions--;	/* the same suspension, taken over */
	if (held_ms > now)
		held_ms = now;
	c->hold->since = c->state_since = now - held_ms;
	/* max_suspend counts from the suspension, not from the restart. */
	loop_timer_arm(d->loop, &c->expiry, d->cfg->max_suspend_ms > held_ms ?
		       d->cfg->max_suspend_ms - held_ms : 1);
	d->held++;
}

void hold_free(struct rackd *d, struct conn *c)
{
	char err[256];

	if (!c->hold)
		return;
	if (held_sets(d, &c, 1, false, err, sizeof(err)))
		log_debug("releasing hold: %s", err);
	free(c->hold);
	c->hold = NULL;
}

/* One ICMP unreachable per backoff step of the retransmission timer:
 * RFC 6069 makes the kernel wind it back and retransmit at once. */
static void wind_back(struct rackd *d, struct conn *c,
		      const struct sockdiag_progress *pr)
{
	uint32_t snd_una = progress_snd_una(c, pr);

	log_debug("conn %llu: winding back %u backoff step(s), %u "
		  "retransmission(s), snd_una %u", (unsigned long long)c->id,
		  pr->backoff, pr->retransmits, snd_una);
	for (uint32_t i = 0; i < pr->backoff; i++)
		if (inject_unreachable(d->inject, &c->local, &c->remote,
				       snd_una))
			d->edp.send_errors++;
	d->live->stats.resume_kicks += pr->backoff;
}

void hold_nudge(struct rackd *d, struct conn *c)
{
	struct sockdiag_progress pr;

	if (sockdiag_progress(&c->local, &c->remote, &pr) == 0 &&
	    pr.unacked && pr.backoff)
		wind_back(d, c, &pr);
}

/*
 * Resume a socket we answered. With nothing in flight, an ACK reopening
 * the window makes it send at once. With data in flight, its window stays
 * closed (an open one would put its next timeout on the ordinary path,
 * whose tcp_retries2 clock has run since before the cut), and its timer,
 * backed off during the cut, is wound back instead: one ICMP unreachable
 * per backoff step (RFC 6069), after which the kernel retransmits at
 * once, as a zero-window probe that reaches the peer now.
 */
static bool hold_kick(struct rackd *d, struct conn *c)
{
	struct sockdiag_progress pr;

	if (sockdiag_progress(&c->local, &c->remote, &pr))
		return false;
	hold_apply_progress(c, &pr);
	if (pr.unacked == 0) {
		hold_ack(d, c, HOLD_OPEN_WINDOW);
		return false;
	}
	wind_back(d, c, &pr);
	return true;
}

/* Resumed for good: out of the held sets (one transaction), the holds
 * forgotten. */
static void finish_batch(struct rackd *d, struct conn **conns, unsigned n)
{
	char err[256];

	if (held_sets(d, conns, n, false, err, sizeof(err)))
		log_warnx("releasing %u connection(s): %s", n, err);
	for (unsigned i = 0; i < n; i++) {
		free(conns[i]->hold);
		conns[i]->hold = NULL;
		loop_timer_cancel(d->loop, &conns[i]->expiry);
		event_post(&d->events, EVENT_SAVED, conns[i], NULL);
	}
}

void hold_finish(struct rackd *d, struct conn *c)
{
	if (c->hold)
		finish_batch(d, &c, 1);
}

/*
 * Whether P, from the peer of held C, is a segment its socket would take:
 * an ACK (no SYN, no RST) whose sequence number lies within the socket's
 * largest receive window of rcv_nxt and whose acknowledgement lies within
 * the peer's largest window of snd_una, so beyond snd_nxt it cannot be
 * either. Only such a segment shows that the peer is back: anyone who
 * knows the connection's addresses and ports can send the others, and
 * must guess where its sequence numbers are to make this one, as for any
 * segment that moves a TCP socket (RFC 5961).
 */
static bool hold_acceptable(struct rackd *d, struct conn *c,
			    const struct packet *p)
{
	struct conn_hold *h = c->hold;
	struct conn_negotiated n;
	uint32_t rwin, swin, end;

	if ((p->flags & (TCP_FLAG_SYN | TCP_FLAG_RST)) ||
	    !(p->flags & TCP_FLAG_ACK))
		return false;
	/* Unknown (the socket could not be read when held): asking again
	 * costs, and anyone can send the segment that makes us ask. */
	if (!h->known && rackd_unauth_query(d))
		hold_read_progress(c);
	if (!h->known)
		return false;
	conn_negotiate(c, &n);
	rwin = 0xffffu << (n.wscale ? n.rcv_wscale : 0);
	swin = 0xffffu << (n.wscale ? n.snd_wscale : 0);
	end = p->seq + (uint32_t)p->payload_len +
	      (p->flags & TCP_FLAG_FIN ? 1 : 0);
	return (int64_t)(int32_t)(end - h->rcv_nxt) >= -(int64_t)rwin &&
	       (int64_t)(int32_t)(p->seq - h->rcv_nxt) <= (int64_t)rwin &&
	       (int64_t)(int32_t)(p->ack - h->snd_una) >= -(int64_t)swin &&
	       (int64_t)(int32_t)(p->ack - h->snd_una) <= (int64_t)swin;
}

/*
 * Whether the peer's segments reaching C's socket prove that it follows
 * C: always once confirmed; and when C is unconfirmed only to re-open its
 * path (liveness.c), on the very endpoints the peer knows, they show that
 * every middlebox between still has (or made again) the flow's state,
 * which is all its reconnection was for.
 */
static bool proven_by_traffic(struct conn *c)
{
	struct conn_edp *e = c->edp;

	if (c->confirmed)
		return true;
	if (!e || !e->rc_reopen)
		return false;
	c->confirmed = true;
	e->rc_reopen = false;
	e->rc_pending = 0;
	return true;
}

int hold_inbound(struct rackd *d, struct conn *c, const struct packet *p,
		 uint8_t *out, size_t outsize)
{
	struct conn_hold *h = c->hold;

	if (!hold_acceptable(d, c, p)) {
		/* The socket decides about it as about any segment; nothing
		 * here changes. Its window is closed all the same. */
		d->live->stats.hold_unacceptable++;
		goto closed;
	}
	/* Segments of a peer we have moved away from are no proof that it
	 * follows us: only its acknowledgement of our reconnection is. Until
	 * then the socket reads them, with the window still closed. */
	if (!h->resuming && proven_by_traffic(c)) {
		/* Suspended, yet the peer's segments arrive: resume. */
		d->live->stats.resumed_by_traffic++;
		live_heard_path(d, c);
		if (!c->hold || !c->hold->resuming)
			return 0;
		h = c->hold;
	}
	/* The peer acknowledges our retransmission: our socket's timeout
	 * clock restarts, and its window may open. */
	if (h->resuming && (p->flags & TCP_FLAG_ACK) &&
	    (int32_t)(p->ack - h->snd_una) > 0) {
		hold_finish(d, c);
		return 0;
	}
	/* Until then the window it sees stays closed, or its next timeout
	 * would take the ordinary path and count since before the cut. */
closed:
	if (p->window == 0 || !out || p->len > outsize)
		return 0;
	memcpy(out, p->data, p->len);
	out[p->tcp_off + 14] = out[p->tcp_off + 15] = 0;
	rewrite_fix(out, p->len, p->tcp_off, p);
	d->live->stats.windows_closed++;
	return (int)p->len;
}

void hold_end(struct rackd *d, struct conn **conns, unsigned n)
{
	unsigned held = 0, done = 0;

	for (unsigned i = 0; i < n; i++)
		if (conns[i]->hold && !conns[i]->hold->resuming)
			conns[held++] = conns[i];
	n = held;
	for (unsigned i = 0; i < n; i++) {
		struct conn *c = conns[i];
		struct conn_hold *h = c->hold;

		/*
		 * Reopen the window only for a socket with nothing in flight:
		 * it then sends at once. With data in flight, an open window
		 * would put its next retransmission timeout on the ordinary
		 * path, whose tcp_retries2 clock has run since before the cut
		 * and would kill it; kept closed, the timeout retransmits as a
		 * zero-window probe, which never gives up, and the peer's real
		 * ACK reopens the window and restarts that clock.
		 */
		c->state = CONN_CONNECTED;
		c->state_since = loop_now();
		d->live->stats.resumes++;
		if (h->answered && hold_kick(d, c)) {
			/* Stays in the sets until the peer acknowledges. */
			h->resuming = true;
			loop_timer_arm(d->loop, &c->expiry, HOLD_RESUME_MAX_MS);
		} else {
			conns[done++] = c;	/* done <= i: a slot already read */
		}
		event_post(&d->events, EVENT_RESUME, c, NULL);
	}
	if (done)
		finish_batch(d, conns, done);
}

uint32_t hold_segment(struct rackd *d, struct conn *c, const struct packet *p)
{
	struct conn_hold *h = c->hold;

	/* Resuming: the socket's segments go to the peer again. */
	if (h->resuming)
		return NF_ACCEPT;
	if (p->flags & TCP_FLAG_RST)
		return NF_DROP;
	/* The socket acknowledges data we never answered for: the peer's
	 * segments arrive again, so the path works. Resume now rather than
	 * swallow the very ACK the peer is waiting for. */
	if (h->known && (p->flags & TCP_FLAG_ACK) &&
	    (int32_t)(p->ack - h->rcv_nxt) > 0 && proven_by_traffic(c)) {
		d->live->stats.resumed_by_traffic++;
		live_heard_path(d, c);
		return NF_ACCEPT;
	}
	if (p->opt.has_timestamp) {
		h->have_ts = true;
		h->peer_tsval = p->opt.tsecr;
		h->own_tsval = p->opt.tsval;
	}
	/* The socket's own segment carries its current rcv_nxt. */
	if (h->known && (p->flags & TCP_FLAG_ACK))
		h->rcv_nxt = p->ack;
	if (!h->known) {
		hold_read_progress(c);
		if (!h->known)
			return NF_DROP;
	}
	/* Never beyond what this segment proves unacknowledged: data or a
	 * FIN at seq S means snd_una <= S; a window probe is sent at
	 * snd_una - 1. Acknowledging more would make the kernel free data
	 * the peer never received. */
	uint32_t bound = p->seq + (p->payload_len || (p->flags & TCP_FLAG_FIN)
					   ? 0 : 1);

	if ((int32_t)(h->snd_una - bound) > 0) {
		d->live->stats.hold_clamped++;
		h->snd_una = bound;
	}
	/*
	 * Not before the socket has had one retransmission timeout the
	 * ordinary way, with data in flight: a timeout under a closed window
	 * is not counted as a retransmission, and RFC 6069's reversal, which
	 * resumption relies on, needs one (suspended at once by a lost
	 * carrier, the socket may not have had any yet).
	 */
	if (!h->rto_seen) {
		struct sockdiag_progress pr;

		if (sockdiag_progress(&c->local, &c->remote, &pr) == 0 &&
		    pr.unacked && !pr.retransmits)
			return NF_DROP;
		h->rto_seen = true;
	}
	/* Window 0, acknowledging nothing new: the socket keeps its data
	 * and waits, without counting towards any timeout. */
	hold_ack(d, c, 0);
	h->answered++;
	d->live->stats.hold_answers++;
	return NF_DROP;
}

void hold_abort(struct rackd *d, struct conn *c)
{
	struct conn_hold *h = c->hold;

	/* An exact RST needs the socket's rcv_nxt as it is now. */
	if (h)
		hold_read_progress(c);
	if (h && h->known) {
		struct inject_segment rst = {
			.src = &c->remote, .dst = &c->local,
			.seq = h->rcv_nxt, .flags = TCP_FLAG_RST,
		};

		if (inject_send(d->inject, &rst))
			d->edp.send_errors++;
	}
	d->live->stats.aborted++;
	event_post(&d->events, EVENT_ABORT, c,
		   "suspended longer than max_suspend");
	log_info("conn %llu: suspended for max_suspend: aborted",
		 (unsigned long long)c->id);
	hold_free(d, c);
	c->state = CONN_RELEASED;
	c->state_since = loop_now();
}

const char *hold_phase(const struct conn *c)
{
	if (!c->hold)
		return "none";
	return c->hold->resuming ? "resuming" : "held";
}
