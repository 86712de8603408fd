/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The controller of a job started by `rackckpt mpirun`: it knows the
 * job's ranks, where each runs now, and which are being moved. It runs
 * in the rackckpt process that runs mpirun, on the launching host, and
 * answers two kinds of connections with the control protocol's messages
 * (common/proto.h):
 *
 * on JOBS_DIR/N.sock (root only), from rackckpt jobs, migrate, evacuate:
 *	cmd=job			job= state= mpirun_pid= started= np= command=
 *				rsh= ckpt_dir= rackckpt=, then
 *				record=node name= slots= per node of the
 *				host list and record=rank rank= node= addr=
 *				origin= host= root= state= owner= status=
 *				moves= downtime= per rank
 *	cmd=lock owner=PID rank=R...	the ranks are PID's to move: refused
 *				if one is unknown, not started, ended, or
 *				moved by another living process
 *	cmd=moved owner=PID rank=R node= addr= downtime=	it runs there
 *	cmd=unlock owner=PID rank=R...
 * on its TCP port, from each rank's wrapper (`rackckpt run --openmpi`,
 * which finds port, addresses and token in $RACKS_JOB), kept open:
 *	cmd=enlist token= rank= root= host= addr=...	a rank started
 *	cmd=ended status=	its end (a wait status)
 */
#ifndef RACKCKPT_REGISTRY_H
#define RACKCKPT_REGISTRY_H

#include <sys/types.h>

#include "jobinfo.h"

struct registry;

/*
 * Listen for job J (its id and static fields filled in; taken over, freed
 * by registry_free) on JOBS_DIR/ID.sock and a TCP port. *ENV is the
 * value of RACKS_JOB for the ranks (free() it). 0 or -errno (said).
 */
int registry_open(struct registry **out, struct job_info *j, char **env);
/* Serve until MPIRUN (our child) has exited, reaping it; its wait
 * status. Signals of TERM, INT, HUP and QUIT not from the terminal are
 * passed on to it (the terminal's reach it anyway). */
int registry_run(struct registry *r, pid_t mpirun);
void registry_free(struct registry *r);

#endif
