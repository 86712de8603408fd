/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `rackckpt restore DIR...`: restore dumped process trees on this host
 * and hand their connections to the local rackd (see rackckpt(8)).
 * Several directories are a group, dumped together with --with (ranks
 * of one node, connected through it): all are restored, or none; the
 * connections between them are fenced off (nftables) until every tree
 * is back, since a tree restored first would otherwise draw resets from
 * the host for its connections to one not yet there.
 *
 * Output, one line per step that a caller (the job layer) reads:
 *	process PID restored from DIR in T s	every tree runs: committed
 *	process PID: N connection(s) connected again S s after the dump
 *	started (restore took T s)		or: no racks connections
 * Nothing of a restore is left running unless the first kind of line
 * was printed.
 */
#ifndef RACKCKPT_RESTORE_H
#define RACKCKPT_RESTORE_H

#include <stdbool.h>
#include <stddef.h>

struct restore_opts {
	const char *criu;
	const char *sock;
	const char *const *dirs;
	size_t ndirs;
	bool wait;		/* --wait: stay the restored process's parent */
	double timeout;		/* for the connections to be connected again */
};

int restore_main(const struct restore_opts *o);

#endif
