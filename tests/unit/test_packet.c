// SPDX-License-Identifier: GPL-2.0-only
/*
 * packet_parse(): packets are built byte by byte from a struct spec (IP
 * version, extension headers, TCP fields, raw option bytes, payload size),
 * then individual bytes are bent to produce each rejection reason.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "packet.h"
#include "unit.h"

#define PROTO_TCP 6
#define PROTO_UDP 17
#define NH_HOPOPTS 0
#define NH_ROUTING 43
#define NH_FRAGMENT 44
#define NH_AH 51
#define NH_ICMPV6 58
#define NH_NONE 59
#define NH_DSTOPTS 60

#define V4_FRAG_DF 0x4000
#define V4_FRAG_MF 0x2000
#define V6_FRAG_M 0x0001

/* ---- building packets ---------------------------------------------- */

struct opts {
	uint8_t b[40];
	size_t n;
};

/* One IPv6 extension header: its type, its length byte (units depend on
 * the type) and, for a fragment header, the offset/flags word. */
struct ext {
	uint8_t type;
	uint8_t len_field;
	uint16_t frag;
};

struct spec {
	int version;		/* 4 or 6 */
	uint8_t proto;		/* what follows the IP header(s) */
	struct ext ext[10];
	size_t next;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t window;
	struct opts opt;	/* padded with EOL to a multiple of 4 */
	size_t payload;
};

struct pkt {
	uint8_t b[1024];
	size_t len;		/* bytes built = IP total length */
	size_t tcp_off;
};

static const uint8_t SRC4[4] = { 192, 0, 2, 1 };
static const uint8_t DST4[4] = { 198, 51, 100, 2 };
static const uint8_t SRC6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t DST6[16] = { 0x20, 0x01, 0x0d, 0xb8, [14] = 0xab, 2 };

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

static void opt_bytes(struct opts *o, const uint8_t *b, size_t n)
{
	if (o->n + n > sizeof(o->b))
		abort();	/* a broken test, not a broken parser */
	memcpy(o->b + o->n, b, n);
	o->n += n;
}

#define OPT(o, ...)                                             \
	opt_bytes(o, (const uint8_t[]){ __VA_ARGS__ },          \
		  sizeof((const uint8_t[]){ __VA_ARGS__ }))

static void opt_mss(struct opts *o, uint16_t mss)
{
	OPT(o, TCP_OPT_MSS, 4, (uint8_t)(mss >> 8), (uint8_t)mss);
}

static void opt_ts(struct opts *o, uint32_t tsval, uint32_t tsecr)
{
	uint8_t b[10] = { TCP_OPT_TIMESTAMP, 10 };

	put32(b + 2, tsval);
	put32(b + 6, tsecr);
	opt_bytes(o, b, sizeof(b));
}

static void opt_sack(struct opts *o, const struct tcp_sack_block *blk,
		     size_t n)
{
	uint8_t b[2 + 8 * TCP_MAX_SACK_BLOCKS] = { TCP_OPT_SACK,
						   (uint8_t)(2 + 8 * n) };

	for (size_t i = 0; i < n; i++) {
		put32(b + 2 + 8 * i, blk[i].left);
		put32(b + 6 + 8 * i, blk[i].right);
	}
	opt_bytes(o, b, 2 + 8 * n);
}

/* What Linux puts in a SYN: MSS, SACK_PERM, TS, NOP, WS. */
static void opt_linux_syn(struct opts *o, uint16_t mss, uint32_t tsval,
			  uint32_t tsecr, uint8_t wscale)
{
	opt_mss(o, mss);
	OPT(o, TCP_OPT_SACK_PERM, 2);
	opt_ts(o, tsval, tsecr);
	OPT(o, TCP_OPT_NOP, TCP_OPT_WSCALE, 3, wscale);
}

static struct spec spec_tcp(int version, uint8_t flags)
{
	return (struct spec){
		.version = version,
		.proto = PROTO_TCP,
		.sport = 40000,
		.dport = 80,
		.seq = 0x01020304,
		.ack = flags & TCP_FLAG_ACK ? 0xa0b0c0d0 : 0,
		.flags = flags,
		.window = 64240,
	};
}

static void ext_add(struct spec *s, uint8_t type, uint8_t len_field,
		    uint16_t frag)
{
	s->ext[s->next++] = (struct ext){ type, len_field, frag };
}

static size_t ext_size(const struct ext *e)
{
	if (e->type == NH_FRAGMENT)
		return 8;
	if (e->type == NH_AH)
		return ((size_t)e->len_field + 2) * 4;
	return ((size_t)e->len_field + 1) * 8;
}

static size_t put_ipv4(uint8_t *b, const struct spec *s)
{
	b[0] = 0x45;
	put16(b + 4, 0x1234);
	put16(b + 6, V4_FRAG_DF);
	b[8] = 64;
	b[9] = s->proto;
	memcpy(b + 12, SRC4, 4);
	memcpy(b + 16, DST4, 4);
	return 20;
}

static size_t put_ipv6(uint8_t *b, const struct spec *s)
{
	size_t off = 40;

	b[0] = 0x60;
	b[6] = s->next ? s->ext[0].type : s->proto;
	b[7] = 64;
	memcpy(b + 8, SRC6, 16);
	memcpy(b + 24, DST6, 16);
	for (size_t i = 0; i < s->next; i++) {
		const struct ext *e = &s->ext[i];

		b[off] = i + 1 < s->next ? s->ext[i + 1].type : s->proto;
		b[off + 1] = e->len_field;
		if (e->type == NH_FRAGMENT)
			put16(b + off + 2, e->frag);
		off += ext_size(e);
	}
	return off;
}

static size_t put_tcp(uint8_t *t, const struct spec *s)
{
	size_t optlen = (s->opt.n + 3) & ~(size_t)3;

	put16(t, s->sport);
	put16(t + 2, s->dport);
	put32(t + 4, s->seq);
	put32(t + 8, s->ack);
	t[12] = (uint8_t)((20 + optlen) / 4 << 4);
	t[13] = s->flags;
	put16(t + 14, s->window);
	memcpy(t + 20, s->opt.b, s->opt.n);
	memset(t + 20 + optlen, 0xa5, s->payload);
	return 20 + optlen + s->payload;
}

static void build(struct pkt *p, const struct spec *s)
{
	memset(p, 0, sizeof(*p));
	p->tcp_off = s->version == 4 ? put_ipv4(p->b, s) : put_ipv6(p->b, s);
	p->len = p->tcp_off + put_tcp(p->b + p->tcp_off, s);
	if (s->version == 4)
		put16(p->b + 2, (uint16_t)p->len);
	else
		put16(p->b + 4, (uint16_t)(p->len - 40));
}

static enum packet_error parse_len(const struct pkt *p, size_t caplen)
{
	struct packet pkt;

	return packet_parse(p->b, caplen, &pkt);
}

static enum packet_error parse_err(const struct pkt *p)
{
	return parse_len(p, p->len);
}

/* Parse a built packet with an option list (on a plain v4 ACK). */
static enum packet_error parse_opts(const struct opts *o, struct packet *out,
				    struct pkt *p)
{
	struct spec s = spec_tcp(4, TCP_FLAG_ACK);

	s.opt = *o;
	s.payload = 16;		/* bytes past doff must not be read as options */
	build(p, &s);
	return packet_parse(p->b, p->len, out);
}

static enum packet_error opts_err(const struct opts *o)
{
	struct packet pkt;
	struct pkt p;

	return parse_opts(o, &pkt, &p);
}

static void check_addr(const struct addr *a, int family, const uint8_t *bytes)
{
	CHECK_EQ_INT(a->family, family);
	CHECK_EQ_MEM(a->bytes, bytes, family == AF_INET ? 4 : 16);
}

/* Fields common to every accepted packet built from S. */
static void check_tcp_fields(const struct packet *pkt, const struct pkt *p,
			     const struct spec *s)
{
	CHECK(pkt->data == p->b);
	CHECK_EQ_INT(pkt->len, p->len);
	CHECK_EQ_INT(pkt->tcp_off, p->tcp_off);
	CHECK_EQ_INT(pkt->hdr_len, 20 + ((s->opt.n + 3) & ~3u));
	CHECK_EQ_INT(pkt->tcp_len, p->len - p->tcp_off);
	CHECK_EQ_INT(pkt->payload_len, s->payload);
	CHECK_EQ_INT(pkt->sport, s->sport);
	CHECK_EQ_INT(pkt->dport, s->dport);
	CHECK_EQ_INT(pkt->seq, s->seq);
	CHECK_EQ_INT(pkt->ack, s->ack);
	CHECK_EQ_INT(pkt->flags, s->flags);
	CHECK_EQ_INT(pkt->window, s->window);
}

static void check_linux_syn_opts(const struct tcp_options *o, uint16_t mss,
				 uint32_t tsval, uint32_t tsecr,
				 uint8_t wscale)
{
	CHECK(o->has_mss);
	CHECK_EQ_INT(o->mss, mss);
	CHECK(o->sack_permitted);
	CHECK(o->has_timestamp);
	CHECK_EQ_INT(o->tsval, tsval);
	CHECK_EQ_INT(o->tsecr, tsecr);
	CHECK(o->has_wscale);
	CHECK_EQ_INT(o->wscale, wscale);
	CHECK_EQ_INT(o->nsack, 0);
	CHECK_EQ_INT(o->racks_len, 0);
}

/* ---- accepted packets ---------------------------------------------- */

TEST(ipv4_syn)
{
	struct spec s = spec_tcp(4, TCP_FLAG_SYN);
	struct packet pkt;
	struct pkt p;

	opt_linux_syn(&s.opt, 1460, 0xdeadbeef, 0, 7);
	build(&p, &s);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len, &pkt), PACKET_OK))
		return;
	CHECK_EQ_INT(pkt.family, AF_INET);
	check_addr(&pkt.src, AF_INET, SRC4);
	check_addr(&pkt.dst, AF_INET, DST4);
	CHECK_EQ_INT(pkt.tcp_off, 20);
	CHECK_EQ_INT(pkt.hdr_len, 40);
	check_tcp_fields(&pkt, &p, &s);
	check_linux_syn_opts(&pkt.opt, 1460, 0xdeadbeef, 0, 7);
}

TEST(ipv6_synack)
{
	struct spec s = spec_tcp(6, TCP_FLAG_SYN | TCP_FLAG_ACK);
	struct packet pkt;
	struct pkt p;

	s.sport = 443;
	s.dport = 51234;
	opt_linux_syn(&s.opt, 1440, 0x11223344, 0x55667788, 14);
	build(&p, &s);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len, &pkt), PACKET_OK))
		return;
	CHECK_EQ_INT(pkt.family, AF_INET6);
	check_addr(&pkt.src, AF_INET6, SRC6);
	check_addr(&pkt.dst, AF_INET6, DST6);
	CHECK_EQ_INT(pkt.tcp_off, 40);
	check_tcp_fields(&pkt, &p, &s);
	check_linux_syn_opts(&pkt.opt, 1440, 0x11223344, 0x55667788, 14);
}

TEST(ipv6_hopopts_dstopts)
{
	struct spec s = spec_tcp(6, TCP_FLAG_SYN);
	struct packet pkt;
	struct pkt p;

	ext_add(&s, NH_HOPOPTS, 0, 0);		/* 8 bytes */
	ext_add(&s, NH_DSTOPTS, 1, 0);		/* 16 bytes */
	opt_mss(&s.opt, 1220);
	s.payload = 13;
	build(&p, &s);
	CHECK_EQ_INT(p.tcp_off, 40 + 8 + 16);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len, &pkt), PACKET_OK))
		return;
	check_tcp_fields(&pkt, &p, &s);
	CHECK(pkt.opt.has_mss);
	CHECK_EQ_INT(pkt.opt.mss, 1220);
}

TEST(ipv6_routing_ah_atomic_fragment)
{
	struct spec s = spec_tcp(6, TCP_FLAG_ACK);
	struct packet pkt;
	struct pkt p;

	ext_add(&s, NH_ROUTING, 2, 0);		/* 24 bytes */
	ext_add(&s, NH_AH, 4, 0);		/* (4 + 2) * 4 = 24 bytes */
	/* An atomic fragment: offset 0, M clear; reserved bits ignored. */
	ext_add(&s, NH_FRAGMENT, 0, 0x0006);
	build(&p, &s);
	CHECK_EQ_INT(p.tcp_off, 40 + 24 + 24 + 8);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len, &pkt), PACKET_OK))
		return;
	check_tcp_fields(&pkt, &p, &s);
}

TEST(ipv6_eight_ext_headers_allowed)
{
	struct spec s = spec_tcp(6, TCP_FLAG_ACK);
	struct pkt p;

	for (int i = 0; i < 8; i++)
		ext_add(&s, NH_DSTOPTS, 0, 0);
	build(&p, &s);
	CHECK_EQ_INT(parse_err(&p), PACKET_OK);
}

TEST(sack_blocks)
{
	static const struct tcp_sack_block blk[TCP_MAX_SACK_BLOCKS] = {
		{ 1000, 2000 }, { 3000, 4000 },
		{ 0xfffffff0, 0x10 }, { 0x80000000, 0x80000100 },
	};

	for (size_t n = 1; n <= TCP_MAX_SACK_BLOCKS; n++) {
		struct opts o = { .n = 0 };
		struct packet pkt;
		struct pkt p;

		OPT(&o, TCP_OPT_NOP, TCP_OPT_NOP);
		opt_sack(&o, blk, n);
		if (!CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK))
			continue;
		CHECK_EQ_INT(pkt.opt.nsack, n);
		for (size_t i = 0; i < n; i++) {
			CHECK_EQ_INT(pkt.opt.sack[i].left, blk[i].left);
			CHECK_EQ_INT(pkt.opt.sack[i].right, blk[i].right);
		}
	}
}

TEST(payload_and_trailing_bytes)
{
	struct spec s = spec_tcp(4, TCP_FLAG_ACK | TCP_FLAG_PSH);
	struct packet pkt;
	struct pkt p;

	s.payload = 100;
	build(&p, &s);
	/* Ethernet padding or garbage after the IP total length. */
	memset(p.b + p.len, 0xee, 16);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len + 16, &pkt), PACKET_OK))
		return;
	CHECK_EQ_INT(pkt.len, p.len);
	CHECK_EQ_INT(pkt.hdr_len, 20);
	CHECK_EQ_INT(pkt.tcp_len, 120);
	check_tcp_fields(&pkt, &p, &s);

	s.version = 6;
	build(&p, &s);
	memset(p.b + p.len, 0xee, 7);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len + 7, &pkt), PACKET_OK))
		return;
	check_tcp_fields(&pkt, &p, &s);
}

TEST(nop_and_eol)
{
	struct opts o = { .n = 0 };
	struct packet pkt;
	struct pkt p;

	OPT(&o, TCP_OPT_NOP, TCP_OPT_NOP);
	opt_ts(&o, 5, 6);
	if (CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK)) {
		CHECK(pkt.opt.has_timestamp);
		CHECK_EQ_INT(pkt.opt.tsval, 5);
		CHECK_EQ_INT(pkt.opt.tsecr, 6);
	}

	/* Everything after EOL is ignored, even bytes that would not parse. */
	o.n = 0;
	OPT(&o, TCP_OPT_EOL, TCP_OPT_MSS, 4, 0x05, 0xb4, TCP_OPT_TIMESTAMP, 1,
	    0);
	if (CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK))
		CHECK(!pkt.opt.has_mss);

	o.n = 0;
	opt_mss(&o, 536);
	OPT(&o, TCP_OPT_EOL, 0xff, 0xff, 0xff);
	if (CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK)) {
		CHECK(pkt.opt.has_mss);
		CHECK_EQ_INT(pkt.opt.mss, 536);
	}

	/* Only NOPs. */
	o.n = 0;
	OPT(&o, TCP_OPT_NOP, TCP_OPT_NOP, TCP_OPT_NOP, TCP_OPT_NOP);
	CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK);
}

TEST(unknown_options_skipped)
{
	struct opts o = { .n = 0 };
	struct packet pkt;
	struct pkt p;

	OPT(&o, 30, 4, 0x00, 0x81);		/* MPTCP */
	OPT(&o, 99, 2);				/* made up, empty */
	OPT(&o, 19, 18, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	    16);				/* TCP MD5 */
	OPT(&o, TCP_OPT_WSCALE, 3, 9);
	if (!CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK))
		return;
	CHECK(pkt.opt.has_wscale);
	CHECK_EQ_INT(pkt.opt.wscale, 9);
	CHECK(!pkt.opt.has_mss);
	CHECK_EQ_INT(pkt.opt.racks_len, 0);
}

TEST(racks_option_recorded)
{
	struct opts o = { .n = 0 };
	struct packet pkt;
	struct pkt p;

	opt_mss(&o, 1460);
	/* TCP Fast Open's experimental option comes first and is skipped. */
	OPT(&o, TCP_OPT_EXP, 4, 0xf9, 0x89);
	OPT(&o, TCP_OPT_EXP, 6, 0x72, 0x61, 0x11, 0xbb);
	OPT(&o, TCP_OPT_EXP, 6, 0x72, 0x61, 0x12, 0x00); /* only the first */
	if (!CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK))
		return;
	CHECK_EQ_INT(pkt.opt.racks_off, 20 + 20 + 4 + 4);
	CHECK_EQ_INT(pkt.opt.racks_len, 6);
	CHECK_EQ_INT(p.b[pkt.opt.racks_off], TCP_OPT_EXP);
	CHECK_EQ_INT(p.b[pkt.opt.racks_off + 4], 0x11);
	CHECK(pkt.opt.has_mss);

	/* Same on IPv6 behind an extension header: offset is in the packet. */
	struct spec s = spec_tcp(6, TCP_FLAG_SYN);

	ext_add(&s, NH_HOPOPTS, 0, 0);
	OPT(&s.opt, TCP_OPT_NOP, TCP_OPT_NOP, TCP_OPT_EXP, 4, 0x72, 0x61);
	build(&p, &s);
	if (!CHECK_EQ_INT(packet_parse(p.b, p.len, &pkt), PACKET_OK))
		return;
	CHECK_EQ_INT(pkt.opt.racks_off, 40 + 8 + 20 + 2);
	CHECK_EQ_INT(pkt.opt.racks_len, 4);

	/* Another experimenter's option alone records nothing. */
	o.n = 0;
	OPT(&o, TCP_OPT_EXP, 4, 0xf9, 0x89);
	if (CHECK_EQ_INT(parse_opts(&o, &pkt, &p), PACKET_OK))
		CHECK_EQ_INT(pkt.opt.racks_len, 0);
}

/* ---- rejections, one reason at a time ------------------------------ */

TEST(err_short)
{
	struct pkt p;
	struct spec s = spec_tcp(4, TCP_FLAG_SYN);

	build(&p, &s);
	CHECK_EQ_INT(parse_len(&p, 0), PACKET_ERR_SHORT);
	CHECK_EQ_INT(parse_len(&p, 1), PACKET_ERR_SHORT);
	CHECK_EQ_INT(parse_len(&p, 19), PACKET_ERR_SHORT);
	s.version = 6;
	build(&p, &s);
	CHECK_EQ_INT(parse_len(&p, 39), PACKET_ERR_SHORT);
}

TEST(err_version)
{
	struct pkt p;
	struct spec s = spec_tcp(4, TCP_FLAG_SYN);
	static const uint8_t versions[] = { 0x0, 0x5, 0x7, 0xf };

	build(&p, &s);
	for (size_t i = 0; i < sizeof(versions); i++) {
		p.b[0] = (uint8_t)(versions[i] << 4 | 5);
		CHECK_EQ_INT(parse_err(&p), PACKET_ERR_VERSION);
	}
	CHECK_EQ_INT(parse_len(&p, 1), PACKET_ERR_VERSION);
}

TEST(err_ip_header)
{
	struct spec s = spec_tcp(4, TCP_FLAG_SYN);
	struct pkt p;

	build(&p, &s);
	p.b[0] = 0x44;				/* IHL 4 < 5 */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_IP_HEADER);
	p.b[0] = 0x40;
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_IP_HEADER);

	build(&p, &s);
	p.b[0] = 0x46;				/* IHL 24 > total 22 */
	put16(p.b + 2, 22);
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_IP_HEADER);
	put16(p.b + 2, 0);			/* BIG TCP */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_IP_HEADER);

	s.version = 6;
	build(&p, &s);
	put16(p.b + 4, 0);			/* jumbogram */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_IP_HEADER);
}

TEST(err_truncated)
{
	struct spec s = spec_tcp(4, TCP_FLAG_SYN);
	struct pkt p;

	s.payload = 10;
	build(&p, &s);
	CHECK_EQ_INT(parse_len(&p, p.len - 1), PACKET_ERR_TRUNCATED);
	CHECK_EQ_INT(parse_len(&p, 20), PACKET_ERR_TRUNCATED);

	s.version = 6;
	build(&p, &s);
	CHECK_EQ_INT(parse_len(&p, p.len - 1), PACKET_ERR_TRUNCATED);
	CHECK_EQ_INT(parse_len(&p, 40), PACKET_ERR_TRUNCATED);
}

TEST(err_fragment)
{
	static const uint16_t v4_frag[] = {
		V4_FRAG_MF, 0x0001, 0x00b9, V4_FRAG_MF | 0x0010,
		V4_FRAG_DF | 0x1fff,
	};
	static const uint16_t v6_frag[] = { V6_FRAG_M, 0x0008, 0xfff8 };
	struct spec s = spec_tcp(4, TCP_FLAG_ACK);
	struct pkt p;

	build(&p, &s);
	for (size_t i = 0; i < sizeof(v4_frag) / sizeof(v4_frag[0]); i++) {
		put16(p.b + 6, v4_frag[i]);
		CHECK_EQ_INT(parse_err(&p), PACKET_ERR_FRAGMENT);
	}
	put16(p.b + 6, 0);			/* DF clear is fine */
	CHECK_EQ_INT(parse_err(&p), PACKET_OK);

	for (size_t i = 0; i < sizeof(v6_frag) / sizeof(v6_frag[0]); i++) {
		s = spec_tcp(6, TCP_FLAG_ACK);
		ext_add(&s, NH_HOPOPTS, 0, 0);
		ext_add(&s, NH_FRAGMENT, 0, v6_frag[i]);
		build(&p, &s);
		CHECK_EQ_INT(parse_err(&p), PACKET_ERR_FRAGMENT);
	}
}

TEST(err_ext_header)
{
	struct spec s = spec_tcp(6, TCP_FLAG_ACK);
	struct pkt p;

	/* A header whose length runs past the packet. */
	ext_add(&s, NH_HOPOPTS, 0, 0);
	build(&p, &s);
	p.b[40 + 1] = 10;			/* 88 bytes, only 28 left */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_EXT_HEADER);

	/* An AH header claiming more than there is. */
	s = spec_tcp(6, TCP_FLAG_ACK);
	ext_add(&s, NH_AH, 4, 0);
	build(&p, &s);
	p.b[40 + 1] = 0xff;			/* 1028 bytes */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_EXT_HEADER);

	/* Fewer than 8 bytes left for the next header. */
	s = spec_tcp(6, TCP_FLAG_ACK);
	build(&p, &s);
	p.b[6] = NH_DSTOPTS;
	put16(p.b + 4, 4);
	CHECK_EQ_INT(parse_len(&p, 44), PACKET_ERR_EXT_HEADER);

	/* Nine headers are too many, even before TCP. */
	s = spec_tcp(6, TCP_FLAG_ACK);
	for (int i = 0; i < 9; i++)
		ext_add(&s, i % 2 ? NH_DSTOPTS : NH_ROUTING, 0, 0);
	build(&p, &s);
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_EXT_HEADER);
}

TEST(err_not_tcp)
{
	static const uint8_t v6_nh[] = { PROTO_UDP, NH_ICMPV6, NH_NONE, 135 };
	struct spec s = spec_tcp(4, TCP_FLAG_ACK);
	struct pkt p;

	s.proto = PROTO_UDP;
	build(&p, &s);
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_NOT_TCP);

	for (size_t i = 0; i < sizeof(v6_nh); i++) {
		s = spec_tcp(6, TCP_FLAG_ACK);
		s.proto = v6_nh[i];
		build(&p, &s);
		CHECK_EQ_INT(parse_err(&p), PACKET_ERR_NOT_TCP);
		ext_add(&s, NH_DSTOPTS, 0, 0);
		build(&p, &s);
		CHECK_EQ_INT(parse_err(&p), PACKET_ERR_NOT_TCP);
	}
}

TEST(err_tcp_header)
{
	struct spec s = spec_tcp(4, TCP_FLAG_ACK);
	struct pkt p;

	s.payload = 8;
	build(&p, &s);
	p.b[20 + 12] = 4 << 4;			/* doff 4 */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);
	p.b[20 + 12] = 0;
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);
	p.b[20 + 12] = 8 << 4;			/* 32 bytes > 28 in segment */
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);
	p.b[20 + 12] = 7 << 4;			/* exactly 28 is fine */
	memset(p.b + 40, TCP_OPT_NOP, 8);
	CHECK_EQ_INT(parse_err(&p), PACKET_OK);

	/* IP total length leaves no room for a 20-byte TCP header. */
	build(&p, &s);
	put16(p.b + 2, 39);
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);
	put16(p.b + 2, 20);
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);

	s.version = 6;
	s.payload = 0;
	ext_add(&s, NH_HOPOPTS, 0, 0);
	build(&p, &s);
	p.b[48 + 12] = 15 << 4;
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);
	put16(p.b + 4, 8 + 19);
	CHECK_EQ_INT(parse_err(&p), PACKET_ERR_TCP_HEADER);
}

TEST(err_tcp_option)
{
	/* Each row: option bytes that must be rejected. */
	static const struct {
		const char *what;
		uint8_t b[12];
		size_t n;
	} bad[] = {
		{ "length 0", { 30, 0, 0, 0 }, 4 },
		{ "length 1", { 30, 1, 0, 0 }, 4 },
		{ "overrun", { TCP_OPT_NOP, TCP_OPT_NOP, 8, 10 }, 4 },
		{ "unknown overrun", { 30, 6, 0, 0 }, 4 },
		{ "kind in last byte", { 1, 1, 1, TCP_OPT_MSS }, 4 },
		{ "MSS length 3", { TCP_OPT_MSS, 3, 5, 0 }, 4 },
		{ "MSS length 5", { TCP_OPT_MSS, 5, 5, 0xb4, 0, 0, 0, 0 }, 8 },
		{ "WS length 4", { TCP_OPT_WSCALE, 4, 7, 0 }, 4 },
		{ "SACK_PERM length 3", { TCP_OPT_SACK_PERM, 3, 0, 0 }, 4 },
		{ "TS length 8",
		  { TCP_OPT_TIMESTAMP, 8, 1, 2, 3, 4, 5, 6 }, 8 },
		{ "TS length 12",
		  { TCP_OPT_TIMESTAMP, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, 12 },
		{ "SACK 2+7",
		  { TCP_OPT_SACK, 9, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0 }, 12 },
		{ "SACK no blocks", { TCP_OPT_SACK, 2, 0, 0 }, 4 },
		{ "EXP length 3", { TCP_OPT_EXP, 3, 0xf9, 0 }, 4 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct opts o = { .n = 0 };

		opt_bytes(&o, bad[i].b, bad[i].n);
		if (!CHECK_EQ_INT(opts_err(&o), PACKET_ERR_TCP_OPTION))
			fprintf(stderr, "  case: %s\n", bad[i].what);
	}
}

TEST(error_names)
{
	for (int i = 0; i < PACKET_ERR_MAX; i++) {
		const char *name = packet_error_name((enum packet_error)i);

		if (!CHECK(name != NULL))
			continue;
		CHECK(strcmp(name, "unknown") != 0);
		CHECK(name[0] != '\0');
		for (int j = 0; j < i; j++)
			CHECK(strcmp(name, packet_error_name(
					     (enum packet_error)j)) != 0);
	}
	CHECK_EQ_STR(packet_error_name(PACKET_OK), "ok");
	CHECK_EQ_STR(packet_error_name(PACKET_ERR_MAX), "unknown");
	CHECK_EQ_STR(packet_error_name((enum packet_error)-1), "unknown");
}

static const struct unit_test tests[] = {
	UNIT(ipv4_syn),
	UNIT(ipv6_synack),
	UNIT(ipv6_hopopts_dstopts),
	UNIT(ipv6_routing_ah_atomic_fragment),
	UNIT(ipv6_eight_ext_headers_allowed),
	UNIT(sack_blocks),
	UNIT(payload_and_trailing_bytes),
	UNIT(nop_and_eol),
	UNIT(unknown_options_skipped),
	UNIT(racks_option_recorded),
	UNIT(err_short),
	UNIT(err_version),
	UNIT(err_ip_header),
	UNIT(err_truncated),
	UNIT(err_fragment),
	UNIT(err_ext_header),
	UNIT(err_not_tcp),
	UNIT(err_tcp_header),
	UNIT(err_tcp_option),
	UNIT(error_names),
};

UNIT_MAIN("packet", tests)
