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
 * The sets (offered4, offered6) are flow sets (flowset.h): a single
 * set-element message on a netlink socket of their own, no nft parser on
 * a SYN's path.
 */
#ifndef RACKS_OFFERSET_H
#define RACKS_OFFERSET_H

#include <stdio.h>

#include "addr.h"
#include "flowset.h"

#define OFFERSET_TIMEOUT_MS 10000

/* Divert the SYN-ACK from LOCAL to REMOTE, written on OFFERS (a flowset
 * of its own, flowset_open()); 0, or -errno. */
int offerset_add(struct flowset *offers, const struct endpoint *local,
		 const struct endpoint *remote);

/* Stop diverting that SYN-ACK (its entry had to go); 0, or -errno
 * (-ENOENT: the element expired already). */
int offerset_remove(struct flowset *offers, const struct endpoint *local,
		    const struct endpoint *remote);

/* The set declarations, for the ruleset script. */
void offerset_declare(FILE *f);

#endif
