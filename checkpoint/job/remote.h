/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Running rackckpt on a node of a job, through the remote shell the job
 * was launched with (Open MPI's plm_rsh_agent; ssh by default): the
 * shell's words, the node, then the command as one line of quoted words,
 * as ssh passes it to the node's shell. Its output is read line by line
 * while it runs.
 */
#ifndef RACKCKPT_REMOTE_H
#define RACKCKPT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

struct remote_result {
	int status;		/* the remote shell's wait status */
	bool timed_out;		/* killed after the timeout */
	char *out;		/* its whole stdout */
	char *err;		/* its stderr (the last 8 KiB) */
};

typedef void (*remote_line_fn)(const char *line, void *arg);

/* Run WORDS (NULL-terminated) on NODE; ON_LINE (or NULL) sees each line
 * of stdout as it comes. 0 once it ran (its status in RES: free with
 * remote_result_free), -errno if it could not be started. */
int remote_run(const char *rsh, const char *node, char *const *words,
	       double timeout, remote_line_fn on_line, void *arg,
	       struct remote_result *res);
void remote_result_free(struct remote_result *res);
/* Whether RES is a clean exit 0. */
bool remote_ok(const struct remote_result *res);
/* "exited 1", "killed by signal 9", "timed out": for messages. */
const char *remote_status_str(const struct remote_result *res, char *buf,
			      size_t len);

#endif
