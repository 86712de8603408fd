// SPDX-License-Identifier: GPL-2.0-only
#include "migrate.h"

#include <errno.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "event.h"
#include "hold.h"
#include "keystate.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "reconnect.h"
#include "splice.h"

/* Hold C unless it is held already (one transaction for one). */
static void hold_one(struct rackd *d, struct conn *c)
{
	struct conn *one[1] = { c };

	hold_begin(d, one, 1);
}

static void send_away(struct rackd *d, struct conn *c)
{
	if (channel_send_numbered(d, c, EDP_AWAY, ++c->edp->hb_out) == 0)
		d->migrate->away_out++;
}

bool migrate_exportable(const struct conn *c)
{
	return c->migration == MIG_LEAVING ||
	       (c->migration == MIG_NONE && c->host && conn_managed(c));
}

int migrate_export(struct rackd *d, struct conn *c)
{
	struct live_peer *p;

	if (!migrate_exportable(c))
		return -ENOTCONN;
	if (c->migration == MIG_LEAVING)
		return 0;
	/* Held here first: from now on its socket's segments stop, so the
	 * sequence numbers exported are the ones the checkpoint will have. */
	c->migration = MIG_LEAVING;
	c->away_acked = false;
	p = live_move(d, c, true);
	hold_one(d, c);
	send_away(d, c);
	loop_timer_arm(d->loop, &p->timer, MIGRATE_AWAY_RETRY_MS);
	d->migrate->exported++;
	conn_log(c, "exported: its process is being checkpointed");
	event_post(&d->events, EVENT_EXPORT, c, NULL);
	return 0;
}

/* C leaves its parked path for the ordinary one and asks its peer to
 * follow it to where it is now; the answer resumes it. */
static void rejoin(struct rackd *d, struct conn *c)
{
	struct live_peer *p;

	c->migration = MIG_NONE;
	reconnect_begin(c);
	p = live_move(d, c, true);
	reconnect_send(d, c);
	if (p->suspended)
		live_probe_now(d, p);
}

void migrate_unexport(struct rackd *d, struct conn *c)
{
	if (c->migration != MIG_LEAVING)
		return;
	rejoin(d, c);
	d->migrate->unexported++;
	conn_log(c, "export undone: resuming here");
	event_post(&d->events, EVENT_UNEXPORT, c, NULL);
}

void migrate_release(struct rackd *d, struct conn *c)
{
	if (c->migration != MIG_LEAVING)
		return;
	d->migrate->released++;
	conn_log(c, "released: restored elsewhere");
	event_post(&d->events, EVENT_RELEASE, c, NULL);
	/* Its socket went with the checkpoint (TCP repair closes it
	 * without a word to the peer): nothing is sent for it again. */
	rackd_forget(d, c);
}

int migrate_import(struct rackd *d, struct conn **conns, unsigned n,
		   char *err, size_t errlen)
{
	struct addr src;
	int ret;

	for (unsigned i = 0; i < n; i++) {
		struct conn *c = conns[i];
		char a[ADDR_STRLEN];

		ret = local_source(&c->wire_remote.addr, &src);
		if (ret) {
			snprintf(err, errlen, "no route to the peer at %s: %s",
				 addr_format(&c->wire_remote.addr, a,
					     sizeof(a)), strerror(-ret));
			return ret;
		}
		/* Its segments leave from this host's address, with the
		 * socket's own port: the peer follows on RECONNECT. */
		struct endpoint wl = { src, c->local.port };
		struct conn *other;

		switch (splice_tuple_check(d, c, &wl, &c->wire_remote,
					   &other)) {
		case SPLICE_TUPLE_FREE:
			break;
		case SPLICE_TUPLE_CONN:
			snprintf(err, errlen, "connection %llu would travel "
				 "between the endpoints of connection %llu",
				 (unsigned long long)c->id,
				 (unsigned long long)other->id);
			return -EADDRINUSE;
		case SPLICE_TUPLE_SOCKET:
			snprintf(err, errlen, "connection %llu would travel "
				 "between the endpoints of a socket rackd "
				 "does not manage", (unsigned long long)c->id);
			return -EADDRINUSE;
		}
		conn_set_wire(&d->conns, c, &wl, NULL);
		c->migration = MIG_ARRIVING;
		c->arrive_by = loop_now() + MIGRATE_ARRIVE_MS;
		reconnect_begin(c);
	}
	ret = splice_apply(d, conns, n);
	if (ret) {
		snprintf(err, errlen, "splicing failed: %s", strerror(-ret));
		return ret;
	}
	for (unsigned i = 0; i < n; i++) {
		struct conn *c = conns[i];

		/* CRIU binds the restored socket to its old address. */
		if (!c->kept_local) {
			c->kept_local = true;
			local_adopt(d->local, &c->local.addr);
		}
		live_move(d, c, true);
		d->migrate->imported++;
		conn_log(c, "imported: waiting for its socket");
		event_post(&d->events, EVENT_IMPORT, c, NULL);
	}
	/* Whatever the restored sockets send before their peers follow is
	 * answered here, with a closed window. */
	hold_begin(d, conns, n);
	return 0;
}

int migrate_arrived(struct rackd *d, struct conn *c)
{
	if (c->migration != MIG_ARRIVING)
		return -EINVAL;
	rejoin(d, c);
	d->migrate->arrived++;
	conn_log(c, "socket restored: reconnecting");
	event_post(&d->events, EVENT_ARRIVED, c, NULL);
	return 0;
}

/* The peer's end moves: hold our socket until it reconnects. */
static void peer_away(struct rackd *d, struct conn *c, uint32_t counter)
{
	struct live_peer *p;

	if (c->migration == MIG_NONE) {
		c->migration = MIG_AWAY;
		p = live_move(d, c, true);
		hold_one(d, c);
		/* Nothing to send on a parked path: its timer idles. */
		loop_timer_cancel(d->loop, &p->timer);
		conn_log(c, "peer away: held until it reconnects");
		event_post(&d->events, EVENT_AWAY, c, NULL);
	}
	channel_send_numbered(d, c, EDP_AWAY_ACK, counter);
}

/* An AWAY or AWAY_ACK for C. */
static uint32_t migrate_input(struct rackd *d, struct conn *c,
			      const struct packet *p, const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	(void)p;
	if (!c->host || !e || !e->keyed) {
		d->migrate->refused++;
		return NF_DROP;
	}
	if (!channel_numbered_valid(d, c, m))
		return NF_DROP;
	if (m->type == EDP_AWAY) {
		/* Both ends moving at once is not supported: the second
		 * one's dump waits for an acknowledgement that never comes. */
		if (m->counter <= e->hb_in ||
		    (c->migration != MIG_NONE && c->migration != MIG_AWAY)) {
			d->migrate->refused++;
			return NF_DROP;
		}
		e->hb_in = m->counter;
		d->migrate->away_in++;
		peer_away(d, c, m->counter);
		return NF_DROP;
	}
	if (m->counter > e->hb_out || m->counter <= e->hb_acked) {
		d->migrate->refused++;
		return NF_DROP;
	}
	e->hb_acked = m->counter;
	d->migrate->away_acks_in++;
	if (c->migration == MIG_LEAVING && !c->away_acked) {
		c->away_acked = true;
		conn_log(c, "peer holds it: ready for the checkpoint");
	}
	return NF_DROP;
}

int migrate_handle_messages(struct rackd *d)
{
	int ret = channel_handle(d, EDP_AWAY, migrate_input);

	return ret ? ret : channel_handle(d, EDP_AWAY_ACK, migrate_input);
}

void migrate_tick(struct rackd *d, struct live_peer *p)
{
	bool waiting = false;

	for (struct conn *c = p->conns; c; c = c->host_next) {
		if (c->migration == MIG_LEAVING && !c->away_acked) {
			send_away(d, c);
			waiting = true;
		}
	}
	if (waiting)
		loop_timer_arm(d->loop, &p->timer, MIGRATE_AWAY_RETRY_MS);
}
