// SPDX-License-Identifier: GPL-2.0-only
#include "track.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <stddef.h>
#include <string.h>

#include "log.h"
#include "loop.h"
#include "sockdiag.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static struct rackd *conn_daemon(struct conn *c)
{
	return container_of(c->table, struct rackd, conns);
}

static void log_conn(const char *what, const struct conn *c)
{
	char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];

	if (!log_debug_enabled())
		return;
	log_debug("conn %llu %s: %s %s %s", (unsigned long long)c->id, what,
		  endpoint_format(&c->local, l, sizeof(l)),
		  c->dir == CONN_OUTGOING ? "->" : "<-",
		  endpoint_format(&c->remote, r, sizeof(r)));
}

void track_forget(struct rackd *d, struct conn *c)
{
	loop_timer_cancel(d->loop, &c->expiry);
	conn_remove(&d->conns, c);
}

static void track_expire(struct timer *t, void *arg)
{
	struct conn *c = arg;
	struct rackd *d = conn_daemon(c);

	(void)t;
	log_conn("handshake timed out", c);
	d->stats.conns_expired++;
	track_forget(d, c);
}

static void conn_end_set(struct conn_end *e, const struct packet *p)
{
	e->seen = true;
	e->isn = p->seq;
	e->has_mss = p->opt.has_mss;
	e->mss = p->opt.mss;
	e->has_wscale = p->opt.has_wscale;
	e->wscale = p->opt.wscale;
	e->sack_permitted = p->opt.sack_permitted;
	e->has_timestamp = p->opt.has_timestamp;
}

/* Local and remote endpoints of a packet seen at HOOK. */
static void packet_endpoints(const struct packet *p, bool outbound,
			     struct endpoint *local, struct endpoint *remote)
{
	struct endpoint src = { .addr = p->src, .port = p->sport };
	struct endpoint dst = { .addr = p->dst, .port = p->dport };

	*local = outbound ? src : dst;
	*remote = outbound ? dst : src;
}

/* The end that sends a connection's SYN. */
static struct conn_end *syn_end(struct conn *c)
{
	return c->dir == CONN_OUTGOING ? &c->lend : &c->rend;
}

static void track_syn(struct rackd *d, const struct packet *p, bool outbound)
{
	enum conn_dir dir = outbound ? CONN_OUTGOING : CONN_INCOMING;
	struct endpoint local, remote;
	struct conn *c;

	d->stats.syn++;
	packet_endpoints(p, outbound, &local, &remote);
	c = conn_lookup(&d->conns, &local, &remote);
	if (c && c->dir == dir && c->state == CONN_HANDSHAKE &&
	    syn_end(c)->isn == p->seq) {
		d->stats.syn_retransmit++;
	} else if (c) {
		/* The 4-tuple is reused by a new connection: start afresh. */
		log_conn("replaced by a new handshake", c);
		c->dir = dir;
		c->state = CONN_HANDSHAKE;
		memset(&c->lend, 0, sizeof(c->lend));
		memset(&c->rend, 0, sizeof(c->rend));
		c->created = time(NULL);
		c->created_mono = loop_now();
		d->stats.conns_total++;
	} else {
		if (d->conns.count >= d->cfg->max_connections) {
			d->stats.conns_refused++;
			return;
		}
		c = conn_insert(&d->conns, &local, &remote, dir);
		timer_init(&c->expiry, track_expire, c);
		c->created_mono = loop_now();
		d->stats.conns_total++;
		log_conn("handshake", c);
	}
	conn_end_set(outbound ? &c->lend : &c->rend, p);
	loop_timer_arm(d->loop, &c->expiry, d->cfg->syn_timeout_ms);
}

static void track_synack(struct rackd *d, const struct packet *p,
			 bool outbound)
{
	struct endpoint local, remote;
	struct conn *c;

	d->stats.synack++;
	packet_endpoints(p, outbound, &local, &remote);
	c = conn_lookup(&d->conns, &local, &remote);
	/* The SYN-ACK must travel against its SYN. */
	if (!c || c->dir != (outbound ? CONN_INCOMING : CONN_OUTGOING)) {
		d->stats.synack_unmatched++;
		return;
	}
	conn_end_set(outbound ? &c->lend : &c->rend, p);
	if (c->state == CONN_HANDSHAKE) {
		c->state = CONN_OPEN;
		loop_timer_cancel(d->loop, &c->expiry);
		log_conn("open", c);
	}
}

void track_packet(void *arg, struct queue *q, const struct queue_packet *qp)
{
	struct rackd *d = arg;
	struct packet p;
	enum packet_error err;
	bool outbound = qp->hook == NF_INET_LOCAL_OUT;

	err = packet_parse(qp->data, qp->len, &p);
	if (err) {
		d->stats.malformed++;
		d->stats.malformed_by[err]++;
		log_debug("packet %u rejected: %s (%zu bytes)", qp->id,
			  packet_error_name(err), qp->len);
	} else if ((p.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN) {
		track_syn(d, &p, outbound);
	} else if ((p.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) ==
		   (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
		track_synack(d, &p, outbound);
	} else {
		d->stats.unexpected++;
	}
	/* Observing only: every packet continues unmodified. */
	queue_verdict(q, qp->id, NF_ACCEPT);
}

static void sweep_socket(void *arg, const struct sockdiag_entry *e)
{
	struct rackd *d = arg;
	struct conn *c = conn_lookup(&d->conns, &e->local, &e->remote);

	if (c) {
		c->swept = true;
		c->tcp_state = e->state;
	}
}

void track_sweep_fresh(struct rackd *d)
{
	/* Any local user may ask: at most one dump per interval. */
	if (loop_now() - d->last_sweep >= TRACK_FRESH_MS)
		track_sweep(d);
}

void track_sweep(struct rackd *d)
{
	int ret;

	d->last_sweep = loop_now();
	for (struct conn *c = d->conns.head; c; c = c->next)
		c->swept = false;
	ret = sockdiag_dump(sweep_socket, d);
	if (ret) {
		/* Without a complete dump nothing may be forgotten. */
		log_warnx("socket sweep failed: %s", strerror(-ret));
		return;
	}
	d->stats.sweeps++;
	for (struct conn *c = d->conns.head, *next; c; c = next) {
		next = c->next;
		/* Handshakes have their own timer; the kernel may not show
		 * a socket yet for a SYN that is still in flight. */
		if (c->swept || c->state == CONN_HANDSHAKE)
			continue;
		log_conn("closed", c);
		d->stats.conns_closed++;
		track_forget(d, c);
	}
}
