// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client side of the classic EDP probe (see probe.h). The probe sends
 * no byte at all: its only signals are the DSCP mark on its packets, by
 * which rackd recognises it, and the FIN right after the handshake. An
 * ordinary server therefore sees a client that connected and said
 * nothing, and the probe costs it no more than that.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "probe.h"

#define EDP_PROBE_CONNECT_TIMEOUT_MS 5000
#define EDP_PROBE_MIN_WAIT_MS 500
#define EDP_PROBE_MAX_WAIT_MS 10000

/* The last EDP_ANNOUNCE_LEN bytes received, oldest first, and how many
 * bytes came in all: only the end of the stream can be an announcement,
 * so the probe's memory does not grow with what the server sends. */
struct probe_tail {
	uint8_t buf[EDP_ANNOUNCE_LEN];
	size_t len;
	uint64_t total;
};

static uint64_t probe_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Milliseconds for poll() until DEADLINE (µs), rounded up so that poll
 * does not wake just before the deadline and spin; 0 once it passed. */
static int probe_poll_ms(uint64_t deadline)
{
	uint64_t now = probe_now_us();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999) / 1000);
}

const char *edp_probe_verdict_str(enum edp_probe_verdict v)
{
	return v == EDP_PROBE_ENHANCED ? "enhanced" : "ordinary";
}

/* A short description of why no connection could be made. */
static const char *probe_error_str(int err)
{
	static const struct {
		int err;
		const char *str;
	} names[] = {
		{ ECONNREFUSED, "connection refused" },
		{ ETIMEDOUT, "connect timed out" },
		{ EHOSTUNREACH, "host unreachable" },
		{ ENETUNREACH, "network unreachable" },
		{ EADDRNOTAVAIL, "address not available" },
		{ EAFNOSUPPORT, "address family not supported" },
		{ ECONNRESET, "connection reset during connect" },
		{ ENOMEM, "out of memory" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].str;
	return strerror(err);
}

/* getaddrinfo's failures as -errno; a name that does not resolve is
 * -ENXIO ("no such address"), told apart from an unreachable host. */
static int probe_gai_errno(int rc, int saved_errno)
{
	switch (rc) {
	case EAI_SYSTEM:
		return saved_errno ? -saved_errno : -EIO;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_FAMILY:
	case EAI_ADDRFAMILY:
		return -EAFNOSUPPORT;
	default:
		return -ENXIO;
	}
}

static int probe_resolve(const char *host, uint16_t port,
			 struct addrinfo **res, struct edp_probe_result *r)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
		.ai_flags = AI_NUMERICSERV,
	};
	char service[8];
	int rc, ret;

	*res = NULL;
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	rc = getaddrinfo(host, service, &hints, res);
	if (rc == 0)
		return 0;
	ret = probe_gai_errno(rc, errno);
	r->reason = rc == EAI_SYSTEM ? strerror(-ret) : gai_strerror(rc);
	return ret;
}

/* Mark the socket's packets, the SYN included, as a probe's. Without the
 * mark rackd would take the probe for an ordinary client, so failing to
 * set it fails the probe. */
static int probe_set_tos(int fd, int family)
{
	int tos = EDP_PROBE_TOS;
	int ret;

	if (family == AF_INET6)
		ret = setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos,
				 sizeof(tos));
	else
		ret = setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	return ret < 0 ? -errno : 0;
}

/* Wait up to TIMEOUT_MS for a non-blocking connect on FD to complete. */
static int probe_wait_connected(int fd, uint32_t timeout_ms)
{
	uint64_t deadline = probe_now_us() + (uint64_t)timeout_ms * 1000;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0, n;

	do {
		n = poll(&p, 1, probe_poll_ms(deadline));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	return -err;
}

/* Connect a marked, non-blocking TCP socket to AI; *FD is -1 on failure.
 * CONNECT_US is the time from connect() to established. */
static int probe_connect(const struct addrinfo *ai, uint32_t timeout_ms,
			 int *fd, uint64_t *connect_us)
{
	uint64_t start;
	int ret;

	*fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		     IPPROTO_TCP);
	if (*fd < 0)
		return -errno;
	ret = probe_set_tos(*fd, ai->ai_family);
	if (ret)
		goto err;
	start = probe_now_us();
	if (connect(*fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		ret = errno == EINPROGRESS ? probe_wait_connected(*fd, timeout_ms)
					   : -errno;
		if (ret)
			goto err;
	}
	*connect_us = probe_now_us() - start;
	return 0;
err:
	close(*fd);
	*fd = -1;
	return ret;
}

/* Try each address in turn; the first that connects wins. */
static int probe_connect_any(const struct addrinfo *res, uint32_t timeout_ms,
			     int *fd, struct edp_probe_result *r)
{
	int ret = -EHOSTUNREACH;

	for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		ret = probe_connect(ai, timeout_ms, fd, &r->connect_us);
		if (ret == 0) {
			if (getnameinfo(ai->ai_addr, ai->ai_addrlen, r->peer,
					sizeof(r->peer), NULL, 0,
					NI_NUMERICHOST))
				r->peer[0] = '\0';
			return 0;
		}
	}
	r->reason = probe_error_str(-ret);
	return ret;
}

static void probe_tail_add(struct probe_tail *t, const uint8_t *p, size_t n)
{
	size_t keep;

	t->total += n;
	if (n >= sizeof(t->buf)) {
		memcpy(t->buf, p + n - sizeof(t->buf), sizeof(t->buf));
		t->len = sizeof(t->buf);
		return;
	}
	/* Slide out just enough old bytes to make room for the new ones. */
	keep = t->len + n > sizeof(t->buf) ? sizeof(t->buf) - n : t->len;
	memmove(t->buf, t->buf + t->len - keep, keep);
	memcpy(t->buf + keep, p, n);
	t->len = keep + n;
}

/* Read until EOF, an error or DEADLINE. Returns 0 and the reason ("eof",
 * "timeout" or "reset"), or -errno if the probe itself failed. */
static int probe_read(int fd, uint64_t deadline, struct probe_tail *t,
		      const char **reason)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t chunk[4096];

	for (;;) {
		int n = poll(&p, 1, probe_poll_ms(deadline));

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0) {
			*reason = "timeout";
			return 0;
		}
		if (n < 0)
			continue;
		ssize_t got = recv(fd, chunk, sizeof(chunk), 0);

		if (got > 0) {
			probe_tail_add(t, chunk, (size_t)got);
		} else if (got == 0) {
			*reason = "eof";
			return 0;
		} else if (errno != EINTR && errno != EAGAIN) {
			/* Whatever broke an established connection (RST,
			 * ICMP), the server did not announce itself. */
			*reason = "reset";
			return 0;
		}
	}
}

/* min_wait + 4 x connect time, capped at max_wait: a far server gets
 * more time to answer, a dead one cannot hold the probe for long. */
static uint64_t probe_wait_ms(const struct edp_probe_opts *o,
			      uint64_t connect_us)
{
	uint64_t min = o && o->min_wait_ms ? o->min_wait_ms
					   : EDP_PROBE_MIN_WAIT_MS;
	uint64_t max = o && o->max_wait_ms ? o->max_wait_ms
					   : EDP_PROBE_MAX_WAIT_MS;
	uint64_t wait = min + 4 * connect_us / 1000;

	return wait < max ? wait : max;
}

/* Half-close the connected FD, wait for the server's answer and judge. */
static int probe_await(int fd, const struct edp_probe_opts *o,
		       struct edp_probe_result *r)
{
	struct probe_tail t = { .len = 0 };
	const char *reason = NULL;
	int ret;

	r->wait_ms = probe_wait_ms(o, r->connect_us);
	/* ENOTCONN: the server reset the connection already; the read
	 * below reports it. */
	if (shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN)
		return -errno;
	ret = probe_read(fd, probe_now_us() + r->wait_ms * 1000, &t, &reason);
	if (ret)
		return ret;
	r->bytes = t.total;
	r->reason = reason;
	if (strcmp(reason, "eof") == 0 && edp_announce_valid(t.buf, t.len)) {
		r->verdict = EDP_PROBE_ENHANCED;
		r->reason = "announcement";
		edp_announce_host_id(t.buf, r->host_id);
		r->has_host_key = edp_announce_host_key(t.buf, r->host_key);
	}
	return 0;
}

int edp_probe(const char *host, uint16_t port, const struct edp_probe_opts *o,
	      struct edp_probe_result *r)
{
	uint32_t connect_ms = o && o->connect_timeout_ms
		? o->connect_timeout_ms : EDP_PROBE_CONNECT_TIMEOUT_MS;
	struct addrinfo *res;
	uint64_t start;
	int fd = -1, ret;

	memset(r, 0, sizeof(*r));
	r->verdict = EDP_PROBE_ORDINARY;
	/* Idempotent; the hash works without it, but it picks the fast
	 * implementation and a client like rackctl has no other reason to
	 * call it. */
	if (sodium_init() < 0) {
		r->reason = "libsodium initialisation failed";
		return -ENOSYS;
	}
	ret = probe_resolve(host, port, &res, r);
	if (ret)
		return ret;
	/* From the first connect attempt: a name whose first addresses do
	 * not answer makes the probe slower, and total_us says so. */
	start = probe_now_us();
	ret = probe_connect_any(res, connect_ms, &fd, r);
	freeaddrinfo(res);
	if (ret)
		goto out;
	ret = probe_await(fd, o, r);
	if (ret)
		r->reason = strerror(-ret);
out:
	r->total_us = probe_now_us() - start;
	if (fd >= 0)
		close(fd);
	return ret;
}
