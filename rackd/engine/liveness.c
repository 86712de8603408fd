// SPDX-License-Identifier: GPL-2.0-only
#include "liveness.h"

#include <errno.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <stdlib.h>

#include "channel.h"
#include "inject.h"
#include "keys.h"
#include "keystate.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "sockdiag.h"
#include "splice.h"

/* Reconnections of a working path are repeated this often until each is
 * acknowledged (reconnect.c spaces each connection's own further), and
 * sooner while the pacing of many held some back. */
#define LIVE_RECONNECT_RETRY_MS 200
#define LIVE_PACED_RETRY_MS 50
/* After a local event (link up, new address), a suspended path is tried
 * at once and then after 50, 100, 200 and 400 ms. */
#define LIVE_FAST_RETRY_MS 50
#define LIVE_FAST_RETRIES 4
/* Reconnections unanswered on a path that answers heartbeats are logged
 * once when this many went out over at least this long (retries space
 * out: 200, 400, 800 ms, ..., so four take 1.4 s). */
#define LIVE_UNANSWERED_MIN 4
#define LIVE_UNANSWERED_MS 2000

static bool path_link_usable(struct rackd *d, const struct live_peer *p);

/*
 * The wait between a path's probes: a third of suspend_after while it
 * works; while suspended, retry_interval, and once it has been silent for
 * retry_backoff_after (a peer gone for the night), twice as long at each
 * try up to retry_interval_max. A local event (link up, new address)
 * tries at once whatever the wait (retry_now()).
 */
static uint64_t heartbeat_interval(const struct rackd *d,
				   const struct live_peer *p)
{
	uint64_t iv = d->cfg->suspend_after_ms / 3;

	if (p->suspended) {
		if (iv > d->cfg->retry_interval_ms)
			iv = d->cfg->retry_interval_ms;
		for (unsigned i = 0; i < p->backoff &&
				     iv < d->cfg->retry_interval_max_ms; i++)
			iv *= 2;
		if (p->backoff && iv > d->cfg->retry_interval_max_ms)
			iv = d->cfg->retry_interval_max_ms;
	}
	return iv < 100 ? 100 : iv;
}

static int live_send(struct rackd *d, struct conn *c, uint8_t type,
		     uint32_t counter)
{
	return channel_send_numbered(d, c, type, counter);
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

/*
 * A suspended path re-opens itself: each of its connections must get its
 * peer to follow it again with a reconnection, a SYN on the endpoints it
 * already has. A NAT or a stateful firewall on the path may have forgotten
 * the flow meanwhile (an idle timeout, a restart, a fail-over, a full
 * table): to it every later segment is mid-stream in an unknown flow and
 * is dropped, and only a SYN makes it create fresh state, for that flow
 * alone. One that remembers lets the SYN through as well (conntrack
 * ignores a SYN on an established entry and re-syncs on the SYN-ACK that
 * answers it). Returns how many connections must reconnect now.
 */
static unsigned live_reopen(struct rackd *d, struct live_peer *p)
{
	unsigned n = 0;

	p->reopening = true;
	for (struct conn *c = p->conns; c; c = c->host_next) {
		if (!c->confirmed || !c->edp || !c->edp->keyed)
			continue;
		d->live->ops->reopen(c);
		n++;
	}
	if (n)
		d->live->stats.reopens++;
	return n;
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
	p->suspended_at = loop_now();
	p->tries = 0;
	p->backoff = 0;
	p->reopening = false;
	batch = path_conns(p, &n);
	d->live->ops->path_down(d, batch, n);
	free(batch);
	if (d->cfg->reopen && !p->parked)
		live_reopen(d, p);
	log_info("path %s -> %s: %s: %u connection(s) suspended%s",
		 addr_format(&p->local, l, sizeof(l)),
		 addr_format(&p->remote, r, sizeof(r)), why, n,
		 p->reopening ? "; re-opening it with reconnection SYNs" : "");
}

/*
 * Resume the connections the peer knows at this path's endpoints; the
 * others (they moved here while it was unreachable) stay held until
 * their own reconnection is acknowledged.
 */
static void live_resume(struct rackd *d, struct live_peer *p)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN];
	unsigned n, ready = 0, moved = 0;
	struct conn **batch = path_conns(p, &n);
	bool paced = false;

	p->suspended = false;
	p->reopening = false;
	p->backoff = 0;
	for (unsigned i = 0; i < n; i++) {
		if (batch[i]->confirmed) {
			batch[ready++] = batch[i];
		} else {
			if (!paced && !d->live->ops->reconnect(d, batch[i]))
				paced = true;
			moved++;
		}
	}
	/* The ones held back go at the next tick, soon. */
	if (paced)
		loop_timer_arm(d->loop, &p->timer, LIVE_PACED_RETRY_MS);
	d->live->ops->path_up(d, batch, ready);
	free(batch);
	log_info("path %s -> %s: heard again: %u connection(s) resumed, %u "
		 "reconnecting", addr_format(&p->local, l, sizeof(l)),
		 addr_format(&p->remote, r, sizeof(r)), ready, moved);
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

/*
 * C's reconnections go unanswered although the peer answers heartbeats
 * on the same pair of addresses: something treats them differently from
 * the rest of the path. Said once per move, with what is most likely.
 */
static void warn_unanswered(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;
	char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];
	uint64_t waited = loop_now() - e->rc_first_ms;

	if (e->rc_warned || e->rc_pending < LIVE_UNANSWERED_MIN ||
	    waited < LIVE_UNANSWERED_MS)
		return;
	e->rc_warned = true;
	d->live->stats.reconnects_unanswered++;
	log_warnx("conn %llu: %u reconnection(s) from %s to %s unanswered for "
		  "%llu.%01llu s while the peer answers heartbeats on this "
		  "path: likely a middlebox that drops SYNs carrying data or "
		  "unknown TCP options (or rewrites the port), or a peer rackd "
		  "that no longer knows the connection (restarted without its "
		  "state); still trying", (unsigned long long)c->id,
		  e->rc_pending, endpoint_format(&c->wire_local, l, sizeof(l)),
		  endpoint_format(&c->wire_remote, r, sizeof(r)),
		  (unsigned long long)(waited / 1000),
		  (unsigned long long)(waited % 1000 / 100));
}

/* Reconnections not yet acknowledged on a path that works: again, as
 * far as the pacing lets them; false when it held some back. */
static bool resend_unconfirmed(struct rackd *d, struct live_peer *p)
{
	bool all = true;

	for (struct conn *c = p->conns; c; c = c->host_next) {
		if (c->confirmed)
			continue;
		warn_unanswered(d, c);
		if (all && !d->live->ops->reconnect(d, c))
			all = false;
	}
	return all;
}

static bool path_unconfirmed(const struct live_peer *p)
{
	for (const struct conn *c = p->conns; c; c = c->host_next)
		if (!c->confirmed)
			return true;
	return false;
}

/* One heartbeat on the path's next carrier; a connection the peer must
 * learn our new endpoints of asks for that instead, and its answer proves
 * the path as well. */
#define LIVE_CARRIER_LOOKS 16

static void probe(struct rackd *d, struct live_peer *p)
{
	p->last_probe = loop_now();
	if (p->suspended)
		p->tries++;
	/* A carrier whose socket closed since the last sweep cannot carry
	 * it (channel_send): the next one can. A server of short
	 * connections has thousands of those between two sweeps: the
	 * sweep is asked for at once, and a path whose connections all
	 * closed is not suspended (live_tick), nor are they re-opened. */
	/* One whose socket is closing goes last (the peer's may be gone
	 * already, and its heartbeat unanswered for that alone: a server
	 * closes its short connections first); the kernel is asked about
	 * at most LIVE_CARRIER_LOOKS of them per heartbeat. */
	unsigned gone = 0, tries, looked = 0;
	struct conn *closing = NULL;
	bool sent = false;

	for (tries = 0; tries < p->nconns && !sent; tries++) {
		struct conn *c = next_carrier(p);
		int ret, st;

		if (!c->confirmed) {
			d->live->ops->reconnect(d, c);
			p->carrierless = false;
			return;
		}
		if (looked++ < LIVE_CARRIER_LOOKS) {
			st = sockdiag_state(&c->local, &c->remote);
			if (st == -ENOENT) {
				gone++;
				continue;
			}
			if (st >= 0 && st != TCP_STATE_ESTABLISHED) {
				if (!closing)
					closing = c;
				continue;
			}
		}
		ret = live_send(d, c, EDP_HEARTBEAT, ++c->edp->hb_out);
		if (ret == -ENOENT)
			gone++;
		else if (ret != -ENOTCONN)
			sent = true;
	}
	if (!sent && closing)
		sent = live_send(d, closing, EDP_HEARTBEAT,
				 ++closing->edp->hb_out) == 0;
	if (sent) {
		d->live->stats.heartbeats_out++;
		p->carrierless = false;
	} else {
		p->carrierless = gone == tries && gone;
	}
	if (gone) {
		d->live->stats.carriers_gone += gone;
		d->live->ops->carriers_gone(d);
	}
}

/* A long silence spaces the path's tries out (heartbeat_interval()):
 * said once, when it starts. */
static void back_off(struct rackd *d, struct live_peer *p, uint64_t now)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN];

	if (now - p->suspended_at < d->cfg->retry_backoff_after_ms ||
	    p->backoff >= 16)
		return;
	if (!p->backoff++)
		log_info("path %s -> %s: silent for %llu s after %u tries: "
			 "trying less often, at least every %llu s",
			 addr_format(&p->local, l, sizeof(l)),
			 addr_format(&p->remote, r, sizeof(r)),
			 (unsigned long long)(now - p->suspended_at) / 1000,
			 p->tries,
			 (unsigned long long)d->cfg->retry_interval_max_ms /
				 1000);
}

static void live_tick(struct timer *t, void *arg)
{
	struct live_peer *p = arg;
	struct rackd *d = rackd_of_conn(p->conns);
	uint64_t now = loop_now(), silent = now - p->last_heard;
	uint64_t iv, next;
	struct addr src;

	if (p->parked) {
		d->live->ops->parked_tick(d, p);
		return;
	}
	if (!p->suspended && silent >= d->cfg->suspend_after_ms) {
		if (p->carrierless)
			d->live->stats.carrierless++;
		else
			live_suspend(d, p, "no heartbeat answered");
	}
	/* Suspended some other way (restored from a state file, created
	 * for a move while the peer was unreachable): re-opened all the
	 * same. */
	if (p->suspended && !p->reopening && d->cfg->reopen)
		live_reopen(d, p);
	/* Suspended and our address towards the peer changed: move the
	 * path's connections there (p is gone afterwards). */
	if (p->suspended && local_source(&p->remote, &src) == 0 &&
	    !addr_equal(&src, &p->local)) {
		live_migrate(d, p, &src);
		return;
	}
	iv = heartbeat_interval(d, p);
	if (p->suspended && p->fast) {
		/* A link just came up or an address appeared: its first
		 * packets may wait for neighbour resolution or be lost to a
		 * router still coming up, so try again soon, then less. */
		iv = LIVE_FAST_RETRY_MS << (LIVE_FAST_RETRIES - p->fast);
		p->fast--;
		silent = iv;
	}
	if (silent >= iv && (!p->suspended || path_link_usable(d, p))) {
		probe(d, p);
		if (p->suspended)
			back_off(d, p, now);
	}
	next = iv;
	if (!p->suspended && path_unconfirmed(p))
		next = resend_unconfirmed(d, p) ? LIVE_RECONNECT_RETRY_MS
						: LIVE_PACED_RETRY_MS;
	if (!p->suspended && p->last_heard + d->cfg->suspend_after_ms - now <
				     next)
		next = p->last_heard + d->cfg->suspend_after_ms - now;
	loop_timer_arm(d->loop, t, next ? next : 1);
}

/* Paths are the endpoints segments travel between, not the sockets';
 * migrating connections have paths of their own. */
static struct live_peer *find_path(struct rackd *d, const struct conn *c)
{
	for (struct live_peer *p = d->live->peers; p; p = p->next)
		if (p->parked == conn_parked(c) &&
		    addr_equal(&p->local, &c->wire_local.addr) &&
		    addr_equal(&p->remote, &c->wire_remote.addr))
			return p;
	return NULL;
}

/* C joins the path of its wire endpoints, created if new. */
static struct live_peer *path_link(struct rackd *d, struct conn *c,
				   bool suspended)
{
	struct live_peer *p = find_path(d, c);

	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->local = c->wire_local.addr;
		p->remote = c->wire_remote.addr;
		p->last_heard = loop_now();
		p->parked = conn_parked(c);
		p->suspended = suspended || p->parked;
		p->suspended_at = p->last_heard;
		p->next = d->live->peers;
		d->live->peers = p;
		timer_init(&p->timer, live_tick, p);
	}
	c->host = p;
	c->host_next = p->conns;
	p->conns = c;
	p->nconns++;
	if (!timer_pending(&p->timer))
		loop_timer_arm(d->loop, &p->timer, heartbeat_interval(d, p));
	return p;
}

/* C leaves its path; the last one out frees it. */
static void path_unlink(struct rackd *d, struct conn *c)
{
	struct live_peer *p = c->host, **pp;
	struct conn **cp;

	if (!p)
		return;
	for (cp = &p->conns; *cp && *cp != c; cp = &(*cp)->host_next)
		;
	if (*cp)
		*cp = c->host_next;
	if (p->carrier == c)
		p->carrier = NULL;
	c->host = NULL;
	c->host_next = NULL;
	if (--p->nconns)
		return;
	loop_timer_cancel(d->loop, &p->timer);
	for (pp = &d->live->peers; *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
	free(p);
}

void live_set_ops(struct rackd *d, const struct live_ops *ops)
{
	d->live->ops = ops;
}

void live_attach(struct rackd *d, struct conn *c)
{
	struct live_peer *p = path_link(d, c, false);

	if (p->suspended) {
		struct conn *one[1] = { c };

		d->live->ops->path_down(d, one, 1);
	}
}

void live_restore(struct rackd *d, struct conn *c, bool suspended,
		  uint64_t held_ms)
{
	struct live_peer *p = path_link(d, c, suspended);

	if (suspended)
		p->suspended = true;
	if (p->suspended)
		d->live->ops->held_again(d, c, held_ms);
}

void live_detach(struct rackd *d, struct conn *c)
{
	if (c->hold) {
		/* Leaves its path while held (its socket is closing): it is
		 * no longer anyone's to abort. */
		d->live->ops->unhold(d, c);
		loop_timer_cancel(d->loop, &c->expiry);
		c->state = CONN_CONNECTED;
	}
	path_unlink(d, c);
}

void live_event(void *arg, enum event_type type, struct conn *c,
		const char *reason)
{
	(void)reason;
	if (type == EVENT_CONNECTED)
		live_attach(arg, c);
	else
		live_detach(arg, c);
}

struct live_peer *live_move(struct rackd *d, struct conn *c, bool suspended)
{
	path_unlink(d, c);
	return path_link(d, c, suspended);
}

/*
 * Our address towards the peer of suspended path P is now SRC (the old
 * one was removed, or a route changed): every connection of P moves to
 * (SRC, peer), spliced in one transaction before anything is sent from
 * there, and asks the peer to follow. P is freed.
 */
void live_migrate(struct rackd *d, struct live_peer *p, const struct addr *src)
{
	char o[ADDR_STRLEN], n[ADDR_STRLEN], r[ADDR_STRLEN];
	unsigned count, moving = 0;
	struct conn **batch = path_conns(p, &count);
	struct live_peer *np = NULL;

	log_info("path %s -> %s: local address now %s: moving %u "
		 "connection(s)", addr_format(&p->local, o, sizeof(o)),
		 addr_format(&p->remote, r, sizeof(r)),
		 addr_format(src, n, sizeof(n)), count);
	for (unsigned i = 0; i < count; i++) {
		struct conn *c = batch[i];
		struct endpoint wl = { .addr = *src, .port = c->wire_local.port };
		enum splice_tuple t = splice_tuple_check(d, c, &wl,
							 &c->wire_remote, NULL);

		/* Another connection or socket travels there already: two
		 * cannot share a tuple. This one stays where it is, held. */
		if (t != SPLICE_TUPLE_FREE) {
			conn_log(c, t == SPLICE_TUPLE_CONN ?
				 "cannot move: its new endpoints are another "
				 "connection's" :
				 "cannot move: a socket rackd does not track "
				 "has its new endpoints");
			d->live->stats.move_collisions++;
			continue;
		}
		conn_set_wire(&d->conns, c, &wl, NULL);
		batch[moving++] = c;
	}
	if (splice_apply(d, batch, moving)) {
		/* Nothing sent from an address the kernel cannot map back:
		 * the next tick tries again. */
		for (unsigned i = 0; i < moving; i++) {
			struct endpoint wl = { .addr = p->local,
					       .port = batch[i]->wire_local.port };

			conn_set_wire(&d->conns, batch[i], &wl, NULL);
		}
		free(batch);
		loop_timer_arm(d->loop, &p->timer, d->cfg->retry_interval_ms);
		return;
	}
	/* Some stay (another connection travels where they would go): the
	 * path lives on with them, and tries again later. */
	if (moving < count)
		loop_timer_arm(d->loop, &p->timer, d->cfg->retry_interval_ms);
	for (unsigned i = 0; i < moving; i++) {
		d->live->ops->moving(batch[i]);
		np = live_move(d, batch[i], true);	/* frees p at the end */
	}
	free(batch);
	d->live->stats.migrations++;
	if (np)
		live_probe_now(d, np);
}

void live_probe_now(struct rackd *d, struct live_peer *p)
{
	if (!path_link_usable(d, p)) {
		/* The link's return will try it at once. */
		loop_timer_arm(d->loop, &p->timer, heartbeat_interval(d, p));
		return;
	}

	/* From new endpoints the peer has to be asked at once; the tick
	 * repeats it every interval after that. */
	probe(d, p);
	p->fast = LIVE_FAST_RETRIES;
	loop_timer_arm(d->loop, &p->timer, LIVE_FAST_RETRY_MS);
}

static void live_heard(struct rackd *d, struct live_peer *p)
{
	if (p->parked)
		return;		/* each resumes on its own step */
	p->last_heard = loop_now();
	if (p->suspended)
		live_resume(d, p);
}

void live_heard_path(struct rackd *d, struct conn *c)
{
	if (c->host)
		live_heard(d, c->host);
}

/* A heartbeat or its answer for C. */
static uint32_t live_input(struct rackd *d, struct conn *c,
			   const struct packet *p, const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	if (!c->host || !e || !e->keyed) {
		d->edp.unexpected++;
		return NF_DROP;
	}
	if (!channel_numbered_valid(d, c, m))
		return NF_DROP;
	/* How many hops away the peer's segments come from: a reset from
	 * elsewhere on the path is not its own (rstguard.h). */
	if (p->ttl)
		e->peer_ttl = p->ttl;
	if (m->type == EDP_HEARTBEAT) {
		/* Counters only grow: an old heartbeat is a replay. */
		if (m->counter <= e->hb_in) {
			d->live->stats.replayed++;
			return NF_DROP;
		}
		e->hb_in = m->counter;
		d->live->stats.heartbeats_in++;
		live_send(d, c, EDP_HEARTBEAT_ACK, m->counter);
		/*
		 * The peer's heartbeat proves only that its segments reach
		 * us: behind a NAT that forgot the flow (or a one-way
		 * fault) ours may still be lost. A path is heard again by
		 * an answer to its own probe; a suspended one probes at
		 * once, and our answer tells the peer.
		 */
		if (c->host->suspended) {
			d->live->stats.heard_one_way++;
			if (loop_now() - c->host->last_probe >=
			    LIVE_FAST_RETRY_MS && path_link_usable(d, c->host))
				probe(d, c->host);
		}
		return NF_DROP;
	} else {
		if (m->counter > e->hb_out || m->counter <= e->hb_acked) {
			d->live->stats.replayed++;
			return NF_DROP;
		}
		e->hb_acked = m->counter;
		d->live->stats.heartbeat_acks_in++;
	}
	live_heard(d, c->host);
	return NF_DROP;
}

int live_handle_messages(struct rackd *d)
{
	int ret = channel_handle(d, EDP_HEARTBEAT, live_input);

	return ret ? ret : channel_handle(d, EDP_HEARTBEAT_ACK, live_input);
}

static uint32_t addr_ifindex(const struct rackd *d, const struct addr *a)
{
	for (const struct live_addr *la = d->live->addrs; la; la = la->next)
		if (addr_equal(&la->addr, a))
			return la->ifindex;
	return 0;
}

/* Every suspended path tries to reach its peer at once. */
static void retry_now(struct rackd *d)
{
	for (struct live_peer *p = d->live->peers; p; p = p->next) {
		if (!p->suspended)
			continue;
		p->fast = LIVE_FAST_RETRIES;
		loop_timer_arm(d->loop, &p->timer, 0);
	}
}

/*
 * A local address was removed: the paths leaving from it are suspended at
 * once and look for another way to their peers right away; the sockets
 * bound to it keep it, on "lo", for as long as they live.
 */
static void local_address_gone(struct rackd *d, const struct addr *a)
{
	if (local_is_kept(d->local, a))
		return;		/* our own, going away with its last user */
	for (struct conn *c = d->conns.head; c; c = c->next)
		if (c->host && addr_equal(&c->local.addr, a))
			splice_keep_local(d, c);
	for (struct live_peer *p = d->live->peers; p; p = p->next) {
		if (!addr_equal(&p->local, a))
			continue;
		d->live->stats.addr_suspensions++;
		live_suspend(d, p, "local address removed");
		loop_timer_arm(d->loop, &p->timer, 0);
	}
}

void live_addr_event(struct rackd *d, const struct rtnl_addr_event *ev)
{
	struct live_addr **pp = &d->live->addrs;

	while (*pp && !addr_equal(&(*pp)->addr, &ev->prefix.addr))
		pp = &(*pp)->next;
	if (ev->removed) {
		if (*pp) {
			struct live_addr *gone = *pp;

			*pp = gone->next;
			free(gone);
		}
		local_address_gone(d, &ev->prefix.addr);
		return;
	}
	/* A new address may be the way back to a suspended peer. */
	if (!local_is_kept(d->local, &ev->prefix.addr))
		retry_now(d);
	if (!*pp) {
		*pp = xcalloc(1, sizeof(**pp));
		(*pp)->addr = ev->prefix.addr;
	}
	(*pp)->ifindex = ev->ifindex;
}

static struct live_link **find_down(struct rackd *d, uint32_t ifindex)
{
	struct live_link **pp = &d->live->down;

	while (*pp && (*pp)->ifindex != ifindex)
		pp = &(*pp)->next;
	return pp;
}

/* Whether P's local address is on a link that can carry anything now. */
static bool path_link_usable(struct rackd *d, const struct live_peer *p)
{
	uint32_t ifindex = addr_ifindex(d, &p->local);

	return !ifindex || !*find_down(d, ifindex);
}

void live_link_event(struct rackd *d, const struct rtnl_link_event *ev)
{
	bool usable = ev->up && ev->carrier && !ev->removed;
	struct live_link **pp = find_down(d, ev->ifindex);

	if (!usable && !*pp && !ev->removed) {
		*pp = xcalloc(1, sizeof(**pp));
		(*pp)->ifindex = ev->ifindex;
	} else if ((usable || ev->removed) && *pp) {
		struct live_link *up = *pp;

		*pp = up->next;
		free(up);
	}

	for (struct live_peer *p = d->live->peers; p; p = p->next) {
		if (addr_ifindex(d, &p->local) != ev->ifindex)
			continue;
		if (!usable && !p->suspended) {
			d->live->stats.link_suspensions++;
			live_suspend(d, p, "link lost its carrier");
		}
	}
	/* A link coming up may be the way back to any suspended peer. */
	if (usable)
		retry_now(d);
}

unsigned live_suspended_count(const struct rackd *d)
{
	unsigned n = 0;

	for (const struct live_peer *p = d->live->peers; p; p = p->next)
		if (p->suspended)
			n += p->nconns;
	return n;
}

void live_free(struct rackd *d)
{
	while (d->live->addrs) {
		struct live_addr *a = d->live->addrs;

		d->live->addrs = a->next;
		free(a);
	}
	while (d->live->down) {
		struct live_link *l = d->live->down;

		d->live->down = l->next;
		free(l);
	}
}

enum live_wait live_waiting_for(struct rackd *d, const struct conn *c)
{
	const struct live_peer *p = c->host;

	if (!p || !p->suspended)
		return LIVE_WAIT_NONE;
	if (p->parked)
		return LIVE_WAIT_MIGRATION;
	if (!path_link_usable(d, p))
		return LIVE_WAIT_LINK;
	if (!p->reopening)
		return LIVE_WAIT_HEARTBEATS;
	/* Its latest SYN was reset, not lost. */
	if (c->edp && c->edp->rc_refusals &&
	    c->edp->rc_refused_ms >= c->edp->rc_last_ms)
		return LIVE_WAIT_PEER;
	return LIVE_WAIT_PATH;
}

const char *live_wait_name(enum live_wait w)
{
	static const char *const names[] = {
		[LIVE_WAIT_NONE] = "none",
		[LIVE_WAIT_LINK] = "link_down",
		[LIVE_WAIT_PATH] = "path_silent",
		[LIVE_WAIT_PEER] = "reopen_refused",
		[LIVE_WAIT_HEARTBEATS] = "reopen_off",
		[LIVE_WAIT_MIGRATION] = "migrating",
	};

	return names[w];
}

uint64_t live_suspended_ms(const struct conn *c)
{
	if (!c->host || !c->host->suspended)
		return 0;
	return loop_now() - c->host->suspended_at;
}
