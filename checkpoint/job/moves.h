/* SPDX-License-Identifier: GPL-2.0-only */
/* What a move of ranks is asked (mover.h) and what it reports, rank by
 * rank: shared by the mover and its steps (step.h). */
#ifndef RACKCKPT_MOVES_H
#define RACKCKPT_MOVES_H

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

#endif
