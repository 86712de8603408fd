/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `rackckpt mpirun [--ckpt-dir DIR] [--mpirun PATH] MPIRUN-ARGS...`:
 * Open MPI's mpirun with every rank movable, and a job whose ranks
 * `rackckpt jobs`, `migrate` and `evacuate` address by number.
 *
 * mpirun gets, before the user's own arguments (which it is given as
 * they are):
 *   --mca orte_fork_agent "RACKCKPT run --openmpi --"
 *			each rank runs under the wrapper, its PMIx channel
 *			to orted relayed by the loopback agent, and enlists
 *			with the job's controller (registry.h)
 *   -x RACKS_JOB	where the controller is
 * and, unless the user chose otherwise, what a movable rank needs:
 *   --mca pml ob1 --mca btl tcp,self	every channel between ranks is
 *			TCP (shared memory cannot follow a rank), which
 *			racks carries between nodes
 *   -x PMIX_MCA_gds=hash --mca shmem mmap	no shared file with orted
 *   --bind-to none	a rank restored on another node is not held to the
 *			cores it had
 * The controller runs in this process until mpirun ends; rackckpt then
 * exits as mpirun did.
 */
#ifndef RACKCKPT_LAUNCH_H
#define RACKCKPT_LAUNCH_H

struct launch_opts {
	const char *ckpt_dir;		/* --ckpt-dir, or NULL */
	const char *mpirun;		/* --mpirun, or NULL */
	char **args;			/* mpirun's own, NULL-terminated */
};

/* The exit code of rackckpt (never returns once mpirun ran). */
int launch_main(const struct launch_opts *o);

#endif
