/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a job's controller knows of it, and what `rackckpt jobs`,
 * `migrate` and `evacuate` read from it (jobclient.h): the job, its nodes
 * (from mpirun's host list) and its ranks, each where it runs now.
 */
#ifndef RACKCKPT_JOBINFO_H
#define RACKCKPT_JOBINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JOB_NAME 128		/* node and host names, addresses */

enum job_rank_state {
	RANK_RUNNING,
	RANK_MOVING,		/* locked by a migrate or evacuate */
	RANK_ENDED,
};

struct job_rank {
	int rank;
	pid_t root;			/* the tree to dump (the rank's agent) */
	char node[JOB_NAME];		/* where it runs, as the job names it */
	char addr[JOB_NAME];		/* that node's address */
	char origin[JOB_NAME];		/* where mpirun started it */
	char host[JOB_NAME];		/* the origin's hostname */
	enum job_rank_state state;
	pid_t owner;			/* RANK_MOVING: the mover's pid */
	int status;			/* RANK_ENDED: its wait status */
	unsigned moves;
	double downtime;		/* of its last move, seconds */
};

struct job_node {
	char name[JOB_NAME];
	int slots;			/* 0: not said */
};

struct job_info {
	int id;
	bool ended;
	pid_t mpirun;
	double started;			/* seconds since the epoch */
	int np;				/* ranks asked for; 0 if not said */
	char command[512];		/* the program and its arguments */
	char rsh[256];			/* the remote shell, e.g. "ssh" */
	char ckpt_dir[512];		/* where checkpoints go */
	char rackckpt[512];		/* rackckpt's path on every node */
	struct job_rank *ranks;		/* by rank number */
	size_t nranks;
	struct job_node *nodes;
	size_t nnodes;
};

void jobinfo_free(struct job_info *j);
struct job_rank *jobinfo_rank(const struct job_info *j, int rank);
struct job_node *jobinfo_node(const struct job_info *j, const char *name);
/* "running", "moving", "ended" */
const char *jobinfo_state_name(enum job_rank_state s);
/* How many ranks of J run (or move) on NODE. */
size_t jobinfo_ranks_on(const struct job_info *j, const char *node);

#endif
