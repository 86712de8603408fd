// SPDX-License-Identifier: GPL-2.0-only
/*
 * Half-open entries (rackd/core/halfopen.c) in the connection table:
 * counted in all and per source prefix (/24, /48), the oldest of a full
 * prefix or of a full table chosen to make room, entries leaving when
 * proven or removed, and a flood from one prefix never choosing an entry
 * of another.
 */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "halfopen.h"
#include "unit.h"

static struct conn_table tbl;

static struct conn *add(const char *remote)
{
	struct endpoint l, r;
	bool port;
	struct conn *c;

	CHECK(endpoint_parse("10.0.0.1:443", &l, &port) == 0);
	if (strchr(remote, '['))
		CHECK(endpoint_parse("[fd00::1]:443", &l, &port) == 0);
	CHECK(endpoint_parse(remote, &r, &port) == 0);
	c = conn_insert(&tbl, &l, &r, CONN_INCOMING);
	conn_halfopen_add(&tbl, c);
	return c;
}

static struct addr addr_of(const char *s)
{
	struct endpoint e;
	bool port;

	CHECK(endpoint_parse(s, &e, &port) == 0);
	return e.addr;
}

TEST(test_counts_and_prefixes)
{
	struct addr x = addr_of("192.0.2.77"), y = addr_of("198.51.100.1");
	struct conn *a, *b, *c;

	conn_table_init(&tbl);
	a = add("192.0.2.1:1000");
	b = add("192.0.2.200:1001");
	c = add("198.51.100.9:1002");
	CHECK_EQ_INT(tbl.halfopen.count, 3);
	CHECK_EQ_INT(halfopen_prefix_count(&tbl.halfopen, &x), 2);
	CHECK_EQ_INT(halfopen_prefix_count(&tbl.halfopen, &y), 1);
	/* Twice is once. */
	conn_halfopen_add(&tbl, a);
	CHECK_EQ_INT(tbl.halfopen.count, 3);
	/* Proven: out, and its prefix counts one less. */
	conn_halfopen_proven(&tbl, a);
	CHECK(!a->ho.linked);
	CHECK_EQ_INT(halfopen_prefix_count(&tbl.halfopen, &x), 1);
	conn_halfopen_proven(&tbl, a);
	CHECK_EQ_INT(tbl.halfopen.count, 2);
	/* Removed from the table: out too. */
	conn_remove(&tbl, b);
	CHECK_EQ_INT(halfopen_prefix_count(&tbl.halfopen, &x), 0);
	CHECK_EQ_INT(tbl.halfopen.count, 1);
	CHECK(tbl.halfopen.head == &c->ho && tbl.halfopen.tail == &c->ho);
	conn_table_free(&tbl, NULL);
}

TEST(test_victims)
{
	struct addr flood = addr_of("192.0.2.5"), other = addr_of("203.0.113.1");
	struct conn *first, *c;

	conn_table_init(&tbl);
	first = add("203.0.113.50:1");
	for (int i = 0; i < 4; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "192.0.2.%d:%d", 10 + i, 2000 + i);
		add(buf);
	}
	/* Room everywhere. */
	CHECK(conn_halfopen_victim(&tbl, &flood, 16, 8) == NULL);
	/* The flood's prefix is full: its own oldest goes, never the
	 * older entry of another network. */
	c = conn_halfopen_victim(&tbl, &flood, 16, 4);
	CHECK(c && c != first && c->remote.port == 2000);
	/* Another prefix with room, the table full: the oldest of all. */
	CHECK(conn_halfopen_victim(&tbl, &other, 5, 4) == first);
	CHECK(conn_halfopen_victim(&tbl, &other, 6, 4) == NULL);
	conn_table_free(&tbl, NULL);
}

TEST(test_v6_prefix_is_48)
{
	struct addr same = addr_of("fd00:1:2:ffff::9");
	struct addr next = addr_of("fd00:1:3::1");

	conn_table_init(&tbl);
	add("[fd00:1:2:3::1]:1");
	add("[fd00:1:2:4::1]:2");
	CHECK_EQ_INT(halfopen_prefix_count(&tbl.halfopen, &same), 2);
	CHECK_EQ_INT(halfopen_prefix_count(&tbl.halfopen, &next), 0);
	conn_table_free(&tbl, NULL);
}

static const struct unit_test tests[] = {
	UNIT(test_counts_and_prefixes),
	UNIT(test_victims),
	UNIT(test_v6_prefix_is_48),
};

UNIT_MAIN("halfopen", tests)
