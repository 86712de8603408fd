/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The xt NFQUEUE target (revision 3, with bypass) as an nft_compat
 * expression, for kernels without the native nft queue statement.
 * libnftables cannot create compat expressions, so this uses libnftnl.
 */
#ifndef RACKS_XT_QUEUE_H
#define RACKS_XT_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

/* Append "counter; NFQUEUE --queue-num NUM [--queue-bypass]" to CHAIN
 * of table inet TABLE in one netlink transaction. Returns 0 or -errno.
 * BYPASS: without a listener the packet passes (rackd never blackholes);
 * without it the packet is dropped (a test middlebox fails closed). */
int xt_queue_add_rule(const char *table, const char *chain, uint16_t num,
		      bool bypass);
/* The same rule before every rule CHAIN has (a placeholder that stood
 * in for it). */
int xt_queue_insert_rule(const char *table, const char *chain, uint16_t num,
			 bool bypass);

#endif
