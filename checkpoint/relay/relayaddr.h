/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where the destination of a dump reaches the relayer of a child of
 * `rackckpt run` (relayfile.h): the child's relay file, its relayed
 * descriptors checked against what the child holds, and an address of
 * this host that no socket of the child's tree is bound to (restored,
 * those become local on the destination's lo, which could then not
 * reach this host there): --relay-addr, the address the relay file names
 * (a keeper's: the wrapper is on another host), or the first global one
 * (IPv4 first).
 */
#ifndef RACKCKPT_RELAYADDR_H
#define RACKCKPT_RELAYADDR_H

#include <stddef.h>
#include <sys/types.h>

#include "procsock.h"
#include "relayfile.h"

/* 1 with RI and the address in OUT when PID is relayed, 0 when it is
 * not, -errno (said) when it cannot move as it is. */
int relayaddr_check(pid_t pid, const struct procsock_set *socks,
		    const char *explicit, struct relay_info *ri, char *out,
		    size_t outlen);

#endif
