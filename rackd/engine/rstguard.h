/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Resets that are not the peer's. A NAT that forgot a busy connection (an
 * idle timeout, a flushed or failed-over table) answers the segments it no
 * longer maps with resets of its own: for the end outside the NAT, one
 * with the exact sequence number its socket expects ends the connection
 * before racks has noticed anything, where a dropped segment only
 * suspends it. A reset arriving at a managed connection with a different
 * hop count from the one the peer's authenticated segments arrive with
 * came from elsewhere on the path: it is held back, and the path probed.
 * Heard from again (the peer rackd answers, or a reconnection re-opens
 * the path), the reset is dropped; not heard within twice suspend_after
 * it reaches the socket after all, as it came: a genuine reset whose hop
 * count changed (a route change) is late, never lost.
 *
 * Inbound resets reach rackd at all only through input_ctl (ruleset.c);
 * the queue's bypass lets them by when rackd is gone.
 */
#ifndef RACKS_RSTGUARD_H
#define RACKS_RSTGUARD_H

#include <stdint.h>

#include "conn.h"
#include "event.h"
#include "packet.h"
#include "timer.h"

struct rstguard_stats {
	uint64_t held;		/* resets held back (not the peer's hops) */
	uint64_t dropped;	/* held ones dropped: the path was heard */
	uint64_t delivered;	/* held ones delivered late: it was not */
};

struct rstguard_state {
	struct conn **held;	/* connections with a reset held back */
	unsigned nheld, cap;
	struct timer timer;
	struct rstguard_stats stats;
};

struct rackd;

void rstguard_init(struct rackd *d);
void rstguard_free(struct rackd *d);
/* The verdict on reset P for C (NULL: no connection of ours). */
uint32_t rstguard_inbound(struct rackd *d, struct conn *c,
			  const struct packet *p);
/* Subscriber (ARG: the rackd): a connection gone takes its reset along. */
#define RSTGUARD_EVENTS (EVENT_BIT(EVENT_GONE) | EVENT_BIT(EVENT_CLOSING) | \
			 EVENT_BIT(EVENT_CLOSE) | EVENT_BIT(EVENT_RELEASED) | \
			 EVENT_BIT(EVENT_ABORT))
void rstguard_event(void *arg, enum event_type type, struct conn *c,
		    const char *reason);

#endif
