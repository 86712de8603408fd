/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control commands rackckpt drives a migration with (migrate.h):
 * export, unexport and release on the source host, import and restored
 * on the destination. Each takes one or more connections ("id=N" lines,
 * or "state=LINE" for import) and changes all of them or none.
 */
#ifndef RACKS_CTL_MIGRATE_H
#define RACKS_CTL_MIGRATE_H

#include <stddef.h>
#include <stdio.h>

#include "proto.h"

struct rackd;

int cmd_export(struct rackd *d, const struct proto_msg *req, FILE *out,
	       char *err, size_t errlen);
int cmd_unexport(struct rackd *d, const struct proto_msg *req, FILE *out,
		 char *err, size_t errlen);
int cmd_release(struct rackd *d, const struct proto_msg *req, FILE *out,
		char *err, size_t errlen);
int cmd_import(struct rackd *d, const struct proto_msg *req, FILE *out,
	       char *err, size_t errlen);
int cmd_restored(struct rackd *d, const struct proto_msg *req, FILE *out,
		 char *err, size_t errlen);

#endif
