/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rackd's own nftables table, "inet racks", and nothing else: created in
 * one transaction that also replaces a stale table from a crashed run,
 * removed on shutdown. Rules are static; policy lives in sets.
 *
 * Packets are handed to user space either by the native "queue"
 * statement (CONFIG_NFT_QUEUE) or, on kernels without it, by the xt
 * NFQUEUE target through nft_compat, which only libnftnl can express.
 */
#ifndef RACKS_RULESET_H
#define RACKS_RULESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "table.h"

/*
 * Install the table for CFG, choosing the queue statement per MODE
 * (normally cfg->queue_mode; a reload passes the mode found at start so
 * that the kernel is not probed again). STATE (may be NULL), element
 * commands for the sets and maps, goes into the same transaction, so a
 * reload never leaves running connections without their holds and
 * splices. On success *used says which was taken (QUEUE_MODE_NATIVE or
 * QUEUE_MODE_XT) and *replaced whether a
 * stale table was found. On failure err holds one line.
 */
int ruleset_install(const struct config *cfg, enum queue_mode mode,
		    const char *state, enum queue_mode *used,
		    bool *replaced, char *err, size_t errlen);
/* Remove the table; 0 also when it was already gone. */
int ruleset_remove(char *err, size_t errlen);

struct conn;

/* Add (or remove) connections to the sets of held flows, whose segments
 * are diverted while they are suspended. One transaction; with CHAINS,
 * the base chains' rules are rewritten too (ruleset_chains_write, keeping
 * the splicing rules as SPLICED says): the held-flow rules go in with the
 * first connection held and out with the last one released. */
int ruleset_held(const struct config *cfg, struct conn *const *conns,
		 unsigned n, bool add, bool chains, bool spliced, bool adopting,
		 char *err, size_t errlen);
void ruleset_held_write(FILE *f, struct conn *const *conns, unsigned n,
			bool add);
/* Rewrite the rules of the base chains (output, prerouting, splice_out):
 * with SPLICED, the splicing rules; with HELD, those diverting held flows;
 * with ADOPTING, those diverting flows being adopted (adoptset.h).
 * Whoever changes one of the three passes the others' current state. */
void ruleset_chains_write(FILE *f, const struct config *cfg, bool spliced,
			  bool held, bool adopting);
/* The base chains' rules for a table no rackd serves (left for the next
 * one): the splices' rewrites alone (SPLICED), nothing diverted. */
void ruleset_unserved_write(FILE *f, bool spliced);

/* Run an nft SCRIPT (element updates) as one transaction; on failure err
 * holds its first error line. */
int ruleset_run(const char *script, char *err, size_t errlen);
/* Let go of what ruleset_run() keeps between scripts (at exit). */
void ruleset_close(void);

/* The nft script ruleset_install() runs (exposed for the golden test). */
char *ruleset_script(const struct config *cfg, bool native_queue);

#endif
