// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackckpt's move planning (checkpoint/job/plan.c) from what probes say:
 * the node lines, the trees and their links, the groups that must move
 * together, and every reason a destination has no room, each beside a
 * destination that has it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "unit.h"

static const char NODE[] =
	"host=node7\naddr=10.0.0.7\ncpus=4\nmem_available_kb=2097152\n"
	"rackd=ok\ncriu=4.2.1\n";

TEST(node_lines)
{
	struct plan_node p;

	plan_parse_node(NODE, &p);
	CHECK(p.answered);
	CHECK_EQ_STR(p.host, "node7");
	CHECK_EQ_STR(p.addr, "10.0.0.7");
	CHECK_EQ_INT(p.cpus, 4);
	CHECK_EQ_INT(p.mem_kb, 2097152);
	CHECK(p.rackd_ok && p.criu_ok);
	CHECK_EQ_STR(p.taken, "");
	plan_parse_node("host=x\nrackd=down rackd is not running (no daemon)\n"
			"criu=missing CRIU not found at /x\ntaken=12 (sleep)\n"
			"taken=13 (cat)\n", &p);
	CHECK(!p.rackd_ok && !p.criu_ok);
	CHECK_EQ_STR(p.rackd_why, "rackd is not running (no daemon)");
	CHECK_EQ_STR(p.criu_why, "CRIU not found at /x");
	CHECK_EQ_STR(p.taken, "12 (sleep), 13 (cat)");
	plan_parse_node("", &p);
	CHECK(!p.answered);
}

/* Four trees on one node: 10-20 linked, 30-40 linked through 40-30, and
 * 50 alone; 60 is gone, 70 never described. */
TEST(groups)
{
	struct plan_tree t[7] = { 0 };
	struct plan_source s = { .t = t, .n = 7 };
	static const pid_t roots[] = { 10, 20, 30, 40, 50, 60, 70 };

	for (size_t i = 0; i < 7; i++)
		t[i].root = roots[i], t[i].rank = (int)i;
	plan_parse_source("tree=10 rss_kb=100 pids=10:5,11:6\n"
			  "tree=20 rss_kb=200 pids=20:7\n"
			  "tree=30 rss_kb=1 pids=30:1\ntree=40 rss_kb=1 pids=40:1\n"
			  "tree=50 rss_kb=1 pids=50:1\ngone=60\n"
			  "link=10 20\nlink=40 30\nlink=10 99\n", &s);
	CHECK_EQ_INT(t[0].rss_kb, 100);
	CHECK_EQ_STR(t[0].pids, "10:5,11:6");
	CHECK(!t[0].gone && !t[4].gone);
	CHECK(t[5].gone && t[6].gone);
	CHECK_EQ_INT(s.nlinks, 2);		/* 99 is none of ours */
	plan_groups(&s);
	CHECK_EQ_INT(t[0].group, 0);
	CHECK_EQ_INT(t[1].group, 0);
	CHECK_EQ_INT(t[2].group, 2);
	CHECK_EQ_INT(t[3].group, 2);
	CHECK_EQ_INT(t[4].group, 4);
	free(s.links);
}

TEST(room)
{
	struct plan_node p;
	char why[256];

	plan_parse_node(NODE, &p);
	/* The positive control: room for 4 ranks of 1 GiB in all. */
	CHECK_EQ_INT(plan_room(&p, 0, 0, 4, 1024 * 1024, why, sizeof(why)), 0);
	CHECK_EQ_INT(plan_room(&p, 0, 1, 4, 1024, why, sizeof(why)), -ENOSPC);
	CHECK_EQ_STR(why, "no room: 4 rank(s) to place, 3 of its 4 slot(s) "
		     "free (one per CPU)");
	CHECK_EQ_INT(plan_room(&p, 2, 0, 2, 1024, why, sizeof(why)), 0);
	CHECK_EQ_INT(plan_room(&p, 1, 0, 2, 1024, why, sizeof(why)), -ENOSPC);
	CHECK_EQ_STR(why, "no room: 2 rank(s) to place, 1 of its 1 slot(s) free");
	CHECK_EQ_INT(plan_room(&p, 0, 0, 1, 4 * 1024 * 1024, why, sizeof(why)),
		     -ENOMEM);
	CHECK_EQ_STR(why, "no room: 4096 MiB of memory needed, 2048 MiB "
		     "available");
	plan_parse_node("cpus=4\nmem_available_kb=2097152\nrackd=ok\ncriu=4.2.1\n"
			"taken=12 (sleep)\n", &p);
	CHECK_EQ_INT(plan_room(&p, 0, 0, 1, 1024, why, sizeof(why)), -EEXIST);
	CHECK_EQ_STR(why, "no room: pid(s) that CRIU must restore are taken "
		     "there: 12 (sleep)");
	plan_parse_node("cpus=4\nrackd=ok\ncriu=missing no CRIU\n", &p);
	CHECK_EQ_INT(plan_room(&p, 0, 0, 1, 0, why, sizeof(why)), -ENOENT);
	CHECK_EQ_STR(why, "no usable CRIU there (no CRIU)");
	plan_parse_node("cpus=4\nrackd=down not running\ncriu=4.2.1\n", &p);
	CHECK_EQ_INT(plan_room(&p, 0, 0, 1, 0, why, sizeof(why)), -ECONNREFUSED);
	CHECK_EQ_STR(why, "no rackd runs there (not running)");
	plan_parse_node("", &p);
	CHECK_EQ_INT(plan_room(&p, 0, 0, 1, 0, why, sizeof(why)), -EHOSTUNREACH);
}

TEST(need)
{
	CHECK_EQ_INT(plan_need_kb(0), 16 * 1024);
	CHECK_EQ_INT(plan_need_kb(100 * 1024), 110 * 1024 + 16 * 1024);
}

static const struct unit_test tests[] = {
	UNIT(node_lines), UNIT(groups), UNIT(room), UNIT(need),
};

UNIT_MAIN("plan", tests)
