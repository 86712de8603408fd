/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Splicing a connection onto new endpoints: its socket keeps its own
 * tuple for life, while its segments travel between the endpoints the
 * two rackds last agreed on (conn->wire_local / wire_remote). The kernel
 * translates between the two with the maps of nft/splicemap.h, so the
 * data of a spliced connection stays out of user space too; sequence
 * numbers are the connection's own and need no translation.
 */
#ifndef RACKS_SPLICE_H
#define RACKS_SPLICE_H

#include <stdio.h>

#include "conn.h"
#include "event.h"

struct rackd;

struct splice_stats {
	unsigned mapped;	/* connections with map entries */
	uint64_t updates;	/* connections whose maps were rewritten */
	uint64_t errors;	/* nft refused an update */
};

/* Bring the maps of CONNS in line with their wire endpoints, in one
 * transaction; returns 0 or -errno (then nothing changed). */
int splice_apply(struct rackd *d, struct conn *const *conns, unsigned n);
/* The socket's local address went away: keep it usable on "lo". */
void splice_keep_local(struct rackd *d, struct conn *c);
/* C goes away: its map entries and its kept address with it. */
void splice_forget(struct rackd *d, struct conn *c);
/* Subscriber (ARG: the rackd): splice_forget() when C closes or goes. */
#define SPLICE_EVENTS (EVENT_BIT(EVENT_CLOSING) | EVENT_BIT(EVENT_GONE))
void splice_event(void *arg, enum event_type type, struct conn *c,
		  const char *reason);
/* Whether C's segments may travel between WL and WR: no other
 * connection travels there (*OTHER is set to it when one does), and no
 * socket rackd does not track (older than rackd, or not adopted yet) has
 * that tuple. Either would share it with C, and the kernel could not tell
 * the two apart: the maps would rewrite the other's segments into C's
 * socket. C's own socket may have it (a move back home). */
enum splice_tuple {
	SPLICE_TUPLE_FREE,
	SPLICE_TUPLE_CONN,	/* another connection's (*OTHER) */
	SPLICE_TUPLE_SOCKET,	/* a socket rackd does not track */
};
enum splice_tuple splice_tuple_check(struct rackd *d, const struct conn *c,
				     const struct endpoint *wl,
				     const struct endpoint *wr,
				     struct conn **other);
/* The map entries of every spliced connection, as nft commands: a new
 * table gets them in the transaction that creates it (its chains' rules
 * from ruleset_chains_write()). */
void splice_write_state(struct rackd *d, FILE *f);

#endif
