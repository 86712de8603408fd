// SPDX-License-Identifier: GPL-2.0-only
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_cmds.h"
#include "log.h"
#include "loop.h"
#include "proto.h"
#include "rackd.h"
#include "keystate.h"

/* Requests are a few lines; anything longer is refused. */
#define CTL_MAX_REQUEST (64 * 1024)

struct ctl_client {
	struct ctl *ctl;
	int fd;
	uid_t uid;
	char in[CTL_MAX_REQUEST];
	size_t inlen;
	char *out;		/* pending reply bytes */
	size_t outlen, outoff;
	bool closing;		/* peer finished sending: close when flushed */
	bool subscribed;	/* receives events */
	struct ctl_client *next;
};

struct ctl {
	struct rackd *d;
	char *path;
	int fd;
	struct ctl_client *clients;
};

/* A subscriber that lets this much pile up is too slow: dropped. */
#define CTL_MAX_BACKLOG (1024 * 1024)

static void client_free(struct ctl_client *cl)
{
	struct ctl *ctl = cl->ctl;
	struct ctl_client **pp = &ctl->clients;

	while (*pp && *pp != cl)
		pp = &(*pp)->next;
	if (*pp)
		*pp = cl->next;
	loop_del(ctl->d->loop, cl->fd);
	close(cl->fd);
	free(cl->out);
	free(cl);
}

static void client_append(struct ctl_client *cl, const char *data, size_t len)
{
	char *out = realloc(cl->out, cl->outlen + len);

	if (!out)
		fatalx(EXIT_NOMEM, "out of memory");
	memcpy(out + cl->outlen, data, len);
	cl->out = out;
	cl->outlen += len;
}

/* Run one request and queue its complete reply. */
static void client_request(struct ctl_client *cl, char *msg, size_t len)
{
	struct rackd *d = cl->ctl->d;
	struct proto_msg req;
	const struct ctl_command *cmd = NULL;
	char err[256] = "", *body = NULL;
	size_t bodylen = 0;
	const char *name, *ver;
	FILE *out;
	int ret;

	d->stats.ctl_requests++;
	out = open_memstream(&body, &bodylen);
	if (!out)
		fatalx(EXIT_NOMEM, "out of memory");
	ret = proto_parse(msg, len, &req);
	if (ret) {
		snprintf(err, sizeof(err), "malformed request line");
		goto reply;
	}
	ver = proto_get(&req, "version");
	name = proto_get(&req, "cmd");
	if (ver && atoi(ver) != PROTO_VERSION) {
		snprintf(err, sizeof(err),
			 "protocol version %s not supported (rackd speaks %d)",
			 ver, PROTO_VERSION);
		ret = -EPROTONOSUPPORT;
	} else if (!name) {
		snprintf(err, sizeof(err), "request has no cmd line");
		ret = -EINVAL;
	} else if (!(cmd = ctl_command_find(name))) {
		snprintf(err, sizeof(err), "unknown command '%s'", name);
		ret = -EOPNOTSUPP;
	} else if (cmd->privileged && cl->uid != 0) {
		snprintf(err, sizeof(err), "'%s' needs root", name);
		ret = -EPERM;
	} else {
		ret = cmd->run(d, &req, out, err, sizeof(err));
		if (ret == 0 && cmd->subscribes)
			cl->subscribed = true;
	}
	proto_msg_free(&req);
reply:
	fclose(out);
	if (ret) {
		d->stats.ctl_errors++;
		free(body);
		body = NULL;
		if (asprintf(&body, "error=%s\nerrno=%d\n\n", err, -ret) < 0)
			fatalx(EXIT_NOMEM, "out of memory");
		bodylen = strlen(body);
	} else {
		client_append(cl, body, bodylen);
		free(body);
		body = xstrdup("errno=0\n\n");
		bodylen = strlen(body);
	}
	client_append(cl, body, bodylen);
	free(body);
}

/* Write what we can; returns false when the client was freed. */
static bool client_flush(struct ctl_client *cl)
{
	while (cl->outoff < cl->outlen) {
		ssize_t n = send(cl->fd, cl->out + cl->outoff,
				 cl->outlen - cl->outoff, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				loop_mod(cl->ctl->d->loop, cl->fd,
					 EPOLLIN | EPOLLOUT);
				return true;
			}
			client_free(cl);
			return false;
		}
		cl->outoff += (size_t)n;
	}
	free(cl->out);
	cl->out = NULL;
	cl->outlen = cl->outoff = 0;
	loop_mod(cl->ctl->d->loop, cl->fd, EPOLLIN);
	if (cl->closing) {
		client_free(cl);
		return false;
	}
	return true;
}

static void client_read(struct ctl_client *cl)
{
	for (;;) {
		ssize_t n = recv(cl->fd, cl->in + cl->inlen,
				 sizeof(cl->in) - cl->inlen, 0);
		size_t mlen;

		if (n == 0) {
			cl->closing = true;
			break;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				cl->closing = true;
			break;
		}
		cl->inlen += (size_t)n;
		while ((mlen = proto_message_len(cl->in, cl->inlen)) > 0) {
			client_request(cl, cl->in, mlen);
			memmove(cl->in, cl->in + mlen, cl->inlen - mlen);
			cl->inlen -= mlen;
		}
		if (cl->inlen == sizeof(cl->in)) {
			static const char msg[] =
				"error=request too long\nerrno=7\n\n";

			client_append(cl, msg, sizeof(msg) - 1);
			cl->closing = true;
			break;
		}
	}
}

static void client_ready(void *arg, uint32_t events)
{
	struct ctl_client *cl = arg;

	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		client_read(cl);
	client_flush(cl);
}

static void ctl_accept(void *arg, uint32_t events)
{
	struct ctl *ctl = arg;

	(void)events;
	for (;;) {
		int fd = accept4(ctl->fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct ctl_client *cl;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				log_warn("control socket: accept");
			return;
		}
		cl = xcalloc(1, sizeof(*cl));
		cl->ctl = ctl;
		cl->fd = fd;
		/* Unknown credentials are treated as unprivileged. */
		cl->uid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred,
				     &clen) == 0 ? cred.uid : (uid_t)-1;
		if (loop_add(ctl->d->loop, fd, EPOLLIN, client_ready, cl)) {
			close(fd);
			free(cl);
			continue;
		}
		cl->next = ctl->clients;
		ctl->clients = cl;
	}
}

static int make_parent_dir(const char *path)
{
	char *copy = xstrdup(path);
	char *dir = dirname(copy);
	int ret = 0;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		ret = -errno;
	free(copy);
	return ret;
}

/* A socket file nobody answers on is left over from a crash. */
static int claim_path(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
		ret = -EADDRINUSE;
	else if (errno == ECONNREFUSED)
		unlink(sun->sun_path);
	close(fd);
	return ret;
}

int ctl_open(struct ctl **out, struct rackd *d, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct ctl *ctl;
	int ret;

	*out = NULL;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	ret = make_parent_dir(path);
	if (ret)
		return ret;
	ret = claim_path(&sun);
	if (ret)
		return ret;

	ctl = xcalloc(1, sizeof(*ctl));
	ctl->d = d;
	ctl->path = xstrdup(path);
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			 0);
	if (ctl->fd < 0) {
		ret = -errno;
		goto err;
	}
	if (bind(ctl->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		ret = -errno;
		goto err;
	}
	/* Everyone may connect; privileged commands check SO_PEERCRED. */
	if (chmod(path, 0666) < 0 || listen(ctl->fd, 64) < 0) {
		ret = -errno;
		goto err_unlink;
	}
	ret = loop_add(d->loop, ctl->fd, EPOLLIN, ctl_accept, ctl);
	if (ret)
		goto err_unlink;
	*out = ctl;
	return 0;
err_unlink:
	unlink(path);
err:
	if (ctl->fd >= 0)
		close(ctl->fd);
	free(ctl->path);
	free(ctl);
	return ret;
}

void ctl_event(void *arg, enum event_type type, struct conn *c,
	       const char *reason)
{
	char *msg = NULL, l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];
	const char *event = event_name(type);
	struct ctl *ctl = arg;
	size_t len = 0;
	struct timespec ts;
	FILE *f;

	if (!ctl || !event)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	f = open_memstream(&msg, &len);
	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	proto_put(f, "event", "%s", event);
	proto_put(f, "time_ms", "%lld", (long long)ts.tv_sec * 1000 +
					 ts.tv_nsec / 1000000);
	proto_put(f, "id", "%llu", (unsigned long long)c->id);
	if (c->edp && c->edp->keyed)
		proto_put(f, "conn_id", "%016llx",
			  (unsigned long long)c->edp->conn_id);
	proto_put(f, "local", "%s", endpoint_format(&c->local, l, sizeof(l)));
	proto_put(f, "remote", "%s", endpoint_format(&c->remote, r, sizeof(r)));
	if (conn_spliced(c)) {
		proto_put(f, "wire_local", "%s",
			  endpoint_format(&c->wire_local, l, sizeof(l)));
		proto_put(f, "wire_remote", "%s",
			  endpoint_format(&c->wire_remote, r, sizeof(r)));
	}
	if (reason)
		proto_put(f, "reason", "%s", reason);
	fputc('\n', f);
	fclose(f);
	for (struct ctl_client *cl = ctl->clients, *next; cl; cl = next) {
		next = cl->next;
		if (!cl->subscribed)
			continue;
		if (cl->outlen - cl->outoff > CTL_MAX_BACKLOG) {
			log_warnx("events: dropping a subscriber that does not read");
			client_free(cl);
			continue;
		}
		client_append(cl, msg, len);
		client_flush(cl);
	}
	free(msg);
}

void ctl_close(struct ctl *ctl)
{
	if (!ctl)
		return;
	while (ctl->clients)
		client_free(ctl->clients);
	loop_del(ctl->d->loop, ctl->fd);
	close(ctl->fd);
	unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}
