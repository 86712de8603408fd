/* SPDX-License-Identifier: GPL-2.0-only */
/* `rackckpt move`: check the destination, dump, restore there. */
#ifndef RACKCKPT_MOVE_H
#define RACKCKPT_MOVE_H

#include "dump.h"

struct move_opts {
	struct dump_opts dump;
	const char *to;		/* command prefix that runs on the destination */
	const char *to_sock;	/* the destination rackd's socket, or NULL */
};

int move_main(const struct move_opts *o);

#endif
