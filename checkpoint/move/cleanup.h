/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * After a move, on a node, by checkpoint directory:
 *
 * `rackckpt unlock DIR...`: remove CRIU's network lock of these dumps
 * from this (their source) host, where dump left it because a peer could
 * still send there (an unconfirmed export, a tree dumped --with others:
 * run it once they moved too).
 *
 * `rackckpt abort DIR...`: undo on this host what a restore of these
 * directories left when it was itself killed before it committed (its
 * host lost, its process killed): the restored copy of each tree (a
 * process of this network namespace with a pid of the images, started
 * after the dump) is killed, with its keeper, and rackd releases the
 * connections it imported for them. The checkpoint can then be
 * restored elsewhere without a second copy of the process running here.
 */
#ifndef RACKCKPT_CLEANUP_H
#define RACKCKPT_CLEANUP_H

#include <stddef.h>

struct cleanup_opts {
	const char *sock;		/* rackd's control socket */
	const char *const *dirs;
	size_t ndirs;
};

int cleanup_unlock_main(const struct cleanup_opts *o);
int cleanup_abort_main(const struct cleanup_opts *o);

#endif
