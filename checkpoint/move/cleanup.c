// SPDX-License-Identifier: GPL-2.0-only
#include "cleanup.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image.h"
#include "managed.h"
#include "nftable.h"
#include "pinfo.h"
#include "util.h"

int cleanup_unlock_main(const struct cleanup_opts *o)
{
	int failed = 0;

	for (size_t i = 0; i < o->ndirs; i++) {
		struct image_kv info = { 0 };
		const char *table;
		char err[512];
		int ret = image_info_read(o->dirs[i], &info, err, sizeof(err));

		if (ret) {
			util_err("%s", err);
			failed++;
			continue;
		}
		table = image_kv_get(&info, "criu_lock_table");
		if (!table || image_kv_get(&info, "criu_lock_dropped")) {
			printf("%s: no lock left by its dump\n", o->dirs[i]);
		} else if ((ret = nftable_delete(table, err, sizeof(err))) == 0) {
			printf("%s: CRIU's lock (table %s) removed\n", o->dirs[i],
			       table);
		} else if (ret == -ENOENT) {
			printf("%s: no table %s here\n", o->dirs[i], table);
		} else {
			util_err("%s: deleting table %s: %s", o->dirs[i], table,
				 err);
			failed++;
		}
		image_kv_free(&info);
	}
	return failed ? EXIT_REFUSED : 0;
}

/* Seconds since the epoch at which a process started START ticks after
 * boot. */
static double started_at(uint64_t start)
{
	char *text = util_read_file("/proc/stat", NULL), *p;
	unsigned long long btime = 0;

	if (text && (p = strstr(text, "\nbtime ")))
		sscanf(p + 7, "%llu", &btime);
	free(text);
	return (double)btime + (double)start / (double)sysconf(_SC_CLK_TCK);
}

/* The restored copy of the tree in INFO and PIDS, if it runs here. */
static size_t kill_copy(const struct image_kv *info, const pid_t *pids,
			size_t n)
{
	const char *v = image_kv_get(info, "dump_started");
	/* btime has a resolution of a second. */
	double since = (v ? strtod(v, NULL) : 0) - 1;
	size_t killed = 0;

	for (size_t i = 0; i < n; i++) {
		struct pinfo pi, parent;

		if (pinfo_read(pids[i], &pi) || !pinfo_same_ns(pids[i], "net") ||
		    started_at(pi.start) < since)
			continue;
		/* Its keeper first: it would report the tree's end. */
		if (pinfo_read(pi.ppid, &parent) == 0 &&
		    strcmp(parent.comm, "(rackckpt)") == 0 &&
		    pinfo_same_ns(pi.ppid, "net") && kill(pi.ppid, SIGKILL) == 0)
			killed++;
		if (kill(pids[i], SIGKILL) == 0)
			killed++;
	}
	return killed;
}

/* rackd's connections that the state LINES describe, released. */
static int release(const char *sock, char **lines, size_t n, size_t *count)
{
	struct managed_list l;
	uint64_t *ids = xcalloc(n ? n : 1, sizeof(*ids));
	char err[512];
	int ret = managed_list(sock, &l, err, sizeof(err));

	*count = 0;
	for (size_t i = 0; !ret && i < n; i++) {
		struct endpoint local, remote;
		const struct managed_conn *c;

		if (image_state_endpoints(lines[i], &local, &remote) == 0 &&
		    (c = managed_find(&l, &local, &remote)))
			ids[(*count)++] = c->id;
	}
	if (!ret && *count)
		ret = managed_ids(sock, "release", ids, *count, err, sizeof(err));
	if (ret)
		util_err("rackd: %s", err);
	managed_list_free(&l);
	free(ids);
	return ret;
}

int cleanup_abort_main(const struct cleanup_opts *o)
{
	int failed = 0;

	for (size_t i = 0; i < o->ndirs; i++) {
		struct image_kv info = { 0 };
		char **lines = NULL, err[512];
		size_t nlines = 0, npids = 0, killed, released = 0;
		pid_t *pids = NULL;
		int ret = image_info_read(o->dirs[i], &info, err, sizeof(err));

		if (!ret)
			ret = image_state_read(o->dirs[i], &lines, &nlines, err,
					       sizeof(err));
		if (!ret && (ret = image_pids(o->dirs[i], &pids, &npids)))
			snprintf(err, sizeof(err), "%s: its images: %s",
				 o->dirs[i], strerror(-ret));
		if (ret) {
			util_err("%s", err);
			failed++;
			image_kv_free(&info);
			continue;
		}
		killed = kill_copy(&info, pids, npids);
		if (nlines && release(o->sock, lines, nlines, &released))
			failed++;
		printf("%s: %zu process(es) killed, %zu connection(s) "
		       "released\n", o->dirs[i], killed, released);
		image_state_free(lines, nlines);
		free(pids);
		image_kv_free(&info);
	}
	return failed ? EXIT_REFUSED : 0;
}
