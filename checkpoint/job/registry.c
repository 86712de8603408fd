// SPDX-License-Identifier: GPL-2.0-only
#include "registry.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "addr.h"
#include "jobdir.h"
#include "proto.h"
#include "util.h"

#define MAX_CONNS 1024
#define MAX_NODE_ADDRS 8
/* A request larger than this is not one of ours. */
#define MAX_REQUEST 65536

struct client {
	int fd;
	bool wrapper;		/* from the TCP port */
	bool enlisted;		/* a wrapper that said who it is */
	int rank;
	char *buf;
	size_t len;
};

struct node_addrs {
	struct addr a[MAX_NODE_ADDRS];
	size_t n;
};

struct registry {
	struct job_info *j;
	struct node_addrs *resolved;	/* per node of the host list */
	int ufd, tfd, sigfd;
	char *sock_path;
	char token[33];
	struct client c[MAX_CONNS];
	size_t nc;
};

/* Every global address of this host, for the ranks to reach us at. */
static char *host_addrs(void)
{
	struct ifaddrs *list, *i;
	char *out = xstrdup(""), a[ADDR_STRLEN];

	if (getifaddrs(&list) < 0)
		return out;
	for (int pass = 0; pass < 2; pass++)
		for (i = list; i; i = i->ifa_next) {
			struct addr x = { 0 };
			char *more;

			if (!i->ifa_addr ||
			    i->ifa_addr->sa_family != (pass ? AF_INET6 : AF_INET))
				continue;
			x.family = (uint8_t)i->ifa_addr->sa_family;
			if (pass)
				x.v6 = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			else
				x.v4 = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			if ((!pass && x.bytes[0] == 127) ||
			    (pass && (IN6_IS_ADDR_LOOPBACK(&x.v6) ||
				      IN6_IS_ADDR_LINKLOCAL(&x.v6))))
				continue;
			more = xasprintf("%s%s%s", out, *out ? "," : "",
					 addr_format(&x, a, sizeof(a)));
			free(out);
			out = more;
		}
	freeifaddrs(list);
	return out;
}

/* The addresses of each node of the host list (once: DNS may be slow). */
static void resolve_nodes(struct registry *r)
{
	r->resolved = xcalloc(r->j->nnodes ? r->j->nnodes : 1,
			      sizeof(*r->resolved));
	for (size_t i = 0; i < r->j->nnodes; i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *p;

		if (getaddrinfo(r->j->nodes[i].name, NULL, &hints, &res))
			continue;
		for (p = res; p && r->resolved[i].n < MAX_NODE_ADDRS; p = p->ai_next) {
			struct addr *x = &r->resolved[i].a[r->resolved[i].n];

			memset(x, 0, sizeof(*x));
			x->family = (uint8_t)p->ai_family;
			if (p->ai_family == AF_INET)
				x->v4 = ((struct sockaddr_in *)p->ai_addr)->sin_addr;
			else if (p->ai_family == AF_INET6)
				x->v6 = ((struct sockaddr_in6 *)p->ai_addr)->sin6_addr;
			else
				continue;
			r->resolved[i].n++;
		}
		freeaddrinfo(res);
	}
}

static int listen_unix(struct registry *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	r->sock_path = jobdir_file(r->j->id, ".sock");
	if (strlen(r->sock_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, r->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(r->sock_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(r->sock_path, 0600) < 0 || listen(fd, 16) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

int registry_open(struct registry **out, struct job_info *j, char **env)
{
	struct registry *r = xcalloc(1, sizeof(*r));
	unsigned char tok[16];
	char *addrs;
	int port;

	r->j = j;
	r->ufd = r->tfd = r->sigfd = -1;
	if (sodium_init() < 0)
		util_fatal("libsodium failed to initialise");
	randombytes_buf(tok, sizeof(tok));
	sodium_bin2hex(r->token, sizeof(r->token), tok, sizeof(tok));
	resolve_nodes(r);
	r->ufd = listen_unix(r);
	if (r->ufd < 0) {
		util_err("cannot listen on %s: %s", r->sock_path,
			 strerror(-r->ufd));
		goto fail;
	}
	r->tfd = util_listen_any(&port);
	if (r->tfd < 0) {
		util_err("cannot listen on a TCP port: %s", strerror(-r->tfd));
		goto fail;
	}
	addrs = host_addrs();
	*env = xasprintf("%d:%d:%s:%s", j->id, port, r->token, addrs);
	free(addrs);
	*out = r;
	return 0;
fail:
	registry_free(r);
	return -EIO;
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nc; i++) {
		close(r->c[i].fd);
		free(r->c[i].buf);
	}
	if (r->ufd >= 0) {
		close(r->ufd);
		unlink(r->sock_path);
	}
	if (r->tfd >= 0)
		close(r->tfd);
	if (r->sigfd >= 0)
		close(r->sigfd);
	free(r->sock_path);
	free(r->resolved);
	jobinfo_free(r->j);
	free(r->j);
	sodium_memzero(r->token, sizeof(r->token));
	free(r);
}

/* --- the job's state, as answered ------------------------------------ */

static void put_job(const struct registry *r, FILE *out)
{
	const struct job_info *j = r->j;

	proto_put(out, "job", "%d", j->id);
	proto_put(out, "state", "%s", j->ended ? "ended" : "running");
	proto_put(out, "mpirun_pid", "%d", (int)j->mpirun);
	proto_put(out, "started", "%.3f", j->started);
	proto_put(out, "np", "%d", j->np);
	proto_put(out, "command", "%s", j->command);
	proto_put(out, "rsh", "%s", j->rsh);
	proto_put(out, "ckpt_dir", "%s", j->ckpt_dir);
	proto_put(out, "rackckpt", "%s", j->rackckpt);
	for (size_t i = 0; i < j->nnodes; i++) {
		proto_put(out, "record", "node");
		proto_put(out, "name", "%s", j->nodes[i].name);
		proto_put(out, "slots", "%d", j->nodes[i].slots);
	}
	for (size_t i = 0; i < j->nranks; i++) {
		const struct job_rank *k = &j->ranks[i];

		proto_put(out, "record", "rank");
		proto_put(out, "rank", "%d", k->rank);
		proto_put(out, "node", "%s", k->node);
		proto_put(out, "addr", "%s", k->addr);
		proto_put(out, "origin", "%s", k->origin);
		proto_put(out, "host", "%s", k->host);
		proto_put(out, "root", "%d", (int)k->root);
		proto_put(out, "state", "%s", jobinfo_state_name(k->state));
		proto_put(out, "owner", "%d", (int)k->owner);
		proto_put(out, "status", "%d", k->status);
		proto_put(out, "moves", "%u", k->moves);
		proto_put(out, "downtime", "%.3f", k->downtime);
	}
}

static bool alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Every rank= of M, checked: 0, or an errno with the reason put. */
static int ranks_of(const struct registry *r, const struct proto_msg *m,
		    pid_t owner, bool locking, FILE *out)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct job_rank *k;
		long v;

		if (strcmp(m->kv[i].key, "rank"))
			continue;
		n++;
		if (!util_parse_long(m->kv[i].value, 0, 1 << 20, &v) ||
		    !(k = jobinfo_rank(r->j, (int)v))) {
			proto_put(out, "error", "job %d has no rank %s%s",
				  r->j->id, m->kv[i].value,
				  r->j->np && r->j->nranks < (size_t)r->j->np ?
				  " (not every rank has started yet)" : "");
			return ENOENT;
		}
		if (k->state == RANK_ENDED) {
			proto_put(out, "error", "rank %d of job %d has ended",
				  k->rank, r->j->id);
			return ESRCH;
		}
		if (k->state == RANK_MOVING && k->owner != owner &&
		    alive(k->owner)) {
			proto_put(out, "error", "rank %d of job %d is being "
				  "moved by process %d", k->rank, r->j->id,
				  (int)k->owner);
			return EBUSY;
		}
		if (!locking && k->owner != owner) {
			proto_put(out, "error", "rank %d is not process %d's "
				  "to move", k->rank, (int)owner);
			return EPERM;
		}
	}
	if (!n) {
		proto_put(out, "error", "no rank named");
		return EINVAL;
	}
	return 0;
}

static int on_lock(struct registry *r, const struct proto_msg *m, FILE *out,
		   const char *cmd)
{
	const char *o = proto_get(m, "owner"), *v;
	long owner;
	int ret;

	if (!o || !util_parse_long(o, 1, 0x7fffffff, &owner)) {
		proto_put(out, "error", "%s needs owner=PID", cmd);
		return EINVAL;
	}
	ret = ranks_of(r, m, (pid_t)owner, !strcmp(cmd, "lock"), out);
	if (ret)
		return ret;
	for (size_t i = 0; i < m->n; i++) {
		struct job_rank *k;

		if (strcmp(m->kv[i].key, "rank"))
			continue;
		k = jobinfo_rank(r->j, atoi(m->kv[i].value));
		if (!strcmp(cmd, "lock")) {
			k->state = RANK_MOVING;
			k->owner = (pid_t)owner;
			continue;
		}
		if (!strcmp(cmd, "moved")) {
			if ((v = proto_get(m, "node")))
				snprintf(k->node, sizeof(k->node), "%s", v);
			if ((v = proto_get(m, "addr")))
				snprintf(k->addr, sizeof(k->addr), "%s", v);
			if ((v = proto_get(m, "downtime")))
				k->downtime = strtod(v, NULL);
			k->moves++;
			continue;
		}
		k->state = RANK_RUNNING;		/* unlock */
		k->owner = 0;
	}
	return 0;
}

/* The node of the host list that is the one a wrapper runs on. */
static const char *match_node(const struct registry *r, const char *host,
			      const struct addr *a, size_t na, size_t *which)
{
	for (size_t i = 0; i < r->j->nnodes; i++)
		for (size_t k = 0; k < r->resolved[i].n; k++)
			for (size_t x = 0; x < na; x++)
				if (addr_equal(&r->resolved[i].a[k], &a[x])) {
					*which = x;
					return r->j->nodes[i].name;
				}
	for (size_t i = 0; i < r->j->nnodes; i++) {
		const char *n = r->j->nodes[i].name;
		size_t len = strcspn(n, ".");

		if (!strcmp(n, host) || (strncmp(n, host, len) == 0 &&
					 (host[len] == '.' || !host[len])))
			return n;
	}
	return NULL;
}

static int on_enlist(struct registry *r, struct client *c,
		     const struct proto_msg *m, FILE *out)
{
	const char *tok = proto_get(m, "token"), *host = proto_get(m, "host");
	const char *rs = proto_get(m, "rank"), *root = proto_get(m, "root");
	struct addr a[MAX_NODE_ADDRS];
	char buf[ADDR_STRLEN];
	const char *node;
	size_t na = 0, which = 0;
	struct job_rank *k;
	long rank, pid;

	if (!tok || strlen(tok) != 32 ||
	    sodium_memcmp(tok, r->token, 32) != 0) {
		proto_put(out, "error", "bad token");
		return EPERM;
	}
	if (!rs || !util_parse_long(rs, 0, 1 << 20, &rank) || !root ||
	    !util_parse_long(root, 2, 0x7fffffff, &pid) || !host) {
		proto_put(out, "error", "enlist needs rank=, root=, host=");
		return EINVAL;
	}
	for (size_t i = 0; i < m->n && na < MAX_NODE_ADDRS; i++) {
		struct endpoint e;
		bool has_port;

		if (!strcmp(m->kv[i].key, "addr") &&
		    !endpoint_parse(m->kv[i].value, &e, &has_port) && !has_port)
			a[na++] = e.addr;
	}
	k = jobinfo_rank(r->j, (int)rank);
	if (!k) {
		r->j->ranks = xrealloc(r->j->ranks, (r->j->nranks + 1) *
				       sizeof(*r->j->ranks));
		k = &r->j->ranks[r->j->nranks++];
		/* Kept in rank order, for the listings. */
		while (k > r->j->ranks && k[-1].rank > rank) {
			k[0] = k[-1];
			k--;
		}
	}
	memset(k, 0, sizeof(*k));
	k->rank = (int)rank;
	k->root = (pid_t)pid;
	node = match_node(r, host, a, na, &which);
	snprintf(k->node, sizeof(k->node), "%s", node ? node : host);
	snprintf(k->origin, sizeof(k->origin), "%s", k->node);
	snprintf(k->host, sizeof(k->host), "%s", host);
	snprintf(k->addr, sizeof(k->addr), "%s",
		 na ? addr_format(&a[which], buf, sizeof(buf)) : "?");
	c->enlisted = true;
	c->rank = (int)rank;
	util_debug("job %d: rank %ld (pid %ld) on %s", r->j->id, rank, pid,
		   k->node);
	return 0;
}

static int on_ended(struct registry *r, struct client *c,
		    const struct proto_msg *m)
{
	struct job_rank *k = c->enlisted ? jobinfo_rank(r->j, c->rank) : NULL;
	const char *s = proto_get(m, "status");

	if (!k)
		return EPERM;
	k->state = RANK_ENDED;
	k->status = s ? atoi(s) : -1;
	return 0;
}

/* One request of C; the reply written to C. */
static void handle(struct registry *r, struct client *c, const struct proto_msg *m)
{
	const char *cmd = proto_get(m, "cmd");
	char *text;
	size_t len;
	FILE *out = open_memstream(&text, &len);
	int eno;

	if (!out)
		util_fatal("out of memory");
	if (!cmd) {
		proto_put(out, "error", "no cmd");
		eno = EINVAL;
	} else if (c->wrapper && !strcmp(cmd, "enlist")) {
		eno = on_enlist(r, c, m, out);
	} else if (c->wrapper && !strcmp(cmd, "ended")) {
		eno = on_ended(r, c, m);
	} else if (c->wrapper) {
		proto_put(out, "error", "not a wrapper's request");
		eno = EPERM;
	} else if (!strcmp(cmd, "job")) {
		put_job(r, out);
		eno = 0;
	} else if (!strcmp(cmd, "lock") || !strcmp(cmd, "moved") ||
		   !strcmp(cmd, "unlock")) {
		eno = on_lock(r, m, out, cmd);
	} else {
		proto_put(out, "error", "unknown command '%s'", cmd);
		eno = EOPNOTSUPP;
	}
	fprintf(out, "errno=%d\n\n", eno);
	if (fclose(out))
		util_fatal("out of memory");
	/* Replies are small, the peers read them at once: a blocking send
	 * (the socket is non-blocking: retried on EAGAIN). */
	for (size_t off = 0; off < len;) {
		ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			poll(&(struct pollfd){ .fd = c->fd, .events = POLLOUT },
			     1, 1000);
			continue;
		}
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(text);
}

static void drop(struct registry *r, size_t i)
{
	struct client *c = &r->c[i];

	/* A wrapper that went without a word: its rank is gone. */
	if (c->wrapper && c->enlisted) {
		struct job_rank *k = jobinfo_rank(r->j, c->rank);

		if (k && k->state != RANK_ENDED && k->root) {
			k->state = RANK_ENDED;
			k->status = -1;
		}
	}
	close(c->fd);
	free(c->buf);
	r->c[i] = r->c[--r->nc];
}

/* Read what C sent; false if it is to be dropped. */
static bool readable(struct registry *r, struct client *c)
{
	char buf[4096];
	ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
	size_t mlen;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0 || c->len + (size_t)n > MAX_REQUEST)
		return false;
	c->buf = xrealloc(c->buf, c->len + (size_t)n + 1);
	memcpy(c->buf + c->len, buf, (size_t)n);
	c->len += (size_t)n;
	while ((mlen = proto_message_len(c->buf, c->len))) {
		struct proto_msg m;
		char *copy = xmalloc(mlen + 1);

		memcpy(copy, c->buf, mlen);
		memmove(c->buf, c->buf + mlen, c->len - mlen);
		c->len -= mlen;
		if (proto_parse(copy, mlen, &m) == 0) {
			handle(r, c, &m);
			proto_msg_free(&m);
		}
		free(copy);
		/* A wrapper says who it is first. */
		if (c->wrapper && !c->enlisted)
			return false;
	}
	return true;
}

static void accept_one(struct registry *r, int lfd, bool wrapper)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (r->nc == MAX_CONNS) {
		close(fd);
		return;
	}
	r->c[r->nc++] = (struct client){ .fd = fd, .wrapper = wrapper,
					 .rank = -1 };
}

/* A signal for mpirun: the terminal's reach it by themselves. */
static void on_signal(struct registry *r, pid_t mpirun)
{
	struct signalfd_siginfo si;

	if (read(r->sigfd, &si, sizeof(si)) != sizeof(si) ||
	    si.ssi_signo == SIGCHLD || si.ssi_code == SI_KERNEL)
		return;
	kill(mpirun, (int)si.ssi_signo);
}

int registry_run(struct registry *r, pid_t mpirun)
{
	int status = 0;
	bool done = false;

	r->j->mpirun = mpirun;
	r->sigfd = util_forward_signalfd();
	if (r->sigfd < 0)
		util_fatal("signalfd: %s", strerror(-r->sigfd));
	while (!done) {
		struct pollfd fds[MAX_CONNS + 3];
		size_t n = 0;

		fds[n++] = (struct pollfd){ .fd = r->sigfd, .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = r->ufd, .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = r->tfd, .events = POLLIN };
		for (size_t i = 0; i < r->nc; i++)
			fds[n++] = (struct pollfd){ .fd = r->c[i].fd,
						    .events = POLLIN };
		if (poll(fds, n, 1000) < 0 && errno != EINTR)
			util_fatal("poll: %s", strerror(errno));
		for (size_t i = r->nc; i-- > 0;)
			if (fds[3 + i].revents && !readable(r, &r->c[i]))
				drop(r, i);
		if (fds[1].revents & POLLIN)
			accept_one(r, r->ufd, false);
		if (fds[2].revents & POLLIN)
			accept_one(r, r->tfd, true);
		if (fds[0].revents & POLLIN)
			on_signal(r, mpirun);
		/* SIGCHLD, or the 1 s timeout: mpirun's end is not missed. */
		if (waitpid(mpirun, &status, WNOHANG) == mpirun)
			done = true;
	}
	r->j->ended = true;
	return status;
}
