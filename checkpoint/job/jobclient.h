/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Requests to a job's controller (registry.h) over JOBS_DIR/N.sock, one
 * connection each. Functions return 0 or -errno with a message for the
 * user in ERR.
 */
#ifndef RACKCKPT_JOBCLIENT_H
#define RACKCKPT_JOBCLIENT_H

#include <stddef.h>
#include <sys/types.h>

#include "jobinfo.h"

/* Job ID as its controller sees it now (J to jobinfo_free). */
int jobclient_get(int id, struct job_info *j, char *err, size_t errlen);
/* Lock RANKS for OWNER (our pid) to move; unlock; say one moved. */
int jobclient_lock(int id, pid_t owner, const int *ranks, size_t n,
		   char *err, size_t errlen);
int jobclient_unlock(int id, pid_t owner, const int *ranks, size_t n,
		     char *err, size_t errlen);
int jobclient_moved(int id, pid_t owner, int rank, const char *node,
		    const char *addr, double downtime, char *err,
		    size_t errlen);

#endif
