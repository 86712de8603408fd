/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What /proc says of one process: its state, parent, session, terminal,
 * start time and resident memory, and whether it shares a namespace with
 * us. A pid and its start time name one process for good: a process
 * restored with the same pid elsewhere, or a newcomer that took the pid,
 * has another start time.
 */
#ifndef RACKCKPT_PINFO_H
#define RACKCKPT_PINFO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pinfo {
	char state;			/* R, S, Z, ... */
	pid_t ppid, sid;
	int tty;			/* 0: no controlling terminal */
	uint64_t start;			/* clock ticks after boot */
	uint64_t rss_kb;
	char comm[32];			/* "(name)" as /proc shows it */
};

/* 0, or -ESRCH if PID is not (or no longer) there. */
int pinfo_read(pid_t pid, struct pinfo *p);
/* Whether PID lives in our namespace of kind NS ("net", "mnt"); true
 * when the kernel has no such kind. */
bool pinfo_same_ns(pid_t pid, const char *ns);
/* PID's tree: PID and its descendants (children of every thread), root
 * first, in a malloc'ed array of *N (0 and NULL if PID is gone). */
pid_t *pinfo_tree(pid_t pid, size_t *n);

#endif
