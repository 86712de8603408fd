/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wintrack's flow table and pf-style TCP window tracking (wtrack_*), kept
 * apart from its NFQUEUE and nft plumbing (wintrack.c) so that each reads
 * on its own. See wintrack.c for the tool and its usage.
 */
#ifndef RACKS_WINTRACK_H
#define RACKS_WINTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nfqbox.h"

/* Why a segment was dropped (or accepted): indexes into wtrack_stats. */
enum wtrack_verdict {
	WT_CREATED,		/* a SYN opened a new flow */
	WT_TRACKED,		/* inside the window (pf's first branch) */
	WT_LOOSE,		/* pf's loose branch: closing or not yet open */
	WT_ACCEPT_MAX,
	WT_NO_STATE = WT_ACCEPT_MAX, /* mid-stream segment of an unknown flow */
	WT_SEQ_AHEAD,		/* data beyond the receiver's window */
	WT_SEQ_BEHIND,		/* more than one window back */
	WT_ACK_AHEAD,		/* acks data never sent */
	WT_ACK_BEHIND,		/* acks more than MAXACKWINDOW back */
	WT_RST_INEXACT,		/* RST whose seq is not the expected one */
	WT_NODATA_SEQ,		/* --strict: zero-length segment out of window */
	WT_MAX,
};

struct wtrack_stats {
	uint64_t verdicts[WT_MAX];
	uint64_t racks_accepted, racks_dropped;
	uint64_t flows, flows_reused, bytes, gso, max_len;
};

struct wtrack;

struct wtrack *wtrack_new(bool strict);
void wtrack_free(struct wtrack *t);
/* Decide one forwarded segment; on a drop, log one line to LOG. */
enum wtrack_verdict wtrack_segment(struct wtrack *t,
				   const struct nfqbox_segment *s, FILE *log);
bool wtrack_verdict_accepts(enum wtrack_verdict v);
const char *wtrack_verdict_name(enum wtrack_verdict v);
const struct wtrack_stats *wtrack_stats(const struct wtrack *t);
/* The per-flow counters as a JSON array (at most LIMIT flows). */
void wtrack_flows_json(const struct wtrack *t, FILE *out, size_t limit);

#endif
