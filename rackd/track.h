/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Handshake tracking: turns the SYNs and SYN-ACKs rackd is shown into
 * connection table entries, and forgets entries whose handshake never
 * completed or whose socket the kernel no longer has.
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
/* Release a connection's timers and free it. */
void track_forget(struct rackd *d, struct conn *c);

#endif
