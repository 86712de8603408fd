// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackckpt's readers of what the nodes print (checkpoint/job/plan.c) on
 * arbitrary text: a node's probe lines, then (after a NUL) a source's
 * tree=/gone=/link= lines for eight trees. Every field stays a string of
 * its buffer, every group leads to a tree of the same group no later
 * than itself, linked trees share a group, and plan_room() decides
 * without reading past anything.
 */
#include "../../checkpoint/base/util.c"
#include "../../checkpoint/job/plan.c"
#include "../../common/syncdir.c"
#include "fuzz.h"

#include <string.h>

#define TREES 8

static char *text(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static void node(const char *s)
{
	struct plan_node p;
	char why[PLAN_TEXT];

	plan_parse_node(s, &p);
	INVARIANT(strlen(p.host) < PLAN_TEXT && strlen(p.addr) < PLAN_TEXT);
	INVARIANT(strlen(p.rackd_why) < PLAN_TEXT);
	INVARIANT(strlen(p.criu_why) < PLAN_TEXT);
	INVARIANT(strlen(p.taken) < PLAN_TEXT);
	for (int slots = 0; slots < 3; slots++) {
		int ret = plan_room(&p, slots, 1, 2, 4096, why, sizeof(why));

		INVARIANT(strlen(why) < sizeof(why));
		INVARIANT(ret <= 0);
		/* No room is never granted to a node that did not answer. */
		INVARIANT(p.answered || ret < 0);
	}
}

static void source(const char *s)
{
	struct plan_tree t[TREES];
	struct plan_source src = { .t = t, .n = TREES };

	memset(t, 0, sizeof(t));
	for (size_t i = 0; i < TREES; i++)
		t[i].root = (pid_t)(i + 1), t[i].rank = (int)i;
	plan_parse_source(s, &src);
	plan_groups(&src);
	for (size_t i = 0; i < TREES; i++) {
		INVARIANT(strlen(t[i].pids) < sizeof(t[i].pids));
		INVARIANT(t[i].group <= i);
		INVARIANT(t[t[i].group].group == t[i].group);
	}
	for (size_t k = 0; k < src.nlinks; k++) {
		INVARIANT(src.links[k][0] < TREES && src.links[k][1] < TREES);
		INVARIANT(t[src.links[k][0]].group == t[src.links[k][1]].group);
	}
	free(src.links);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t first = nul ? (size_t)(nul - data) : size;
	char *a = text(data, first);
	char *b = text(nul ? nul + 1 : data, nul ? size - first - 1 : 0);

	node(a);
	source(b);
	free(a);
	free(b);
	return 0;
}
