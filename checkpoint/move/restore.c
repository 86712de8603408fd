// SPDX-License-Identifier: GPL-2.0-only
#include "restore.h"

#include <dirent.h>
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

#include "bridge.h"
#include "criu.h"
#include "image.h"
#include "loaddr.h"
#include "managed.h"
#include "nftable.h"
#include "util.h"

#define MAX_ADDED 64

struct restore {
	const struct restore_opts *o;
	struct criu criu;
	struct image_kv info;
	char **lines;
	size_t nlines;
	uint64_t *ids;
	bool imported;
	struct addr added[MAX_ADDED];
	size_t nadded;
	struct bridge bridge;
	bool has_relay;
	pid_t root;
	double t0;
};

static int check_dir(struct restore *r)
{
	char err[512], *inv;
	const char *pid;
	long v;
	int ret;

	ret = image_info_read(r->o->dir, &r->info, err, sizeof(err));
	if (!ret)
		ret = image_state_read(r->o->dir, &r->lines, &r->nlines, err,
				       sizeof(err));
	if (ret) {
		util_err("%s: %s is not a complete checkpoint", err, r->o->dir);
		return ret;
	}
	inv = image_path(r->o->dir, IMAGE_IMAGES "/inventory.img");
	ret = access(inv, R_OK) < 0 ? -errno : 0;
	if (ret)
		util_err("%s is not a complete checkpoint: no CRIU images "
			 "(%s: %s)", r->o->dir, inv, strerror(-ret));
	free(inv);
	if (ret)
		return ret;
	pid = image_kv_get(&r->info, "source_pid");
	if (!pid || !util_parse_long(pid, 2, 0x7fffffff, &v)) {
		util_err("%s/%s names no source process", r->o->dir, IMAGE_INFO);
		return -EINVAL;
	}
	r->root = (pid_t)v;
	ret = bridge_from_info(&r->bridge, &r->info, err, sizeof(err));
	if (ret < 0) {
		util_err("%s", err);
		return ret;
	}
	r->has_relay = ret > 0;
	return 0;
}

/*
 * CRIU gives the process its old pid back, so that pid must be free here.
 * A zombie holding it (the dumped process itself, when dump and restore
 * share a pid namespace and its parent has not reaped it yet) is waited
 * for a moment.
 */
static int check_pid_free(pid_t pid, double deadline)
{
	char path[64], *text, *p;
	char state = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	while ((text = util_read_file(path, NULL))) {
		p = strrchr(text, ')');
		state = p && p[1] ? p[2] : '?';
		if (state != 'Z' || util_mono() > deadline) {
			p = strchr(text, '(');
			util_err("pid %d is taken on this host by %.*s, and CRIU "
				 "restores the process with its old pid", (int)pid,
				 p ? (int)(strrchr(text, ')') - p + 1) : 1,
				 p ? p : "?");
			free(text);
			return -EEXIST;
		}
		free(text);
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	}
	return 0;
}

/* Every process of the tree (images/core-PID.img, one per task) gets its
 * pid back: each must be free, within one common wait for zombies. */
static int check_pids_free(const struct restore *r)
{
	char *images = image_path(r->o->dir, IMAGE_IMAGES);
	double deadline = util_mono() + 3;
	int ret = check_pid_free(r->root, deadline);
	DIR *dir = ret ? NULL : opendir(images);
	struct dirent *e;

	free(images);
	if (!dir)
		return ret;
	while (!ret && (e = readdir(dir))) {
		long pid;
		char *end;

		if (strncmp(e->d_name, "core-", 5))
			continue;
		pid = strtol(e->d_name + 5, &end, 10);
		if (pid > 0 && !strcmp(end, ".img"))
			ret = check_pid_free((pid_t)pid, deadline);
	}
	closedir(dir);
	return ret;
}

static int import_conns(struct restore *r)
{
	char err[512];
	int ret;

	r->ids = xcalloc(r->nlines, sizeof(*r->ids));
	if (!r->nlines)
		return 0;
	ret = managed_import(r->o->sock, r->lines, r->nlines, r->ids, err,
			     sizeof(err));
	if (ret)
		util_err("importing the connections: %s", err);
	else
		r->imported = true;
	return ret;
}

/* Old addresses of listening sockets and connections, made local. */
static int add_addresses(struct restore *r)
{
	const char *v;
	size_t pos = 0;

	while ((v = image_kv_next(&r->info, "bound_addr", &pos))) {
		struct endpoint e;
		bool has_port;
		int ret;

		if (endpoint_parse(v, &e, &has_port) || has_port) {
			util_err("bad bound_addr '%s' in %s", v, IMAGE_INFO);
			return -EINVAL;
		}
		if (loaddr_is_local(&e.addr))
			continue;
		if (r->nadded == MAX_ADDED) {
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
			r->added[r->nadded++] = e.addr;
			util_debug("old address %s added to lo", v);
		}
	}
	return 0;
}

static void undo(struct restore *r)
{
	char err[512], a[ADDR_STRLEN];

	if (r->imported &&
	    managed_ids(r->o->sock, "release", r->ids, r->nlines, err,
			sizeof(err)))
		util_err("rackd did not release the imported connections: %s",
			 err);
	for (size_t i = 0; i < r->nadded; i++)
		if (loaddr_del(&r->added[i]))
			util_err("could not remove %s from lo",
				 addr_format(&r->added[i], a, sizeof(a)));
}

/* The dump's network lock is still here when it was dumped on this host
 * (rackckpt.info names it, not dropped): its connections flow here again
 * only without it. */
static void drop_criu_lock(const struct restore *r)
{
	const char *table = image_kv_get(&r->info, "criu_lock_table");
	char err[256];
	int ret;

	if (!table || image_kv_get(&r->info, "criu_lock_dropped"))
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
static int run_criu(struct restore *r)
{
	char *images = image_path(r->o->dir, IMAGE_IMAGES);
	char *log = image_path(r->o->dir, IMAGE_RESTORE_LOG);
	char *argv[32 + 2 * RELAY_MAX_FDS], st[64];
	int keep[RELAY_MAX_FDS];
	size_t nkeep = 0;
	int n = 0, status, ret;

	unlink(log);		/* an earlier attempt's */
	n = criu_args(argv, "restore", images, log);
	/* No --network-lock: CRIU 4.2 takes the dump's method (and warns
	 * that the option is ignored on restore). */
	argv[n++] = "-d";
	for (size_t i = 0; i < r->bridge.n; i++) {
		argv[n++] = "--inherit-fd";
		argv[n++] = r->bridge.c[i].inherit;
		keep[nkeep++] = r->bridge.c[i].child_end;
	}
	argv[n] = NULL;
	ret = criu_run(&r->criu, argv, log, keep, nkeep, &status);
	if (ret)
		util_err("cannot run %s: %s", r->criu.path, strerror(-ret));
	else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		util_err("CRIU restore failed (%s)",
			 criu_status_str(status, st, sizeof(st)));
		util_print_tail(log, 30);
		ret = -ECANCELED;
	}
	free(images);
	free(log);
	return ret;
}

static double dump_started(const struct restore *r)
{
	const char *v = image_kv_get(&r->info, "dump_started");

	return v ? strtod(v, NULL) : 0;
}

/* The sockets exist again: rackd reconnects them now rather than at its
 * next sweep. */
static int reconnect_now(struct restore *r)
{
	char err[512];
	int ret;

	if (!r->nlines)
		return 0;
	ret = managed_ids(r->o->sock, "restored", r->ids, r->nlines, err,
			  sizeof(err));
	if (ret)
		util_err("rackd could not reconnect the restored "
			 "connection(s): %s", err);
	return ret;
}

/* Every imported connection connected and confirmed by its peer. */
static int wait_connected(struct restore *r)
{
	double deadline = util_mono() + r->o->timeout;
	struct timespec now;
	char state[32], err[512];
	size_t ok = 0;

	while (ok < r->nlines) {
		bool confirmed = false;

		if (managed_show(r->o->sock, r->ids[ok], state, sizeof(state),
				 &confirmed, err, sizeof(err))) {
			util_err("connection %" PRIu64 ": %s", r->ids[ok], err);
			return -EIO;
		}
		if (strcmp(state, "connected") == 0 && confirmed) {
			ok++;
			continue;
		}
		if (util_mono() > deadline) {
			util_err("%zu of %zu connection(s) connected again "
				 "within %.1f s; connection %" PRIu64 " is %s",
				 ok, r->nlines, r->o->timeout, r->ids[ok], state);
			return -ETIMEDOUT;
		}
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	}
	now = util_realtime();
	if (r->nlines)
		printf("%zu connection(s) connected again %.3f s after the dump "
		       "started (restore took %.3f s)\n", r->nlines,
		       (double)now.tv_sec + now.tv_nsec / 1e9 - dump_started(r),
		       util_mono() - r->t0);
	else
		printf("process %d restored from %s (no racks connections; "
		       "restore took %.3f s)\n", (int)r->root, r->o->dir,
		       util_mono() - r->t0);
	fflush(stdout);
	return 0;
}

static int report_end(struct restore *r, int status)
{
	if (WIFSIGNALED(status)) {
		printf("process %d was killed by signal %d (%s)\n", (int)r->root,
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	printf("process %d exited with status %d\n", (int)r->root,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Relay for the restored tree until it ends (or is dumped again, which
 * its relay file, written here, makes possible); its wait status. */
static int keep(struct restore *r, bool *moved)
{
	bool again;
	int ret = r->has_relay ? bridge_publish(&r->bridge, r->root) : 0;

	if (ret)
		util_err("cannot write the relay file of process %d: %s (it "
			 "cannot move again)", (int)r->root, strerror(-ret));
	ret = bridge_keep(&r->bridge, r->root, &again);
	if (moved)
		*moved = again;
	return ret;
}

/*
 * Without --wait but with a wrapper to relay for: a keeper process, the
 * restored tree's subreaper, stays behind to relay and to report the
 * tree's end. It runs CRIU so that the tree becomes its child, and tells
 * us CRIU's verdict through RESULT.
 */
static void keeper(struct restore *r, int result)
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
	ok = run_criu(r) == 0;
	if (write(result, &ok, sizeof(ok)) != sizeof(ok) || !ok)
		_exit(1);
	close(result);
	bridge_close_child_ends(&r->bridge);
	keep(r, NULL);
	_exit(0);
}

static int restore_detached(struct restore *r)
{
	int p[2], ok = 0;
	pid_t k;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	k = fork();
	if (k < 0)
		return -errno;
	if (k == 0) {
		close(p[0]);
		keeper(r, p[1]);
	}
	close(p[1]);
	if (read(p[0], &ok, sizeof(ok)) != sizeof(ok))
		ok = 0;
	close(p[0]);
	if (!ok) {
		waitpid(k, NULL, 0);
		char *log = image_path(r->o->dir, IMAGE_RESTORE_LOG);

		util_err("CRIU restore failed");
		util_print_tail(log, 30);
		free(log);
		return -ECANCELED;
	}
	bridge_free(&r->bridge);	/* the keeper has them */
	return 0;
}

int restore_main(const struct restore_opts *o)
{
	struct restore r = { .o = o };
	char err[1024];
	int ret, status, code = 0;

	r.t0 = util_mono();
	ret = criu_find(o->criu, &r.criu, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = managed_ping(o->sock, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = check_dir(&r);
	if (!ret)
		ret = check_pids_free(&r);
	if (ret)
		goto refuse;
	if (r.has_relay) {
		ret = bridge_connect(&r.bridge, err, sizeof(err));
		if (ret) {
			util_err("%s", err);
			goto refuse;
		}
	}
	ret = import_conns(&r);
	if (!ret)
		ret = add_addresses(&r);
	if (!ret)
		drop_criu_lock(&r);
	if (!ret) {
		if (o->wait) {
			/* The restored tree becomes our child when CRIU,
			 * its parent, exits. */
			prctl(PR_SET_CHILD_SUBREAPER, 1);
			ret = run_criu(&r);
		} else if (r.has_relay) {
			ret = restore_detached(&r);
		} else {
			ret = run_criu(&r);
		}
	}
	if (ret) {
		undo(&r);
		util_err("restore failed; nothing of it is left running");
		goto out;
	}
	bridge_close_child_ends(&r.bridge);
	ret = reconnect_now(&r);
	if (!ret)
		ret = wait_connected(&r);
	if (!ret && o->wait) {
		bool moved;

		status = keep(&r, &moved);
		if (moved)
			printf("process %d was dumped again: it goes on "
			       "elsewhere\n", (int)r.root);
		else
			code = report_end(&r, status);
	}
	goto out;
refuse:
	util_err("restore refused; nothing changed");
out:
	bridge_free(&r.bridge);
	for (size_t i = 0; i < r.nlines; i++) {
		memset(r.lines[i], 0, strlen(r.lines[i]));
		free(r.lines[i]);
	}
	free(r.lines);
	free(r.ids);
	image_kv_free(&r.info);
	criu_free(&r.criu);
	return ret ? EXIT_REFUSED : code;
}
