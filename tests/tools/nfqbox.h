/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nfqbox: the NFQUEUE plumbing of the test-bed's user-space middleboxes
 * (wintrack.c, disorder.c). It binds a queue, appends the rule that feeds
 * it to a chain the caller made (native queue statement, else the xt
 * NFQUEUE target, never with bypass: a dead middlebox drops, so a test
 * fails closed), parses each queued packet's IP and TCP headers, batches
 * verdicts, and runs one poll loop with a signalfd (SIGUSR1: write the
 * stats; TERM/INT: write them and stop) and the caller's deadlines. A
 * verdict may be given at once or later (a packet held in the kernel's
 * queue until its owner lets it go); the kernel takes them in any order.
 */
#ifndef RACKS_NFQBOX_H
#define RACKS_NFQBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_PSH 0x08
#define TH_ACK 0x10
#define TH_URG 0x20

/* One forwarded TCP segment's headers, as nfqbox_parse reads them. */
struct nfqbox_segment {
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

/* A flow's two ends, [0] the one first seen sending (the SYN's sender
 * when its SYN came first), for the tools' flow tables. */
struct nfqbox_tuple {
	int family;
	uint8_t addr[2][16];
	uint16_t port[2];
};

/* The same bucket (of NBUCKETS) for both directions of a segment's flow. */
size_t nfqbox_bucket(const struct nfqbox_segment *s, size_t nbuckets);
/* Which end of T sent S (0 or 1), or -1 when S is not of T's flow. */
int nfqbox_tuple_from(const struct nfqbox_tuple *t,
		      const struct nfqbox_segment *s);
/* T becomes S's flow, its sender end 0. */
void nfqbox_tuple_set(struct nfqbox_tuple *t, const struct nfqbox_segment *s);

/* Parse a packet's IP and TCP headers (CAPLEN bytes copied of WIRELEN):
 * 0, 1 for a packet that is no TCP segment to judge (a fragment, another
 * protocol), or -EINVAL. */
int nfqbox_parse(const uint8_t *p, size_t caplen, size_t wirelen,
		 struct nfqbox_segment *s);

struct nfqbox;

struct nfqbox_ops {
	/* One queued packet: its first CAPLEN bytes (of WIRELEN), and its
	 * headers when nfqbox_parse read them (else SEG is NULL). The
	 * callee gives it a verdict (nfqbox_verdict), now or later. */
	void (*packet)(void *arg, uint32_t id, const uint8_t *pkt,
		       size_t caplen, size_t wirelen,
		       const struct nfqbox_segment *seg);
	/* Milliseconds until the callee's next deadline, -1 for none;
	 * its due work is done in due(). Both may be NULL. */
	int (*timeout)(void *arg);
	void (*due)(void *arg);
	/* Write the stats: at start, on SIGUSR1 and at exit. */
	void (*stats)(void *arg);
};

struct nfqbox_counters {
	uint64_t received, recv_errors, enobufs;
	/* The kernel's counts of the queue (/proc/net/netfilter/
	 * nfnetlink_queue): queued, dropped for a full queue, dropped
	 * because our socket's buffer overflowed. */
	unsigned kernel_queued, kernel_full, kernel_user;
};

/* Bind queue NUM, copying COPY_RANGE bytes of each packet; GSO: take GSO
 * packets whole (their checksums may then be partial) rather than
 * segmented. Exits on failure (a test tool's start-up). */
struct nfqbox *nfqbox_open(uint16_t num, uint32_t copy_range, bool gso);
void nfqbox_free(struct nfqbox *q);
/* Append "counter queue num NUM" to chain CHAIN of table inet TABLE:
 * "native", or "xt" (the kernel lacks the native statement). Exits on
 * failure. */
const char *nfqbox_rule_add(struct nfqbox *q, const char *table,
			    const char *chain);
void nfqbox_verdict(struct nfqbox *q, uint32_t id, bool accept);
/* Serve the queue until SIGTERM or SIGINT (OPS with ARG). */
void nfqbox_run(struct nfqbox *q, const struct nfqbox_ops *ops, void *arg);
void nfqbox_counters(const struct nfqbox *q, struct nfqbox_counters *c);
/* The counters as JSON members ("received": N, ..., no braces). */
void nfqbox_counters_json(const struct nfqbox *q, FILE *out);

/* Stats written atomically: open PATH's ".tmp" sibling (NULL and a
 * warning on failure), then close and rename it over PATH. */
FILE *nfqbox_stats_open(const char *path);
void nfqbox_stats_close(FILE *f, const char *path);

#endif
