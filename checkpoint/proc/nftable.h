/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nftables tables of rackckpt's own making or of CRIU's, through the nft
 * command (nftables, a dependency of rackd and of CRIU's network lock):
 * CRIU leaves its lock table "inet CRIU-<run id>" after a dump, which
 * must go before the dumped tree's connections may flow on this host
 * again; a group restore fences the connections between its trees with a
 * table of its own until every tree is back (restore.c).
 */
#ifndef RACKCKPT_NFTABLE_H
#define RACKCKPT_NFTABLE_H

#include <stddef.h>

/* Delete table SPEC ("inet NAME"): 0, -ENOENT if there is none, -EIO
 * (with nft's message in ERR) if nft failed otherwise. */
int nftable_delete(const char *spec, char *err, size_t errlen);
/* Run the nft script TEXT (nft -f -): 0, or -EIO with nft's message. */
int nftable_load(const char *text, char *err, size_t errlen);

#endif
