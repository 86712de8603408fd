// SPDX-License-Identifier: GPL-2.0-only
#include "reconnect.h"

#include <errno.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <sodium.h>
#include <stdlib.h>
#include <time.h>

#include "channel.h"
#include "event.h"
#include "hold.h"
#include "keystate.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "rcsyn.h"
#include "splice.h"

static void reconnect_flush(struct timer *t, void *arg);
static void resume_flush(struct timer *t, void *arg);

void reconnect_init(struct rackd *d)
{
	timer_init(&d->reconnect->flush, reconnect_flush, d);
	timer_init(&d->reconnect->resume, resume_flush, d);
	reconnect_configure(d);
}

void reconnect_configure(struct rackd *d)
{
	uint32_t rate = d->cfg->reconnect_rate;

	/* A fifth of a second's worth at once: the liveness tick's. */
	ratelimit_init(&d->reconnect->pace, rate, rate / 5 ? rate / 5 : 1);
}

void reconnect_free(struct rackd *d)
{
	struct reconnect_state *r = d->reconnect;

	loop_timer_cancel(d->loop, &r->flush);
	loop_timer_cancel(d->loop, &r->resume);
	free(r->accepted);
	free(r->resumes);
	r->accepted = NULL;
	r->resumes = NULL;
	r->naccepted = r->cap = r->nresumes = r->rcap = 0;
}

/* How long C's next reconnection waits after its last one: the liveness
 * tick's retry at first, doubling while unanswered, up to
 * retry_interval. */
static uint64_t retry_delay(const struct rackd *d, const struct conn_edp *e)
{
	uint64_t delay = RECONNECT_RETRY_MS;

	for (uint32_t i = 1; i < e->rc_pending && delay < d->cfg->retry_interval_ms;
	     i++)
		delay *= 2;
	return delay < d->cfg->retry_interval_ms ? delay
						 : d->cfg->retry_interval_ms;
}

/*
 * In a SYN (rcsyn.h): a zero-length segment of a flow no middlebox saw
 * open is dropped by every firewall that admits new flows only by a SYN.
 * Paced: thousands of connections moving at once send no more than
 * reconnect_rate SYNs a second between them (a burst of them overflows
 * the links' and the peer's queues, and the ones lost there only come
 * back later), and an unanswered one waits longer each time.
 */
bool reconnect_send(struct rackd *d, struct conn *c)
{
	struct reconnect_state *r = d->reconnect;
	struct conn_edp *e = c->edp;
	uint64_t now = loop_now();

	if (e->rc_pending && now - e->rc_last_ms < retry_delay(d, e))
		return true;		/* not due yet */
	if (!ratelimit_take(&r->pace, now)) {
		r->stats.paced++;
		return false;
	}
	if (!e->rc_pending++)
		e->rc_first_ms = now;
	e->rc_last_ms = now;
	e->rc_attempts++;
	if (rcsyn_send_syn(d, c, ++e->hb_out) == 0)
		r->stats.sent++;
	return true;
}

void reconnect_begin(struct conn *c)
{
	c->confirmed = false;
	c->edp->rc_reopen = false;
	c->edp->rc_base = c->edp->hb_out;
	c->edp->rc_pending = 0;
	c->edp->rc_warned = false;
}

void reconnect_reopen(struct conn *c)
{
	reconnect_begin(c);
	c->edp->rc_reopen = true;
}

/*
 * A middlebox may forget one flow of a path while the others keep it
 * answering heartbeats (a NAT's per-flow idle timeout, a table evicting
 * entries): the heartbeats C carries in turn are lost among the others'
 * answers, and its own segments are dropped. Its socket shows it, by
 * retransmission timeouts in a row (zero-window probes do not count).
 * C alone reconnects on its own endpoints, which gives the middlebox the
 * flow's state again; its socket is nudged once the peer answers.
 */
void reconnect_stalled(struct rackd *d, struct conn *c, unsigned retransmits)
{
	struct conn_edp *e = c->edp;
	uint64_t now = loop_now();

	if (!e || !e->keyed || !c->confirmed || c->hold || !c->host ||
	    c->host->suspended || c->host->parked || !d->cfg->reopen ||
	    retransmits < RECONNECT_STALL_RETRANSMITS) {
		if (e)
			e->stall_ms = 0;
		return;
	}
	/*
	 * First seen: is it this flow alone? The path is probed; seen still
	 * stalled at a later sweep, with the path heard since, it is. A path
	 * silent as well (the middlebox forgot every flow, or a cut) is
	 * suspended and re-opened whole (liveness.c).
	 */
	if (!e->stall_ms || now - e->stall_ms > RECONNECT_STALL_FORGET_MS) {
		e->stall_ms = now;
		live_probe_now(d, c->host);
		return;
	}
	if (c->host->last_heard <= e->stall_ms)
		return;
	e->stall_ms = 0;
	d->reconnect->stats.stalls++;
	log_info("conn %llu: %u retransmission timeouts in a row while its "
		 "path answers: re-opening it alone (a middlebox that forgot "
		 "this flow?)", (unsigned long long)c->id, retransmits);
	reconnect_reopen(c);
	reconnect_send(d, c);
}

void reconnect_forget(struct rackd *d, struct conn *c)
{
	struct reconnect_state *r = d->reconnect;
	unsigned kept = 0;

	for (unsigned i = 0; i < r->naccepted; i++)
		if (r->accepted[i].c != c)
			r->accepted[kept++] = r->accepted[i];
	r->naccepted = kept;
	kept = 0;
	for (unsigned i = 0; i < r->nresumes; i++)
		if (r->resumes[i] != c)
			r->resumes[kept++] = r->resumes[i];
	r->nresumes = kept;
}

void reconnect_event(void *arg, enum event_type type, struct conn *c,
		     const char *reason)
{
	(void)type;
	(void)reason;
	reconnect_forget(arg, c);
}

static void event_moved(struct rackd *d, struct conn *c)
{
	char l[ENDPOINT_STRLEN], w[ENDPOINT_STRLEN], buf[2 * ENDPOINT_STRLEN + 8];

	c->reconnections++;
	c->reconnected = time(NULL);
	snprintf(buf, sizeof(buf), "%s -> %s",
		 endpoint_format(&c->wire_local, l, sizeof(l)),
		 endpoint_format(&c->wire_remote, w, sizeof(w)));
	conn_log(c, "reconnected");
	event_post(&d->events, EVENT_RECONNECT, c, buf);
}

/* Resume C now that its peer knows where it is. */
/*
 * Resume C now that its peer knows where it is: on the next turn of the
 * loop, together with every other connection that got there meanwhile.
 * Thousands of connections reconnecting at once then lift their holds in
 * a few nft transactions, not one each (each costs milliseconds).
 */
static void resume_later(struct rackd *d, struct conn *c)
{
	struct reconnect_state *r = d->reconnect;

	if (c->edp->rc_resume_queued)
		return;
	c->edp->rc_resume_queued = true;
	if (r->nresumes == r->rcap) {
		r->rcap = r->rcap ? 2 * r->rcap : 64;
		r->resumes = xreallocarray(r->resumes, r->rcap,
					   sizeof(*r->resumes));
	}
	r->resumes[r->nresumes++] = c;
	if (!timer_pending(&r->resume))
		loop_timer_arm(d->loop, &r->resume, 0);
}

static void resume_flush(struct timer *t, void *arg)
{
	struct rackd *d = arg;
	struct reconnect_state *r = d->reconnect;
	unsigned n = r->nresumes, nheld = 0;
	struct conn **batch = r->resumes;

	(void)t;
	r->resumes = NULL;
	r->nresumes = r->rcap = 0;
	for (unsigned i = 0; i < n; i++) {
		struct conn *c = batch[i];

		c->edp->rc_resume_queued = false;
		/* A suspended path resumes all its connections at once. */
		live_heard_path(d, c);
		if (c->hold && !c->hold->resuming && c->host &&
		    !c->host->suspended)
			batch[nheld++] = c;
		else if (!c->hold || c->hold->resuming)
			/* It kept sending to where the peer no longer was, or
			 * resumed (and retransmitted) before the move reached
			 * it. */
			hold_nudge(d, c);
	}
	if (nheld)
		hold_end(d, batch, nheld);
	free(batch);
}

/*
 * The reconnections accepted since the last flush: spliced in one
 * transaction, then answered (from the new endpoints, which the splice
 * now maps), then resumed. If the splice fails nothing is answered: the
 * peer asks again.
 */
static void reconnect_flush(struct timer *t, void *arg)
{
	struct rackd *d = arg;
	struct reconnect_state *r = d->reconnect;
	unsigned n = r->naccepted;
	struct conn **batch = xcalloc(n ? n : 1, sizeof(*batch));

	(void)t;
	r->naccepted = 0;
	for (unsigned i = 0; i < n; i++) {
		batch[i] = r->accepted[i].c;
		batch[i]->edp->rc_queued = false;
	}
	if (splice_apply(d, batch, n))
		goto out;
	for (unsigned i = 0; i < n; i++) {
		struct reconnect_pending *a = &r->accepted[i];

		/*
		 * The confirmation's answer, which resumes the peer, with
		 * the handshake's numbers (our SYN-ACK's end, the SYN's
		 * end) and a window that a tracker scales: a middlebox that
		 * met the flow at the peer's SYN knows our window only from
		 * our SYN-ACK (a SYN's, unscaled: 64 KiB), and drops our
		 * acknowledgements of the peer's snd_una as too old when
		 * more than that was in flight, lost in the cut (conntrack:
		 * "ACK is under the lower bound"). Ours would all go, and
		 * the peer's retransmissions with them, for good. This one
		 * it takes (its numbers are exactly the ends it saw) and
		 * widens our window to what the socket can advertise.
		 */
		if (channel_send_numbered_at(d, a->c, EDP_RECONNECT_ACK,
					     a->counter, a->seq, a->ack) == 0)
			d->reconnect->stats.sent++;
	}
	for (unsigned i = 0; i < n; i++)
		resume_later(d, batch[i]);
out:
	free(batch);
}

static void accept_later(struct rackd *d, struct conn *c, uint32_t counter,
			 const struct packet *confirm)
{
	struct reconnect_state *r = d->reconnect;
	struct reconnect_pending *a;

	/* Once per batch: the splice counts each entry it is given. The
	 * latest counter is the one to answer. */
	if (c->edp->rc_queued) {
		for (unsigned i = 0; i < r->naccepted; i++)
			if (r->accepted[i].c == c) {
				r->accepted[i].counter = counter;
				r->accepted[i].seq = confirm->ack;
				r->accepted[i].ack = confirm->seq;
			}
		return;
	}
	c->edp->rc_queued = true;

	if (r->naccepted == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->accepted = xreallocarray(r->accepted, r->cap,
					    sizeof(*r->accepted));
	}
	a = &r->accepted[r->naccepted++];
	*a = (struct reconnect_pending){ .c = c, .counter = counter,
					 .seq = confirm->ack,
					 .ack = confirm->seq };
	if (!timer_pending(&r->flush))
		loop_timer_arm(d->loop, &r->flush, 0);
}

/*
 * The peer asks us to follow it to where its SYN came from. Nothing is
 * spliced yet: the source address is only what the SYN says, and the
 * peer's rackd holds the key, not necessarily that address (a peer could
 * name a third party's address and port, and have the third party's
 * segments spliced into its own socket). The SYN-ACK goes there with a
 * random challenge; only the third segment, from there, proving with
 * the key that it read the challenge, moves the connection (confirm()).
 */
static uint32_t claim(struct rackd *d, struct conn *c, const struct packet *p,
		      uint32_t counter, const struct rcsyn_seen *syn)
{
	struct conn_edp *e = c->edp;
	struct endpoint wl = { .addr = p->dst, .port = p->dport };
	struct endpoint wr = { .addr = p->src, .port = p->sport };

	if (counter <= e->hb_in) {
		d->reconnect->stats.refused_replay++;
		return NF_DROP;
	}
	/* Only the peer's end may move: our port is the socket's own. */
	if (p->dport != c->local.port ||
	    p->src.family != c->local.addr.family) {
		d->reconnect->stats.refused_other++;
		return NF_DROP;
	}
	if (!local_remote_usable(&wr.addr)) {
		d->reconnect->stats.refused_address++;
		return NF_DROP;
	}
	/* The peer re-opens towards the address we moved away from (kept on
	 * lo for the socket alone): following it there would cross our own
	 * reconnection from the new address, each end then sending where
	 * the other no longer listens. Ours tells the peer where we are. */
	if (c->kept_local && addr_equal(&wl.addr, &c->local.addr) &&
	    !addr_equal(&c->wire_local.addr, &c->local.addr)) {
		d->reconnect->stats.refused_left++;
		return NF_DROP;
	}
	e->hb_in = counter;
	/* Retries of the same claim keep its challenge, so that a
	 * confirmation of an earlier answer still counts. */
	if (!e->rc_claim || loop_now() - e->rc_claim_ms > RECONNECT_CLAIM_MS ||
	    !endpoint_equal(&wl, &e->rc_claim_local) ||
	    !endpoint_equal(&wr, &e->rc_claim_remote)) {
		e->rc_claim = true;
		e->rc_claim_local = wl;
		e->rc_claim_remote = wr;
		randombytes_buf(e->rc_challenge, sizeof(e->rc_challenge));
	}
	e->rc_claim_ms = loop_now();
	if (rcsyn_send_synack(d, c, counter, syn, &wl, &wr,
			      e->rc_challenge) == 0)
		d->reconnect->stats.challenges_out++;
	return NF_DROP;
}

/* The third segment of a reconnection: from where the SYN came, proving
 * that it read our SYN-ACK. The peer is there: follow it. */
static uint32_t confirm(struct rackd *d, struct conn *c, const struct packet *p,
			const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;
	struct endpoint wl = { .addr = p->dst, .port = p->dport };
	struct endpoint wr = { .addr = p->src, .port = p->sport };

	if (!e->rc_claim || loop_now() - e->rc_claim_ms > RECONNECT_CLAIM_MS ||
	    !endpoint_equal(&wl, &e->rc_claim_local) ||
	    !endpoint_equal(&wr, &e->rc_claim_remote)) {
		d->reconnect->stats.refused_unproven++;
		return NF_DROP;
	}
	if (!channel_confirm_valid(d, c, m, e->rc_challenge)) {
		d->reconnect->stats.refused_mac++;
		return NF_DROP;
	}
	if (m->counter <= e->hb_in) {
		d->reconnect->stats.refused_replay++;
		return NF_DROP;
	}
	/* Another connection or socket travels there: the kernel could not
	 * tell the two apart (its segments would be spliced into this
	 * socket). */
	if (splice_tuple_check(d, c, &wl, &wr, NULL) != SPLICE_TUPLE_FREE) {
		d->reconnect->stats.refused_collision++;
		return NF_DROP;
	}
	e->hb_in = m->counter;
	e->rc_claim = false;
	sodium_memzero(e->rc_challenge, sizeof(e->rc_challenge));
	d->reconnect->stats.accepted++;
	c->confirmed = true;
	e->rc_reopen = false;
	if (c->migration == MIG_AWAY) {
		/* Restored somewhere (or back where it was): its path is an
		 * ordinary one again, even on the same endpoints. */
		c->migration = MIG_NONE;
		if (endpoint_equal(&wl, &c->wire_local) &&
		    endpoint_equal(&wr, &c->wire_remote))
			live_move(d, c, false);
	}
	if (!endpoint_equal(&wl, &c->wire_local) ||
	    !endpoint_equal(&wr, &c->wire_remote)) {
		conn_set_wire(&d->conns, c, &wl, &wr);
		live_move(d, c, false);
		event_moved(d, c);
	}
	accept_later(d, c, m->counter, p);
	return NF_DROP;
}

/*
 * The peer answered our reconnection: in a SYN-ACK with its challenge,
 * which our third segment answers (the peer then follows us); then with
 * a zero-length RECONNECT_ACK of that segment's counter, once it has
 * spliced: only now may our socket's segments go there.
 */
static uint32_t reconnect_acked(struct rackd *d, struct conn *c,
				uint32_t counter, const struct rcsyn_seen *synack)
{
	struct conn_edp *e = c->edp;

	if (counter > e->hb_out || counter <= e->hb_acked) {
		d->reconnect->stats.refused_replay++;
		return NF_DROP;
	}
	/* Without a challenge (a rackd before it): nothing to prove where
	 * we are, so nothing taken from it. */
	if (synack && !synack->has_challenge) {
		d->reconnect->stats.refused_other++;
		return NF_DROP;
	}
	e->hb_acked = counter;
	d->reconnect->stats.acks_in++;
	if (synack) {
		if (rcsyn_send_confirm(d, c, synack) == 0)
			d->reconnect->stats.acks_out++;
		return NF_DROP;
	}
	if (counter > e->rc_base && !c->confirmed) {
		c->confirmed = true;
		e->rc_answers++;
		e->rc_pending = 0;
		e->rc_warned = false;
		/* Re-opened where it was: nothing moved. */
		if (!e->rc_reopen)
			event_moved(d, c);
		e->rc_reopen = false;
	}
	resume_later(d, c);
	return NF_DROP;
}

/* A RECONNECT or RECONNECT_ACK for C arriving in segment P: a SYN or
 * SYN-ACK when SYN says what it carried, else a zero-length segment. */
static uint32_t reconnect_message(struct rackd *d, struct conn *c,
				  const struct packet *p,
				  const struct edp_msg *m,
				  const struct rcsyn_seen *syn)
{
	struct conn_edp *e = c->edp;

	if (!c->host || !e || !e->keyed) {
		d->reconnect->stats.refused_other++;
		return NF_DROP;
	}
	if (m->type == EDP_RECONNECT_CONFIRM)
		return confirm(d, c, p, m);
	if (!channel_numbered_valid(d, c, m)) {
		d->reconnect->stats.refused_mac++;
		return NF_DROP;
	}
	/* Where the peer is now, in hops (rstguard.h). */
	if (p->ttl)
		e->peer_ttl = p->ttl;
	if (m->type == EDP_RECONNECT_ACK)
		return reconnect_acked(d, c, m->counter, syn);
	/* A RECONNECT travels in a SYN; a zero-length one (rackds before
	 * this protocol) could never be answered with a challenge. */
	if (!syn) {
		d->reconnect->stats.refused_other++;
		return NF_DROP;
	}
	return claim(d, c, p, m->counter, syn);
}

/* Zero-length messages: the third segment of a reconnection
 * (RECONNECT_CONFIRM), and the answer that resumes its sender. */
static uint32_t reconnect_input(struct rackd *d, struct conn *c,
				const struct packet *p,
				const struct edp_msg *m)
{
	return reconnect_message(d, c, p, m, NULL);
}

uint32_t reconnect_syn_input(struct rackd *d, const struct packet *p)
{
	struct reconnect_stats *st = &d->reconnect->stats;
	struct rcsyn_seen seen;
	struct edp_msg m;
	struct conn *c;

	/* A racks message like any other, in the counters too. */
	d->edp.msgs_in++;
	if (rcsyn_parse(p, &m, &seen)) {
		st->malformed++;
		return NF_DROP;
	}
	c = conn_find_edp(&d->conns, m.conn_id);
	if (!c) {
		st->unknown++;
		return NF_DROP;
	}
	return reconnect_message(d, c, p, &m, &seen);
}

/*
 * A reset acknowledging exactly our last reconnection SYN, from where it
 * went: nobody there knows the flow. The peer's rackd never answers so
 * (it consumes our SYNs); a NAT or a firewall in front of the peer that
 * forgot the flow and admits only the peer's own new flows does (R's
 * stack, for a port it no longer maps). Only the peer can re-open the
 * path then: said once per run of refusals, and in rackctl list.
 * Whoever can read our SYN can forge this, and gains a word in the
 * list: the SYNs go on all the same.
 */
bool reconnect_reset(struct rackd *d, struct conn *c, const struct packet *p)
{
	struct conn_edp *e = c->edp;
	char r[ENDPOINT_STRLEN];

	if (!e || !e->keyed || !e->rc_pending ||
	    (p->flags & (TCP_FLAG_RST | TCP_FLAG_ACK)) !=
		    (TCP_FLAG_RST | TCP_FLAG_ACK) ||
	    p->ack != e->rc_syn_end)
		return false;
	d->reconnect->stats.reset_by_path++;
	if (!e->rc_refusals++ || e->rc_refused_ms < e->rc_first_ms)
		log_info("conn %llu: reconnection to %s reset by the path (a "
			 "NAT or firewall in front of the peer forgot the "
			 "flow): waiting for the peer to re-open it",
			 (unsigned long long)c->id,
			 endpoint_format(&c->wire_remote, r, sizeof(r)));
	e->rc_refused_ms = loop_now();
	return true;
}

int reconnect_handle_messages(struct rackd *d)
{
	int ret = channel_handle(d, EDP_RECONNECT, reconnect_input);

	if (!ret)
		ret = channel_handle(d, EDP_RECONNECT_ACK, reconnect_input);
	return ret ? ret : channel_handle(d, EDP_RECONNECT_CONFIRM,
					  reconnect_input);
}

int reconnect_set_peer(struct rackd *d, struct conn *c,
		       const struct endpoint *peer, bool with_port)
{
	struct conn **batch, **held;
	struct endpoint *was;	/* each one's wire endpoints before */
	struct live_peer *path = NULL;
	struct addr src, old = c->wire_remote.addr;
	unsigned n = 0, nheld = 0, moved = 0;
	int ret;

	if (!c->host || !c->edp || !c->edp->keyed)
		return -ENOTCONN;
	if (peer->addr.family != c->remote.addr.family)
		return -EAFNOSUPPORT;
	if (local_source(&peer->addr, &src))
		src = c->wire_local.addr;	/* no route yet: try later */
	batch = xcalloc(d->conns.count, sizeof(*batch));
	was = xcalloc(2 * d->conns.count, sizeof(*was));
	for (struct conn *o = d->conns.head; o; o = o->next)
		if (o == c || (!with_port && o->host && o->edp &&
			       addr_equal(&o->wire_remote.addr, &old)))
			batch[n++] = o;
	for (unsigned i = 0; i < n; i++) {
		struct endpoint wl = { src, batch[i]->wire_local.port };
		struct endpoint wr = { peer->addr, with_port ? peer->port :
				       batch[i]->wire_remote.port };
		/* Two connections cannot share the tuple their segments
		 * travel with, nor one with a socket rackd does not track:
		 * the kernel could not tell them apart. */
		if (splice_tuple_check(d, batch[i], &wl, &wr, NULL) !=
		    SPLICE_TUPLE_FREE) {
			ret = -EADDRINUSE;
			goto undo;
		}
		was[2 * i] = batch[i]->wire_local;
		was[2 * i + 1] = batch[i]->wire_remote;
		conn_set_wire(&d->conns, batch[i], &wl, &wr);
		moved = i + 1;
	}
	ret = splice_apply(d, batch, n);
	if (ret)
		goto undo;
	for (unsigned i = 0; i < n; i++)
		reconnect_begin(batch[i]);
	/* Held until the peer follows: a segment reaching it on endpoints
	 * it has not spliced yet would draw a RST. */
	held = xcalloc(n ? n : 1, sizeof(*held));
	for (unsigned i = 0; i < n; i++) {
		path = live_move(d, batch[i], true);
		if (!batch[i]->hold)
			held[nheld++] = batch[i];
	}
	hold_begin(d, held, nheld);
	/* They all went to the same path: (our source, the new address). */
	live_probe_now(d, path);
	free(held);
	free(batch);
	free(was);
	d->reconnect->stats.manual++;
	return (int)n;
undo:
	/* Nothing moved: every connection where it was, still confirmed. */
	for (unsigned i = 0; i < moved; i++)
		conn_set_wire(&d->conns, batch[i], &was[2 * i],
			      &was[2 * i + 1]);
	free(batch);
	free(was);
	return ret;
}
