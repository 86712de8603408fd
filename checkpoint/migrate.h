/* SPDX-License-Identifier: GPL-2.0-only */
/* `rackckpt migrate`: check the destination, dump, restore there. */
#ifndef RACKCKPT_MIGRATE_H
#define RACKCKPT_MIGRATE_H

#include "dump.h"

struct migrate_opts {
	struct dump_opts dump;
	const char *to;		/* command prefix that runs on the destination */
	const char *to_sock;	/* the destination rackd's socket, or NULL */
};

int migrate_main(const struct migrate_opts *o);

#endif
