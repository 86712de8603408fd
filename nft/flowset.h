/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * racks' flow sets: sets in its own table keyed by a flow (local address
 * . local port . remote address . remote port), one set per address
 * family (NAME4 and NAME6), with per-element timeouts. The offered SYN-ACKs
 * (offerset.h) and the flows being adopted (adoptset.h) are two of them.
 *
 * Elements are written on a netlink socket of the flowset's own, as
 * set-element messages built with libnftnl: no nft parser on a packet's
 * path, and any number of flows in one transaction.
 */
#ifndef RACKS_FLOWSET_H
#define RACKS_FLOWSET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"

struct flowset;

/* A flow, as its socket sees it. */
struct flowset_flow {
	struct endpoint local, remote;
};

/* 0, or -errno. */
int flowset_open(struct flowset **fs);
void flowset_close(struct flowset *fs);

/*
 * Add N flows to the sets NAME4/NAME6 (each element expires after
 * TIMEOUT_MS), or delete them (ADD false, TIMEOUT_MS unused), in one
 * transaction per family and chunk; the kernel has applied it when this
 * returns. 0, or -errno: a deletion that found no element (it expired)
 * is -ENOENT.
 */
int flowset_update(struct flowset *fs, const char *name,
		   const struct flowset_flow *flows, unsigned n,
		   uint32_t timeout_ms, bool add);

/* The declarations of NAME4 and NAME6, for the ruleset script. */
void flowset_declare(FILE *f, const char *name);
/* An "add element" command for FLOW in NAME4 or NAME6, for a script. */
void flowset_write(FILE *f, const char *name, const struct flowset_flow *flow,
		   uint32_t timeout_ms);

#endif
