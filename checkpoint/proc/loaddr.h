/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Old addresses made usable on the destination: a restored listening
 * socket is bound again to the address it had, which must be local. Each
 * missing one is added to "lo" as a host route (/32, /128) the way rackd
 * keeps its addresses (common/lohost.h), and removed again if the restore
 * fails.
 */
#ifndef RACKCKPT_LOADDR_H
#define RACKCKPT_LOADDR_H

#include <stdbool.h>

#include "addr.h"


/* Whether A is an address of some interface of this namespace. */
bool loaddr_is_local(const struct addr *a);
/* Add A to lo (0, -EEXIST if it is there already, or -errno). */
int loaddr_add(const struct addr *a);
int loaddr_del(const struct addr *a);
/* The first global address of this namespace (IPv4 first, then IPv6;
 * not loopback, link-local or a host route kept on lo): 0 or -ENOENT. */
int loaddr_first_global(struct addr *a);

#endif
