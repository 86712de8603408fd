// SPDX-License-Identifier: GPL-2.0-only
#include "inject.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "csum.h"
#include "log.h"
#include "packet.h"

#define IPV4_HDR 20
#define IPV6_HDR 40
#define TCP_HDR 20
#define INJECT_TTL 64
#define INJECT_MAX 0xffff

struct inject {
	int fd4, fd6;		/* rackd's mark */
	int fd4u, fd6u;		/* the unspliced mark (inject_segment) */
};

static int raw_socket(int family, uint32_t mark)
{
	int fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);

	if (fd < 0)
		return -errno;
	/* IPPROTO_RAW implies a header we build ourselves (IP_HDRINCL, and
	 * the same for IPv6 on Linux). */
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int inject_open(struct inject **out, uint32_t mark, uint32_t unspliced_mark)
{
	struct inject *inj = xcalloc(1, sizeof(*inj));
	int *fds[] = { &inj->fd4, &inj->fd6, &inj->fd4u, &inj->fd6u };

	*out = NULL;
	inj->fd4 = raw_socket(AF_INET, mark);
	inj->fd6 = raw_socket(AF_INET6, mark);
	inj->fd4u = raw_socket(AF_INET, unspliced_mark);
	inj->fd6u = raw_socket(AF_INET6, unspliced_mark);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] < 0) {
			int err = *fds[i];

			inject_close(inj);
			return err;
		}
	}
	*out = inj;
	return 0;
}

void inject_close(struct inject *inj)
{
	if (!inj)
		return;
	for (int *fd = &inj->fd4; fd <= &inj->fd6u; fd++)
		if (*fd >= 0)
			close(*fd);
	free(inj);
}

void inject_set_mark(struct inject *inj, uint32_t mark,
		     uint32_t unspliced_mark)
{
	setsockopt(inj->fd4, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	setsockopt(inj->fd6, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	setsockopt(inj->fd4u, SOL_SOCKET, SO_MARK, &unspliced_mark,
		   sizeof(unspliced_mark));
	setsockopt(inj->fd6u, SOL_SOCKET, SO_MARK, &unspliced_mark,
		   sizeof(unspliced_mark));
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static size_t build_ip(const struct inject_segment *seg, uint8_t *out,
		       size_t total)
{
	const struct addr *s = &seg->src->addr, *d = &seg->dst->addr;

	if (s->family == AF_INET) {
		memset(out, 0, IPV4_HDR);
		out[0] = 0x45;
		out[1] = seg->tos;
		put16(out + 2, (uint32_t)total);
		out[6] = 0x40;		/* DF, like the kernel's own TCP */
		out[8] = INJECT_TTL;
		out[9] = IPPROTO_TCP;
		memcpy(out + 12, s->bytes, 4);
		memcpy(out + 16, d->bytes, 4);
		put16(out + 10, (uint16_t)~csum_fold(csum_add(0, out,
							      IPV4_HDR)));
		return IPV4_HDR;
	}
	memset(out, 0, IPV6_HDR);
	out[0] = (uint8_t)(0x60 | seg->tos >> 4);
	out[1] = (uint8_t)(seg->tos << 4);
	put16(out + 4, (uint32_t)(total - IPV6_HDR));
	out[6] = IPPROTO_TCP;
	out[7] = INJECT_TTL;
	memcpy(out + 8, s->bytes, 16);
	memcpy(out + 24, d->bytes, 16);
	return IPV6_HDR;
}

int inject_build(const struct inject_segment *seg, uint8_t *out,
		 size_t outsize)
{
	size_t iphdr = seg->src->addr.family == AF_INET ? IPV4_HDR : IPV6_HDR;
	size_t tcphdr = TCP_HDR + seg->optlen;
	size_t total = iphdr + tcphdr + seg->paylen;
	uint8_t *tcp;

	if (seg->src->addr.family != seg->dst->addr.family ||
	    seg->optlen % 4 || tcphdr > 60)
		return -EINVAL;
	if (total > outsize || total > INJECT_MAX)
		return -EMSGSIZE;
	build_ip(seg, out, total);
	tcp = out + iphdr;
	memset(tcp, 0, TCP_HDR);
	put16(tcp, seg->src->port);
	put16(tcp + 2, seg->dst->port);
	put32(tcp + 4, seg->seq);
	put32(tcp + 8, seg->ack);
	tcp[12] = (uint8_t)((tcphdr / 4) << 4);
	tcp[13] = seg->flags;
	put16(tcp + 14, seg->window);
	if (seg->optlen)
		memcpy(tcp + TCP_HDR, seg->options, seg->optlen);
	if (seg->paylen)
		memcpy(tcp + tcphdr, seg->payload, seg->paylen);
	uint16_t sum = csum_tcp(&seg->src->addr, &seg->dst->addr, tcp,
				tcphdr + seg->paylen);

	memcpy(tcp + 16, &sum, 2);
	return (int)total;
}

static int send_raw(struct inject *inj, const struct addr *dst,
		    const uint8_t *buf, size_t len, bool unspliced)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sslen;
	int fd;

	if (dst->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, dst->bytes, 4);
		sslen = sizeof(*sin);
		fd = unspliced ? inj->fd4u : inj->fd4;
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, dst->bytes, 16);
		sslen = sizeof(*sin6);
		fd = unspliced ? inj->fd6u : inj->fd6;
	}
	if (sendto(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&ss,
		   sslen) < 0)
		return -errno;
	return 0;
}

int inject_unreachable(struct inject *inj, const struct endpoint *local,
		       const struct endpoint *remote, uint32_t seq)
{
	bool v4 = local->addr.family == AF_INET;
	size_t iphdr = v4 ? IPV4_HDR : IPV6_HDR;
	/* The quoted packet: its IP header and the first 8 TCP bytes. */
	struct inject_segment quoted = {
		.src = local, .dst = remote, .seq = seq,
		.flags = TCP_FLAG_ACK,
	};
	uint8_t q[IPV6_HDR + TCP_HDR], buf[IPV6_HDR + 8 + sizeof(q)];
	size_t qlen = iphdr + 8, icmp_len = 8 + qlen, total = iphdr + icmp_len;
	uint8_t *icmp = buf + iphdr;
	/* The error comes from the remote address, as from its last hop. */
	struct inject_segment outer = { .src = remote, .dst = local };
	uint32_t sum;

	if (inject_build(&quoted, q, sizeof(q)) < 0)
		return -EINVAL;
	build_ip(&outer, buf, total);
	if (v4) {
		buf[9] = IPPROTO_ICMP;
		buf[10] = buf[11] = 0;
		put16(buf + 10, (uint16_t)~csum_fold(csum_add(0, buf,
							      IPV4_HDR)));
	} else {
		buf[6] = IPPROTO_ICMPV6;
	}
	memset(icmp, 0, 8);
	icmp[0] = v4 ? 3 : 1;		/* destination unreachable */
	icmp[1] = v4 ? 1 : 0;		/* host unreachable / no route */
	memcpy(icmp + 8, q, qlen);
	if (v4)
		sum = csum_add(0, icmp, icmp_len);
	else
		sum = csum_add(csum_pseudo(&remote->addr, &local->addr,
					   IPPROTO_ICMPV6, (uint32_t)icmp_len),
			       icmp, icmp_len);
	put16(icmp + 2, (uint16_t)~csum_fold(sum));
	return send_raw(inj, &local->addr, buf, total, false);
}

int inject_send(struct inject *inj, const struct inject_segment *seg)
{
	uint8_t buf[2048];
	int len = inject_build(seg, buf, sizeof(buf));

	if (len < 0)
		return len;
	return send_raw(inj, &seg->dst->addr, buf, (size_t)len,
			seg->unspliced);
}
