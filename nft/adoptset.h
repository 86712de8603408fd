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
 * of the host meets no lookup. They are flow sets (flowset.h): one
 * netlink transaction for any number of flows.
 */
#ifndef RACKS_ADOPTSET_H
#define RACKS_ADOPTSET_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "flowset.h"

#define ADOPTSET_TIMEOUT_MS 10000

/* Add (or delete) N flows, written on AS (a flowset of its own,
 * flowset_open()); 0, or -errno (-ENOENT: some had expired). */
int adoptset_update(struct flowset *as, const struct flowset_flow *flows,
		    unsigned n, bool add);

/* An element command for FLOW, for a script that refills the sets. */
void adoptset_write(FILE *f, const struct flowset_flow *flow);
/* The set declarations, for the ruleset script. */
void adoptset_declare(FILE *f);
/* The rules of the output chain CHAIN ("add rule" lines). */
void adoptset_rules(FILE *f, const struct config *cfg, const char *chain);

#endif
