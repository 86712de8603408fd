// SPDX-License-Identifier: GPL-2.0-only
/*
 * The connection table's indexes (rackd/core/conn.c): by socket
 * endpoints and by wire endpoints (where a connection's segments travel,
 * changed only through conn_set_wire()), across removals and the table's
 * growth.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conn.h"
#include "unit.h"

static struct endpoint ep(const char *s)
{
	struct endpoint e;
	bool port;

	CHECK(endpoint_parse(s, &e, &port) == 0);
	return e;
}

TEST(test_wire_index_follows_the_wire)
{
	struct conn_table tbl;
	struct endpoint l = ep("10.0.0.1:22"), r = ep("10.0.0.2:4000");
	struct endpoint wl = ep("10.0.9.1:22"), wr = ep("10.0.8.2:5000");
	struct conn *c;

	conn_table_init(&tbl);
	c = conn_insert(&tbl, &l, &r, CONN_INCOMING);
	/* Never spliced: on its socket's own endpoints. */
	CHECK(conn_lookup_wire(&tbl, &l, &r) == c);
	conn_set_wire(&tbl, c, &wl, NULL);
	CHECK(conn_lookup_wire(&tbl, &l, &r) == NULL);
	CHECK(conn_lookup_wire(&tbl, &wl, &r) == c);
	conn_set_wire(&tbl, c, NULL, &wr);
	CHECK(conn_lookup_wire(&tbl, &wl, &wr) == c);
	CHECK(endpoint_equal(&c->wire_remote, &wr));
	/* The socket index is unchanged. */
	CHECK(conn_lookup(&tbl, &l, &r) == c);
	conn_remove(&tbl, c);
	CHECK(conn_lookup_wire(&tbl, &wl, &wr) == NULL);
	conn_table_free(&tbl, NULL);
}

TEST(test_indexes_survive_growth)
{
	struct conn_table tbl;
	struct endpoint l = ep("10.0.0.1:22");
	enum { N = 3000 };

	conn_table_init(&tbl);
	for (int i = 0; i < N; i++) {
		char buf[32];
		struct endpoint r, w;
		struct conn *c;

		snprintf(buf, sizeof(buf), "10.0.%d.%d:%d", i / 250, i % 250 + 1,
			 1000 + i);
		r = ep(buf);
		c = conn_insert(&tbl, &l, &r, CONN_INCOMING);
		w = r;
		w.port = (uint16_t)(20000 + i);
		if (i % 2)
			conn_set_wire(&tbl, c, NULL, &w);
	}
	CHECK(tbl.nbuckets >= N);
	for (int i = 0; i < N; i++) {
		char buf[32];
		struct endpoint r, w;
		struct conn *c;

		snprintf(buf, sizeof(buf), "10.0.%d.%d:%d", i / 250, i % 250 + 1,
			 1000 + i);
		r = ep(buf);
		w = r;
		w.port = (uint16_t)(20000 + i);
		c = conn_lookup(&tbl, &l, &r);
		if (!CHECK(c != NULL))
			break;
		CHECK(conn_lookup_wire(&tbl, &l, i % 2 ? &w : &r) == c);
	}
	conn_table_free(&tbl, NULL);
}

static const struct unit_test tests[] = {
	UNIT(test_wire_index_follows_the_wire),
	UNIT(test_indexes_survive_growth),
};

UNIT_MAIN("conn", tests)
