/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fake kernel I/O for testing an engine module alone (OpenBGPD's
 * regress unittests do the same): a clock the test moves and the timers
 * armed on it, raw-socket sends and ICMP unreachables recorded instead of
 * sent, tcp_info answers the test sets, nft held-set updates recorded,
 * and a notifier subscriber that records every event. A test includes
 * the module's source and stubs that module's engine neighbours itself.
 */
#ifndef RACKS_FAKE_H
#define RACKS_FAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "event.h"
#include "rackd.h"
#include "sockdiag.h"

#define FAKE_MAX 256

/* The clock (monotonic ms); fake_advance() runs the timers due on the
 * way, each at its own deadline. */
extern uint64_t fake_now;
void fake_advance(uint64_t ms);

/* Segments "sent" through the raw socket. */
struct fake_segment {
	struct endpoint src, dst;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t window;
	size_t optlen;
	uint8_t options[40];	/* the first 40 bytes of each */
	size_t paylen;
	uint8_t payload[64];	/* the first 64 bytes */
};
extern struct fake_segment fake_sent[FAKE_MAX];
extern unsigned fake_nsent;
extern unsigned fake_unreachables;	/* inject_unreachable() calls */

/* What sockdiag_progress() answers (or -fake_progress_err), and how
 * often it was asked. */
extern struct sockdiag_progress fake_progress;
extern int fake_progress_err;
extern unsigned fake_progress_calls;
/* What sockdiag_state() answers (a TCP state, or -errno); counted in
 * fake_progress_calls too. */
extern int fake_sock_state;

/* ruleset_held() calls: connections added and removed, errors to give. */
extern unsigned fake_held_added, fake_held_removed;
extern int fake_ruleset_err;

/* Events posted since fake_rackd(), in order. */
struct fake_event {
	enum event_type type;
	struct conn *c;
};
extern struct fake_event fake_events[FAKE_MAX];
extern unsigned fake_nevents;
unsigned fake_count(enum event_type type);

/* A fresh daemon: default configuration, empty table, zeroed engine
 * state, the recording subscriber, clock at 1000 ms, records cleared. */
void fake_rackd(struct rackd *d);
void fake_rackd_free(struct rackd *d);
/* A managed connection LOCAL -> REMOTE ("addr:port"): connected, keyed,
 * confirmed; its expiry timer counts in fake_expired. */
struct conn *fake_conn(struct rackd *d, const char *local, const char *remote,
		       bool client);
extern unsigned fake_expired;

#endif
