// SPDX-License-Identifier: GPL-2.0-only
#include "bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "skqueue.h"
#include "util.h"

#define CONNECT_TIMEOUT_MS 5000
#define DRAIN_MS 10000

int bridge_from_info(struct bridge *b, const struct image_kv *info,
		     char *err, size_t errlen)
{
	const char *addr = image_kv_get(info, "relay_addr");
	const char *port = image_kv_get(info, "relay_port");
	const char *token = image_kv_get(info, "relay_token");
	const char *v;
	size_t pos = 0;
	long p;

	memset(b, 0, sizeof(*b));
	if (!addr)
		return 0;
	if (!port || !util_parse_long(port, 1, 65535, &p) || !token ||
	    strlen(token) != RELAY_TOKEN_HEX - 1 || strlen(addr) >= sizeof(b->addr)) {
		snprintf(err, errlen, "the relay lines of %s are incomplete",
			 IMAGE_INFO);
		return -EINVAL;
	}
	snprintf(b->addr, sizeof(b->addr), "%s", addr);
	b->port = (int)p;
	memcpy(b->token, token, RELAY_TOKEN_HEX);
	while ((v = image_kv_next(info, "relay_fd", &pos))) {
		struct bridge_chan *c = &b->c[b->n];

		if (b->n == RELAY_MAX_FDS ||
		    sscanf(v, "%d %lu", &c->fd, &c->ino) != 2 || c->fd < 0) {
			snprintf(err, errlen, "bad relay_fd line '%s' in %s", v,
				 IMAGE_INFO);
			return -EINVAL;
		}
		c->tcp = c->local = c->child_end = -1;
		b->n++;
	}
	return 1;
}

static int dial(const struct bridge *b, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST };
	struct addrinfo *res;
	char port[8];
	int fd, ret;

	snprintf(port, sizeof(port), "%d", b->port);
	ret = getaddrinfo(b->addr, port, &hints, &res);
	if (ret) {
		snprintf(err, errlen, "bad wrapper address %s: %s", b->addr,
			 gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot reach the wrapper at %s port %d: "
			 "%s", b->addr, b->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return ret;
	}
	freeaddrinfo(res);
	return fd;
}

int bridge_connect(struct bridge *b, char *err, size_t errlen)
{
	for (size_t i = 0; i < b->n; i++) {
		struct bridge_chan *c = &b->c[i];
		char what[32], why[256];
		int sp[2], ret;

		c->tcp = dial(b, err, errlen);
		if (c->tcp < 0)
			return c->tcp;
		snprintf(what, sizeof(what), "fd=%d", c->fd);
		ret = relayfile_hello(c->tcp, b->token, what, CONNECT_TIMEOUT_MS,
				      why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s", why);
			return ret;
		}
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
			snprintf(err, errlen, "socketpair: %s", strerror(errno));
			return -errno;
		}
		c->local = sp[0];
		c->child_end = sp[1];
		fcntl(c->tcp, F_SETFL, O_NONBLOCK);
		fcntl(c->local, F_SETFL, O_NONBLOCK);
		/* CRIU finds the descriptor by the old socket's name. */
		c->inherit = xasprintf("fd[%d]:socket:[%lu]", c->child_end,
				       c->ino);
		/* The child's end of writing is passed on by bridge_keep(),
		 * once told to the wrapper. */
		pump_init(&c->up, c->local, c->tcp, false);
		pump_init(&c->down, c->tcp, c->local, true);
	}
	return 0;
}

/* All of DATA into FD (non-blocking, nobody reads it yet): its send
 * buffer made big enough first (root: SO_SNDBUFFORCE). */
static int write_back(int fd, const char *data, size_t len)
{
	int size = len > (size_t)INT_MAX / 4 ? INT_MAX / 2 : (int)len * 2 + 65536;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int bridge_refill(struct bridge *b, const char *images, char *err,
		  size_t errlen)
{
	for (size_t i = 0; i < b->n; i++) {
		struct bridge_chan *c = &b->c[i];
		char why[256], *data;
		size_t len;
		int ret;

		ret = skqueue_read(images, c->ino, &data, &len, why,
				   sizeof(why));
		if (ret) {
			snprintf(err, errlen, "descriptor %d: the bytes it had "
				 "not read at the dump: %s", c->fd, why);
			return ret;
		}
		if (!len)
			continue;
		ret = write_back(c->local, data, len);
		free(data);
		if (ret) {
			snprintf(err, errlen, "descriptor %d: cannot write back "
				 "the %zu byte(s) it had not read at the dump: %s",
				 c->fd, len, strerror(-ret));
			return ret;
		}
		c->refilled = len;
		util_info("descriptor %d: %zu byte(s) it had not read at the "
			  "dump written back first", c->fd, len);
	}
	return 0;
}

void bridge_close_child_ends(struct bridge *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->c[i].child_end >= 0) {
			close(b->c[i].child_end);
			b->c[i].child_end = -1;
		}
}

static bool all_up_done(const struct bridge *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (!pump_done(&b->c[i].up))
			return false;
	return true;
}

/* One hello line (WHAT) on a connection of its own: how the child
 * ended, or the end of its writing on a descriptor. */
static int tell(struct bridge *b, const char *what)
{
	char err[256];
	int fd = dial(b, err, sizeof(err));

	if (fd >= 0 && relayfile_hello(fd, b->token, what, CONNECT_TIMEOUT_MS,
				       err, sizeof(err)) == 0) {
		close(fd);
		return 0;
	}
	util_err("could not tell the wrapper %s: %s", what, err);
	if (fd >= 0)
		close(fd);
	return -EIO;
}

/* Last word to the wrapper: how the child ended. */
static void report(struct bridge *b, int status)
{
	char what[32];

	if (WIFSIGNALED(status))
		snprintf(what, sizeof(what), "signal=%d", WTERMSIG(status));
	else
		snprintf(what, sizeof(what), "exit=%d",
			 WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	tell(b, what);
}

int bridge_publish(const struct bridge *b, pid_t root)
{
	struct relay_info ri = { .wrapper = getpid(), .port = b->port };

	snprintf(ri.addr, sizeof(ri.addr), "%s", b->addr);
	memcpy(ri.token, b->token, sizeof(ri.token));
	for (size_t i = 0; i < b->n; i++)
		ri.fds[ri.nfds++].fd = b->c[i].fd;
	return relayfile_write(root, &ri);
}

/* The child ended its writing on C's descriptor: unless a dump took it,
 * the wrapper is told first, then the connection is half-closed. */
static void child_eof(struct bridge *b, struct bridge_chan *c, pid_t root)
{
	char what[32];

	c->eof_sent = true;
	if (relayfile_moving(root))
		return;
	snprintf(what, sizeof(what), "eof=%d", c->fd);
	if (tell(b, what) == 0)
		shutdown(c->tcp, SHUT_WR);
}

/* ROOT has ended: was it dumped (0: not yet known, 1: yes, -1: no)? */
static int dumped(pid_t root)
{
	if (relayfile_exists(root, ".moved"))
		return 1;
	return relayfile_exists(root, ".moving") ? 0 : -1;
}

int bridge_keep(struct bridge *b, pid_t root, bool *moved)
{
	int pidfd = (int)syscall(SYS_pidfd_open, root, 0);
	double deadline = 0;
	bool ended = false;
	int status = 0, verdict = -1;

	*moved = false;
	while (!ended || verdict == 0 ||
	       (!all_up_done(b) && util_mono() < deadline)) {
		struct pollfd fds[4 * RELAY_MAX_FDS + 1];
		size_t n = 0;

		fds[n++] = (struct pollfd){ .fd = ended ? -1 : pidfd,
					    .events = POLLIN };
		for (size_t i = 0; i < b->n; i++) {
			pump_poll_add(&b->c[i].up, fds, sizeof(fds) / sizeof(fds[0]), &n);
			pump_poll_add(&b->c[i].down, fds, sizeof(fds) / sizeof(fds[0]), &n);
		}
		if (poll(fds, n, ended ? 100 : (pidfd < 0 ? 200 : -1)) < 0 &&
		    errno != EINTR)
			break;
		for (size_t i = 0; i < b->n; i++) {
			struct bridge_chan *c = &b->c[i];

			pump_run(&c->up, fds);
			pump_run(&c->down, fds);
			if (!c->eof_sent && pump_done(&c->up))
				child_eof(b, c, root);
		}
		/* Orphans of the restored tree are ours to reap too. */
		for (;;) {
			int st;
			pid_t p = waitpid(-1, &st, WNOHANG);

			if (p == root && !ended) {
				status = st;
				ended = true;
				deadline = util_mono() + DRAIN_MS / 1000.0;
			}
			if (p <= 0) {
				/* Not our child after all: its end is
				 * known, its status not. */
				if (p < 0 && errno == ECHILD && !ended) {
					ended = true;
					deadline = util_mono() + DRAIN_MS / 1000.0;
				}
				break;
			}
		}
		/* A dump kills the tree only once it has succeeded; it
		 * renames .moving to .moved right after. */
		if (ended)
			verdict = dumped(root);
	}
	if (pidfd >= 0)
		close(pidfd);
	for (size_t i = 0; i < b->n; i++) {
		close(b->c[i].tcp);
		close(b->c[i].local);
		b->c[i].tcp = b->c[i].local = -1;
	}
	if (verdict > 0) {
		*moved = true;
		relayfile_remove(root, getpid());
		return status;
	}
	relayfile_remove(root, getpid());
	if (b->n)
		report(b, status);
	return status;
}

void bridge_free(struct bridge *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct bridge_chan *c = &b->c[i];

		if (c->tcp >= 0)
			close(c->tcp);
		if (c->local >= 0)
			close(c->local);
		if (c->child_end >= 0)
			close(c->child_end);
		free(c->inherit);
		c->tcp = c->local = c->child_end = -1;
		c->inherit = NULL;
	}
	b->n = 0;
}
