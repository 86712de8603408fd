// SPDX-License-Identifier: GPL-2.0-only
#include "dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criu.h"
#include "image.h"
#include "loaddr.h"
#include "managed.h"
#include "nftable.h"
#include "pinfo.h"
#include "procsock.h"
#include "relayaddr.h"
#include "relayfile.h"
#include "util.h"

struct dump {
	const struct dump_opts *o;
	struct criu criu;
	struct procsock_set socks;
	struct managed_list list;
	uint64_t *ids;			/* managed connections to export */
	size_t nids;
	char **lines;
	struct relay_info relay;
	bool has_relay;
	char relay_addr[ADDR_STRLEN];
	bool made_dir, exported_done;
	size_t unacked;			/* peers not holding their socket */
	size_t unmanaged;		/* lost (--allow-unmanaged) */
	struct procsock_set *with;	/* the --with trees */
	bool *along;			/* socks[i] ends in one of them */
	size_t with_gone;		/* --with trees dumped already */
	size_t nalong;
	struct timespec started;
	double t0;
	struct image_kv info;
};

static int check_process(pid_t pid)
{
	struct pinfo pi;
	int sid, tty;

	if (pid <= 1 || pinfo_read(pid, &pi) < 0) {
		util_err("%d is not a process", (int)pid);
		return -ESRCH;
	}
	sid = pi.sid;
	tty = pi.tty;
	if (pid == getpid()) {
		util_err("rackckpt cannot checkpoint itself");
		return -EINVAL;
	}
	/* CRIU dumps whole sessions only, and no terminal of this host. */
	if (sid != pid) {
		util_err("process %d is not the leader of its session (%d), which "
			 "CRIU needs: start it with setsid or under 'rackckpt "
			 "run'", (int)pid, sid);
		return -EINVAL;
	}
	if (tty != 0) {
		util_err("process %d has a controlling terminal, which cannot "
			 "move: start it with setsid, its stdio redirected to "
			 "files, or under 'rackckpt run'", (int)pid);
		return -EINVAL;
	}
	/* CRIU's network lock and rackd are those of our namespace. */
	if (!pinfo_same_ns(pid, "net")) {
		util_err("process %d is in another network namespace: run "
			 "rackckpt in it (nsenter --net=... rackckpt dump)",
			 (int)pid);
		return -EXDEV;
	}
	if (!pinfo_same_ns(pid, "mnt")) {
		util_err("process %d is in another mount namespace, which CRIU "
			 "will not dump (started with 'ip netns exec'? start it "
			 "with 'nsenter --net=...' instead)", (int)pid);
		return -EXDEV;
	}
	return 0;
}

/* DIR must be new (its parent existing) or an empty directory. */
static int check_dir(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char *copy;
	int ret = 0;

	if (!d) {
		if (errno != ENOENT) {
			util_err("cannot use %s: %s", dir, strerror(errno));
			return -errno;
		}
		/* Missing parents are made too: the nearest one that
		 * exists must let us. */
		copy = xstrdup(dir);
		do {
			char *up = xstrdup(dirname(copy));

			free(copy);
			copy = up;
		} while (access(copy, F_OK) < 0 && errno == ENOENT &&
			 strcmp(copy, "/") && strcmp(copy, "."));
		if (access(copy, W_OK | X_OK) < 0) {
			ret = -errno;
			util_err("cannot create %s: %s", dir, strerror(errno));
		}
		free(copy);
		return ret;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			util_err("%s is not empty: give a new or empty "
				 "directory", dir);
			ret = -ENOTEMPTY;
			break;
		}
	closedir(d);
	return ret;
}

static const char *ep_str(const struct endpoint *e, char *buf, size_t len)
{
	return endpoint_format(e, buf, len);
}

/* Sort the tree's network connections into managed and not. */
/*
 * Whether S's other end is a socket of a --with tree: one that runs, or
 * one dumped before this one (its socket is gone, none of this host
 * has S's remote endpoint any more, and the address is this host's).
 */
static bool moves_along(const struct dump *d, const struct procsock *s)
{
	for (size_t k = 0; k < d->o->nwith; k++)
		for (size_t j = 0; j < d->with[k].n; j++)
			if (endpoint_equal(&d->with[k].socks[j].local, &s->remote) &&
			    endpoint_equal(&d->with[k].socks[j].remote, &s->local))
				return true;
	return d->with_gone && loaddr_is_local(&s->remote.addr) &&
	       !procsock_local_exists(&s->remote);
}

/* The --with trees: other processes of this namespace, or gone (dumped
 * already, as the group's first members are). */
static int scan_with(struct dump *d)
{
	char err[512];

	d->with = xcalloc(d->o->nwith ? d->o->nwith : 1, sizeof(*d->with));
	for (size_t k = 0; k < d->o->nwith; k++) {
		pid_t w = d->o->with[k];
		struct pinfo pi;

		if (pinfo_read(w, &pi) < 0 || pi.state == 'Z') {
			d->with_gone++;
			continue;
		}
		if (w == d->o->pid || !pinfo_same_ns(w, "net") ||
		    procsock_scan(w, &d->with[k], err, sizeof(err)) < 0) {
			util_err("--with %d: not another process of this network "
				 "namespace", (int)w);
			return -EINVAL;
		}
	}
	return 0;
}

static int classify(struct dump *d)
{
	size_t unmanaged = 0;
	char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];

	d->ids = xcalloc(d->socks.n, sizeof(*d->ids));
	d->along = xcalloc(d->socks.n, sizeof(*d->along));
	for (size_t i = 0; i < d->socks.n; i++) {
		const struct procsock *s = &d->socks.socks[i];
		const struct managed_conn *c;

		if (s->kind != PROCSOCK_NETWORK)
			continue;
		c = managed_find(&d->list, &s->local, &s->remote);
		if (c && managed_is_managed(c)) {
			d->ids[d->nids++] = c->id;
			continue;
		}
		if (moves_along(d, s)) {
			d->along[i] = true;
			d->nalong++;
			continue;
		}
		if (!unmanaged++)
			util_err("%s TCP connection(s) of process %d not "
				 "managed by racks:", d->o->allow_unmanaged ?
				 "losing these" : "refusing: these",
				 (int)d->o->pid);
		util_err("  %s -> %s (%s%s%s, pid %d fd %d)%s",
			 ep_str(&s->local, l, sizeof(l)),
			 ep_str(&s->remote, r, sizeof(r)),
			 procsock_state_name(s->tcp_state),
			 c ? ", rackd: " : "", c ? c->state : "",
			 (int)s->pid, s->fd,
			 /* racks sees no connection inside one host */
			 loaddr_is_local(&s->remote.addr) ? ": to a process "
			 "of this host, which can only move along (--with)" : "");
	}
	if (unmanaged && !d->o->allow_unmanaged) {
		util_err("the process keeps running (racks "
			 "manages connections set up with a peer running rackd; "
			 "--allow-unmanaged dumps anyway and loses them)");
		return -EPERM;
	}
	d->unmanaged = unmanaged;
	if (unmanaged)
		util_err("--allow-unmanaged: the %zu connection(s) above will "
			 "be lost: their peers will see them reset or hang",
			 unmanaged);
	return 0;
}

static int check_relay(struct dump *d)
{
	int ret = relayaddr_check(d->o->pid, &d->socks, d->o->relay_addr,
				  &d->relay, d->relay_addr, sizeof(d->relay_addr));

	d->has_relay = ret > 0;
	return ret < 0 ? ret : 0;
}

static bool wildcard_or_loopback(const struct addr *a)
{
	static const uint8_t zero[16];

	if (a->family == AF_INET)
		return a->bytes[0] == 127 || memcmp(a->bytes, zero, 4) == 0;
	return memcmp(a->bytes, zero, 16) == 0 || IN6_IS_ADDR_LOOPBACK(&a->v6);
}

static void fill_info(struct dump *d)
{
	struct image_kv *kv = &d->info;
	char host[256] = "?", a[ENDPOINT_STRLEN], b[ENDPOINT_STRLEN];
	static const char *const kinds[] = { "listen", "pair", "network", "idle" };

	gethostname(host, sizeof(host) - 1);
	image_kv_add(kv, "format", "%d", IMAGE_FORMAT);
	image_kv_add(kv, "rackckpt_version", "%s", RACKCKPT_VERSION);
	image_kv_add(kv, "source_pid", "%d", (int)d->o->pid);
	image_kv_add(kv, "dump_started", "%lld.%09ld",
		     (long long)d->started.tv_sec, d->started.tv_nsec);
	image_kv_add(kv, "hostname", "%s", host);
	image_kv_add(kv, "criu_version", "%s", d->criu.version);
	image_kv_add(kv, "connections", "%zu", d->nids);
	for (size_t i = 0; i < d->socks.n; i++) {
		const struct procsock *s = &d->socks.socks[i];

		if (s->kind == PROCSOCK_IDLE)
			continue;
		if (s->kind == PROCSOCK_LISTEN)
			image_kv_add(kv, "listen", "%s",
				     ep_str(&s->local, a, sizeof(a)));
		else
			image_kv_add(kv, "conn", "%s %s %s",
				     ep_str(&s->local, a, sizeof(a)),
				     ep_str(&s->remote, b, sizeof(b)),
				     d->along[i] ? "along" : kinds[s->kind]);
	}
	/* Each local address once: restore makes the missing ones local. */
	for (size_t i = 0; i < d->socks.n; i++) {
		const struct procsock *s = &d->socks.socks[i];
		bool seen = false;

		if (s->kind == PROCSOCK_IDLE || wildcard_or_loopback(&s->local.addr))
			continue;
		for (size_t j = 0; j < i; j++)
			seen |= d->socks.socks[j].kind != PROCSOCK_IDLE &&
				addr_equal(&d->socks.socks[j].local.addr,
					   &s->local.addr);
		if (!seen)
			image_kv_add(kv, "bound_addr", "%s",
				     addr_format(&s->local.addr, a, sizeof(a)));
	}
	if (d->has_relay) {
		image_kv_add(kv, "relay_addr", "%s", d->relay_addr);
		image_kv_add(kv, "relay_port", "%d", d->relay.port);
		image_kv_add(kv, "relay_token", "%s", d->relay.token);
		for (size_t i = 0; i < d->relay.nfds; i++)
			image_kv_add(kv, "relay_fd", "%d %lu",
				     d->relay.fds[i].fd, d->relay.fds[i].ino);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Undo what dump put into DIR (and DIR itself if dump made it). */
static void remove_partial(struct dump *d)
{
	static const char *const names[] = {
		IMAGE_IMAGES, IMAGE_STATE, IMAGE_INFO, IMAGE_DUMP_LOG,
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = image_path(d->o->dir, names[i]);

		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		free(p);
	}
	if (d->made_dir)
		rmdir(d->o->dir);
}

/* The run id CRIU logged: its nftables lock table is "inet CRIU-" and the
 * first 21 characters of it (CRIU truncates the name to 31). */
static void note_criu_run(struct dump *d, const char *log)
{
	char *text = util_read_file(log, NULL), *p;
	char id[64];

	if (!text)
		return;
	p = strstr(text, "CRIU run id = ");
	if (p && sscanf(p + 14, "%63s", id) == 1) {
		image_kv_add(&d->info, "criu_run_id", "%s", id);
		image_kv_add(&d->info, "criu_lock_table", "inet CRIU-%.21s", id);
	}
	free(text);
}

/*
 * CRIU leaves its network lock table after a successful dump, dropping
 * everything to and from the dumped connections' old endpoints so that
 * no RST answers a peer. Every peer that confirmed the export holds its
 * socket and sends nothing there, and nothing outside the tree sends to
 * its loopback pairs, so the table goes (a restore on this host would
 * need it gone). It stays, named in rackckpt.info, while a peer may
 * still send there: one that did not confirm, or an unmanaged
 * connection's, whose segments would draw resets; a restore of this
 * checkpoint here removes it.
 */
static void drop_criu_lock(struct dump *d)
{
	const char *table = image_kv_get(&d->info, "criu_lock_table");
	char err[256];
	int ret;

	if (!table)
		return;
	if (d->unacked || d->unmanaged || d->nalong) {
		util_info("CRIU's network lock (table %s) stays: %s", table,
			  d->unacked ? "not every peer confirmed the export; "
			  "delete it once they reconnected" :
			  d->unmanaged ? "the lost connections' peers would "
			  "see resets" : "the --with trees still send to it; "
			  "'rackckpt unlock DIR' once they moved too");
		return;
	}
	ret = nftable_delete(table, err, sizeof(err));
	if (ret && ret != -ENOENT)
		util_err("could not delete CRIU's network lock (table %s): %s",
			 table, err);
	else
		image_kv_add(&d->info, "criu_lock_dropped", "1");
}

static int run_criu(struct dump *d, char **log_out)
{
	char *images = image_path(d->o->dir, IMAGE_IMAGES);
	char *log = image_path(d->o->dir, IMAGE_DUMP_LOG);
	char pid[16], st[64];
	char *argv[32 + RELAY_MAX_FDS * 2];
	char *ext[RELAY_MAX_FDS];
	int n = 0, status, ret;

	snprintf(pid, sizeof(pid), "%d", (int)d->o->pid);
	n = criu_args(argv, "dump", images, log);
	argv[n++] = "-t";
	argv[n++] = pid;
	/* No iptables here; the lock is per connection (nftables). */
	argv[n++] = "--network-lock";
	argv[n++] = "nftables";
	/* The child's ends of the wrapper's socketpairs: their peers stay
	 * outside, restore hands them new ones (--inherit-fd). */
	for (size_t i = 0; i < (d->has_relay ? d->relay.nfds : 0); i++) {
		ext[i] = xasprintf("unix[%lu]", d->relay.fds[i].ino);
		argv[n++] = "--external";
		argv[n++] = ext[i];
	}
	argv[n] = NULL;
	ret = criu_run(&d->criu, argv, log, NULL, 0, &status);
	if (!ret && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		util_err("CRIU dump failed (%s)",
			 criu_status_str(status, st, sizeof(st)));
		ret = -ECANCELED;
	} else if (ret) {
		util_err("cannot run %s: %s", d->criu.path, strerror(-ret));
	}
	for (size_t i = 0; i < (d->has_relay ? d->relay.nfds : 0); i++)
		free(ext[i]);
	free(images);
	*log_out = log;
	return ret;
}

/* DIR's missing parents (0700: they hold root's checkpoints); errors
 * show when DIR itself is made. */
static void make_parents(const char *dir)
{
	char *copy = xstrdup(dir);

	for (char *p = strchr(copy + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(copy, 0700);
		*p = '/';
	}
	free(copy);
}

static int prepare_dir(struct dump *d)
{
	char *images;
	int ret = 0;

	make_parents(d->o->dir);
	if (mkdir(d->o->dir, 0700) == 0)
		d->made_dir = true;
	else if (errno != EEXIST) {
		util_err("cannot create %s: %s", d->o->dir, strerror(errno));
		return -errno;
	}
	images = image_path(d->o->dir, IMAGE_IMAGES);
	if (mkdir(images, 0700) < 0) {
		ret = -errno;
		util_err("cannot create %s: %s", images, strerror(errno));
	}
	free(images);
	return ret;
}

/*
 * Export, then ask again until every peer holds its socket (or
 * EXPORT_ACK_WAIT passed): only then are the sequence numbers rackd
 * reports the ones the checkpoint will have, since nothing moves on a
 * connection both of whose ends are held.
 */
#define EXPORT_ACK_WAIT 3.0
static int export_conns(struct dump *d)
{
	double deadline = util_mono() + EXPORT_ACK_WAIT;
	char err[512];
	int ret;

	d->lines = xcalloc(d->nids ? d->nids : 1, sizeof(*d->lines));
	while (d->nids) {
		ret = managed_export(d->o->sock, d->ids, d->nids, d->lines,
				     &d->unacked, err, sizeof(err));
		if (ret) {
			util_err("exporting the connections: %s", err);
			return ret;
		}
		d->exported_done = true;
		if (!d->unacked)
			break;
		if (util_mono() > deadline) {
			util_err("%zu of %zu peer(s) did not confirm that they "
				 "hold their socket within %.0f s: they will "
				 "suspend it by themselves", d->unacked,
				 d->nids, EXPORT_ACK_WAIT);
			break;
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	ret = image_state_write(d->o->dir, d->lines, d->nids);
	if (ret)
		util_err("writing %s/%s: %s", d->o->dir, IMAGE_STATE,
			 strerror(-ret));
	return ret;
}

static void undo_export(struct dump *d)
{
	char err[512];

	if (!d->exported_done)
		return;
	if (managed_ids(d->o->sock, "unexport", d->ids, d->nids, err,
			sizeof(err)))
		util_err("rackd did not take its %zu connection(s) back: %s "
			 "(they stay held until max_suspend)", d->nids, err);
	else
		util_err("rackd carries on with its %zu connection(s)", d->nids);
}

static char *marker(struct dump *d, const char *suffix)
{
	return d->has_relay ? relayfile_path(d->o->pid, suffix) : NULL;
}

/* Everything after the checks: the first step that changes anything. */
static int do_dump(struct dump *d)
{
	char *moving = marker(d, ".moving"), *moved = marker(d, ".moved");
	char *log = NULL, err[512];
	int ret, fd;

	ret = prepare_dir(d);
	if (!ret) {
		fill_info(d);
		ret = image_info_write(d->o->dir, &d->info);
		if (ret)
			util_err("writing %s/%s: %s", d->o->dir, IMAGE_INFO,
				 strerror(-ret));
	}
	if (!ret)
		ret = export_conns(d);
	if (!ret && moving) {
		/* The wrapper takes the child's death for a move only now. */
		fd = open(moving, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			ret = -errno;
		else
			close(fd);
		if (ret)
			util_err("cannot create %s: %s", moving, strerror(-ret));
	}
	if (!ret)
		ret = run_criu(d, &log);
	if (ret) {
		if (moving)
			unlink(moving);
		undo_export(d);
		if (log)
			util_print_tail(log, 30);
		remove_partial(d);
		util_err("dump failed; process %d keeps running", (int)d->o->pid);
		goto out;
	}
	if (moving && rename(moving, moved) < 0)
		util_err("cannot rename %s: %s (its wrapper will take the "
			 "move for a death)", moving, strerror(errno));
	if (d->nids && managed_ids(d->o->sock, "release", d->ids, d->nids, err,
				   sizeof(err)))
		util_err("rackd did not release the exported connections: %s",
			 err);
	note_criu_run(d, log);
	drop_criu_lock(d);
	image_kv_add(&d->info, "dump_took", "%.6f", util_mono() - d->t0);
	ret = image_info_write(d->o->dir, &d->info);
	if (ret)
		util_err("rewriting %s/%s: %s", d->o->dir, IMAGE_INFO,
			 strerror(-ret));
	printf("dumped process %d into %s: %zu connection(s) exported, "
	       "in %.3f s\n", (int)d->o->pid, d->o->dir, d->nids,
	       util_mono() - d->t0);
out:
	free(moving);
	free(moved);
	free(log);
	return ret;
}

int dump_main(const struct dump_opts *o)
{
	struct dump d = { .o = o };
	char err[1024];
	int ret;

	d.started = util_realtime();
	d.t0 = util_mono();
	ret = criu_find(o->criu, &d.criu, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = check_process(o->pid);
	if (ret)
		goto refuse;
	ret = managed_ping(o->sock, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = procsock_scan(o->pid, &d.socks, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = managed_list(o->sock, &d.list, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = scan_with(&d);
	if (!ret)
		ret = classify(&d);
	if (!ret)
		ret = check_relay(&d);
	if (!ret)
		ret = check_dir(o->dir);
	if (ret)
		goto refuse;
	ret = do_dump(&d);
	goto out;
refuse:
	util_err("dump refused; nothing changed");
out:
	for (size_t i = 0; d.lines && i < d.nids; i++) {
		if (d.lines[i])
			memset(d.lines[i], 0, strlen(d.lines[i]));
		free(d.lines[i]);
	}
	free(d.lines);
	free(d.ids);
	free(d.along);
	for (size_t k = 0; d.with && k < o->nwith; k++)
		procsock_set_free(&d.with[k]);
	free(d.with);
	image_kv_free(&d.info);
	managed_list_free(&d.list);
	procsock_set_free(&d.socks);
	criu_free(&d.criu);
	return ret ? EXIT_REFUSED : 0;
}
