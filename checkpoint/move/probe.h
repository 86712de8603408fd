/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `rackckpt probe`: what a node can say before a move, for the job layer
 * (checkpoint/job/), which runs it on the nodes through the job's remote
 * shell and reads its key=value lines:
 *
 *   about the node, always:
 *	host=NAME  addr=ADDRESS (first global, IPv4 first)  cpus=N
 *	mem_available_kb=N
 *	rackd=ok | rackd=down MESSAGE
 *	criu=VERSION | criu=missing MESSAGE
 *   with --pids PID:START,... (the pids a restore here would need):
 *	taken=PID (COMM)	held by another process than the one named
 *   with --trees ROOT,... (process trees on this node):
 *	tree=ROOT rss_kb=N pids=PID:START,...
 *	link=ROOT ROOT		a TCP connection between the two trees, on
 *				this node: they can only move together
 *	gone=ROOT		no such process here
 */
#ifndef RACKCKPT_PROBE_H
#define RACKCKPT_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct probe_pid {
	pid_t pid;
	uint64_t start;
};

struct probe_opts {
	const char *criu;		/* --criu, or NULL: search */
	const char *sock;		/* rackd's control socket */
	const pid_t *trees;
	size_t ntrees;
	const struct probe_pid *pids;
	size_t npids;
};

/* Print the lines; the exit code of rackckpt (0: whatever was found). */
int probe_main(const struct probe_opts *o);

#endif
