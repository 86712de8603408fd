/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The checkpoint directory DIR that dump fills and restore reads:
 *
 *	DIR/rackckpt.info	key=value lines: what rackckpt needs to know
 *				(source, times, addresses, relay); 0600
 *	DIR/racks.state		rackd's state of the exported connections:
 *				"racks-state 1", one "conn ..." line each,
 *				"end N"; holds their keys: 0600
 *	DIR/images/		CRIU's images
 *	DIR/dump.log, DIR/restore.log	CRIU's logs
 */
#ifndef RACKCKPT_IMAGE_H
#define RACKCKPT_IMAGE_H

#include <stddef.h>
#include <sys/types.h>

#include "addr.h"

#define IMAGE_INFO "rackckpt.info"
#define IMAGE_STATE "racks.state"
#define IMAGE_IMAGES "images"
#define IMAGE_DUMP_LOG "dump.log"
#define IMAGE_RESTORE_LOG "restore.log"
#define IMAGE_FORMAT 1

/* Ordered key=value pairs; a key may repeat. */
struct image_kv {
	char **key, **value;
	size_t n;
};

void image_kv_add(struct image_kv *kv, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* First value of KEY, or NULL; image_kv_next walks the repeats: pass
 * *pos = 0 first. */
const char *image_kv_get(const struct image_kv *kv, const char *key);
const char *image_kv_next(const struct image_kv *kv, const char *key,
			  size_t *pos);
void image_kv_free(struct image_kv *kv);

/* DIR/NAME, to free(). */
char *image_path(const char *dir, const char *name);
int image_info_write(const char *dir, const struct image_kv *kv);
int image_info_read(const char *dir, struct image_kv *kv, char *err,
		    size_t errlen);
int image_state_write(const char *dir, char *const *lines, size_t n);
/* The "conn" lines of DIR/racks.state, checked against its "end N". */
int image_state_read(const char *dir, char ***lines, size_t *n, char *err,
		     size_t errlen);
void image_state_free(char **lines, size_t n);
/* The socket's endpoints in a "conn ..." line (local=, remote=). */
int image_state_endpoints(const char *line, struct endpoint *local,
			  struct endpoint *remote);

/* The pids of DIR's process tree: one images/core-PID.img each (CRIU
 * gives each its pid back). Malloc'ed array; 0 or -errno. */
int image_pids(const char *dir, pid_t **pids, size_t *n);
/* The i-th (from *POS = 0) connection of INFO to a tree that moved along
 * (conn=LOCAL REMOTE along): 1 and its endpoints, 0 when there is no
 * more, -EINVAL for a bad line. */
int image_next_along(const struct image_kv *info, size_t *pos,
		     struct endpoint *local, struct endpoint *remote);

#endif
