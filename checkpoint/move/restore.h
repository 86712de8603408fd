/* SPDX-License-Identifier: GPL-2.0-only */
/* `rackckpt restore`: restore a dumped process on this host, hand its
 * connections to the local rackd (see rackckpt(8)). */
#ifndef RACKCKPT_RESTORE_H
#define RACKCKPT_RESTORE_H

#include <stdbool.h>

struct restore_opts {
	const char *criu;
	const char *sock;
	const char *dir;
	bool wait;		/* --wait: stay the restored process's parent */
	double timeout;		/* for the connections to be connected again */
};

int restore_main(const struct restore_opts *o);

#endif
