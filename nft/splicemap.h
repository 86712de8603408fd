/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Splicing in the kernel: the maps of "inet racks" that rewrite a spliced
 * connection's segments between its socket's endpoints and the endpoints
 * it travels between now, statelessly, so that its data never has to
 * reach user space. Sequence numbers never change (a reconnection keeps
 * the connection's own), so addresses and the remote port are all there
 * is to rewrite; nft fixes the checksums itself.
 *
 * Outgoing, in a route chain after rackd's own (the socket's tuple S =
 * local, lport, remote, rport is looked up in three steps, each on the
 * tuple as the previous step left it):
 *
 *   out_rport[S]                        -> tcp dport   (wire rport)
 *   out_raddr[local, lport, remote, wire rport]  -> ip daddr
 *   out_laddr[local, lport, wire remote, wire rport] -> ip saddr
 *
 * Incoming, in prerouting before conntrack, the mirror image starting
 * from the wire tuple. A miss at the first step leaves a segment alone;
 * all three entries of a connection are added and removed together.
 */
#ifndef RACKS_NFT_SPLICEMAP_H
#define RACKS_NFT_SPLICEMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"

struct splicemap_entry {
	struct endpoint local, remote;		/* the socket's */
	struct endpoint wire_local, wire_remote;	/* on the wire */
};

/* The maps' declarations, for the table script (both families). */
void splicemap_declare(FILE *f);
/* The outgoing rewriting chain (route, hook output), empty: for the
 * table script. */
void splicemap_chains(FILE *f);
/*
 * The rewriting rules, written by ruleset_chains_write(): outgoing (OUT),
 * CHAIN (splice_out) is flushed first and rewritten whole; incoming, the
 * rules are appended where the caller is in CHAIN (prerouting). With ADD
 * false none: the rules are there only while some connection is spliced,
 * since their first lookup would otherwise cost every TCP segment of the
 * host (measured: about 0.8 us per round trip on veth). The chains are
 * flushed, never deleted: unregistering a hook makes the kernel drop every
 * packet waiting in the queue. PASS_MARK (0: none) is the mark of the
 * segments rackd sends past its splices, which no rule rewrites.
 */
void splicemap_rules(FILE *f, const char *chain, bool out, bool add,
		     uint32_t pass_mark);
/* Append the commands deleting (ADD false) or adding entry E. */
void splicemap_write(FILE *f, const struct splicemap_entry *e, bool add);

#endif
