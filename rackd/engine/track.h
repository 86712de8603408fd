/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The decision for every diverted packet: SYNs and SYN-ACKs become
 * connection table entries and carry racks' offer (added to ours,
 * removed from the peer's), racks' messages go to the channel
 * (channel.c, which hands each to its type's handler), probe FINs to
 * answer.c. An entry still in its handshake at setup_timeout asks the
 * kernel: finished without the SYN-ACK rackd needed, it is adopted
 * (adopt.h); its socket gone, or its handshake not over by syn_timeout,
 * it is forgotten, as are entries whose socket the kernel no longer has.
 */
#ifndef RACKS_TRACK_H
#define RACKS_TRACK_H

#include "queue.h"
#include "rackd.h"

/* NFQUEUE callback: decide one packet (always a verdict). */
void track_packet(void *arg, struct queue *q, const struct queue_packet *qp);
/* Compare the table with the kernel's sockets; drop the closed ones. */
void track_sweep(struct rackd *d);
/* The same for the control socket: skipped if a sweep ran very recently. */
void track_sweep_fresh(struct rackd *d);
#define TRACK_FRESH_MS 200

/* Before a new entry for a connection with SRC: the oldest half-open
 * entry goes if half-open entries, or the table, are full (halfopen.h).
 * Whether there is room now. */
bool track_make_room(struct rackd *d, const struct addr *src);
/* A connection of the state file, keyed by its socket's endpoints (its
 * expiry timer ready): state.c fills in the rest. */
struct conn *track_restore(struct rackd *d, const struct endpoint *local,
			   const struct endpoint *remote, enum conn_dir dir);

#endif
