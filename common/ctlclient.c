// SPDX-License-Identifier: GPL-2.0-only
#include "ctlclient.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int ctlclient_connect(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-ret));
		return ret;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		ret = -errno;
		close(fd);
		if (ret == -ENOENT || ret == -ECONNREFUSED)
			snprintf(err, errlen, "rackd is not running (no daemon "
				 "at %s)", path);
		else
			snprintf(err, errlen, "cannot reach rackd at %s: %s",
				 path, strerror(-ret));
		return ret;
	}
	return fd;
}

int ctlclient_send_all(int fd, const char *buf, size_t len, char *err,
		       size_t errlen)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			int ret = -errno;

			if (ret == -EINTR)
				continue;
			snprintf(err, errlen, "sending request: %s",
				 strerror(-ret));
			return ret;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one whole reply message from FD into a buffer of its own. */
static int read_reply(int fd, struct ctlclient_reply *r, size_t *mlen,
		      char *err, size_t errlen)
{
	size_t len = 0, cap = 65536;

	r->buf = malloc(cap);
	if (!r->buf)
		goto nomem;
	while (!(*mlen = proto_message_len(r->buf, len))) {
		if (len == cap) {
			char *bigger;

			if (cap >= PROTO_MAX_MESSAGE) {
				snprintf(err, errlen, "reply from rackd too long");
				return -EMSGSIZE;
			}
			cap *= 2;
			bigger = realloc(r->buf, cap);
			if (!bigger)
				goto nomem;
			r->buf = bigger;
		}
		ssize_t n = recv(fd, r->buf + len, cap - len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "rackd closed the connection "
				 "before replying");
			return -ECONNRESET;
		}
		len += (size_t)n;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

int ctlclient_transact(const char *path, const char *request,
		       struct ctlclient_reply *r, char *err, size_t errlen,
		       int *rackd_refused)
{
	size_t mlen = 0;
	const char *eno_s;
	int fd, ret, eno;

	*rackd_refused = 0;
	memset(r, 0, sizeof(*r));
	fd = ctlclient_connect(path, err, errlen);
	if (fd < 0)
		return fd;
	ret = ctlclient_send_all(fd, request, strlen(request), err, errlen);
	if (!ret)
		ret = ctlclient_send_all(fd, "\n", 1, err, errlen);
	if (!ret)
		ret = read_reply(fd, r, &mlen, err, errlen);
	close(fd);
	if (ret)
		goto fail;
	if (proto_parse(r->buf, mlen, &r->msg)) {
		snprintf(err, errlen, "malformed reply from rackd");
		ret = -EBADMSG;
		goto fail;
	}
	eno_s = proto_get(&r->msg, "errno");
	if (!eno_s) {
		snprintf(err, errlen, "reply from rackd lacks errno");
		ret = -EBADMSG;
		goto fail;
	}
	eno = atoi(eno_s);
	if (eno) {
		const char *msg = proto_get(&r->msg, "error");

		snprintf(err, errlen, "%s", msg ? msg : strerror(eno));
		*rackd_refused = 1;
		ret = eno > 0 ? -eno : -EPROTO;
		goto fail;
	}
	return 0;
fail:
	ctlclient_reply_free(r);
	return ret;
}

void ctlclient_reply_free(struct ctlclient_reply *r)
{
	proto_msg_free(&r->msg);
	free(r->buf);
	r->buf = NULL;
}

size_t ctlclient_next_record(const struct proto_msg *m, size_t i)
{
	while (i < m->n && strcmp(m->kv[i].key, "record") != 0)
		i++;
	return i;
}

const char *ctlclient_field(const struct proto_msg *m, size_t from, size_t to,
			    const char *key)
{
	for (size_t i = from; i < to; i++)
		if (strcmp(m->kv[i].key, key) == 0)
			return m->kv[i].value;
	return NULL;
}
