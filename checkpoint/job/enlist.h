/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A rank's wrapper (`rackckpt run --openmpi`) tells its job's controller
 * (registry.h) that the rank started, with the root of its tree to dump
 * and where it runs, and later how it ended. $RACKS_JOB, which `rackckpt
 * mpirun` hands every rank, says where the controller is:
 * ID:PORT:TOKEN:ADDRESS,ADDRESS,... (the launching host's addresses,
 * tried in turn). Without it, or outside an Open MPI job
 * ($OMPI_COMM_WORLD_RANK unset), nothing is said: the rank still moves
 * by pid, it is just not listed.
 */
#ifndef RACKCKPT_ENLIST_H
#define RACKCKPT_ENLIST_H

#include <sys/types.h>

/* The wrapper's hooks (wrapper.h), with no argument of their own. */
void enlist_started(pid_t root, void *arg);
void enlist_ended(int status, void *arg);

#endif
