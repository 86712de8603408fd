// SPDX-License-Identifier: GPL-2.0-only
#include "liveness.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <stdlib.h>

#include "hold.h"
#include "inject.h"
#include "keys.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "setup.h"

/* Kernel TCP states (include/net/tcp_states.h). */
#define TCP_STATE_FIN_WAIT2 5
#define TCP_STATE_LAST_ACK 9
#define TCP_STATE_CLOSING 11

/* While suspended, the peer is probed at least this often, so that a
 * restored path resumes within about a second. */
#define LIVE_PROBE_MAX_MS 1000

static uint64_t heartbeat_interval(const struct rackd *d,
				   const struct live_peer *p)
{
	uint64_t iv = d->cfg->suspend_after_ms / 3;

	if (p->suspended && iv > LIVE_PROBE_MAX_MS)
		iv = LIVE_PROBE_MAX_MS;
	return iv < 100 ? 100 : iv;
}

static void live_send(struct rackd *d, struct conn *c, uint8_t type,
		      uint32_t counter)
{
	struct conn_edp *e = c->edp;
	struct edp_msg m = { .version = EDP_VERSION, .type = type,
			     .counter = counter };
	enum edp_role role;

	if (type == EDP_HEARTBEAT)
		role = conn_is_client(c) ? EDP_ROLE_CLIENT_HEARTBEAT
				    : EDP_ROLE_SERVER_HEARTBEAT;
	else
		role = conn_is_client(c) ? EDP_ROLE_CLIENT_HEARTBEAT_ACK
				    : EDP_ROLE_SERVER_HEARTBEAT_ACK;
	edp_mac_counter(e->key, role, counter, &e->t, m.mac);
	if (setup_send_message(d, c, &m))
		d->edp.send_errors++;
}

/* The path's connections, for one batched hold / release; the caller
 * frees the array. */
static struct conn **path_conns(struct live_peer *p, unsigned *n)
{
	struct conn **out = xcalloc(p->nconns ? p->nconns : 1, sizeof(*out));

	*n = 0;
	for (struct conn *c = p->conns; c; c = c->host_next)
		out[(*n)++] = c;
	return out;
}

static void live_suspend(struct rackd *d, struct live_peer *p,
			 const char *why)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN];
	struct conn **batch;
	unsigned n;

	if (p->suspended)
		return;
	p->suspended = true;
	batch = path_conns(p, &n);
	hold_begin(d, batch, n);
	free(batch);
	log_info("path %s -> %s: %s: %u connection(s) suspended",
		 addr_format(&p->local, l, sizeof(l)),
		 addr_format(&p->remote, r, sizeof(r)), why, n);
}

static void live_resume(struct rackd *d, struct live_peer *p)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN];
	unsigned n;
	struct conn **batch = path_conns(p, &n);

	p->suspended = false;
	hold_end(d, batch, n);
	free(batch);
	log_info("path %s -> %s: heard again: %u connection(s) resumed",
		 addr_format(&p->local, l, sizeof(l)),
		 addr_format(&p->remote, r, sizeof(r)), n);
}

/* A closing socket's peer may have forgotten it already. */
static bool may_carry(const struct conn *c)
{
	return c->tcp_state != TCP_STATE_FIN_WAIT2 &&
	       c->tcp_state != TCP_STATE_LAST_ACK &&
	       c->tcp_state != TCP_STATE_CLOSING;
}

/*
 * Heartbeats take turns among the path's connections: one connection the
 * peer has just forgotten can then never make the whole path look dead,
 * since suspension needs several heartbeats in a row unanswered.
 */
static struct conn *next_carrier(struct live_peer *p)
{
	struct conn *start = p->carrier && p->carrier->host_next ?
			     p->carrier->host_next : p->conns;
	struct conn *c = start;

	do {
		if (may_carry(c)) {
			p->carrier = c;
			return c;
		}
		c = c->host_next ? c->host_next : p->conns;
	} while (c != start);
	p->carrier = start;
	return start;
}

static void live_tick(struct timer *t, void *arg)
{
	struct live_peer *p = arg;
	struct rackd *d = rackd_of_conn(p->conns);
	uint64_t now = loop_now(), silent = now - p->last_heard;
	uint64_t iv, next;

	if (!p->suspended && silent >= d->cfg->suspend_after_ms)
		live_suspend(d, p, "no heartbeat answered");
	iv = heartbeat_interval(d, p);
	if (silent >= iv) {
		struct conn *c = next_carrier(p);

		live_send(d, c, EDP_HEARTBEAT, ++c->edp->hb_out);
		d->live.stats.heartbeats_out++;
	}
	next = iv;
	if (!p->suspended && p->last_heard + d->cfg->suspend_after_ms - now <
				     next)
		next = p->last_heard + d->cfg->suspend_after_ms - now;
	loop_timer_arm(d->loop, t, next ? next : 1);
}

static struct live_peer *find_path(struct rackd *d, const struct conn *c)
{
	for (struct live_peer *p = d->live.peers; p; p = p->next)
		if (addr_equal(&p->local, &c->local.addr) &&
		    addr_equal(&p->remote, &c->remote.addr))
			return p;
	return NULL;
}

void live_attach(struct rackd *d, struct conn *c)
{
	struct live_peer *p = find_path(d, c);

	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->local = c->local.addr;
		p->remote = c->remote.addr;
		p->last_heard = loop_now();
		p->next = d->live.peers;
		d->live.peers = p;
		timer_init(&p->timer, live_tick, p);
	}
	c->host = p;
	c->host_next = p->conns;
	p->conns = c;
	p->nconns++;
	if (!timer_pending(&p->timer))
		loop_timer_arm(d->loop, &p->timer, heartbeat_interval(d, p));
	if (p->suspended) {
		struct conn *one[1] = { c };

		hold_begin(d, one, 1);
	}
}

void live_detach(struct rackd *d, struct conn *c)
{
	struct live_peer *p = c->host, **pp;
	struct conn **cp;

	if (c->hold) {
		/* Leaves its path while held (its socket is closing): it is
		 * no longer anyone's to abort. */
		hold_free(d, c);
		loop_timer_cancel(d->loop, &c->expiry);
		c->state = CONN_CONNECTED;
	}
	if (!p)
		return;
	for (cp = &p->conns; *cp && *cp != c; cp = &(*cp)->host_next)
		;
	if (*cp)
		*cp = c->host_next;
	if (p->carrier == c)
		p->carrier = NULL;
	c->host = NULL;
	if (--p->nconns)
		return;
	loop_timer_cancel(d->loop, &p->timer);
	for (pp = &d->live.peers; *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
	free(p);
}

static void live_heard(struct rackd *d, struct live_peer *p)
{
	p->last_heard = loop_now();
	if (p->suspended)
		live_resume(d, p);
}

void live_heard_path(struct rackd *d, struct conn *c)
{
	if (c->host)
		live_heard(d, c->host);
}

uint32_t live_input(struct rackd *d, struct conn *c, const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;
	enum edp_role role;

	if (!c->host || !e || !e->keyed) {
		d->edp.unexpected++;
		return NF_DROP;
	}
	/* The sender's role: the other end of this connection. */
	if (m->type == EDP_HEARTBEAT)
		role = conn_is_client(c) ? EDP_ROLE_SERVER_HEARTBEAT
				    : EDP_ROLE_CLIENT_HEARTBEAT;
	else
		role = conn_is_client(c) ? EDP_ROLE_SERVER_HEARTBEAT_ACK
				    : EDP_ROLE_CLIENT_HEARTBEAT_ACK;
	if (edp_mac_counter_verify(e->key, role, m->counter, &e->t, m->mac)) {
		d->edp.bad_mac++;
		return NF_DROP;
	}
	if (m->type == EDP_HEARTBEAT) {
		/* Counters only grow: an old heartbeat is a replay. */
		if (m->counter <= e->hb_in) {
			d->live.stats.replayed++;
			return NF_DROP;
		}
		e->hb_in = m->counter;
		d->live.stats.heartbeats_in++;
		live_send(d, c, EDP_HEARTBEAT_ACK, m->counter);
	} else {
		if (m->counter > e->hb_out || m->counter <= e->hb_acked) {
			d->live.stats.replayed++;
			return NF_DROP;
		}
		e->hb_acked = m->counter;
		d->live.stats.heartbeat_acks_in++;
	}
	live_heard(d, c->host);
	return NF_DROP;
}

static uint32_t addr_ifindex(const struct rackd *d, const struct addr *a)
{
	for (const struct live_addr *la = d->live.addrs; la; la = la->next)
		if (addr_equal(&la->addr, a))
			return la->ifindex;
	return 0;
}

void live_addr_event(struct rackd *d, const struct rtnl_addr_event *ev)
{
	struct live_addr **pp = &d->live.addrs;

	while (*pp && !addr_equal(&(*pp)->addr, &ev->prefix.addr))
		pp = &(*pp)->next;
	if (ev->removed) {
		if (*pp) {
			struct live_addr *gone = *pp;

			*pp = gone->next;
			free(gone);
		}
		return;
	}
	if (!*pp) {
		*pp = xcalloc(1, sizeof(**pp));
		(*pp)->addr = ev->prefix.addr;
	}
	(*pp)->ifindex = ev->ifindex;
}

void live_link_event(struct rackd *d, const struct rtnl_link_event *ev)
{
	bool usable = ev->up && ev->carrier && !ev->removed;

	for (struct live_peer *p = d->live.peers; p; p = p->next) {
		if (addr_ifindex(d, &p->local) != ev->ifindex)
			continue;
		if (!usable && !p->suspended) {
			d->live.stats.link_suspensions++;
			live_suspend(d, p, "link lost its carrier");
		} else if (usable && p->suspended) {
			/* Try at once rather than at the next tick. */
			loop_timer_arm(d->loop, &p->timer, 0);
		}
	}
}

unsigned live_suspended_count(const struct rackd *d)
{
	unsigned n = 0;

	for (const struct live_peer *p = d->live.peers; p; p = p->next)
		if (p->suspended)
			n += p->nconns;
	return n;
}

void live_free(struct rackd *d)
{
	while (d->live.addrs) {
		struct live_addr *a = d->live.addrs;

		d->live.addrs = a->next;
		free(a);
	}
}
