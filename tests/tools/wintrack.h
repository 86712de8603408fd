/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wintrack's flow table and pf-style TCP window tracking (track_*), kept
 * apart from its NFQUEUE and nft plumbing (wintrack.c) so that each reads
 * on its own. See wintrack.c for the tool and its usage.
 */
#ifndef RACKS_WINTRACK_H
#define RACKS_WINTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Why a segment was dropped (or accepted): indexes into track_stats. */
enum track_verdict {
	TV_CREATED,		/* a SYN opened a new flow */
	TV_TRACKED,		/* inside the window (pf's first branch) */
	TV_LOOSE,		/* pf's loose branch: closing or not yet open */
	TV_NOT_TRACKED,		/* fragment or unparsable: not pf's concern */
	TV_ACCEPT_MAX,
	TV_NO_STATE = TV_ACCEPT_MAX, /* mid-stream segment of an unknown flow */
	TV_SEQ_AHEAD,		/* data beyond the receiver's window */
	TV_SEQ_BEHIND,		/* more than one window back */
	TV_ACK_AHEAD,		/* acks data never sent */
	TV_ACK_BEHIND,		/* acks more than MAXACKWINDOW back */
	TV_RST_INEXACT,		/* RST whose seq is not the expected one */
	TV_NODATA_SEQ,		/* --strict: zero-length segment out of window */
	TV_MALFORMED,
	TV_MAX,
};

struct track_segment {
	int family;		/* 4 or 6 */
	uint8_t saddr[16], daddr[16];
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint16_t win;
	uint8_t flags;		/* TH_* bits of the header */
	uint8_t wscale;		/* 0x80 | shift when the option is present */
	bool racks;		/* carries TCP option 254 */
	uint8_t racks_type;	/* its message type, with racks' ExID */
	uint32_t len;		/* payload bytes (a GSO packet's whole length) */
};

struct track_stats {
	uint64_t verdicts[TV_MAX];
	uint64_t racks_accepted, racks_dropped;
	uint64_t flows, flows_reused, bytes, gso, max_len;
};

struct track;

struct track *track_new(bool strict);
void track_free(struct track *t);
/* Decide one forwarded segment; on a drop, log one line to LOG. */
enum track_verdict track_segment(struct track *t,
				 const struct track_segment *s, FILE *log);
bool track_verdict_accepts(enum track_verdict v);
const char *track_verdict_name(enum track_verdict v);
const struct track_stats *track_stats(const struct track *t);
/* The per-flow counters as a JSON array (at most LIMIT flows). */
void track_flows_json(const struct track *t, FILE *out, size_t limit);

#endif
