/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The handshakes a racks client offered to this host. Only the SYN-ACKs
 * of these reach rackd (to carry racks' answer); every other SYN-ACK the
 * host sends passes in the kernel, so a client without racks meets a
 * server whose handshake never leaves the kernel.
 *
 * rackd adds a flow here while it holds the client's SYN, before the
 * verdict lets the kernel answer it. The element expires by itself after
 * OFFERSET_TIMEOUT_MS, which covers the SYN-ACK's first retransmissions.
 * The write is a single set-element message on a netlink socket of its
 * own (no nft parser on a SYN's path).
 */
#ifndef RACKS_OFFERSET_H
#define RACKS_OFFERSET_H

#include <stdio.h>

#include "addr.h"

#define OFFERSET_TIMEOUT_MS 10000

struct offerset;

/* 0, or -errno. */
int offerset_open(struct offerset **os);
void offerset_close(struct offerset *os);

/* Divert the SYN-ACK from LOCAL to REMOTE; 0, or -errno. */
int offerset_add(struct offerset *os, const struct endpoint *local,
		 const struct endpoint *remote);

/* The set declarations, for the ruleset script. */
void offerset_declare(FILE *f);

#endif
