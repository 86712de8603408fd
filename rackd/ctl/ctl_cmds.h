/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The commands of the control protocol, one function each, dispatched
 * through a table. Each writes its reply lines to OUT, or returns
 * -errno with a message in err.
 */
#ifndef RACKS_CTL_CMDS_H
#define RACKS_CTL_CMDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "proto.h"

struct rackd;

struct ctl_command {
	const char *name;
	bool privileged;	/* needs a root peer */
	bool subscribes;	/* its reply opens the client's event stream */
	int (*run)(struct rackd *d, const struct proto_msg *req, FILE *out,
		   char *err, size_t errlen);
};

const struct ctl_command *ctl_command_find(const char *name);

#endif
