/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Deciding a move from what the nodes said (`rackckpt probe`, move/
 * probe.h): which ranks of a node must move together (their trees are
 * connected through the node itself, which racks cannot carry between
 * hosts: they go to one destination, restored as a group), and whether a
 * destination has room for them (rackd running, CRIU, free slots, memory,
 * the pids CRIU must give back). No I/O here.
 */
#ifndef RACKCKPT_PLAN_H
#define RACKCKPT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PLAN_TEXT 256

/* A rank's tree on its node (probe's tree= line). */
struct plan_tree {
	pid_t root;
	int rank;
	uint64_t rss_kb;
	char pids[PLAN_TEXT * 4];	/* "PID:START,..." for the target */
	bool gone;
	size_t group;			/* index of the first tree of its group */
};

struct plan_source {
	struct plan_tree *t;
	size_t n;
	size_t (*links)[2];		/* indexes into t */
	size_t nlinks;
};

/* What a node said of itself (probe's node lines). */
struct plan_node {
	char host[PLAN_TEXT], addr[PLAN_TEXT];
	int cpus;
	uint64_t mem_kb;
	bool rackd_ok, criu_ok;
	char rackd_why[PLAN_TEXT], criu_why[PLAN_TEXT];
	char taken[PLAN_TEXT];		/* pids held by others, or "" */
	bool answered;			/* it said anything at all */
};

void plan_parse_node(const char *out, struct plan_node *p);
/* S->t must hold the trees asked for (root and rank set, the rest
 * zero): the tree=, gone= and link= lines fill them in. */
void plan_parse_source(const char *out, struct plan_source *s);
void plan_source_free(struct plan_source *s);
/* Each tree's group: the trees it is linked to, transitively. */
void plan_groups(struct plan_source *s);
/* Memory a destination must have free for trees of RSS_KB. */
uint64_t plan_need_kb(uint64_t rss_kb);
/* Whether node P, with SLOTS for the job (0: as many as its CPUs) of
 * which USED are taken, takes N more ranks needing NEED_KB: 0, or
 * -errno with the reason in WHY. */
int plan_room(const struct plan_node *p, int slots, size_t used, size_t n,
	      uint64_t need_kb, char *why, size_t len);

#endif
