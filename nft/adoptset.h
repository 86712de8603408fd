/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The connections being adopted (rackd/engine/adopt.h): while rackd
 * learns one's live sequence numbers, the segments its socket sends are
 * diverted to rackd, which reads them and lets them go unchanged.
 *
 * Two sets, adopt4 and adopt6, by local and remote endpoint; elements
 * expire by themselves after ADOPTSET_TIMEOUT_MS, so a flow is never
 * diverted for long even if rackd forgets to take it out. The rule that
 * consults them sits in the output base chain only while some flow is
 * being learnt (ruleset_chains_write(), ADOPTING): every other segment
 * of the host meets no lookup. Writes are batched: one netlink
 * transaction for any number of flows.
 */
#ifndef RACKS_ADOPTSET_H
#define RACKS_ADOPTSET_H

#include <stdbool.h>
#include <stdio.h>

#include "addr.h"
#include "config.h"

#define ADOPTSET_TIMEOUT_MS 10000

struct adoptset;

/* A flow to add or delete: the socket's local and remote endpoint. */
struct adoptset_flow {
	struct endpoint local, remote;
};

/* 0, or -errno. */
int adoptset_open(struct adoptset **as);
void adoptset_close(struct adoptset *as);

/* Add (or delete) N flows in one transaction; 0, or -errno. */
int adoptset_update(struct adoptset *as, const struct adoptset_flow *flows,
		    unsigned n, bool add);

/* An element command for FLOW, for a script that refills the sets. */
void adoptset_write(FILE *f, const struct adoptset_flow *flow);
/* The set declarations, for the ruleset script. */
void adoptset_declare(FILE *f);
/* The rules of the output chain CHAIN ("add rule" lines). */
void adoptset_rules(FILE *f, const struct config *cfg, const char *chain);

#endif
