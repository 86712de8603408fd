/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Failure detection, per path (local address, remote address) rather than
 * per connection: 10,000 connections between two hosts cost one heartbeat
 * per interval. A heartbeat is a zero-length segment of one of the path's
 * connections carrying racks' option, with a counter and a MAC under that
 * connection's key; the peer rackd answers it and consumes both, so no
 * socket sees them. A path not heard from for suspend_after is suspended
 * (hold.c), at once when rtnetlink reports its interface without carrier;
 * hearing from it again resumes every connection on it.
 */
#ifndef RACKS_LIVENESS_H
#define RACKS_LIVENESS_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "conn.h"
#include "event.h"
#include "option.h"
#include "packet.h"
#include "rtnl.h"
#include "timer.h"

struct live_peer {
	struct addr local, remote;
	uint64_t last_heard;	/* monotonic ms */
	bool suspended;
	bool parked;		/* its connections are migrating (migrate.h):
				 * no heartbeats, no resumption */
	uint8_t fast;		/* quick retries left after a local event */
	uint64_t suspended_at;	/* monotonic ms, while suspended */
	uint64_t last_probe;	/* monotonic ms */
	uint32_t tries;		/* probes sent while suspended */
	uint8_t backoff;	/* doublings of the wait between them */
	bool reopening;		/* its connections re-open it with SYNs */
	/* The last heartbeat found no connection with an open socket (all
	 * closed since the last sweep): nothing to suspend until the sweep
	 * has forgotten them or a live one carries the next. */
	bool carrierless;
	unsigned nconns;
	struct conn *conns;	/* linked through conn->host_next */
	struct conn *carrier;	/* the last heartbeat's connection */
	struct timer timer;
	struct live_peer *next;
};

struct live_addr {
	struct addr addr;
	uint32_t ifindex;
	struct live_addr *next;
};

/* Links rtnetlink reported without carrier (or down): nothing is sent
 * from their addresses, so that the kernel's neighbour resolution is not
 * left retrying at its slow pace when the carrier returns. */
struct live_link {
	uint32_t ifindex;
	struct live_link *next;
};

struct live_stats {
	uint64_t heartbeats_out, heartbeats_in, heartbeat_acks_in;
	uint64_t replayed;
	uint64_t suspensions, resumes, aborted;
	uint64_t hold_answers;
	uint64_t hold_clamped;		/* snd_una corrected down by a segment */
	uint64_t resume_kicks;		/* RTO backoff steps wound back */
	uint64_t windows_closed;	/* peer segments rewritten to window 0 */
	uint64_t link_suspensions;	/* suspended at once by rtnetlink */
	uint64_t resumed_by_traffic;	/* the socket heard from the peer first */
	uint64_t hold_unacceptable;	/* peer segments of a held connection
					 * outside its windows: no evidence */
	uint64_t addr_suspensions;	/* suspended at once: address removed */
	uint64_t migrations;		/* paths moved to a new local address */
	uint64_t move_collisions;	/* connections that could not move:
					 * another one travels there */
	uint64_t reconnects_unanswered;	/* connections whose reconnections
					 * went unanswered on a path that
					 * answers heartbeats (logged once) */
	uint64_t reopens;		/* suspended paths re-opened with
					 * SYNs on their own endpoints */
	uint64_t heard_one_way;		/* the peer's heartbeats reached a
					 * path whose own went unanswered */
	uint64_t carriers_gone;		/* heartbeat carriers found closed
					 * before the sweep (skipped) */
	uint64_t carrierless;		/* suspensions not made: every
					 * connection of the path closed */
};

struct rackd;

/*
 * What a path's news means for its connections: the engine modules above
 * liveness (hold, reconnect, migrate) decide, through the callbacks
 * main.c installs; liveness never calls them by name.
 */
struct live_ops {
	/* The path went silent (or lost its link): hold these. */
	void (*path_down)(struct rackd *d, struct conn **conns, unsigned n);
	/* The path was heard again: resume these (the peer knows them at
	 * this path's endpoints). */
	void (*path_up)(struct rackd *d, struct conn **conns, unsigned n);
	/* A parked path's timer: its connections are migrating. */
	void (*parked_tick)(struct rackd *d, struct live_peer *p);
	/* C must ask its peer to follow it to its wire endpoints; false
	 * when held back to pace many of them (try again soon). */
	bool (*reconnect)(struct rackd *d, struct conn *c);
	/* C's wire endpoints change: unconfirmed until the peer follows. */
	void (*moving)(struct conn *c);
	/* Heartbeat carriers were found without an open socket (closed
	 * since the last sweep): have them forgotten soon. */
	void (*carriers_gone)(struct rackd *d);
	/* C's path re-opens: unconfirmed until the peer answers C's
	 * reconnection on its own endpoints, or its segments arrive. */
	void (*reopen)(struct conn *c);
	/* C, from a state file, joins a suspended path: held again, for
	 * HELD_MS already. */
	void (*held_again)(struct rackd *d, struct conn *c, uint64_t held_ms);
	/* C leaves its path while held: its hold goes. */
	void (*unhold)(struct rackd *d, struct conn *c);
};

struct live_state {
	const struct live_ops *ops;
	struct live_peer *peers;
	struct live_addr *addrs;	/* local addresses and their links */
	struct live_link *down;		/* links without carrier */
	struct live_stats stats;
};

/* How path news reaches the modules above (see struct live_ops). */
void live_set_ops(struct rackd *d, const struct live_ops *ops);
/* A connection became connected: it joins its path's heartbeats. */
void live_attach(struct rackd *d, struct conn *c);
/* A connection goes away. */
void live_detach(struct rackd *d, struct conn *c);
/* Subscriber (ARG: the rackd): a connected connection joins its path,
 * one closing or gone leaves it. */
#define LIVE_EVENTS (EVENT_BIT(EVENT_CONNECTED) | EVENT_BIT(EVENT_CLOSING) | \
		     EVENT_BIT(EVENT_GONE))
void live_event(void *arg, enum event_type type, struct conn *c,
		const char *reason);
/* C, from a state file, joins its path, suspended (for HELD_MS) or not. */
void live_restore(struct rackd *d, struct conn *c, bool suspended,
		  uint64_t held_ms);
/* C's wire endpoints changed: it joins their path (created suspended or
 * not, as SUSPENDED says), which is returned. */
struct live_peer *live_move(struct rackd *d, struct conn *c, bool suspended);
/* Heartbeat or reconnect on P now, rather than at its next tick. */
void live_probe_now(struct rackd *d, struct live_peer *p);
/* Move a suspended path's connections to local address SRC. */
void live_migrate(struct rackd *d, struct live_peer *p,
		  const struct addr *src);
/* HEARTBEAT and HEARTBEAT_ACK go to liveness (channel.h); 0 or -errno. */
int live_handle_messages(struct rackd *d);
/* Evidence that C's path works again (other than a heartbeat). */
void live_heard_path(struct rackd *d, struct conn *c);
/* rtnetlink events: links losing carrier suspend their paths at once. */
void live_link_event(struct rackd *d, const struct rtnl_link_event *ev);
void live_addr_event(struct rackd *d, const struct rtnl_addr_event *ev);
unsigned live_suspended_count(const struct rackd *d);

/* What a suspended connection waits for (rackctl list, show). */
enum live_wait {
	LIVE_WAIT_NONE,		/* not suspended */
	LIVE_WAIT_LINK,		/* no usable link or route towards the peer */
	LIVE_WAIT_PATH,		/* the path is silent; re-opening it */
	LIVE_WAIT_PEER,		/* our re-opening SYNs are reset by the path:
				 * only the peer can re-open it */
	LIVE_WAIT_HEARTBEATS,	/* the path is silent; reopen = no */
	LIVE_WAIT_MIGRATION,	/* its process is migrating (parked) */
};
enum live_wait live_waiting_for(struct rackd *d, const struct conn *c);
const char *live_wait_name(enum live_wait w);
/* Milliseconds C's path has been suspended, 0 when it is not. */
uint64_t live_suspended_ms(const struct conn *c);
void live_free(struct rackd *d);

#endif
