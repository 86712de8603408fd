// SPDX-License-Identifier: GPL-2.0-only
#include "splice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "event.h"
#include "local.h"
#include "log.h"
#include "rackd.h"
#include "ruleset.h"
#include "sockdiag.h"
#include "splicemap.h"

static void entry_of(const struct conn *c, bool installed,
		     struct splicemap_entry *e)
{
	e->local = c->local;
	e->remote = c->remote;
	e->wire_local = installed ? c->mapped_local : c->wire_local;
	e->wire_remote = installed ? c->mapped_remote : c->wire_remote;
}

static bool needs_update(const struct conn *c)
{
	if (!c->mapped)
		return conn_spliced(c);
	return !endpoint_equal(&c->mapped_local, &c->wire_local) ||
	       !endpoint_equal(&c->mapped_remote, &c->wire_remote);
}

/* How many connections will be mapped once CONNS are processed. */
static unsigned mapped_after(const struct rackd *d, struct conn *const *conns,
			     unsigned n, bool add)
{
	long count = d->splice->mapped;

	for (unsigned i = 0; i < n; i++)
		count += (add && conn_spliced(conns[i])) - conns[i]->mapped;
	return count < 0 ? 0 : (unsigned)count;
}

/* After a failed removal of CONNS' entries: each entry alone (whatever
 * is gone already fails alone), and the rules if AFTER is none. */
static void unsplice_each(struct rackd *d, struct conn *const *conns,
			  unsigned n, unsigned after)
{
	for (unsigned i = 0; i <= n; i++) {
		char *buf = NULL, err[256];
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct splicemap_entry e;

		if (!f)
			fatalx(EXIT_NOMEM, "out of memory");
		if (i < n && conns[i]->mapped) {
			entry_of(conns[i], true, &e);
			splicemap_write(f, &e, false);
		} else if (i == n && d->splice->mapped > 0 && after == 0) {
			ruleset_chains_write(f, d->cfg, false, d->held > 0,
					     d->adopt_rules);
		}
		fputc('\0', f);
		if (fclose(f) != 0)
			fatalx(EXIT_NOMEM, "out of memory");
		if (buf[0] && ruleset_run(buf, err, sizeof(err)))
			log_debug("unsplicing: %s", err);
		free(buf);
	}
}

/*
 * One transaction: the installed entries out, the wanted ones in, and the
 * rewriting chains created with the first spliced connection and deleted
 * with the last. A failed removal still counts as done: its connection
 * goes away regardless.
 */
static int run(struct rackd *d, struct conn *const *conns, unsigned n,
	       bool del, bool add)
{
	char *buf = NULL, err[256];
	size_t len = 0;
	unsigned changed = 0, after = mapped_after(d, conns, n, add);
	FILE *f = open_memstream(&buf, &len);
	int ret = 0;

	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	if (d->splice->mapped == 0 && after > 0)
		ruleset_chains_write(f, d->cfg, true, d->held > 0,
				     d->adopt_rules);
	for (unsigned i = 0; i < n; i++) {
		const struct conn *c = conns[i];
		struct splicemap_entry e;

		if (!needs_update(c) && del && add)
			continue;
		if (del && c->mapped) {
			entry_of(c, true, &e);
			splicemap_write(f, &e, false);
		}
		if (add && conn_spliced(c)) {
			entry_of(c, false, &e);
			splicemap_write(f, &e, true);
		}
		changed++;
	}
	if (d->splice->mapped > 0 && after == 0)
		ruleset_chains_write(f, d->cfg, false, d->held > 0,
				     d->adopt_rules);
	fputc('\0', f);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	if (buf[0])
		ret = ruleset_run(buf, err, sizeof(err));
	free(buf);
	if (ret) {
		d->splice->errors++;
		log_warnx("splicing %u connection(s): %s", changed, err);
		if (add)
			return ret;
		/* A removal is all or nothing: one entry the table no longer
		 * has keeps the rest, and the rules, in. They go one by
		 * one, so that the rules never outlive the last splice. */
		unsplice_each(d, conns, n, after);
	}
	d->splice->updates += changed;
	d->splice->mapped = after;
	for (unsigned i = 0; i < n; i++) {
		struct conn *c = conns[i];

		c->mapped = add && conn_spliced(c);
		c->mapped_local = c->wire_local;
		c->mapped_remote = c->wire_remote;
		if (changed)
			event_post(&d->events, EVENT_SAVED, c, NULL);
	}
	return ret;
}

int splice_apply(struct rackd *d, struct conn *const *conns, unsigned n)
{
	return n ? run(d, conns, n, true, true) : 0;
}

enum splice_tuple splice_tuple_check(struct rackd *d, const struct conn *c,
				     const struct endpoint *wl,
				     const struct endpoint *wr,
				     struct conn **other)
{
	struct conn *o = conn_lookup_wire(&d->conns, wl, wr);
	int state;

	if (other)
		*other = o;
	if (o && o != c)
		return SPLICE_TUPLE_CONN;
	if (endpoint_equal(wl, &c->local) && endpoint_equal(wr, &c->remote))
		return SPLICE_TUPLE_FREE;
	/* Another connection's socket, spliced elsewhere now: its splice
	 * may end (its peer comes back) whatever the kernel says of the
	 * socket at this moment. */
	o = conn_lookup(&d->conns, wl, wr);
	if (o && o != c) {
		if (other)
			*other = o;
		return SPLICE_TUPLE_CONN;
	}
	/* A socket in TIME_WAIT or closing has nothing left to receive;
	 * when the kernel cannot say, the tuple is taken: the move is tried
	 * again later, where sharing a tuple would not heal. */
	state = sockdiag_state(wl, wr);
	if (state == -ENOENT || state == TCP_STATE_TIME_WAIT ||
	    state == TCP_STATE_CLOSE)
		return SPLICE_TUPLE_FREE;
	return SPLICE_TUPLE_SOCKET;
}

void splice_keep_local(struct rackd *d, struct conn *c)
{
	if (c->kept_local)
		return;
	c->kept_local = true;
	local_keep(d->local, &c->local.addr);
}

void splice_forget(struct rackd *d, struct conn *c)
{
	if (c->mapped)
		run(d, &c, 1, true, false);
	if (c->kept_local) {
		c->kept_local = false;
		local_unkeep(d->local, &c->local.addr);
	}
}

void splice_event(void *arg, enum event_type type, struct conn *c,
		  const char *reason)
{
	(void)type;
	(void)reason;
	splice_forget(arg, c);
}

void splice_write_state(struct rackd *d, FILE *f)
{
	for (struct conn *c = d->conns.head; c; c = c->next) {
		struct splicemap_entry e;

		if (!c->mapped)
			continue;
		entry_of(c, true, &e);
		splicemap_write(f, &e, true);
	}
}
