// SPDX-License-Identifier: GPL-2.0-only
/*
 * rewrite.c: adding racks' option to SYNs over IPv4, IPv6 and IPv6 with a
 * hop-by-hop header, then removing it again, checked against the bytes of
 * the original; the refusals (-ENOSPC, -EMSGSIZE, -EINVAL) leave the
 * output untouched; removing an option that is not a multiple of four
 * long re-pads the options.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "csum.h"
#include "option.h"
#include "packet.h"
#include "rewrite.h"
#include "unit.h"

#define BUF 512
#define POISON 0xcc

enum ip { V4, V6, V6_HOP };

struct pk {
	uint8_t b[BUF];
	size_t len, tcp_off;
	struct packet p;
};

/* What Linux puts in a SYN: MSS, SACK_PERM, TS, NOP, WS (20 bytes). */
static const uint8_t linux_syn[] = {
	2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0,
	1, 3, 3, 7,
};

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static size_t get16(const uint8_t *p)
{
	return (size_t)(p[0] << 8 | p[1]);
}

static bool ipv4_header_ok(const uint8_t *b)
{
	return csum_fold(csum_add(0, b, (size_t)(b[0] & 0x0f) * 4)) == 0xffff;
}

/* A SYN with OPTS (a multiple of 4 bytes) and PAYLOAD bytes, checksums
 * right, parsed into P->p. */
static bool build(struct pk *p, enum ip ip, const uint8_t *opts,
		  size_t optlen, size_t payload)
{
	uint8_t *b = p->b, *t;

	memset(p, 0, sizeof(*p));
	if (ip == V4) {
		static const uint8_t h[20] = { 0x45, 0, 0, 0, 0x12, 0x34, 0x40,
					       0, 64, 6, 0, 0, 192, 0, 2, 1,
					       198, 51, 100, 2 };

		memcpy(b, h, sizeof(h));
		p->tcp_off = 20;
	} else {
		b[0] = 0x60;
		b[1] = 0x0a;		/* traffic class / flow label bits */
		b[6] = ip == V6_HOP ? 0 : 6;
		b[7] = 64;
		b[8] = b[24] = 0x20;
		b[9] = b[25] = 0x01;
		b[23] = 1;
		b[39] = 2;
		p->tcp_off = 40;
		if (ip == V6_HOP) {	/* next TCP, 8 bytes, PadN of 4 */
			memcpy(b + 40, (const uint8_t[]){ 6, 0, 1, 4 }, 4);
			p->tcp_off = 48;
		}
	}
	t = b + p->tcp_off;
	put16(t, 40000);
	put16(t + 2, 443);
	memcpy(t + 4, (const uint8_t[]){ 0x9a, 0xbc, 0xde, 0xf0 }, 4);
	t[12] = (uint8_t)((20 + optlen) / 4 << 4);
	t[13] = TCP_FLAG_SYN;
	put16(t + 14, 64240);
	memcpy(t + 20, opts, optlen);
	for (size_t i = 0; i < payload; i++)
		t[20 + optlen + i] = (uint8_t)(i * 7 + 3);
	p->len = p->tcp_off + 20 + optlen + payload;
	if (ip == V4) {
		put16(b + 2, p->len);
		put16(b + 10, (uint16_t)~csum_fold(csum_add(0, b, 20)));
	} else {
		put16(b + 4, p->len - 40);
	}
	if (!CHECK_EQ_INT(packet_parse(b, p->len, &p->p), PACKET_OK))
		return false;
	uint16_t sum = csum_tcp(&p->p.src, &p->p.dst, t, p->len - p->tcp_off);

	memcpy(t + 16, &sum, 2);
	return true;
}

static size_t racks_syn(uint8_t opt[8])
{
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_SYN,
			     .flags = 0x5a };

	return edp_option_build(&m, opt, 8);
}

static void check_same_options(const struct tcp_options *a,
			       const struct tcp_options *b)
{
	CHECK_EQ_INT(a->has_mss, b->has_mss);
	CHECK_EQ_INT(a->mss, b->mss);
	CHECK_EQ_INT(a->sack_permitted, b->sack_permitted);
	CHECK_EQ_INT(a->has_timestamp, b->has_timestamp);
	CHECK_EQ_INT(a->tsval, b->tsval);
	CHECK_EQ_INT(a->tsecr, b->tsecr);
	CHECK_EQ_INT(a->has_wscale, b->has_wscale);
	CHECK_EQ_INT(a->wscale, b->wscale);
	CHECK_EQ_INT(a->nsack, b->nsack);
}

/* IP header and TCP header fields of OUT against ORIG, after the TCP
 * header grew by GROW bytes (negative: shrank). */
static void check_headers(const uint8_t *out, size_t outlen,
			  const struct pk *orig, int grow)
{
	size_t to = orig->tcp_off;
	const uint8_t *a = out + to, *b = orig->b + to;

	if (orig->p.family == AF_INET) {
		CHECK_EQ_INT(get16(out + 2), outlen);
		CHECK(ipv4_header_ok(out));
		CHECK_EQ_MEM(out + 12, orig->b + 12, 8);
		CHECK_EQ_MEM(out + 4, orig->b + 4, 6);
	} else {
		CHECK_EQ_INT(get16(out + 4), outlen - 40);
		CHECK_EQ_MEM(out, orig->b, 4);
		CHECK_EQ_MEM(out + 6, orig->b + 6, to - 6);
	}
	CHECK_EQ_MEM(a, b, 12);
	CHECK_EQ_INT(a[12] >> 4, (b[12] >> 4) + grow / 4);
	CHECK_EQ_INT(a[12] & 0x0f, b[12] & 0x0f);
	CHECK_EQ_MEM(a + 13, b + 13, 3);
	CHECK_EQ_MEM(a + 18, b + 18, 2);
}

/* Add a racks SYN option to a packet, check the result, remove it. */
static void add_remove(enum ip ip, const uint8_t *opts, size_t optlen,
		       size_t payload, bool exact)
{
	struct pk o;
	struct packet a, r;
	uint8_t racks[8], out[BUF], back[BUF];
	struct edp_msg m;
	int n;

	if (!build(&o, ip, opts, optlen, payload) ||
	    !CHECK_EQ_INT(racks_syn(racks), 8))
		return;
	n = rewrite_add_option(&o.p, racks, 8, out, sizeof(out));
	if (!CHECK_EQ_INT(n, o.len + 8) ||
	    !CHECK_EQ_INT(packet_parse(out, (size_t)n, &a), PACKET_OK))
		return;
	CHECK_EQ_INT(a.tcp_off, o.tcp_off);
	CHECK_EQ_INT(a.hdr_len, o.p.hdr_len + 8);
	CHECK_EQ_INT(a.payload_len, payload);
	CHECK_EQ_INT(a.opt.racks_off, o.tcp_off + 20);
	CHECK_EQ_INT(a.opt.racks_len, 6);
	CHECK_EQ_MEM(out + o.tcp_off + 20, racks, 8);
	if (CHECK_EQ_INT(edp_option_parse(out + a.opt.racks_off,
					  a.opt.racks_len, &m), EDP_OK))
		CHECK_EQ_INT(m.flags, 0x5a);
	check_same_options(&a.opt, &o.p.opt);
	CHECK_EQ_MEM(out + o.tcp_off + 28, o.b + o.tcp_off + 20, optlen);
	CHECK_EQ_MEM(out + o.tcp_off + a.hdr_len,
		     o.b + o.tcp_off + o.p.hdr_len, payload);
	check_headers(out, (size_t)n, &o, 8);
	CHECK(csum_tcp_valid(&a.src, &a.dst, out + a.tcp_off, a.tcp_len));

	n = rewrite_remove_option(&a, a.opt.racks_off, a.opt.racks_len, back,
				  sizeof(back));
	if (!CHECK_EQ_INT(n, o.len) ||
	    !CHECK_EQ_INT(packet_parse(back, (size_t)n, &r), PACKET_OK))
		return;
	CHECK_EQ_INT(r.hdr_len, o.p.hdr_len);
	CHECK_EQ_INT(r.opt.racks_len, 0);
	check_same_options(&r.opt, &o.p.opt);
	check_headers(back, (size_t)n, &o, 0);
	CHECK(csum_tcp_valid(&r.src, &r.dst, back + r.tcp_off, r.tcp_len));
	if (exact && !CHECK_EQ_MEM(back, o.b, o.len))
		fprintf(stderr, "  ip %d, %zu option bytes, payload %zu\n",
			(int)ip, optlen, payload);
}

TEST(add_then_remove_linux_syn)
{
	static const size_t payloads[] = { 0, 1, 37, 200 };

	for (int ip = V4; ip <= V6_HOP; ip++)
		for (size_t i = 0; i < sizeof(payloads) / sizeof(*payloads);
		     i++)
			add_remove((enum ip)ip, linux_syn, sizeof(linux_syn),
				   payloads[i], true);
}

TEST(add_then_remove_other_layouts)
{
	/* No options; Windows' SYN; MSS then EOL padding; 32 bytes, so
	 * that the racks option makes exactly 60. */
	static const uint8_t win[] = { 2, 4, 5, 0xb4, 1, 3, 3, 8,
				       1, 1, 4, 2 };
	static const uint8_t eol[] = { 2, 4, 2, 0x18, 0, 0, 0, 0 };
	uint8_t full[32];

	memcpy(full, linux_syn, sizeof(linux_syn));
	memcpy(full + 20, win, sizeof(win));
	for (int ip = V4; ip <= V6_HOP; ip++) {
		add_remove((enum ip)ip, linux_syn, 0, 5, true);
		add_remove((enum ip)ip, win, sizeof(win), 0, true);
		add_remove((enum ip)ip, eol, sizeof(eol), 11, true);
		add_remove((enum ip)ip, full, sizeof(full), 3, true);
	}
}

/*
 * Options that start with NOPs (NOP NOP TS, as in a non-Linux SYN
 * without MSS): removing the racks option takes only its own padding,
 * never the original's first NOPs, so the result is byte-exact.
 */
TEST(add_then_remove_leading_nops)
{
	static const uint8_t nop_ts[] = { 1, 1, 8, 10, 0, 0, 0, 1,
					  0, 0, 0, 0 };

	for (int ip = V4; ip <= V6_HOP; ip++)
		add_remove((enum ip)ip, nop_ts, sizeof(nop_ts), 9, true);
}

TEST(remove_bad_checksum_original)
{
	struct pk o;
	struct packet a;
	uint8_t racks[8], out[BUF], back[BUF];
	int n;

	if (!build(&o, V4, linux_syn, sizeof(linux_syn), 10))
		return;
	o.b[o.tcp_off + 16] ^= 0x40;	/* the original was corrupt */
	racks_syn(racks);
	n = rewrite_add_option(&o.p, racks, 8, out, sizeof(out));
	if (!CHECK_EQ_INT(packet_parse(out, (size_t)n, &a), PACKET_OK))
		return;
	n = rewrite_remove_option(&a, a.opt.racks_off, a.opt.racks_len, back,
				  sizeof(back));
	if (!CHECK_EQ_INT(n, o.len))
		return;
	/* Only the checksum differs: the result always gets a valid one. */
	CHECK_EQ_MEM(back, o.b, o.tcp_off + 16);
	CHECK_EQ_MEM(back + o.tcp_off + 18, o.b + o.tcp_off + 18,
		     o.len - o.tcp_off - 18);
	CHECK(csum_tcp_valid(&a.src, &a.dst, back + o.tcp_off,
			     o.len - o.tcp_off));
}

TEST(add_refused_leaves_output)
{
	uint8_t opts[40], racks[8], out[BUF], clean[BUF];
	struct pk o;

	racks_syn(racks);
	memset(clean, POISON, sizeof(clean));
	memcpy(opts, linux_syn, sizeof(linux_syn));
	memset(opts + 20, 1, sizeof(opts) - 20);
	/* 36 and 40 bytes of options: no room for 8 more. */
	for (size_t optlen = 36; optlen <= 40; optlen += 4) {
		for (int ip = V4; ip <= V6_HOP; ip++) {
			if (!build(&o, (enum ip)ip, opts, optlen, 4))
				continue;
			memset(out, POISON, sizeof(out));
			CHECK_EQ_INT(rewrite_add_option(&o.p, racks, 8, out,
							sizeof(out)),
				     -ENOSPC);
			CHECK_EQ_MEM(out, clean, sizeof(out));
		}
	}
	/* 32 bytes: exactly 60 fits; 4 more would not. */
	if (!build(&o, V4, opts, 32, 0))
		return;
	CHECK_EQ_INT(rewrite_add_option(&o.p, racks, 8, out, sizeof(out)),
		     o.len + 8);
	/* A length that is not a multiple of four is refused too. */
	memset(out, POISON, sizeof(out));
	CHECK_EQ_INT(rewrite_add_option(&o.p, racks, 6, out, sizeof(out)),
		     -ENOSPC);
	CHECK_EQ_MEM(out, clean, sizeof(out));

	/* Output one byte too small, then exactly right. */
	if (!build(&o, V6_HOP, linux_syn, sizeof(linux_syn), 17))
		return;
	memset(out, POISON, sizeof(out));
	CHECK_EQ_INT(rewrite_add_option(&o.p, racks, 8, out, o.len + 7),
		     -EMSGSIZE);
	CHECK_EQ_MEM(out, clean, sizeof(out));
	CHECK_EQ_INT(rewrite_add_option(&o.p, racks, 8, out, o.len + 8),
		     o.len + 8);
	CHECK_EQ_INT(out[o.len + 8], POISON);
}

/* A packet whose options contain a 6-byte racks option with no NOPs
 * after it, at option offset AT within OPTS. */
static void remove_unpadded(const uint8_t *opts, size_t optlen, size_t at,
			    size_t want_hdr)
{
	struct pk o;
	struct packet r;
	uint8_t out[BUF];
	int n;

	for (int ip = V4; ip <= V6_HOP; ip++) {
		if (!build(&o, (enum ip)ip, opts, optlen, 13) ||
		    !CHECK_EQ_INT(o.p.opt.racks_off, o.tcp_off + 20 + at))
			continue;
		n = rewrite_remove_option(&o.p, o.p.opt.racks_off,
					  o.p.opt.racks_len, out, sizeof(out));
		if (!CHECK_EQ_INT(n, o.len - o.p.hdr_len + want_hdr) ||
		    !CHECK_EQ_INT(packet_parse(out, (size_t)n, &r), PACKET_OK))
			continue;
		CHECK_EQ_INT(r.hdr_len, want_hdr);
		CHECK_EQ_INT(r.opt.racks_len, 0);
		check_same_options(&r.opt, &o.p.opt);
		CHECK(r.opt.has_mss && r.opt.has_wscale);
		CHECK(r.opt.sack_permitted && r.opt.has_timestamp);
		CHECK_EQ_MEM(out + r.tcp_off + r.hdr_len,
			     o.b + o.tcp_off + o.p.hdr_len, 13);
		check_headers(out, (size_t)n, &o,
			      (int)want_hdr - (int)o.p.hdr_len);
		CHECK(csum_tcp_valid(&r.src, &r.dst, out + r.tcp_off,
				     r.tcp_len));
	}
}

TEST(remove_unpadded_option)
{
	/* racks(6) MSS WS SACK_PERM TS EOL EOL EOL: 22 bytes left -> 24. */
	static const uint8_t first[] = {
		254, 6, 0x72, 0x61, 0x11, 0x00, 2, 4, 5, 0xb4, 3, 3, 7, 4, 2,
		8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0,
	};
	/* MSS racks(6) WS SACK_PERM TS NOP NOP NOP: the same, mid-list. */
	static const uint8_t middle[] = {
		2, 4, 5, 0xb4, 254, 6, 0x72, 0x61, 0x12, 0x01, 3, 3, 7, 4, 2,
		8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 1,
	};

	remove_unpadded(first, sizeof(first), 0, 20 + 24);
	remove_unpadded(middle, sizeof(middle), 4, 20 + 24);
}

TEST(remove_bad_offsets)
{
	struct pk o;
	uint8_t racks[8], out[BUF], clean[BUF];
	struct packet a;
	int n;

	if (!build(&o, V6_HOP, linux_syn, sizeof(linux_syn), 6))
		return;
	racks_syn(racks);
	n = rewrite_add_option(&o.p, racks, 8, out, sizeof(out));
	if (!CHECK_EQ_INT(packet_parse(out, (size_t)n, &a), PACKET_OK))
		return;

	size_t start = a.tcp_off + 20, end = a.tcp_off + a.hdr_len;
	const struct {
		size_t off, len;
	} bad[] = {
		{ 0, 6 },
		{ a.tcp_off, 6 },
		{ start - 1, 6 },
		{ end - 4, 6 },
		{ start, a.hdr_len - 20 + 1 },
		{ end + 1, 0 },
		{ (size_t)n, 6 },
		/* Sums that would wrap around. */
		{ start, SIZE_MAX },
		{ SIZE_MAX, 2 },
		{ SIZE_MAX - 1, SIZE_MAX },
	};
	uint8_t back[BUF];

	memset(clean, POISON, sizeof(clean));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(back, POISON, sizeof(back));
		if (!CHECK_EQ_INT(rewrite_remove_option(&a, bad[i].off,
							bad[i].len, back,
							sizeof(back)),
				  -EINVAL))
			fprintf(stderr, "  off %zu len %zu\n", bad[i].off,
				bad[i].len);
		CHECK_EQ_MEM(back, clean, sizeof(back));
	}
	/* Output too small for the result, then exactly right. */
	memset(back, POISON, sizeof(back));
	CHECK_EQ_INT(rewrite_remove_option(&a, start, 6, back, o.len - 1),
		     -EMSGSIZE);
	CHECK_EQ_MEM(back, clean, sizeof(back));
	CHECK_EQ_INT(rewrite_remove_option(&a, start, 6, back, o.len), o.len);
}

TEST(fix_recomputes)
{
	for (int ip = V4; ip <= V6_HOP; ip++) {
		struct pk o;
		uint8_t buf[BUF];

		if (!build(&o, (enum ip)ip, linux_syn, sizeof(linux_syn), 21))
			continue;
		memcpy(buf, o.b, o.len);
		if (ip == V4)
			memset(buf + 2, 0xff, 2);	/* total length */
		if (ip == V4)
			buf[11] ^= 0x01;		/* header checksum */
		else
			memset(buf + 4, 0, 2);		/* payload length */
		memset(buf + o.tcp_off + 16, 0, 2);	/* TCP checksum */
		rewrite_fix(buf, o.len, o.tcp_off, &o.p);
		CHECK_EQ_MEM(buf, o.b, o.len);
	}
}

static const struct unit_test tests[] = {
	UNIT(add_then_remove_linux_syn),
	UNIT(add_then_remove_other_layouts),
	UNIT(add_then_remove_leading_nops),
	UNIT(remove_bad_checksum_original),
	UNIT(add_refused_leaves_output),
	UNIT(remove_unpadded_option),
	UNIT(remove_bad_offsets),
	UNIT(fix_recomputes),
};

UNIT_MAIN("rewrite", tests)
