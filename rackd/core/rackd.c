// SPDX-License-Identifier: GPL-2.0-only
#include "rackd.h"

#include "loop.h"

bool rackd_unauth_query(struct rackd *d)
{
	if (ratelimit_take(&d->unauth_queries, loop_now()))
		return true;
	d->stats.unauth_paced++;
	return false;
}

void rackd_forget(struct rackd *d, struct conn *c)
{
	event_post(&d->events, EVENT_GONE, c, NULL);
	loop_timer_cancel(d->loop, &c->expiry);
	conn_remove(&d->conns, c);
}
