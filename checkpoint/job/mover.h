/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Moving ranks of a job (`rackckpt migrate`, `rackckpt evacuate`): the
 * job's controller says where each rank runs and locks the ones moved;
 * every step runs on the nodes through the job's remote shell:
 *
 *   source:  rackckpt probe --trees ROOT...   sizes, pids, links between
 *                                             the node's ranks
 *   target:  rackckpt probe --pids PID:START...   rackd, CRIU, room
 *   source:  rackckpt dump [--with ROOT...] ROOT DIR   per rank
 *   target:  rackckpt restore DIR...          the group, all or nothing
 *   source:  rackckpt unlock DIR...           after a group
 *
 * A refusal changes nothing. A failed dump restores the ranks dumped
 * before it where they were; a failed restore (the target lost, its
 * rackd gone, CRIU failing) is cleaned up there (rackckpt abort DIR...)
 * and the ranks are restored on their source. A rank is never left
 * stopped unless its source too fails to take it back (said, with the
 * directory to restore it from).
 */
#ifndef RACKCKPT_MOVER_H
#define RACKCKPT_MOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "jobinfo.h"

#define MOVER_TEXT 512

struct mover_result {
	int rank;
	char from[JOB_NAME];		/* where it ran */
	char to[JOB_NAME];		/* where it was to go */
	char node[JOB_NAME];		/* where it runs now */
	bool ok;			/* it runs on TO, connections back */
	bool stopped;			/* worst case: it runs nowhere */
	double dump_s, restore_s, downtime_s;
	size_t conns;
	char error[MOVER_TEXT];		/* why not, when !ok */
};

struct mover_report {
	int job;
	struct mover_result *r;
	size_t n;
};

struct mover_ops {
	/* A line of progress, as it happens. */
	void (*progress)(const char *line, void *arg);
	void *arg;
};

struct mover_opts {
	int job;
	const int *ranks;		/* migrate: these ranks */
	size_t nranks;
	const char *from;		/* evacuate: every rank of this node */
	char *const *to;		/* destination nodes, [NAME[:SLOTS]] */
	size_t nto;
	const size_t *busy;		/* per destination: slots other jobs'
					 * ranks take there (or NULL) */
	bool keep;			/* keep the checkpoints */
	double timeout;			/* per step on a node, seconds */
};

/* 0 if every rank moved; -errno otherwise (refused, or some failed:
 * REP says which and why). ERR has a message when nothing was tried. */
int mover_run(const struct mover_opts *o, const struct mover_ops *ops,
	      struct mover_report *rep, char *err, size_t errlen);
void mover_report_free(struct mover_report *rep);

#endif
