// SPDX-License-Identifier: GPL-2.0-only
#include "rstguard.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <stdlib.h>

#include "inject.h"
#include "keystate.h"
#include "liveness.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"

/* How often held resets are looked at: they wait seconds. */
#define RSTGUARD_TICK_MS 250

static void rstguard_tick(struct timer *t, void *arg);

void rstguard_init(struct rackd *d)
{
	timer_init(&d->rstguard->timer, rstguard_tick, d);
}

void rstguard_free(struct rackd *d)
{
	struct rstguard_state *g = d->rstguard;

	loop_timer_cancel(d->loop, &g->timer);
	free(g->held);
	g->held = NULL;
	g->nheld = g->cap = 0;
}

static void forget(struct rackd *d, struct conn *c)
{
	struct rstguard_state *g = d->rstguard;
	unsigned kept = 0;

	if (!c->edp || !c->edp->rst_held)
		return;
	c->edp->rst_held = false;
	for (unsigned i = 0; i < g->nheld; i++)
		if (g->held[i] != c)
			g->held[kept++] = g->held[i];
	g->nheld = kept;
}

void rstguard_event(void *arg, enum event_type type, struct conn *c,
		    const char *reason)
{
	(void)type, (void)reason;
	forget(arg, c);
}

/* The reset held for C, to its socket as it came (with our mark: past
 * the rules that would divert it again). */
static void deliver(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;
	struct inject_segment rst = {
		.src = &c->remote, .dst = &c->local, .seq = e->rst_seq,
		.ack = e->rst_ack, .flags = e->rst_flags,
	};

	if (inject_send(d->inject, &rst))
		d->edp.send_errors++;
	d->rstguard->stats.delivered++;
	conn_log(c, "a reset held back went unexplained: delivered");
}

static void rstguard_tick(struct timer *t, void *arg)
{
	struct rackd *d = arg;
	struct rstguard_state *g = d->rstguard;
	uint64_t now = loop_now(), grace = 2 * d->cfg->suspend_after_ms;
	unsigned kept = 0;

	for (unsigned i = 0; i < g->nheld; i++) {
		struct conn *c = g->held[i];
		struct conn_edp *e = c->edp;
		bool heard = c->host && !c->host->suspended &&
			     c->host->last_heard > e->rst_ms;

		if (heard) {
			g->stats.dropped++;
		} else if (now - e->rst_ms >= grace) {
			deliver(d, c);
		} else {
			g->held[kept++] = c;
			continue;
		}
		e->rst_held = false;
	}
	g->nheld = kept;
	if (kept)
		loop_timer_arm(d->loop, t, RSTGUARD_TICK_MS);
}

static void hold_back(struct rackd *d, struct conn *c, const struct packet *p)
{
	struct rstguard_state *g = d->rstguard;
	struct conn_edp *e = c->edp;
	char r[ENDPOINT_STRLEN];

	g->stats.held++;
	/* The latest one: its numbers are the socket's now. */
	e->rst_seq = p->seq;
	e->rst_ack = p->ack;
	e->rst_flags = p->flags & (TCP_FLAG_RST | TCP_FLAG_ACK);
	if (e->rst_held)
		return;
	e->rst_held = true;
	e->rst_ms = loop_now();
	if (g->nheld == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 16;
		g->held = xreallocarray(g->held, g->cap, sizeof(*g->held));
	}
	g->held[g->nheld++] = c;
	if (!timer_pending(&g->timer))
		loop_timer_arm(d->loop, &g->timer, RSTGUARD_TICK_MS);
	log_info("conn %llu: a reset from %s arrived with TTL %u where the "
		 "peer's segments have %u: held back while the path is probed "
		 "(a NAT or firewall that forgot the flow?)",
		 (unsigned long long)c->id,
		 endpoint_format(&c->wire_remote, r, sizeof(r)),
		 (unsigned)p->ttl, (unsigned)e->peer_ttl);
	/* The peer's answer proves the path; the re-opening that the
	 * silence brings about (liveness.c) makes it answer again. */
	if (c->host && !c->host->suspended && !c->host->parked)
		live_probe_now(d, c->host);
}

uint32_t rstguard_inbound(struct rackd *d, struct conn *c,
			  const struct packet *p)
{
	struct conn_edp *e = c ? c->edp : NULL;

	/* Only a connection whose peer's hop count we know, and only a
	 * reset that arrives with another one. */
	if (!e || !e->keyed || !conn_managed(c) || !e->peer_ttl ||
	    p->ttl == e->peer_ttl)
		return NF_ACCEPT;
	hold_back(d, c, p);
	return NF_DROP;
}
