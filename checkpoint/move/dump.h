/* SPDX-License-Identifier: GPL-2.0-only */
/* `rackckpt dump`: checkpoint a process tree and hand its racks-managed
 * connections over (see rackckpt(8)). */
#ifndef RACKCKPT_DUMP_H
#define RACKCKPT_DUMP_H

#include <stdbool.h>
#include <sys/types.h>

struct dump_opts {
	const char *criu;		/* --criu, or NULL: search */
	const char *sock;		/* rackd's control socket */
	const char *relay_addr;		/* --relay-addr, or NULL */
	bool allow_unmanaged;
	/* --with: trees that move along to the same destination (their
	 * own dumps follow this one): connections to them on this host
	 * are restored by CRIU on both ends there. */
	const pid_t *with;
	size_t nwith;
	pid_t pid;
	const char *dir;
};

/* The exit code of rackckpt. */
int dump_main(const struct dump_opts *o);

#endif
