// SPDX-License-Identifier: GPL-2.0-only
#include "relayfile.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

const char *relayfile_dir(void)
{
	const char *d = getenv("RACKS_RELAY_DIR");

	return d && *d ? d : RELAY_DIR_DEFAULT;
}

char *relayfile_path(pid_t child, const char *suffix)
{
	return xasprintf("%s/%d%s", relayfile_dir(), (int)child, suffix);
}

/* mkdir -p, the last component 0700. */
static int make_dir(const char *dir)
{
	char *copy = xstrdup(dir);
	int ret = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			ret = -errno;
		*p = '/';
	}
	if (!ret && mkdir(copy, 0700) < 0 && errno != EEXIST)
		ret = -errno;
	free(copy);
	return ret;
}

int relayfile_write(pid_t child, const struct relay_info *ri)
{
	char *text, *path;
	size_t len = 0;
	FILE *f;
	int ret;

	ret = make_dir(relayfile_dir());
	if (ret)
		return ret;
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "racks-relay 1\nwrapper=%d\n", (int)ri->wrapper);
	if (ri->addr[0])
		fprintf(f, "addr=%s\n", ri->addr);
	fprintf(f, "port=%d\ntoken=%s\n", ri->port, ri->token);
	for (size_t i = 0; i < ri->nfds; i++)
		fprintf(f, "relay=%d socket\n", ri->fds[i].fd);
	if (fclose(f))
		return -ENOMEM;
	path = relayfile_path(child, "");
	ret = util_write_file(path, text, len, 0600);
	free(path);
	free(text);
	return ret;
}

void relayfile_remove(pid_t child, pid_t owner)
{
	static const char *const markers[] = { ".moving", ".moved" };
	struct relay_info ri;
	char err[256], *p;

	if (relayfile_read(child, &ri, err, sizeof(err)) == 0 &&
	    ri.wrapper == owner) {
		p = relayfile_path(child, "");
		unlink(p);
		free(p);
	}
	for (size_t i = 0; i < 2; i++) {
		p = relayfile_path(child, markers[i]);
		unlink(p);
		free(p);
	}
}

bool relayfile_exists(pid_t child, const char *suffix)
{
	char *p = relayfile_path(child, suffix);
	bool ok = access(p, F_OK) == 0;

	free(p);
	return ok;
}

bool relayfile_moving(pid_t child)
{
	return relayfile_exists(child, ".moving") ||
	       relayfile_exists(child, ".moved");
}

int relayfile_read(pid_t child, struct relay_info *ri, char *err,
		   size_t errlen)
{
	char *path = relayfile_path(child, ""), *text, *line, *save = NULL;
	bool header = false;
	int ret = 0;

	memset(ri, 0, sizeof(*ri));
	text = util_read_file(path, NULL);
	if (!text) {
		ret = -errno;
		if (ret != -ENOENT)
			snprintf(err, errlen, "cannot read %s: %s", path,
				 strerror(errno));
		free(path);
		return ret;
	}
	for (line = strtok_r(text, "\n", &save); line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		long v;
		int fd;

		if (strcmp(line, "racks-relay 1") == 0)
			header = true;
		else if (strncmp(line, "wrapper=", 8) == 0 &&
			 util_parse_long(line + 8, 1, 0x7fffffff, &v))
			ri->wrapper = (pid_t)v;
		else if (strncmp(line, "addr=", 5) == 0 && line[5] &&
			 strlen(line + 5) < sizeof(ri->addr))
			memcpy(ri->addr, line + 5, strlen(line + 5) + 1);
		else if (strncmp(line, "port=", 5) == 0 &&
			 util_parse_long(line + 5, 1, 65535, &v))
			ri->port = (int)v;
		else if (strncmp(line, "token=", 6) == 0 &&
			 strlen(line + 6) == RELAY_TOKEN_HEX - 1)
			memcpy(ri->token, line + 6, RELAY_TOKEN_HEX);
		else if (sscanf(line, "relay=%d socket", &fd) == 1 && fd >= 0 &&
			 ri->nfds < RELAY_MAX_FDS)
			ri->fds[ri->nfds++].fd = fd;
		else
			ret = -EINVAL;
	}
	if (!ret && (!header || !ri->wrapper || !ri->port || !ri->token[0]))
		ret = -EINVAL;
	if (ret)
		snprintf(err, errlen, "%s is not a rackckpt relay file", path);
	free(text);
	free(path);
	return ret;
}

int relayfile_hello(int fd, const char *token, const char *what,
		    int timeout_ms, char *err, size_t errlen)
{
	char line[RELAY_HELLO_MAX], answer[128];
	size_t got = 0;
	int n = snprintf(line, sizeof(line), "racks-relay 1 %s %s\n", token,
			 what);

	if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		snprintf(err, errlen, "sending to the wrapper: %s",
			 strerror(errno));
		return -EIO;
	}
	/* Byte by byte: what follows the answer is the relayed stream. */
	while (got < sizeof(answer) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, timeout_ms) <= 0) {
			snprintf(err, errlen, "the wrapper did not answer");
			return -ETIMEDOUT;
		}
		r = recv(fd, answer + got, 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "the wrapper closed the "
				 "connection");
			return -ECONNRESET;
		}
		if (answer[got++] == '\n')
			break;
	}
	answer[got] = '\0';
	if (strcmp(answer, "ok\n") == 0)
		return 0;
	answer[strcspn(answer, "\n")] = '\0';
	snprintf(err, errlen, "the wrapper refused %s: %s", what, answer);
	return -EPERM;
}
