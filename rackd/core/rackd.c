// SPDX-License-Identifier: GPL-2.0-only
#include "rackd.h"

#include "loop.h"

void rackd_forget(struct rackd *d, struct conn *c)
{
	event_post(&d->events, EVENT_GONE, c, NULL);
	loop_timer_cancel(d->loop, &c->expiry);
	conn_remove(&d->conns, c);
}
