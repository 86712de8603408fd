// SPDX-License-Identifier: GPL-2.0-only
/*
 * nft/flowset.c for its script writers (flowset_declare, flowset_write:
 * a new table's adopt set elements). Its netlink socket and set-element
 * messages are renamed out of the way: nft.c keeps the flow sets.
 */
#include "flowset.h"

int real_flowset_open(struct flowset **fs);
void real_flowset_close(struct flowset *fs);
int real_flowset_update(struct flowset *fs, const char *name,
			const struct flowset_flow *flows, unsigned n,
			uint32_t timeout_ms, bool add);

#define flowset_open real_flowset_open
#define flowset_close real_flowset_close
#define flowset_update real_flowset_update
#include "../../../nft/flowset.c"
