// SPDX-License-Identifier: GPL-2.0-only
#include "enlist.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "util.h"

#define CONNECT_MS 3000
#define REPLY_MS 5000

/* The connection to the controller, open for the rank's life: its close
 * says the wrapper is gone. */
static int enlist_fd = -1;

/* Connect to ADDR:PORT within CONNECT_MS; the socket, or -1. */
static int dial(const char *addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST }, *res;
	int fd, err = 0;
	socklen_t len = sizeof(err);
	struct pollfd p;

	if (getaddrinfo(addr, port, &hints, &res))
		return -1;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return -1;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, CONNECT_MS) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, 0);		/* blocking from here on */
	return fd;
}

/* Send TEXT and read the reply's last line "errno=N": 0 or -EPROTO. */
static int say(int fd, const char *text)
{
	char reply[1024];
	size_t got = 0;

	if (send(fd, text, strlen(text), MSG_NOSIGNAL) != (ssize_t)strlen(text))
		return -EIO;
	while (got < sizeof(reply) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, REPLY_MS) != 1)
			return -ETIMEDOUT;
		n = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
		if (n <= 0)
			return -ECONNRESET;
		got += (size_t)n;
		reply[got] = '\0';
		if (strstr(reply, "\n\n"))
			return strstr(reply, "errno=0\n") ? 0 : -EPROTO;
	}
	return -EPROTO;
}

/* This host's global addresses, as addr= lines. */
static void put_addrs(FILE *f)
{
	struct ifaddrs *list, *i;
	char a[ADDR_STRLEN];

	if (getifaddrs(&list) < 0)
		return;
	for (i = list; i; i = i->ifa_next) {
		struct addr x = { 0 };

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		x.family = (uint8_t)i->ifa_addr->sa_family;
		if (x.family == AF_INET)
			x.v4 = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		else
			x.v6 = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		if ((x.family == AF_INET && x.bytes[0] == 127) ||
		    (x.family == AF_INET6 && (IN6_IS_ADDR_LOOPBACK(&x.v6) ||
					      IN6_IS_ADDR_LINKLOCAL(&x.v6))))
			continue;
		fprintf(f, "addr=%s\n", addr_format(&x, a, sizeof(a)));
	}
	freeifaddrs(list);
}

void enlist_started(pid_t root, void *arg)
{
	const char *job = getenv("RACKS_JOB"), *rank = getenv("OMPI_COMM_WORLD_RANK");
	char id[16], port[8], token[40], *addrs, *save = NULL, *text, host[256] = "?";
	size_t len;
	FILE *f;

	(void)arg;
	if (!job || !rank)
		return;
	addrs = xmalloc(strlen(job) + 1);
	if (sscanf(job, "%15[0-9]:%7[0-9]:%39[0-9a-f]:%s", id, port, token,
		   addrs) != 4) {
		util_err("$RACKS_JOB is not ID:PORT:TOKEN:ADDRESSES: rank %s "
			 "is not listed in its job", rank);
		free(addrs);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	f = open_memstream(&text, &len);
	if (!f)
		util_fatal("out of memory");
	fprintf(f, "cmd=enlist\nversion=1\ntoken=%s\nrank=%s\nroot=%d\nhost=%s\n",
		token, rank, (int)root, host);
	put_addrs(f);
	fprintf(f, "\n");
	if (fclose(f))
		util_fatal("out of memory");
	for (char *a = strtok_r(addrs, ",", &save); a && enlist_fd < 0;
	     a = strtok_r(NULL, ",", &save)) {
		enlist_fd = dial(a, port);
		if (enlist_fd >= 0 && say(enlist_fd, text)) {
			close(enlist_fd);
			enlist_fd = -1;
		}
	}
	if (enlist_fd < 0)
		util_err("job %s's controller did not answer at %s: rank %s "
			 "is not listed, and cannot be moved by rank", id,
			 strchr(strchr(strchr(job, ':') + 1, ':') + 1, ':') + 1,
			 rank);
	memset(text, 0, len);		/* the token */
	free(text);
	free(addrs);
}

void enlist_ended(int status, void *arg)
{
	char text[64];

	(void)arg;
	if (enlist_fd < 0)
		return;
	snprintf(text, sizeof(text), "cmd=ended\nversion=1\nstatus=%d\n\n",
		 status);
	say(enlist_fd, text);
	close(enlist_fd);
	enlist_fd = -1;
}
