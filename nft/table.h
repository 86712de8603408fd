/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The name of racks' own nftables table, for every module that writes
 * into it: the ruleset (ruleset.h) creates it, the offered set
 * (offerset.h) and the splice maps (splicemap.h) live in it.
 */
#ifndef RACKS_TABLE_H
#define RACKS_TABLE_H

#define RULESET_TABLE "racks"
#define RULESET_FAMILY "inet"
#define RULESET_PREROUTING "prerouting"

#endif
