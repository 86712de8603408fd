/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where the jobs of `rackckpt mpirun` are found on the host that launched
 * them: JOBS_DIR (/run/racks/jobs, or $RACKS_JOBS_DIR; mode 0700) holds,
 * per job N, the controller's control socket N.sock and N.lock, which the
 * controller holds locked (flock) for its life. A job id is the lowest N
 * whose lock is free; a socket left by a controller that died is stale
 * and replaced.
 */
#ifndef RACKCKPT_JOBDIR_H
#define RACKCKPT_JOBDIR_H

#include <stddef.h>

#define JOBDIR_DEFAULT "/run/racks/jobs"
#define JOBDIR_MAX_ID 9999

const char *jobdir_path(void);
/* JOBS_DIR/ID plus SUFFIX (".sock", ".lock"); free() it. */
char *jobdir_file(int id, const char *suffix);
/* Take the lowest free id: *ID, and *LOCK_FD, which holds it until
 * closed (or the process ends). 0 or -errno. */
int jobdir_take(int *id, int *lock_fd);
/* The ids of the jobs whose controller runs (their lock is held),
 * sorted; malloc'ed. 0 or -errno. */
int jobdir_list(int **ids, size_t *n);

#endif
