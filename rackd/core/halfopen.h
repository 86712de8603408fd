/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Half-open entries: connections a SYN from outside made in the table,
 * whose sender has not yet shown that it receives what is sent to its
 * address (a set-up message acknowledging our SYN-ACK, or the kernel's
 * socket established). Anyone can send SYNs from any address, so these
 * are what a SYN flood makes rackd keep; they are bounded, in all and
 * per source prefix (a /24 for IPv4, a /48 for IPv6), and the oldest of
 * them makes room for a new one. A real client's entry that had to go is
 * adopted later (adopt.h), as after a handshake whose offer was lost.
 */
#ifndef RACKS_HALFOPEN_H
#define RACKS_HALFOPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "addr.h"

#define HALFOPEN_V4_PREFIX 24
#define HALFOPEN_V6_PREFIX 48

struct halfopen_prefix;

/* What an entry (a struct conn's member ho) holds of its half-openness. */
struct halfopen_link {
	bool linked;
	struct addr src;	/* its SYN's source */
	struct halfopen_link *prev, *next;
};

struct halfopen {
	struct halfopen_link *head, *tail;	/* oldest first */
	unsigned count;
	struct halfopen_prefix **buckets;	/* counts per source prefix */
	size_t nbuckets;
	unsigned char key[16];
};

void halfopen_init(struct halfopen *h);
void halfopen_free(struct halfopen *h);
/*
 * Before one more half-open entry from SRC: the entry to let go so that
 * at most MAX are half-open in all and PER_PREFIX from SRC's prefix (the
 * oldest of that prefix, or the oldest of all), or NULL if there is room.
 */
struct halfopen_link *halfopen_victim(const struct halfopen *h,
				      const struct addr *src, unsigned max,
				      unsigned per_prefix);
/* L, an entry whose SYN came from SRC, is half-open from now on. */
void halfopen_add(struct halfopen *h, struct halfopen_link *l,
		  const struct addr *src);
/* L proved its address, or goes away; nothing if it is not half-open. */
void halfopen_remove(struct halfopen *h, struct halfopen_link *l);
/* Half-open entries from ADDR's prefix. */
unsigned halfopen_prefix_count(const struct halfopen *h,
			       const struct addr *addr);

#endif
