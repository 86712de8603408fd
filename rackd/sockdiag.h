/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's own view of TCP sockets (NETLINK_SOCK_DIAG, inet_diag):
 * lets rackd notice a closed connection without diverting its FIN/RST.
 */
#ifndef RACKS_SOCKDIAG_H
#define RACKS_SOCKDIAG_H

#include <stdint.h>

#include "addr.h"

struct sockdiag_entry {
	struct endpoint local, remote;
	uint8_t state;		/* TCP_ESTABLISHED, ... */
	uint32_t inode;
};

typedef void (*sockdiag_fn)(void *arg, const struct sockdiag_entry *e);

/* Call FN for every non-listening TCP socket (IPv4 and IPv6) of this
 * network namespace. Returns 0 only when both dumps completed. */
int sockdiag_dump(sockdiag_fn fn, void *arg);

#endif
