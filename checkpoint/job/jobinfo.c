// SPDX-License-Identifier: GPL-2.0-only
#include "jobinfo.h"

#include <stdlib.h>
#include <string.h>

void jobinfo_free(struct job_info *j)
{
	free(j->ranks);
	free(j->nodes);
	j->ranks = NULL;
	j->nodes = NULL;
	j->nranks = j->nnodes = 0;
}

struct job_rank *jobinfo_rank(const struct job_info *j, int rank)
{
	for (size_t i = 0; i < j->nranks; i++)
		if (j->ranks[i].rank == rank)
			return &j->ranks[i];
	return NULL;
}

struct job_node *jobinfo_node(const struct job_info *j, const char *name)
{
	for (size_t i = 0; i < j->nnodes; i++)
		if (strcmp(j->nodes[i].name, name) == 0)
			return &j->nodes[i];
	return NULL;
}

const char *jobinfo_state_name(enum job_rank_state s)
{
	static const char *const names[] = {
		[RANK_RUNNING] = "running", [RANK_MOVING] = "moving",
		[RANK_ENDED] = "ended",
	};

	return names[s];
}

size_t jobinfo_ranks_on(const struct job_info *j, const char *node)
{
	size_t n = 0;

	for (size_t i = 0; i < j->nranks; i++)
		n += j->ranks[i].state != RANK_ENDED &&
		     strcmp(j->ranks[i].node, node) == 0;
	return n;
}
