// SPDX-License-Identifier: GPL-2.0-only
/*
 * rr: TCP request/response latency, like netperf TCP_RR. The client sends
 * a SIZE-byte message over one TCP connection (TCP_NODELAY on both ends),
 * the server echoes it back, and each round trip is timed with
 * CLOCK_MONOTONIC.
 *
 * Usage:
 *   rr server PORT
 *	Listens on [::]:PORT, dual stack (IPv4 clients too), and prints
 *	READY once listening. Serves any number of connections
 *	concurrently, one child process each; the children end with the
 *	server process (SIGTERM). Protocol: the client sends a
 *	4-byte big-endian size S, then messages of exactly S bytes, each
 *	echoed back, until it closes the connection.
 *   rr client HOST PORT SIZE COUNT [WARMUP]
 *	HOST is a numeric IPv4 or IPv6 address. Does WARMUP (default 200)
 *	untimed round trips, then COUNT timed ones, and prints one line:
 *	{"size": S, "count": N, "p50_us": .., "p90_us": .., "p99_us": ..,
 *	 "mean_us": .., "min_us": .., "max_us": ..}
 *
 * Errors are reported on stderr with exit status 1. A client whose server
 * stops answering gives up after IO_TIMEOUT_S seconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME "rr"
#include "tool.h"

#define MAX_SIZE (16ul << 20)
#define MAX_COUNT 10000000ul
#define DEFAULT_WARMUP 200ul
#define IO_TIMEOUT_S 30

static void usage(void) __attribute__((noreturn));

static void usage(void)
{
	fputs("usage: rr server PORT\n"
	      "       rr client HOST PORT SIZE COUNT [WARMUP]\n", stderr);
	exit(1);
}

/* strerror() with a clearer word for a SO_RCVTIMEO/SO_SNDTIMEO expiry. */
static const char *errstr(int err)
{
	if (err == EAGAIN || err == EWOULDBLOCK)
		return "timed out";
	return strerror(err);
}

/*
 * Reads exactly len bytes unless the peer closes first. Returns the number
 * of bytes read (less than len on EOF), or -1 with errno set.
 */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (char *)buf + got, len - got, 0);

		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			break;
		else if (errno != EINTR)
			return -1;
	}
	return (ssize_t)got;
}

/* Writes all of buf. Returns 0, or -1 with errno set. */
static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done,
				 MSG_NOSIGNAL);

		if (n >= 0)
			done += (size_t)n;
		else if (errno != EINTR)
			return -1;
	}
	return 0;
}

static int set_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- server ---- */

/* Echoes S-byte messages until EOF. Returns the exit status. */
static int serve_conn(int fd)
{
	uint32_t hdr;
	size_t size;
	ssize_t n;
	char *buf;

	n = read_full(fd, &hdr, sizeof(hdr));
	if (n == 0)
		return 0;	/* closed without a request: nothing to do */
	if (n != (ssize_t)sizeof(hdr)) {
		warnx("reading size header: %s", n < 0 ? errstr(errno) : "short read");
		return 1;
	}
	size = ntohl(hdr);
	if (size == 0 || size > MAX_SIZE) {
		warnx("bad message size %zu (expected 1..%lu)", size, MAX_SIZE);
		return 1;
	}
	buf = malloc(size);
	if (!buf) {
		warnx("out of memory for %zu bytes", size);
		return 1;
	}
	while ((n = read_full(fd, buf, size)) == (ssize_t)size) {
		if (write_full(fd, buf, size) < 0) {
			n = -1;
			break;
		}
	}
	if (n < 0)
		warnx("connection: %s", errstr(errno));
	else if (n > 0)
		warnx("connection closed in the middle of a message");
	free(buf);
	return n == 0 ? 0 : 1;
}

/* Serves one connection in a child process; the child exits afterwards. */
static void spawn(int lfd, int fd)
{
	pid_t parent = getpid(), pid;

	if (set_nodelay(fd) < 0) {
		warnx("setsockopt TCP_NODELAY: %s", strerror(errno));
		close(fd);
		return;
	}
	pid = fork();
	if (pid < 0) {
		warnx("fork: %s", strerror(errno));
		close(fd);
		return;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		int rc;

		/* Killing the server ends its connections too. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			exit(1);
		/* Do not hold the driver's stdout pipe open after the parent. */
		if (devnull >= 0) {
			dup2(devnull, STDOUT_FILENO);
			close(devnull);
		}
		close(lfd);
		rc = serve_conn(fd);
		close(fd);
		exit(rc);
	}
	close(fd);
}

/* accept(2) errors after which the listener is still usable. */
/* accept(2) errors from lack of resources: wait a little and retry. */
static int accept_exhausted(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

static int run_server(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT };
	const struct timespec backoff = { .tv_nsec = 10 * 1000 * 1000 };
	int lfd;

	if (argc != 3)
		usage();
	/* Children are reaped by the kernel. */
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		die("sigaction: %s", strerror(errno));
	lfd = listen_any(parse_num(argv[2], "port", 1, 65535), 0, 128);
	if (printf("READY\n") < 0 || fflush(stdout) == EOF)
		die("writing to stdout: %s", strerror(errno));
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0) {
			spawn(lfd, fd);
		} else if (accept_exhausted(errno)) {
			warnx("accept: %s (retrying)", strerror(errno));
			nanosleep(&backoff, NULL);
		} else if (!accept_transient(errno)) {
			die("accept: %s", strerror(errno));
		}
	}
}

/* ---- client ---- */

/* connect(2) on a blocking socket; an interrupted connect is waited for. */
static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *res, *ai;
	int fd = -1, err = 0, rc;

	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		die("address %s port %s: %s", host, port, gai_strerror(rc));
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (connect_fd(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		die("connect to %s port %s: %s", host, port, strerror(err));
	return fd;
}

static void setup_client(int fd, size_t size)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	uint32_t hdr = htonl((uint32_t)size);

	if (set_nodelay(fd) < 0)
		die("setsockopt TCP_NODELAY: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		die("setsockopt SO_RCVTIMEO/SO_SNDTIMEO: %s", strerror(errno));
	if (write_full(fd, &hdr, sizeof(hdr)) < 0)
		die("sending size header: %s", errstr(errno));
}

/* One timed round trip of out (size bytes); the echo lands in in. */
static uint64_t round_trip(int fd, const char *out, char *in, size_t size)
{
	uint64_t t0 = now_ns(), t1;
	ssize_t n;

	if (write_full(fd, out, size) < 0)
		die("send: %s", errstr(errno));
	n = read_full(fd, in, size);
	t1 = now_ns();
	if (n < 0)
		die("recv: %s", errstr(errno));
	if ((size_t)n < size)
		die("server closed the connection");
	if (memcmp(out, in, size))
		die("echoed data differs from what was sent");
	return t1 - t0;
}

/* Nearest-rank percentile of n sorted samples, in microseconds. */
static void report(size_t size, uint64_t *v, size_t n)
{
	double sum = 0;
	size_t i;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)v[i];
	if (printf("{\"size\": %zu, \"count\": %zu, \"p50_us\": %.2f, "
		   "\"p90_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, "
		   "\"min_us\": %.2f, \"max_us\": %.2f}\n", size, n,
		   pct_us(v, n, 50), pct_us(v, n, 90), pct_us(v, n, 99),
		   sum / (double)n / 1000.0, v[0] / 1000.0,
		   v[n - 1] / 1000.0) < 0 || fflush(stdout) == EOF)
		die("writing to stdout: %s", strerror(errno));
}

static int run_client(int argc, char **argv)
{
	size_t size, count, warmup = DEFAULT_WARMUP, i;
	char *out, *in;
	uint64_t *samples;
	int fd;

	if (argc != 6 && argc != 7)
		usage();
	parse_num(argv[3], "port", 1, 65535);
	size = parse_num(argv[4], "size", 1, MAX_SIZE);
	count = parse_num(argv[5], "count", 1, MAX_COUNT);
	if (argc == 7)
		warmup = parse_num(argv[6], "warmup", 0, MAX_COUNT);
	out = malloc(size);
	in = malloc(size);
	samples = calloc(count, sizeof(*samples));
	if (!out || !in || !samples)
		die("out of memory");
	for (i = 0; i < size; i++)
		out[i] = (char)('a' + i % 26);
	fd = connect_to(argv[2], argv[3]);
	setup_client(fd, size);
	for (i = 0; i < warmup + count; i++) {
		uint64_t ns;

		out[0] = (char)i;	/* each echo must be the latest message */
		ns = round_trip(fd, out, in, size);

		if (i >= warmup)
			samples[i - warmup] = ns;
	}
	if (close(fd) < 0 && errno != EINTR)
		die("close: %s", strerror(errno));
	report(size, samples, count);
	free(samples);
	free(in);
	free(out);
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
