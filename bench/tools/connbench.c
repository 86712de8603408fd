// SPDX-License-Identifier: GPL-2.0-only
/*
 * connbench: TCP connection set-up cost. The client opens and closes
 * connections one after another; the server accepts them and closes each
 * one when its client has closed it.
 *
 * Usage:
 *   connbench server PORT
 *	Listens on [::]:PORT, dual stack (IPv4 clients too), backlog 4096,
 *	and prints READY once listening. One epoll loop over the listener
 *	and every accepted socket: a socket is closed when read(2) sees EOF.
 *   connbench client HOST PORT COUNT [MODE]
 *	HOST is a numeric IPv4 or IPv6 address. COUNT connections, one
 *	after another, each socket(), connect() (blocking), close().
 *	MODE latency (default): each sample is connect() alone, from just
 *	before the call to its return (the handshake as the client sees it).
 *	Connections are paced PACE_MS apart so that each one meets idle
 *	hosts: the set-up and close work of the previous connection (racks
 *	exchanges keys after the handshake) is over, and the sample is the
 *	handshake's own latency rather than queueing behind that work.
 *	MODE rate: as fast as possible; each sample is the whole
 *	socket()+connect()+close() cycle.
 *	Either way per_second is COUNT over the wall time of the whole run.
 *	Prints one line:
 *	{"mode": .., "count": N, "p50_us": .., "p95_us": .., "p99_us": ..,
 *	 "mean_us": .., "per_second": ..}
 *
 * The client closes normally (no SO_LINGER {1, 0}, so no RST), which
 * leaves every connection's client end in TIME_WAIT for 60 s, holding a
 * local port. The benchmark driver keeps COUNT modest (about 2000 a run),
 * far below the ~28000 ports of the default ip_local_port_range, and the
 * kernel's tcp_tw_reuse may also hand TIME_WAIT ports to new connections.
 * SO_REUSEADDR is not set: it does not affect the port that connect()
 * picks for an unbound socket.
 *
 * Errors are reported on stderr with exit status 1.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME "connbench"
#include "tool.h"

#define BACKLOG 4096
#define MAX_COUNT 10000000ul
#define MAX_EVENTS 256
#define ACCEPT_BATCH 64		/* accepts per wake-up, then serve reads */
#define READ_BATCH 16		/* reads per socket per wake-up */

struct target {
	struct sockaddr_storage addr;
	socklen_t len;
	int family;
};

static void usage(void) __attribute__((noreturn));

static void usage(void)
{
	fputs("usage: connbench server PORT\n"
	      "       connbench client HOST PORT COUNT [latency|rate]\n",
	      stderr);
	exit(1);
}

/* ---- server ---- */

/* Thousands of open connections need more than the usual 1024 fds. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max < (1u << 20) ? rl.rlim_max : (1u << 20);
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		warnx("setrlimit RLIMIT_NOFILE: %s", strerror(errno));
}

/* accept(2) errors after which the listener is still usable. */
/* Out of fds or memory: say so once, back off a little, retry later. */
static void accept_backoff(int err)
{
	const struct timespec backoff = { .tv_nsec = 1000 * 1000 };
	static int warned;

	if (!warned++)
		warnx("accept: %s (retrying; this warning is shown once)",
		      strerror(err));
	nanosleep(&backoff, NULL);
}

static void accept_some(int ep, int lfd)
{
	int i;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				accept_backoff(errno);
				return;
			}
			if (!accept_transient(errno))
				die("accept: %s", strerror(errno));
			continue;
		}
		ev.data.fd = fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			warnx("epoll_ctl: %s", strerror(errno));
			close(fd);
		}
	}
}

/*
 * Reads and discards what the client sent; closes the socket on EOF or
 * error (close() also removes it from the epoll set). A stale event for a
 * number already reused by a new socket only finds EAGAIN here.
 */
static void drain(int fd)
{
	char buf[4096];
	int i;

	for (i = 0; i < READ_BATCH; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break;	/* EOF, or an error such as ECONNRESET */
	}
	if (i < READ_BATCH)
		close(fd);
}

static int run_server(int argc, char **argv)
{
	struct epoll_event evs[MAX_EVENTS], ev = { .events = EPOLLIN };
	int lfd, ep;

	if (argc != 3)
		usage();
	raise_nofile();
	lfd = listen_any(parse_num(argv[2], "port", 1, 65535), SOCK_NONBLOCK,
			BACKLOG);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1: %s", strerror(errno));
	ev.data.fd = lfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
	if (printf("READY\n") < 0 || fflush(stdout) == EOF)
		die("writing to stdout: %s", strerror(errno));
	for (;;) {
		int i, n = epoll_wait(ep, evs, MAX_EVENTS, -1);

		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd == lfd)
				accept_some(ep, lfd);
			else
				drain(evs[i].data.fd);
		}
	}
}

/* ---- client ---- */

#define PACE_MS 2

static void resolve(const char *host, const char *port, struct target *t)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *res;
	int rc;

	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		die("address %s port %s: %s", host, port, gai_strerror(rc));
	if (res->ai_addrlen > sizeof(t->addr))
		die("address %s: unexpected length", host);
	memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
	t->len = res->ai_addrlen;
	t->family = res->ai_family;
	freeaddrinfo(res);
}

/* connect(2) on a blocking socket; an interrupted connect is waited for. */
/*
 * One socket()/connect()/close() cycle, connection number nr. Returns the
 * duration of connect() alone, or with whole set, of the whole cycle.
 */
static uint64_t cycle(const struct target *t, size_t nr, int whole)
{
	uint64_t t_start, t_conn, t_done, t_end;
	int fd;

	t_start = now_ns();
	fd = socket(t->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket (connection %zu): %s", nr, strerror(errno));
	t_conn = now_ns();
	if (connect_fd(fd, (const struct sockaddr *)&t->addr, t->len) < 0) {
		int err = errno;

		die("connect (connection %zu): %s%s", nr, strerror(err),
		    err == EADDRNOTAVAIL ?
		    " (local ports used up by TIME_WAIT? lower COUNT)" : "");
	}
	t_done = now_ns();
	if (close(fd) < 0 && errno != EINTR)
		die("close (connection %zu): %s", nr, strerror(errno));
	t_end = now_ns();
	return whole ? t_end - t_start : t_done - t_conn;
}

/* Nearest-rank percentile of n sorted samples, in microseconds. */
static void report(const char *mode, uint64_t *v, size_t n, uint64_t wall)
{
	double sum = 0;
	size_t i;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)v[i];
	if (printf("{\"mode\": \"%s\", \"count\": %zu, \"p50_us\": %.2f, "
		   "\"p95_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, "
		   "\"per_second\": %.2f}\n", mode, n, pct_us(v, n, 50),
		   pct_us(v, n, 95), pct_us(v, n, 99),
		   sum / (double)n / 1000.0,
		   (double)n * 1e9 / (double)(wall ? wall : 1)) < 0 ||
	    fflush(stdout) == EOF)
		die("writing to stdout: %s", strerror(errno));
}

static int run_client(int argc, char **argv)
{
	const char *mode = argc == 6 ? argv[5] : "latency";
	struct target t;
	uint64_t *samples, start;
	size_t count, i;
	const struct timespec pace = { 0, PACE_MS * 1000000L };
	int whole;

	if (argc != 5 && argc != 6)
		usage();
	if (strcmp(mode, "latency") && strcmp(mode, "rate"))
		die("invalid mode '%s' (expected latency or rate)", mode);
	whole = !strcmp(mode, "rate");
	parse_num(argv[3], "port", 1, 65535);
	count = parse_num(argv[4], "count", 1, MAX_COUNT);
	resolve(argv[2], argv[3], &t);
	samples = calloc(count, sizeof(*samples));
	if (!samples)
		die("out of memory");
	start = now_ns();
	for (i = 0; i < count; i++) {
		samples[i] = cycle(&t, i + 1, whole);
		if (!whole)
			nanosleep(&pace, NULL);
	}
	report(mode, samples, count, now_ns() - start);
	free(samples);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "server"))
		return run_server(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "client"))
		return run_client(argc, argv);
	usage();
}
