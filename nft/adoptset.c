// SPDX-License-Identifier: GPL-2.0-only
#include "adoptset.h"

#include "table.h"

#define ADOPTSET_NAME "adopt"

void adoptset_declare(FILE *f)
{
	flowset_declare(f, ADOPTSET_NAME);
}

void adoptset_write(FILE *f, const struct flowset_flow *flow)
{
	flowset_write(f, ADOPTSET_NAME, flow, ADOPTSET_TIMEOUT_MS);
}

void adoptset_rules(FILE *f, const struct config *cfg, const char *chain)
{
	/* rackd's own segments (its channel, its ACKs to held sockets)
	 * carry its mark and are none of this. */
	for (int v6 = 0; v6 < 2; v6++)
		fprintf(f, "add rule %s %s %s meta mark != 0x%08x ip%s saddr . "
			   "tcp sport . ip%s daddr . tcp dport @adopt%c goto "
			   "divert\n", RULESET_FAMILY, RULESET_TABLE, chain,
			cfg->mark, v6 ? "6" : "", v6 ? "6" : "",
			v6 ? '6' : '4');
}

int adoptset_update(struct flowset *as, const struct flowset_flow *flows,
		    unsigned n, bool add)
{
	return flowset_update(as, ADOPTSET_NAME, flows, n, ADOPTSET_TIMEOUT_MS,
			      add);
}
