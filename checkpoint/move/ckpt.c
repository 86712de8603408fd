// SPDX-License-Identifier: GPL-2.0-only
#include "ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loaddr.h"
#include "managed.h"
#include "nftable.h"
#include "pinfo.h"
#include "relayfile.h"
#include "util.h"

int ckpt_load(struct ckpt *c, const char *dir, const char *sock)
{
	char err[512], *inv;
	const char *pid;
	long v;
	int ret;

	memset(c, 0, sizeof(*c));
	c->dir = dir;
	c->sock = sock;
	ret = image_info_read(dir, &c->info, err, sizeof(err));
	if (!ret)
		ret = image_state_read(dir, &c->lines, &c->nlines, err,
				       sizeof(err));
	if (ret) {
		util_err("%s: %s is not a complete checkpoint", err, dir);
		return ret;
	}
	inv = image_path(dir, IMAGE_IMAGES "/inventory.img");
	ret = access(inv, R_OK) < 0 ? -errno : 0;
	if (ret)
		util_err("%s is not a complete checkpoint: no CRIU images "
			 "(%s: %s)", dir, inv, strerror(-ret));
	free(inv);
	if (ret)
		return ret;
	pid = image_kv_get(&c->info, "source_pid");
	if (!pid || !util_parse_long(pid, 2, 0x7fffffff, &v)) {
		util_err("%s/%s names no source process", dir, IMAGE_INFO);
		return -EINVAL;
	}
	c->root = (pid_t)v;
	ret = image_pids(dir, &c->pids, &c->npids);
	if (ret) {
		util_err("%s: cannot list its images: %s", dir, strerror(-ret));
		return ret;
	}
	c->ids = xcalloc(c->nlines ? c->nlines : 1, sizeof(*c->ids));
	ret = bridge_from_info(&c->bridge, &c->info, err, sizeof(err));
	if (ret < 0) {
		util_err("%s", err);
		return ret;
	}
	c->has_relay = ret > 0;
	return 0;
}

void ckpt_free(struct ckpt *c)
{
	bridge_free(&c->bridge);
	image_state_free(c->lines, c->nlines);
	c->lines = NULL;
	c->nlines = 0;
	free(c->ids);
	free(c->pids);
	c->ids = NULL;
	c->pids = NULL;
	image_kv_free(&c->info);
}

/*
 * CRIU gives the process its old pid back, so that pid must be free here.
 * A zombie holding it (the dumped process itself, when dump and restore
 * share a pid namespace and its parent has not reaped it yet) is waited
 * for a moment.
 */
static int pid_free(pid_t pid, double deadline)
{
	struct pinfo pi;

	while (pinfo_read(pid, &pi) == 0) {
		if (pi.state != 'Z' || util_mono() > deadline) {
			util_err("pid %d is taken on this host by %s, and CRIU "
				 "restores the process with its old pid",
				 (int)pid, pi.comm);
			return -EEXIST;
		}
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	}
	return 0;
}

int ckpt_pids_free(const struct ckpt *c, double deadline)
{
	int ret = pid_free(c->root, deadline);

	for (size_t i = 0; !ret && i < c->npids; i++)
		ret = pid_free(c->pids[i], deadline);
	return ret;
}

int ckpt_import(struct ckpt *c)
{
	char err[512];
	int ret;

	if (!c->nlines)
		return 0;
	ret = managed_import(c->sock, c->lines, c->nlines, c->ids, err,
			     sizeof(err));
	if (ret)
		util_err("importing the connections of %s: %s", c->dir, err);
	else
		c->imported = true;
	return ret;
}

/* Old addresses of listening sockets and connections, made local. */
int ckpt_add_addresses(struct ckpt *c)
{
	const char *v;
	size_t pos = 0;

	while ((v = image_kv_next(&c->info, "bound_addr", &pos))) {
		struct endpoint e;
		bool has_port;
		int ret;

		if (endpoint_parse(v, &e, &has_port) || has_port) {
			util_err("bad bound_addr '%s' in %s", v, IMAGE_INFO);
			return -EINVAL;
		}
		if (loaddr_is_local(&e.addr))
			continue;
		if (c->nadded == CKPT_MAX_ADDED) {
			util_err("too many old addresses to add");
			return -E2BIG;
		}
		ret = loaddr_add(&e.addr);
		if (ret && ret != -EEXIST) {
			util_err("cannot add the old address %s to lo: %s", v,
				 strerror(-ret));
			return ret;
		}
		if (!ret) {
			c->added[c->nadded++] = e.addr;
			util_debug("old address %s added to lo", v);
		}
	}
	return 0;
}

/* The dump's network lock is still here when it was dumped on this host
 * (rackckpt.info names it, not dropped): its connections flow here again
 * only without it. */
void ckpt_drop_lock(const struct ckpt *c)
{
	const char *table = image_kv_get(&c->info, "criu_lock_table");
	char err[256];
	int ret;

	if (!table || image_kv_get(&c->info, "criu_lock_dropped"))
		return;
	ret = nftable_delete(table, err, sizeof(err));
	if (ret == 0)
		util_debug("CRIU's network lock (table %s) of the dump removed",
			   table);
	else if (ret != -ENOENT)
		util_err("could not delete CRIU's network lock (table %s): %s",
			 table, err);
}

/* criu restore -d; 0 when the tree runs. */
static int criu_restore(struct ckpt *c, const struct criu *criu, bool quiet)
{
	char *images = image_path(c->dir, IMAGE_IMAGES);
	char *log = image_path(c->dir, IMAGE_RESTORE_LOG);
	char *argv[32 + 2 * RELAY_MAX_FDS], st[64];
	int keep[RELAY_MAX_FDS];
	size_t nkeep = 0;
	int n, status, ret;

	unlink(log);		/* an earlier attempt's */
	n = criu_args(argv, "restore", images, log);
	/* No --network-lock: CRIU 4.2 takes the dump's method (and warns
	 * that the option is ignored on restore). */
	argv[n++] = "-d";
	for (size_t i = 0; i < c->bridge.n; i++) {
		argv[n++] = "--inherit-fd";
		argv[n++] = c->bridge.c[i].inherit;
		keep[nkeep++] = c->bridge.c[i].child_end;
	}
	argv[n] = NULL;
	ret = criu_run(criu, argv, log, keep, nkeep, &status);
	if (ret && !quiet)
		util_err("cannot run %s: %s", criu->path, strerror(-ret));
	else if (!ret && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		if (!quiet) {
			util_err("CRIU restore of %s failed (%s)", c->dir,
				 criu_status_str(status, st, sizeof(st)));
			util_print_tail(log, 30);
		}
		ret = -ECANCELED;
	}
	free(images);
	free(log);
	return ret;
}

/* The keeper: see ckpt_run_criu(). Never returns. */
static void keeper(struct ckpt *c, const struct criu *criu, int result)
{
	int null = open("/dev/null", O_RDWR);
	int ok;

	/* Nobody waits for its output: never hold the caller's pipes. */
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	setsid();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* The other trees' connections to their wrappers are not ours: a
	 * copy here would keep them open after their keeper closed them. */
	for (size_t i = 0; i < c->ngroup; i++)
		if (&c->group[i] != c)
			bridge_free(&c->group[i].bridge);
	ok = criu_restore(c, criu, true) == 0;
	if (write(result, &ok, sizeof(ok)) != sizeof(ok) || !ok)
		_exit(1);
	close(result);
	bridge_close_child_ends(&c->bridge);
	/* Until the group commits, the restoring process may kill us and
	 * the tree (ckpt_kill): our end is said to nobody then. */
	ckpt_keep(c);
	_exit(0);
}

/* Without --wait but with a wrapper to relay for: a keeper process, the
 * restored tree's subreaper, stays behind to relay and to report the
 * tree's end. It runs CRIU so that the tree becomes its child, and tells
 * us CRIU's verdict through a pipe. */
static int restore_detached(struct ckpt *c, const struct criu *criu)
{
	int p[2], ok = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	c->keeper = fork();
	if (c->keeper < 0)
		return -errno;
	if (c->keeper == 0) {
		close(p[0]);
		keeper(c, criu, p[1]);
	}
	close(p[1]);
	if (read(p[0], &ok, sizeof(ok)) != sizeof(ok))
		ok = 0;
	close(p[0]);
	if (!ok) {
		char *log = image_path(c->dir, IMAGE_RESTORE_LOG);

		waitpid(c->keeper, NULL, 0);
		c->keeper = 0;
		util_err("CRIU restore of %s failed", c->dir);
		util_print_tail(log, 30);
		free(log);
		return -ECANCELED;
	}
	bridge_free(&c->bridge);	/* the keeper has them */
	return 0;
}

int ckpt_run_criu(struct ckpt *c, const struct criu *criu, enum ckpt_mode mode)
{
	double t = util_mono();
	int ret;

	if (mode == CKPT_WAIT)
		/* The restored tree becomes our child when CRIU, its
		 * parent, exits. */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	ret = mode == CKPT_DETACHED ? restore_detached(c, criu) :
	      criu_restore(c, criu, false);
	c->running = ret == 0;
	c->took = util_mono() - t;
	return ret;
}

void ckpt_kill(struct ckpt *c)
{
	struct pinfo self, pi;

	if (!c->running)
		return;
	if (c->keeper > 0) {
		kill(c->keeper, SIGKILL);
		waitpid(c->keeper, NULL, 0);
		relayfile_remove(c->root, c->keeper);
		c->keeper = 0;
	}
	/* Only what CRIU just made: of this namespace, started after us. */
	pinfo_read(getpid(), &self);
	for (size_t i = 0; i < c->npids; i++)
		if (pinfo_read(c->pids[i], &pi) == 0 && pi.start >= self.start &&
		    pinfo_same_ns(c->pids[i], "net"))
			kill(c->pids[i], SIGKILL);
	c->running = false;
	util_debug("the tree of %s, restored here, killed", c->dir);
}

void ckpt_undo(struct ckpt *c)
{
	char err[512], a[ADDR_STRLEN];

	if (c->imported &&
	    managed_ids(c->sock, "release", c->ids, c->nlines, err, sizeof(err)))
		util_err("rackd did not release the imported connections: %s",
			 err);
	c->imported = false;
	for (size_t i = 0; i < c->nadded; i++)
		if (loaddr_del(&c->added[i]))
			util_err("could not remove %s from lo",
				 addr_format(&c->added[i], a, sizeof(a)));
	c->nadded = 0;
}

int ckpt_reconnect(struct ckpt *c)
{
	char err[512];
	int ret;

	if (!c->nlines)
		return 0;
	ret = managed_ids(c->sock, "restored", c->ids, c->nlines, err,
			  sizeof(err));
	if (ret)
		util_err("rackd could not reconnect the restored "
			 "connection(s): %s", err);
	return ret;
}

static double dump_started(const struct ckpt *c)
{
	const char *v = image_kv_get(&c->info, "dump_started");

	return v ? strtod(v, NULL) : 0;
}

int ckpt_wait_connected(struct ckpt *c, double timeout, double t0)
{
	double deadline = util_mono() + timeout;
	struct timespec now;
	char state[32], err[512];
	size_t ok = 0;

	while (ok < c->nlines) {
		bool confirmed = false;

		if (managed_show(c->sock, c->ids[ok], state, sizeof(state),
				 &confirmed, err, sizeof(err))) {
			util_err("connection %" PRIu64 ": %s", c->ids[ok], err);
			return -EIO;
		}
		if (strcmp(state, "connected") == 0 && confirmed) {
			ok++;
			continue;
		}
		if (util_mono() > deadline) {
			util_err("process %d: %zu of %zu connection(s) connected "
				 "again within %.1f s; connection %" PRIu64
				 " is %s", (int)c->root, ok, c->nlines, timeout,
				 c->ids[ok], state);
			return -ETIMEDOUT;
		}
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	}
	now = util_realtime();
	if (c->nlines)
		printf("process %d: %zu connection(s) connected again %.3f s "
		       "after the dump started (restore took %.3f s)\n",
		       (int)c->root, c->nlines, (double)now.tv_sec +
		       now.tv_nsec / 1e9 - dump_started(c), util_mono() - t0);
	else
		printf("process %d: no racks connections (restore took "
		       "%.3f s)\n", (int)c->root, util_mono() - t0);
	fflush(stdout);
	return 0;
}

static int report_end(const struct ckpt *c, int status)
{
	if (WIFSIGNALED(status)) {
		printf("process %d was killed by signal %d (%s)\n", (int)c->root,
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	printf("process %d exited with status %d\n", (int)c->root,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int ckpt_keep(struct ckpt *c)
{
	bool moved;
	int status, ret = c->has_relay ? bridge_publish(&c->bridge, c->root) : 0;

	/* Its relay file lets a later dump here find the wrapper. */
	if (ret)
		util_err("cannot write the relay file of process %d: %s (it "
			 "cannot move again)", (int)c->root, strerror(-ret));
	status = bridge_keep(&c->bridge, c->root, &moved);
	if (!moved)
		return report_end(c, status);
	printf("process %d was dumped again: it goes on elsewhere\n",
	       (int)c->root);
	return 0;
}
