/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the benchmark tools (rr.c, connbench.c) share: messages and exit,
 * number parsing, the listener, connect() across EINTR, accept() errors
 * worth retrying, the clock and percentiles. Each tool is one translation
 * unit that defines TOOL_NAME and includes this; not every tool uses every
 * helper, hence the unused attribute.
 */
#ifndef RACKS_BENCH_TOOL_H
#define RACKS_BENCH_TOOL_H

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#ifndef TOOL_NAME
#error "define TOOL_NAME before including tool.h"
#endif

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

static void vmsg(const char *fmt, va_list ap)
{
	fputs(TOOL_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(1);
}

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long min, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || errno || *end || v < min || v > max)
		die("invalid %s '%s' (expected %lu..%lu)", what, s, min, max);
	return v;
}

static int accept_transient(int err)
{
	switch (err) {
	case EINTR: case ECONNABORTED: case EPROTO: case EPERM:
	case ENETDOWN: case ENOPROTOOPT: case EHOSTDOWN: case ENONET:
	case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH:
		return 1;
	}
	return 0;
}

static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t elen = sizeof(int);
	int err = 0;

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINTR)
		return -1;
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		return -1;
	errno = err;
	return err ? -1 : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		die("clock_gettime: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double pct_us(const uint64_t *v, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return v[rank ? rank - 1 : 0] / 1000.0;
}

/* A dual-stack listener on [::]:PORT; FLAGS are added to socket()'s. */
static int listen_any(unsigned long port, int flags, int backlog)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };	/* [::] */
	int one = 1, zero = 0;
	int fd;

	sa.sin6_port = htons((uint16_t)port);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
		die("setsockopt IPV6_V6ONLY: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		die("setsockopt SO_REUSEADDR: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind [::]:%lu: %s", port, strerror(errno));
	if (listen(fd, backlog) < 0)
		die("listen: %s", strerror(errno));
	return fd;
}

#pragma GCC diagnostic pop

#endif
