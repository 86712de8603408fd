/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * disorder's flow table and its held segments (dhold_*, disorder_hold.c),
 * apart from its rules, counters and queue (disorder.c). See disorder.c
 * for the tool and its usage.
 */
#ifndef RACKS_DISORDER_H
#define RACKS_DISORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfqbox.h"

/* What a segment is, for the rules' choice and the counters. */
enum dis_kind {
	DK_SYN_OPT,		/* SYN carrying option 254 (racks' offer) */
	DK_SYN,			/* plain SYN */
	DK_SYNACK_OPT,		/* SYN-ACK carrying option 254 */
	DK_SYNACK,		/* plain SYN-ACK */
	DK_ACK,			/* the handshake's third segment, plain */
	DK_SETUP,		/* racks' KEY, CONFIRM or DONE (zero-length) */
	DK_MESSAGE,		/* any other zero-length racks message */
	DK_DATA,		/* a segment with payload */
	DK_OTHER,		/* pure ACKs, FINs, RSTs */
	DK_MAX,
};

/* Where a segment held for the next one of its direction leaves. */
enum dis_next {
	DN_NONE,
	DN_BEFORE,		/* just ahead of that next segment */
	DN_AFTER,		/* just behind it: the two swap */
};

/* A segment held until its due time: an original, whose verdict waits
 * (ID), or a copy to inject (PKT, LEN bytes, owned). */
struct dheld {
	uint64_t due_ms, arrival;
	uint32_t id;
	uint8_t *pkt;
	size_t len;
	struct dflow *flow;	/* NULL: untracked */
	int from;
	enum dis_kind kind;
	enum dis_next next;	/* held for the next segment too */
};

/* A flow as disorder follows it: its handshake, to tell its third
 * segment; per direction the arrival number of the last segment it
 * released, to tell a segment that was overtaken, and the one segment
 * that waits for the next (its copy in the heap is its deadline). */
struct dflow {
	struct dflow *next;
	struct nfqbox_tuple t;	/* end 0: the first seen sending */
	uint32_t isn[2];	/* each end's SYN's seq */
	uint8_t seen;		/* DF_* */
	uint64_t released[2];	/* 1 + arrival number; 0: none yet */
	bool waiting[2];
	struct dheld waiter[2];
};

#define DF_SYN 0x01		/* end 0's SYN */
#define DF_SYNACK 0x02		/* end 1's SYN-ACK */
#define DF_ACK 0x04		/* end 0's third segment */

struct dhold;

struct dhold *dhold_new(size_t max_flows);
void dhold_free(struct dhold *h);
/* S's flow (made on first sight; NULL past max_flows) and in *FROM the
 * end that sent it. */
struct dflow *dhold_flow(struct dhold *h, const struct nfqbox_segment *s,
			 int *from);
size_t dhold_flows(const struct dhold *h, uint64_t *untracked);
/* Hold E until E->due_ms (ties in order of arrival). Returns 0 or
 * -ENOMEM. */
int dhold_push(struct dhold *h, const struct dheld *e);
/* The earliest held segment's due time; false when none is held. */
bool dhold_next(const struct dhold *h, uint64_t *due_ms);
/* Take the earliest held segment if it is due at NOW_MS. */
bool dhold_pop(struct dhold *h, uint64_t now_ms, struct dheld *e);
size_t dhold_count(const struct dhold *h);

#endif
