// SPDX-License-Identifier: GPL-2.0-only
/*
 * synflood: a SYN flood that offers racks, for the bench's "SYN flood"
 * rows. Run as root inside a test namespace (the test-bed's router), never
 * on the host.
 *
 * Usage:
 *   synflood DST PORT RATE SECONDS SRC/LEN [--plain]
 *	Sends SYNs to DST:PORT (numeric IPv4 or IPv6) at RATE per second for
 *	SECONDS, from random addresses inside SRC/LEN (same family; route it
 *	to a blackhole where the answers should die) and random ports, each
 *	with a random sequence number. Every SYN carries the options a Linux
 *	client's first SYN carries after its rackd offered racks
 *	(rackd/engine/track.c, rewrite_add_option: racks' option first):
 *
 *	  254 18 0x72 0x61 0x11 0x01 0 0 0 0 NONCE(8) NOP NOP
 *	                                      racks' offer (edp/option.h:
 *	                                      kind 254, length 18, ExID
 *	                                      0x7261, version 1 << 4 | type
 *	                                      1 (SYN), flags: host keys, no
 *	                                      host pair, a random nonce),
 *	                                      NOP-padded
 *	  MSS 1460 | SACK-permitted | timestamps | NOP | window scale 10
 *
 *	(40 bytes, data offset 15); --plain leaves racks' option out (20
 *	bytes of options, data offset 10). Packets go out in batches
 *	(sendmmsg) paced on the monotonic clock every millisecond; when the
 *	machine cannot keep up the flood runs as fast as it can and the
 *	report says so. Prints one line:
 *	{"sent": n, "seconds": t, "rate": achieved, "target": RATE,
 *	 "errors": n, "option": true|false}
 *
 * Errors are reported on stderr with exit status 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME "synflood"
#include "tool.h"

#define BATCH 64
#define PKT_MAX 128
#define IP4_HDR 20
#define IP6_HDR 40
#define TCP_HDR 20
#define MAX_RATE 10000000ul

static const uint8_t offer[20] = { 254, 18, 0x72, 0x61, 1 << 4 | 1, 0x01,
				    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1 };

struct flood {
	int family;
	uint8_t dst[16], src[16];
	unsigned src_bits;
	uint16_t port;
	int option;
	int fd;
	uint64_t rng;
};

/* xorshift64*: fast, and good enough to scatter addresses and ports. */
static uint64_t rnd(struct flood *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 0x2545F4914F6CDD1Dull;
}

static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* A random source inside the prefix: its host bits drawn anew. */
static void random_src(struct flood *f, uint8_t *out)
{
	size_t alen = f->family == AF_INET ? 4 : 16;
	uint64_t r[2] = { rnd(f), rnd(f) };
	const uint8_t *rb = (const uint8_t *)r;

	for (size_t i = 0; i < alen; i++) {
		unsigned keep = f->src_bits > 8 * i ?
				(f->src_bits - 8 * i >= 8 ? 8 :
				 f->src_bits - 8 * i) : 0;
		uint8_t mask = (uint8_t)(0xff00 >> keep);

		out[i] = (uint8_t)((f->src[i] & mask) | (rb[i] & ~mask));
	}
}

/* One SYN into BUF; its length. */
static size_t build(struct flood *f, uint8_t *buf)
{
	size_t iph = f->family == AF_INET ? IP4_HDR : IP6_HDR;
	size_t optlen = f->option ? 40 : 20, tcplen = TCP_HDR + optlen;
	uint8_t *ip = buf, *tcp = buf + iph, *o = tcp + TCP_HDR;
	uint8_t src[16];
	uint32_t sum;
	size_t alen;

	memset(buf, 0, iph + tcplen);
	random_src(f, src);
	if (f->family == AF_INET) {
		alen = 4;
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)(iph + tcplen));
		ip[6] = 0x40;
		ip[8] = 64;
		ip[9] = IPPROTO_TCP;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, f->dst, 4);
		put16(ip + 10, fold(sum16(ip, IP4_HDR, 0)));
	} else {
		alen = 16;
		ip[0] = 0x60;
		put16(ip + 4, (uint16_t)tcplen);
		ip[6] = IPPROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, f->dst, 16);
	}
	put16(tcp, (uint16_t)(1024 + rnd(f) % 64512));
	put16(tcp + 2, f->port);
	put32(tcp + 4, (uint32_t)rnd(f));
	tcp[12] = (uint8_t)((tcplen / 4) << 4);
	tcp[13] = 0x02;				/* SYN */
	put16(tcp + 14, 64240);
	if (f->option) {
		memcpy(o, offer, sizeof(offer));
		put32(o + 10, (uint32_t)rnd(f));	/* the nonce */
		put32(o + 14, (uint32_t)rnd(f));
		o += sizeof(offer);
	}
	o[0] = 2, o[1] = 4, put16(o + 2, 1460);	/* MSS */
	o[4] = 4, o[5] = 2;			/* SACK permitted */
	o[6] = 8, o[7] = 10;			/* timestamps */
	put32(o + 8, (uint32_t)rnd(f));
	o[16] = 1;				/* NOP */
	o[17] = 3, o[18] = 3, o[19] = 10;	/* window scale 10 */
	/* Pseudo-header: addresses, protocol, TCP length. */
	sum = sum16(ip + (f->family == AF_INET ? 12 : 8), 2 * alen, 0);
	sum += IPPROTO_TCP + (uint32_t)tcplen;
	put16(tcp + 16, fold(sum16(tcp, tcplen, sum)));
	return iph + tcplen;
}

static void parse_prefix(struct flood *f, char *arg)
{
	char *slash = strchr(arg, '/');
	unsigned long max = f->family == AF_INET ? 32 : 128;

	if (!slash)
		die("source '%s' is not ADDR/LEN", arg);
	*slash = '\0';
	if (inet_pton(f->family, arg, f->src) != 1)
		die("source '%s' is not an address of the destination's family",
		    arg);
	f->src_bits = (unsigned)parse_num(slash + 1, "prefix length", 1, max);
}

int main(int argc, char **argv)
{
	struct flood f = { 0 };
	static uint8_t pkts[BATCH][PKT_MAX];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	struct sockaddr_storage ss = { 0 };
	socklen_t sslen;
	unsigned long rate, secs, sent = 0, errors = 0;
	uint64_t start, end, now;

	if (argc < 6 || argc > 7 || (argc == 7 && strcmp(argv[6], "--plain")))
		die("usage: synflood DST PORT RATE SECONDS SRC/LEN [--plain]");
	f.option = argc == 6;
	if (inet_pton(AF_INET, argv[1], f.dst) == 1) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		f.family = AF_INET;
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, f.dst, 4);
		sslen = sizeof(*s4);
	} else if (inet_pton(AF_INET6, argv[1], f.dst) == 1) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		f.family = AF_INET6;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, f.dst, 16);
		sslen = sizeof(*s6);
	} else {
		die("invalid destination '%s' (numeric IPv4 or IPv6)", argv[1]);
	}
	f.port = (uint16_t)parse_num(argv[2], "port", 1, 65535);
	rate = parse_num(argv[3], "rate", 1, MAX_RATE);
	secs = parse_num(argv[4], "seconds", 1, 3600);
	parse_prefix(&f, argv[5]);
	if (getrandom(&f.rng, sizeof(f.rng), 0) != sizeof(f.rng) || !f.rng)
		f.rng = 0x9e3779b97f4a7c15ull;
	/* IPPROTO_RAW: we write the IP header ourselves (IPv6 too). */
	f.fd = socket(f.family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (f.fd < 0)
		die("raw socket: %s (needs CAP_NET_RAW)", strerror(errno));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = pkts[i];
		msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &ss, .msg_namelen = sslen,
			.msg_iov = &iov[i], .msg_iovlen = 1,
		};
	}
	start = now_ns();
	end = start + secs * 1000000000ull;
	while ((now = now_ns()) < end) {
		/* What the schedule owes by now, at most one batch at once. */
		uint64_t due = (now - start) * rate / 1000000000ull;
		unsigned n = due > sent ? (due - sent > BATCH ? BATCH :
					   (unsigned)(due - sent)) : 0;
		int k;

		if (n == 0) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			continue;
		}
		for (unsigned i = 0; i < n; i++)
			iov[i].iov_len = build(&f, pkts[i]);
		k = sendmmsg(f.fd, msgs, n, MSG_DONTWAIT);
		if (k < 0) {
			if (errno != EAGAIN && errno != ENOBUFS &&
			    errno != EINTR && errno != EPERM)
				die("sendmmsg: %s", strerror(errno));
			errors += n;
			sent += n;	/* the schedule moves on regardless */
			continue;
		}
		sent += (unsigned)k;
		errors += n - (unsigned)k;
		sent += n - (unsigned)k;
	}
	{
		double t = (now_ns() - start) / 1e9;
		unsigned long ok = sent - errors;

		printf("{\"sent\": %lu, \"seconds\": %.3f, \"rate\": %.0f, "
		       "\"target\": %lu, \"errors\": %lu, \"option\": %s}\n",
		       ok, t, ok / t, rate, errors,
		       f.option ? "true" : "false");
	}
	return 0;
}
