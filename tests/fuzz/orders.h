/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the handshake tables (orders.c: every order; orders_fates.c:
 * handshakes that never finish) share: the fuzzer's world started and
 * stopped as fuzz_engine.c does it, time moved, and the reports.
 */
#ifndef RACKS_ORDERS_H
#define RACKS_ORDERS_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "rackd.h"

/* Which end of the connection is our rackd (the real engine); the other
 * is peer.c's model of a rackd. */
enum role { REAL_SERVER, REAL_CLIENT };

/* The row being run, for a report (and for an abort on the way). */
extern const char *orders_current;

/* Which rackds meet (orders_start()): a peer rackd with host keys and
 * our default trust (accept-new), the first time the hosts meet (a host
 * handshake) or once they share a host pair (a derived key); or a peer
 * rackd before host keys and trust anonymous (the anonymous exchange). */
enum orders_case { CASE_HANDSHAKE, CASE_DERIVED, CASE_ANONYMOUS, CASE_MAX };
extern enum orders_case orders_case;
extern const char *const orders_case_names[CASE_MAX];

/* A fresh rackd with the default configuration (trust anonymous in
 * CASE_ANONYMOUS) over a reset world, its randomness from SEED; in
 * CASE_DERIVED, a host pair shared for flow N's remote address; and its
 * end. */
void orders_start(struct rackd *d, unsigned seed, unsigned n);
void orders_stop(struct rackd *d);
/* A step of the event loop: the host's backlog, the timers due, the
 * invariants; the clock moved to WHEN first (never back). */
void orders_settle(struct rackd *d);
void orders_advance_to(struct rackd *d, uint64_t when);

/* Our entry for flow N (fz_flow_endpoints()), or NULL. */
struct conn *orders_conn(struct rackd *d, unsigned n);
/* A failed check of the current row: said, and false. */
__attribute__((format(printf, 1, 2)))
bool orders_fail(const char *fmt, ...);
/* C's state and why it is not managed ("-"), for reports. */
const char *orders_state(const struct conn *c);
const char *orders_why(const struct conn *c);

/* orders_fates.c: runs its table; how many failed, RAN set. */
unsigned orders_run_fates(struct rackd *d, unsigned *ran);

#endif
