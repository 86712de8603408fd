/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The steps of a move on the nodes, for mover.c: what a move knows (the
 * job, its destinations, the results), rackckpt run on a node through
 * the job's remote shell, the probes, and one group's dump, restore, and
 * way back to its source when the restore fails (mover.h says how).
 */
#ifndef RACKCKPT_STEP_H
#define RACKCKPT_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "jobinfo.h"
#include "moves.h"
#include "plan.h"
#include "remote.h"

struct target {
	char name[JOB_NAME];
	int slots;			/* from --to NAME:SLOTS or the host list */
	struct plan_node probe;
	char why[MOVER_TEXT];		/* why it cannot be used at all */
	size_t used;			/* ranks of the job there, and placed */
	bool probed;
};

struct move {
	const struct mover_opts *o;
	const struct mover_ops *ops;
	struct mover_report *rep;
	struct job_info j;
	pid_t self;
	struct target *t;
	size_t nt;
	long stamp;			/* names this run's directories */
};

/* One member of a group: a tree of the source probe, and its result. */
struct member {
	struct plan_tree *tree;
	struct mover_result *res;
	char *dir;
	bool committed, connected;
};

void step_say(struct move *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct mover_result *step_result(struct move *m, int rank);
/* Set R's reason, unless it has one: the first is the one. */
void step_fail(struct mover_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* What a failed command said: its "rackckpt: " lines, joined. */
const char *step_why(const struct remote_result *res, char *buf, size_t len);
/* rackckpt ARGS... (NULL-terminated) on NODE. */
int step_on_node(struct move *m, const char *node, const char *const *args,
		 double timeout, remote_line_fn fn, void *arg,
		 struct remote_result *res);
/* Every running rank of the job on NODE, probed there (S to
 * plan_source_free). 0, or -EHOSTUNREACH with each rank's reason set. */
int step_probe_source(struct move *m, const char *node, struct plan_source *s);
/* T's probe, asking after PIDS ("PID:START,..."). */
void step_probe_target(struct move *m, struct target *t, const char *pids);
/* Move the N members of a group from SRC to T, or back (results in
 * their mover_result). */
void step_move_group(struct move *m, const char *src, struct target *t,
		     struct member *mb, size_t n);

#endif
