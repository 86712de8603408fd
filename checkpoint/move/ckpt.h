/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One checkpoint directory being restored on this host (restore.c runs
 * one or several, a group, through these steps): its files read and
 * checked, its pids free, its connections imported into rackd, its old
 * addresses made local, the dump's leftover lock removed, CRIU run, and
 * everything undone, the restored tree included, if the group fails
 * before it is committed.
 */
#ifndef RACKCKPT_CKPT_H
#define RACKCKPT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "addr.h"
#include "bridge.h"
#include "criu.h"
#include "image.h"

#define CKPT_MAX_ADDED 64

struct ckpt {
	const char *dir;
	const char *sock;		/* rackd's control socket */
	struct image_kv info;
	char **lines;			/* racks.state's connections */
	size_t nlines;
	uint64_t *ids;			/* rackd's ids for them, once imported */
	bool imported;
	struct addr added[CKPT_MAX_ADDED];
	size_t nadded;
	struct bridge bridge;
	bool has_relay;
	pid_t root;
	pid_t *pids;			/* the tree's, from its images */
	size_t npids;
	pid_t keeper;			/* the detached keeper, once forked */
	bool running;			/* CRIU restored the tree */
	struct ckpt *group;		/* all of the restore, this one too */
	size_t ngroup;
	double took;			/* CRIU's time */
};

/* Read and check DIR; 0 or -errno (said). */
int ckpt_load(struct ckpt *c, const char *dir, const char *sock);
void ckpt_free(struct ckpt *c);
/* Every pid of the tree is free here (a zombie of it is waited for
 * until DEADLINE, util_mono()). */
int ckpt_pids_free(const struct ckpt *c, double deadline);
int ckpt_import(struct ckpt *c);
int ckpt_add_addresses(struct ckpt *c);
/* The dump's network lock, when it is on this host. */
void ckpt_drop_lock(const struct ckpt *c);

enum ckpt_mode {
	CKPT_PLAIN,		/* criu restore -d: the tree is on its own */
	CKPT_WAIT,		/* we are its subreaper and stay (--wait) */
	CKPT_DETACHED,		/* a keeper process relays for it */
};
/* Run CRIU; 0 once the tree runs. */
int ckpt_run_criu(struct ckpt *c, const struct criu *criu,
		  enum ckpt_mode mode);
/* Kill the tree restored by ckpt_run_criu() (and its keeper, first, so
 * that nobody reports its end to the wrapper). */
void ckpt_kill(struct ckpt *c);
/* Release the imported connections, remove the added addresses. */
void ckpt_undo(struct ckpt *c);
/* Ask rackd to reconnect now (the sockets are back). */
int ckpt_reconnect(struct ckpt *c);
/* Wait for every connection to be connected and confirmed; say so. */
int ckpt_wait_connected(struct ckpt *c, double timeout, double t0);
/* With CKPT_WAIT: relay until the tree ends; the exit code to return. */
int ckpt_keep(struct ckpt *c);

#endif
