// SPDX-License-Identifier: GPL-2.0-only
#include "splicemap.h"

#include <sys/socket.h>

#include "table.h"

/* After rackd's own chains at -160 (they must see the socket's tuple of
 * outgoing segments). The incoming rules are in ruleset.c's prerouting
 * chain, before conntrack (-200), so that conntrack only ever sees the
 * socket's tuple in both directions. */
#define SPLICE_OUT_PRIORITY "-150"

static const char *const step_names[2][3] = {
	{ "out%c_rport", "out%c_raddr", "out%c_laddr" },
	{ "in%c_laddr", "in%c_raddr", "in%c_rport" },
};

void splicemap_declare(FILE *f)
{
	for (int v6 = 0; v6 < 2; v6++) {
		const char *a = v6 ? "ipv6_addr" : "ipv4_addr";
		char fam = v6 ? '6' : '4';

		for (int dir = 0; dir < 2; dir++) {
			for (int step = 0; step < 3; step++) {
				bool port = (dir == 0 && step == 0) ||
					    (dir == 1 && step == 2);

				fprintf(f, "\tmap ");
				fprintf(f, step_names[dir][step], fam);
				fprintf(f, " {\n\t\ttype %s . inet_service . %s "
					   ". inet_service : %s\n\t}\n", a, a,
					port ? "inet_service" : a);
			}
		}
	}
}

static void rule(FILE *f, int dir, bool v6)
{
	const char *ip = v6 ? "ip6" : "ip";
	static const char *const field[2][3] = {
		{ "tcp dport", "%s daddr", "%s saddr" },
		{ "%s daddr", "%s saddr", "tcp sport" },
	};

	for (int step = 0; step < 3; step++) {
		fprintf(f, " ");
		fprintf(f, field[dir][step], ip);
		fprintf(f, " set %s saddr . tcp sport . %s daddr . tcp dport "
			   "map @", ip, ip);
		fprintf(f, step_names[dir][step], v6 ? '6' : '4');
		fprintf(f, step < 2 ? "" : "\n");
	}
}

void splicemap_chains(FILE *f)
{
	/* A route chain outgoing: a new destination needs a new route. */
	fprintf(f, "\tchain splice_out {\n\t\ttype route hook output priority "
		   SPLICE_OUT_PRIORITY "; policy accept;\n\t}\n");
}

void splicemap_rules(FILE *f, const char *chain, bool out, bool add,
		     uint32_t pass_mark)
{
	if (out)
		fprintf(f, "flush chain %s %s %s\n", RULESET_FAMILY,
			RULESET_TABLE, chain);
	for (int v6 = 0; add && v6 < 2; v6++) {
		fprintf(f, "add rule %s %s %s", RULESET_FAMILY, RULESET_TABLE,
			chain);
		if (pass_mark)
			fprintf(f, " meta mark != 0x%08x", pass_mark);
		rule(f, out ? 0 : 1, v6);
	}
}

static void key(FILE *f, const struct addr *a1, uint16_t p1,
		const struct addr *a2, uint16_t p2)
{
	char s1[ADDR_STRLEN], s2[ADDR_STRLEN];

	fprintf(f, "%s . %u . %s . %u", addr_format(a1, s1, sizeof(s1)), p1,
		addr_format(a2, s2, sizeof(s2)), p2);
}

static void element(FILE *f, bool add, int dir, int step, char fam)
{
	fprintf(f, "%s element %s %s ", add ? "add" : "delete", RULESET_FAMILY,
		RULESET_TABLE);
	fprintf(f, step_names[dir][step], fam);
	fprintf(f, " { ");
}

static void value(FILE *f, bool add, const struct addr *a, uint16_t port)
{
	char s[ADDR_STRLEN];

	if (add && a)
		fprintf(f, " : %s", addr_format(a, s, sizeof(s)));
	else if (add)
		fprintf(f, " : %u", port);
	fprintf(f, " }\n");
}

void splicemap_write(FILE *f, const struct splicemap_entry *e, bool add)
{
	const struct addr *l = &e->local.addr, *r = &e->remote.addr;
	const struct addr *wl = &e->wire_local.addr, *wr = &e->wire_remote.addr;
	uint16_t lp = e->local.port, rp = e->remote.port;
	uint16_t wrp = e->wire_remote.port;
	char fam = l->family == AF_INET6 ? '6' : '4';

	/* Out: the socket's tuple, step by step towards the wire's. */
	element(f, add, 0, 0, fam);
	key(f, l, lp, r, rp);
	value(f, add, NULL, wrp);
	element(f, add, 0, 1, fam);
	key(f, l, lp, r, wrp);
	value(f, add, wr, 0);
	element(f, add, 0, 2, fam);
	key(f, l, lp, wr, wrp);
	value(f, add, wl, 0);
	/* In: the wire's tuple (remote end first), back to the socket's. */
	element(f, add, 1, 0, fam);
	key(f, wr, wrp, wl, lp);
	value(f, add, l, 0);
	element(f, add, 1, 1, fam);
	key(f, wr, wrp, l, lp);
	value(f, add, r, 0);
	element(f, add, 1, 2, fam);
	key(f, r, wrp, l, lp);
	value(f, add, NULL, rp);
}
