/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `rackckpt run`: a wrapper between a launcher (an MPI process manager, a
 * batch system) and a process that may move to another host. The child
 * gets one end of a socketpair in place of each relayed descriptor (its
 * stdin, stdout, stderr and any named by --relay-fd/--relay-env); the
 * wrapper keeps the original and copies bytes both ways. When the child
 * is checkpointed and killed by `rackckpt dump`, the launcher sees no EOF
 * and no exit: the wrapper waits for `rackckpt restore` on the new host to
 * connect back (TCP, authenticated by a random token) and relays through
 * those connections, then exits with the status the restore reports.
 */
#ifndef RACKCKPT_WRAPPER_H
#define RACKCKPT_WRAPPER_H

#include <stddef.h>
#include <sys/types.h>

/* News of the child for whoever runs the wrapper (a job's enlistment):
 * its start, with the root of its tree to dump, and its end, wherever
 * it ran (a wait status). Either may be NULL. */
struct wrapper_hooks {
	void (*started)(pid_t root, void *arg);
	void (*ended)(int status, void *arg);
	void *arg;
};

/* Run CMD (NULL-terminated) under the wrapper; never returns. EXTRA are
 * descriptor numbers to relay besides 0, 1 and 2. With LO_NAMES
 * (environment variables), CMD runs under the loopback agent (agent.h)
 * and the loopback addresses in those variables are relayed. */
void wrapper_run(const int *extra, size_t nextra, const char *const *lo_names,
		 size_t nlo, const struct wrapper_hooks *hooks, char **cmd)
	__attribute__((noreturn));

#endif
