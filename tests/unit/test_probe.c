// SPDX-License-Identifier: GPL-2.0-only
/*
 * The classic EDP probe against servers in a thread of this process, on
 * 127.0.0.1 and ::1: an enhanced one (banner, then the announcement in
 * small pieces after the probe's FIN), ordinary ones (random bytes, a
 * stream that never ends, extra bytes after an announcement, a reset),
 * a closed port, and what the server sees of the probe: no byte before
 * the FIN, and the DSCP mark.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "probe.h"
#include "unit.h"

/* What a test server does with the one connection it accepts. */
enum srv_kind {
	SRV_ANNOUNCE,		/* after EOF: banner, announcement, close */
	SRV_ANNOUNCE_EXTRA,	/* the same plus bytes after the announcement */
	SRV_RANDOM,		/* at once: random bytes, close */
	SRV_HOLD,		/* after EOF: keep the connection open */
	SRV_RESET,		/* after EOF: reset the connection */
};

struct srv {
	enum srv_kind kind;
	int family;
	int lfd;
	int stop[2];		/* written by the test when the probe is done */
	uint16_t port;
	pthread_t thread;
	size_t banner_len;	/* bytes sent before the announcement */
	uint8_t announce[EDP_ANNOUNCE_LEN];
	/* Results, read after the thread is joined. */
	long before_eof;	/* bytes received before EOF, -1: no EOF */
	int tos;		/* TOS / traffic class of the probe, -1: unknown */
};

static const int families[] = { AF_INET, AF_INET6 };
/* The host key the enhanced servers announce (version 2). */
static const uint8_t host_key[EDP_ANNOUNCE_KEY_LEN] = {
	0x52, 0x61, 0x63, 0x6b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 0xff,
};

static const char *loopback(int family)
{
	return family == AF_INET6 ? "::1" : "127.0.0.1";
}

/* A socket bound to an ephemeral loopback port, *PORT set; -1 on failure
 * (no IPv6 on this host, for instance). */
static int bind_loopback(int family, uint16_t *port)
{
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len = sizeof(ss);
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (family == AF_INET)
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		sin6->sin6_addr = in6addr_loopback;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(family == AF_INET ? sin->sin_port : sin6->sin6_port);
	return fd;
}

/* Ask the kernel to keep the TOS / traffic class of received packets, so
 * that srv_tos() can read the probe's from the accepted socket. */
static void srv_record_tos(int fd, int family)
{
	int on = 1;

	if (family == AF_INET)
		setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof(on));
	else
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof(on));
}

/* The TOS byte of the packet that completed the handshake (Linux keeps it
 * for IP_PKTOPTIONS / IPV6_2292PKTOPTIONS), -1 if unavailable. */
static int srv_tos(int fd, int family)
{
	union {
		char buf[256];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_control = u.buf };
	socklen_t len = sizeof(u.buf);
	int level = family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
	int opt = family == AF_INET ? IP_PKTOPTIONS : IPV6_2292PKTOPTIONS;
	int type = family == AF_INET ? IP_TOS : IPV6_TCLASS;

	if (getsockopt(fd, level, opt, u.buf, &len) < 0)
		return -1;
	msg.msg_controllen = len;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c;
	     c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != level || c->cmsg_type != type)
			continue;
		if (family == AF_INET)
			return *(uint8_t *)CMSG_DATA(c);
		int tclass;

		memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
		return tclass;
	}
	return -1;
}

/* Wait until FD or the stop pipe is readable; false on stop or after 5 s
 * (a broken probe must not hang the suite). */
static bool srv_wait(struct srv *s, int fd)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = s->stop[0], .events = POLLIN },
	};

	return poll(p, 2, 5000) > 0 && !p[1].revents;
}

/* Count what the client sends until its FIN: a probe sends nothing. */
static long srv_read_to_eof(struct srv *s, int fd)
{
	long total = 0;
	char buf[512];

	while (srv_wait(s, fd)) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n == 0)
			return total;
		if (n < 0)
			return -1;
		total += n;
	}
	return -1;
}

/* Send BUF in pieces of at most PIECE bytes, each its own segment. */
static void srv_send(int fd, const uint8_t *buf, size_t len, size_t piece)
{
	while (len) {
		ssize_t n = send(fd, buf, len < piece ? len : piece,
				 MSG_NOSIGNAL);

		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void srv_send_random(int fd, size_t len, size_t piece)
{
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		abort();
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)unit_rand();
	srv_send(fd, buf, len, piece);
	free(buf);
}

static void srv_announce(struct srv *s, int fd)
{
	static const char banner[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";

	if (s->banner_len)
		srv_send_random(fd, s->banner_len, 7000);
	else
		srv_send(fd, (const uint8_t *)banner, sizeof(banner) - 1, 64);
	srv_send(fd, s->announce, sizeof(s->announce), 100);
	if (s->kind == SRV_ANNOUNCE_EXTRA)
		srv_send(fd, (const uint8_t *)"\n", 1, 1);
}

static void srv_serve(struct srv *s, int fd)
{
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };

	if (s->kind == SRV_RANDOM) {
		srv_send_random(fd, 3000, 1000);
		return;
	}
	s->before_eof = srv_read_to_eof(s, fd);
	if (s->before_eof < 0)
		return;
	switch (s->kind) {
	case SRV_ANNOUNCE:
	case SRV_ANNOUNCE_EXTRA:
		srv_announce(s, fd);
		break;
	case SRV_HOLD:
		srv_wait(s, s->stop[0]);
		break;
	case SRV_RESET:
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
		break;
	case SRV_RANDOM:
		break;
	}
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	int one = 1;
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return NULL;
	/* Small writes stay small segments: the probe must reassemble. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s->tos = srv_tos(fd, s->family);
	srv_serve(s, fd);
	close(fd);
	return NULL;
}

/* Start a server of KIND on the loopback address of FAMILY, sending
 * BANNER_LEN random bytes before an announcement (0: an SSH banner);
 * false if the host lacks that family (the caller skips). */
static bool srv_start(struct srv *s, enum srv_kind kind, int family,
		      size_t banner_len)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->family = family;
	s->banner_len = banner_len;
	s->before_eof = -1;
	s->tos = -1;
	s->lfd = bind_loopback(family, &s->port);
	if (s->lfd < 0) {
		fprintf(stderr, "  (no %s loopback, skipped)\n",
			loopback(family));
		return false;
	}
	srv_record_tos(s->lfd, family);
	if (sodium_init() < 0 || pipe2(s->stop, O_CLOEXEC) < 0 ||
	    listen(s->lfd, 4) < 0)
		abort();
	edp_announce_new(s->announce, host_key);
	if (pthread_create(&s->thread, NULL, srv_main, s))
		abort();
	return true;
}

static void srv_stop(struct srv *s)
{
	/* Wakes the server wherever it waits, in accept() included. */
	if (write(s->stop[1], "x", 1) != 1)
		abort();
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	close(s->stop[0]);
	close(s->stop[1]);
}

/* Probe a server of KIND on each loopback family with O; CHECK (a
 * function) then looks at the outcome. */
static void each_family(enum srv_kind kind, size_t banner_len,
			const struct edp_probe_opts *o,
			void (*check)(const struct srv *s, int ret,
				      const struct edp_probe_result *r))
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		struct edp_probe_result r;
		struct srv s;
		int ret;

		if (!srv_start(&s, kind, families[i], banner_len))
			continue;
		ret = edp_probe(loopback(s.family), s.port, o, &r);
		srv_stop(&s);
		check(&s, ret, &r);
	}
}

static void check_enhanced(const struct srv *s, int ret,
			   const struct edp_probe_result *r)
{
	char id[EDP_HOST_ID_STRLEN];

	edp_announce_host_id(s->announce, id);
	if (!CHECK_EQ_INT(ret, 0))
		return;
	CHECK_EQ_INT(r->verdict, EDP_PROBE_ENHANCED);
	CHECK_EQ_STR(r->reason, "announcement");
	CHECK_EQ_STR(r->host_id, id);
	/* A version 2 announcement: the key it carries, and where. */
	CHECK(r->has_host_key);
	CHECK_EQ_MEM(r->host_key, host_key, sizeof(host_key));
	CHECK_EQ_STR(r->peer, loopback(s->family));
	CHECK_EQ_INT(r->bytes, (s->banner_len ? s->banner_len : 32) +
			       EDP_ANNOUNCE_LEN);
	CHECK(r->total_us >= r->connect_us);
	/* Defaults: 500 ms + 4 x connect time, capped at 10 s. */
	CHECK_EQ_INT(r->wait_ms, 500 + 4 * r->connect_us / 1000);
	CHECK_EQ_INT(s->before_eof, 0);
}

TEST(enhanced)
{
	each_family(SRV_ANNOUNCE, 0, NULL, check_enhanced);
}

/* More than fits the probe's 1024-byte window, in pieces of all sizes. */
TEST(enhanced_after_much_data)
{
	each_family(SRV_ANNOUNCE, 100000, NULL, check_enhanced);
	each_family(SRV_ANNOUNCE, 1023, NULL, check_enhanced);
	each_family(SRV_ANNOUNCE, 1, NULL, check_enhanced);
}

static void check_ordinary_eof(const struct srv *s, int ret,
			       const struct edp_probe_result *r)
{
	(void)s;
	if (!CHECK_EQ_INT(ret, 0))
		return;
	CHECK_EQ_INT(r->verdict, EDP_PROBE_ORDINARY);
	CHECK_EQ_STR(r->reason, "eof");
	CHECK_EQ_STR(r->host_id, "");
	CHECK(!r->has_host_key);
	CHECK_EQ_INT(r->bytes, 3000);
}

TEST(ordinary_eof)
{
	each_family(SRV_RANDOM, 0, NULL, check_ordinary_eof);
}

static const struct edp_probe_opts quick = {
	.min_wait_ms = 200,
	.max_wait_ms = 300,
};

static void check_timeout(const struct srv *s, int ret,
			  const struct edp_probe_result *r)
{
	uint64_t wait = 200 + 4 * r->connect_us / 1000;

	if (!CHECK_EQ_INT(ret, 0))
		return;
	CHECK_EQ_INT(r->verdict, EDP_PROBE_ORDINARY);
	CHECK_EQ_STR(r->reason, "timeout");
	CHECK_EQ_INT(r->bytes, 0);
	CHECK_EQ_INT(r->wait_ms, wait < 300 ? wait : 300);
	CHECK(r->total_us >= r->wait_ms * 1000);
	CHECK(r->total_us < r->wait_ms * 1000 + 2000000);
	CHECK_EQ_INT(s->before_eof, 0);
}

TEST(ordinary_timeout)
{
	each_family(SRV_HOLD, 0, &quick, check_timeout);
}

static void check_extra(const struct srv *s, int ret,
			const struct edp_probe_result *r)
{
	(void)s;
	if (!CHECK_EQ_INT(ret, 0))
		return;
	CHECK_EQ_INT(r->verdict, EDP_PROBE_ORDINARY);
	CHECK_EQ_STR(r->reason, "eof");
	CHECK_EQ_INT(r->bytes, 32 + EDP_ANNOUNCE_LEN + 1);
}

TEST(announcement_then_more)
{
	each_family(SRV_ANNOUNCE_EXTRA, 0, NULL, check_extra);
}

static void check_reset(const struct srv *s, int ret,
			const struct edp_probe_result *r)
{
	if (!CHECK_EQ_INT(ret, 0))
		return;
	CHECK_EQ_INT(r->verdict, EDP_PROBE_ORDINARY);
	CHECK_EQ_STR(r->reason, "reset");
	CHECK_EQ_INT(s->before_eof, 0);
}

TEST(ordinary_reset)
{
	each_family(SRV_RESET, 0, NULL, check_reset);
}

/* A bound port nobody listens on refuses; the socket keeps it closed and
 * ours for the duration of the test. */
TEST(refused)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		struct edp_probe_result r;
		uint16_t port;
		int fd = bind_loopback(families[i], &port);

		if (fd < 0)
			continue;
		CHECK_EQ_INT(edp_probe(loopback(families[i]), port, NULL, &r),
			     -ECONNREFUSED);
		CHECK_EQ_STR(r.reason, "connection refused");
		CHECK_EQ_INT(r.verdict, EDP_PROBE_ORDINARY);
		close(fd);
	}
}

static void check_silent(const struct srv *s, int ret,
			 const struct edp_probe_result *r)
{
	(void)r;
	CHECK_EQ_INT(ret, 0);
	/* The FIN came with no byte before it... */
	CHECK_EQ_INT(s->before_eof, 0);
	/* ...and the probe's packets carried DSCP LE (ECN bits aside). */
	if (CHECK(s->tos >= 0))
		CHECK_EQ_INT(s->tos & 0xfc, EDP_PROBE_TOS);
}

TEST(probe_sends_nothing_and_is_marked)
{
	each_family(SRV_HOLD, 0, &quick, check_silent);
	each_family(SRV_ANNOUNCE, 0, NULL, check_silent);
}

/* A name resolving to several addresses: those that refuse are skipped. */
TEST(name)
{
	struct edp_probe_result r;
	struct srv s;

	if (!srv_start(&s, SRV_ANNOUNCE, AF_INET, 0))
		return;
	CHECK_EQ_INT(edp_probe("localhost", s.port, NULL, &r), 0);
	srv_stop(&s);
	CHECK_EQ_INT(r.verdict, EDP_PROBE_ENHANCED);
}

TEST(wait_is_capped)
{
	static const struct edp_probe_opts o = {
		.min_wait_ms = 400,
		.max_wait_ms = 100,
	};
	struct edp_probe_result r;
	struct srv s;

	if (!srv_start(&s, SRV_HOLD, AF_INET, 0))
		return;
	CHECK_EQ_INT(edp_probe("127.0.0.1", s.port, &o, &r), 0);
	srv_stop(&s);
	CHECK_EQ_INT(r.wait_ms, 100);
	CHECK_EQ_STR(r.reason, "timeout");
	CHECK(r.total_us >= 100000 && r.total_us < 2100000);
}

TEST(verdict_str)
{
	CHECK_EQ_STR(edp_probe_verdict_str(EDP_PROBE_ENHANCED), "enhanced");
	CHECK_EQ_STR(edp_probe_verdict_str(EDP_PROBE_ORDINARY), "ordinary");
}

static const struct unit_test tests[] = {
	UNIT(enhanced),
	UNIT(enhanced_after_much_data),
	UNIT(ordinary_eof),
	UNIT(ordinary_timeout),
	UNIT(announcement_then_more),
	UNIT(ordinary_reset),
	UNIT(refused),
	UNIT(probe_sends_nothing_and_is_marked),
	UNIT(name),
	UNIT(wait_is_capped),
	UNIT(verdict_str),
};

UNIT_MAIN("probe", tests)
