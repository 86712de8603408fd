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

#include "moves.h"

/* 0 if every rank moved; -errno otherwise (refused, or some failed:
 * REP says which and why). ERR has a message when nothing was tried. */
int mover_run(const struct mover_opts *o, const struct mover_ops *ops,
	      struct mover_report *rep, char *err, size_t errlen);
void mover_report_free(struct mover_report *rep);

#endif
