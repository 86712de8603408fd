// SPDX-License-Identifier: GPL-2.0-only
/*
 * csum.c against RFC 1071's example, a deliberately naive reference
 * implementation (pseudo-header and segment copied into one buffer and
 * summed word by word), and full recomputation after incremental updates.
 */
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "csum.h"
#include "unit.h"

#define TCP_CHECK 16		/* offset of the checksum in the TCP header */

/* ---- reference ----------------------------------------------------- */

static uint16_t ref_sum(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint64_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The checksum to store (host order), checksum field taken as zero. */
static uint16_t ref_tcp(const struct addr *src, const struct addr *dst,
			const uint8_t *seg, size_t len)
{
	uint8_t buf[40 + 2048];
	size_t alen = src->family == AF_INET ? 4 : 16, off = 0;

	memcpy(buf, src->bytes, alen);
	memcpy(buf + alen, dst->bytes, alen);
	off = 2 * alen;
	if (src->family == AF_INET) {
		uint8_t v4[4] = { 0, IPPROTO_TCP, (uint8_t)(len >> 8),
				  (uint8_t)len };

		memcpy(buf + off, v4, 4);
		off += 4;
	} else {
		uint8_t v6[8] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
				  (uint8_t)(len >> 8), (uint8_t)len,
				  0, 0, 0, IPPROTO_TCP };

		memcpy(buf + off, v6, 8);
		off += 8;
	}
	memcpy(buf + off, seg, len);
	buf[off + TCP_CHECK] = buf[off + TCP_CHECK + 1] = 0;
	return (uint16_t)~ref_sum(buf, off + len);
}

/* ---- fixtures ------------------------------------------------------ */

/* A SYN with MSS/SACK_PERM/TS/NOP/WS, then PAYLOAD bytes of pattern. */
static size_t make_segment(uint8_t *seg, size_t payload)
{
	static const uint8_t hdr[40] = {
		0x9c, 0x40, 0x00, 0x50,	/* 40000 -> 80 */
		0x6b, 0x8b, 0x45, 0x67,	/* seq */
		0x00, 0x00, 0x00, 0x00,	/* ack */
		0xa0, 0x02, 0xfa, 0xf0,	/* doff 10, SYN, window 64240 */
		0x12, 0x34, 0x00, 0x00,	/* bogus checksum, urgent 0 */
		0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a,
		0x9a, 0x1b, 0x2c, 0x3d, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x03, 0x03, 0x07,
	};

	memcpy(seg, hdr, sizeof(hdr));
	for (size_t i = 0; i < payload; i++)
		seg[sizeof(hdr) + i] = (uint8_t)(i * 7 + 3);
	return sizeof(hdr) + payload;
}

static uint16_t stored(const uint8_t *seg)
{
	uint16_t c;

	memcpy(&c, seg + TCP_CHECK, 2);
	return c;
}

static void store(uint8_t *seg, uint16_t check)
{
	memcpy(seg + TCP_CHECK, &check, 2);
}

/* ---- tests --------------------------------------------------------- */

TEST(rfc1071_example)
{
	static const uint8_t b[8] = { 0x00, 0x01, 0xf2, 0x03,
				      0xf4, 0xf5, 0xf6, 0xf7 };

	CHECK_EQ_INT(csum_fold(csum_add(0, b, sizeof(b))), 0xddf2);
	CHECK_EQ_INT((uint16_t)~csum_fold(csum_add(0, b, sizeof(b))), 0x220d);
	/* Summing in even-sized pieces gives the same result. */
	CHECK_EQ_INT(csum_fold(csum_add(csum_add(0, b, 2), b + 2, 6)), 0xddf2);
	CHECK_EQ_INT(csum_fold(csum_add(csum_add(0, b, 4), b + 4, 4)), 0xddf2);
	CHECK_EQ_INT(csum_fold(0x2ddf0), 0xddf2);
}

TEST(fold)
{
	CHECK_EQ_INT(csum_fold(0), 0);
	CHECK_EQ_INT(csum_fold(0xffff), 0xffff);
	CHECK_EQ_INT(csum_fold(0x10000), 0x0001);
	CHECK_EQ_INT(csum_fold(0x1fffe), 0xffff);
	CHECK_EQ_INT(csum_fold(0xffffffff), 0xffff);
	CHECK_EQ_INT(csum_fold(0x12345678), 0x68ac);
}

TEST(odd_length)
{
	static const uint8_t b[5] = { 0x00, 0x01, 0xf2, 0x03, 0xf4 };

	CHECK_EQ_INT(csum_fold(csum_add(0, b + 2, 1)), 0xf200);
	CHECK_EQ_INT(csum_fold(csum_add(0, b, 3)), 0xf201);
	CHECK_EQ_INT(csum_fold(csum_add(0, b, 5)), ref_sum(b, 5));
	CHECK_EQ_INT(csum_fold(csum_add(0, b, 0)), 0);
	/* A running sum is carried into the next call. */
	CHECK_EQ_INT(csum_fold(csum_add(0x0100, b + 2, 1)), 0xf300);
}

TEST(long_input_carries)
{
	uint8_t b[2001];

	memset(b, 0xff, sizeof(b));
	CHECK_EQ_INT(csum_fold(csum_add(0, b, sizeof(b))), ref_sum(b, 2001));
	CHECK_EQ_INT(csum_fold(csum_add(0xffffffff, b, sizeof(b))),
		     csum_fold(csum_add(0, b, sizeof(b)) + 0xffffu));
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)unit_rand();
	CHECK_EQ_INT(csum_fold(csum_add(0, b, sizeof(b))), ref_sum(b, 2001));
}

TEST(pseudo_header)
{
	struct addr s4 = unit_addr("192.0.2.1"), d4 = unit_addr("198.51.100.2");
	struct addr s6 = unit_addr("2001:db8::1"), d6 = unit_addr("fd00:1::abcd");
	/* The pseudo-header of an empty segment, minus the zero checksum
	 * word, is exactly what ref_tcp sums for a 20-byte all-zero header. */
	uint8_t zero[20] = { 0 };

	CHECK_EQ_INT(csum_fold(csum_pseudo(&s4, &d4, IPPROTO_TCP, 20)),
		     (uint16_t)~ref_tcp(&s4, &d4, zero, 20));
	CHECK_EQ_INT(csum_fold(csum_pseudo(&s6, &d6, IPPROTO_TCP, 20)),
		     (uint16_t)~ref_tcp(&s6, &d6, zero, 20));
}

/* csum_tcp agrees with the reference; validity survives storing it and
 * fails after any single bit flip in the segment or an address. */
static void check_segment(struct addr src, struct addr dst, size_t payload)
{
	uint8_t seg[512];
	size_t len = make_segment(seg, payload);
	unsigned undetected = 0;

	CHECK_EQ_INT(ntohs(csum_tcp(&src, &dst, seg, len)),
		     ref_tcp(&src, &dst, seg, len));
	CHECK(!csum_tcp_valid(&src, &dst, seg, len));
	store(seg, csum_tcp(&src, &dst, seg, len));
	if (!CHECK(csum_tcp_valid(&src, &dst, seg, len)))
		return;
	/* The stored checksum does not change the result. */
	CHECK_EQ_INT(csum_tcp(&src, &dst, seg, len), stored(seg));

	for (size_t bit = 0; bit < len * 8; bit++) {
		seg[bit / 8] ^= (uint8_t)(1 << bit % 8);
		undetected += csum_tcp_valid(&src, &dst, seg, len) != 0;
		seg[bit / 8] ^= (uint8_t)(1 << bit % 8);
	}
	CHECK_EQ_INT(undetected, 0);
	src.bytes[addr_len(&src) - 1] ^= 0x10;
	CHECK(!csum_tcp_valid(&src, &dst, seg, len));
	src.bytes[addr_len(&src) - 1] ^= 0x10;
	CHECK(!csum_tcp_valid(&src, &dst, seg, len - 1));
	CHECK(csum_tcp_valid(&src, &dst, seg, len));
}

TEST(tcp_ipv4)
{
	check_segment(unit_addr("192.0.2.1"), unit_addr("198.51.100.2"), 0);
	check_segment(unit_addr("10.1.2.3"), unit_addr("10.250.0.9"), 33);
	check_segment(unit_addr("255.255.255.255"), unit_addr("0.0.0.0"), 400);
}

TEST(tcp_ipv6)
{
	check_segment(unit_addr("2001:db8::1"), unit_addr("2001:db8::2"), 0);
	check_segment(unit_addr("fd00::1"), unit_addr("fe80::1234:5678:9abc:def0"),
		      101);
}

TEST(replace16_zero_result)
{
	struct addr src = unit_addr("192.0.2.1"), dst = unit_addr("198.51.100.2");
	uint8_t seg[64];
	size_t len = make_segment(seg, 0);
	uint16_t old, want;

	store(seg, csum_tcp(&src, &dst, seg, len));
	/* Writing the current checksum value into the (zero) urgent
	 * pointer brings the sum to 0xffff: the new checksum is 0x0000. */
	memcpy(&old, seg + 18, 2);
	want = stored(seg);
	memcpy(seg + 18, &want, 2);
	CHECK_EQ_INT(ntohs(csum_tcp(&src, &dst, seg, len)), 0x0000);
	CHECK_EQ_INT(ntohs(csum_replace16(stored(seg), old, want)), 0x0000);
	store(seg, csum_replace16(stored(seg), old, want));
	CHECK(csum_tcp_valid(&src, &dst, seg, len));
	/* A no-op change keeps the checksum. */
	CHECK_EQ_INT(csum_replace16(stored(seg), old, old), stored(seg));
}

/* Rewrite random fields of a valid segment WIDTH bytes at a time,
 * updating the checksum incrementally; compare with full recomputation. */
static void random_rewrites(struct addr src, struct addr dst, size_t width)
{
	uint8_t seg[128];
	size_t len = make_segment(seg, 25);
	unsigned mismatches = 0, invalid = 0;

	store(seg, csum_tcp(&src, &dst, seg, len));
	for (int i = 0; i < 20000; i++) {
		/* Even offsets that do not overlap the checksum field. */
		size_t off = 2 * (unit_rand() % ((len - width) / 2 + 1));
		uint16_t check;

		if (off + width > TCP_CHECK && off < TCP_CHECK + 2)
			continue;
		if (width == 2) {
			uint16_t old, new_ = (uint16_t)(i % 7 ? unit_rand() : 0);

			memcpy(&old, seg + off, 2);
			memcpy(seg + off, &new_, 2);
			check = csum_replace16(stored(seg), old, new_);
		} else {
			uint32_t old, new_ = i % 11 ? unit_rand() : 0xffffffff;

			memcpy(&old, seg + off, 4);
			memcpy(seg + off, &new_, 4);
			check = csum_replace32(stored(seg), old, new_);
		}
		store(seg, check);
		mismatches += check != csum_tcp(&src, &dst, seg, len);
		invalid += !csum_tcp_valid(&src, &dst, seg, len);
	}
	CHECK_EQ_INT(mismatches, 0);
	CHECK_EQ_INT(invalid, 0);
}

TEST(replace_random_fields)
{
	random_rewrites(unit_addr("192.0.2.1"), unit_addr("198.51.100.2"), 2);
	random_rewrites(unit_addr("192.0.2.1"), unit_addr("198.51.100.2"), 4);
	random_rewrites(unit_addr("2001:db8::1"), unit_addr("2001:db8::2"), 2);
	random_rewrites(unit_addr("2001:db8::1"), unit_addr("2001:db8::2"), 4);
}

/* NAT-style: a pseudo-header address changes, the segment does not. */
TEST(replace32_address)
{
	struct addr src = unit_addr("192.0.2.1"), dst = unit_addr("198.51.100.2");
	uint8_t seg[64];
	size_t len = make_segment(seg, 7);
	unsigned mismatches = 0;

	store(seg, csum_tcp(&src, &dst, seg, len));
	for (int i = 0; i < 5000; i++) {
		struct addr *a = i % 2 ? &src : &dst;
		uint32_t old = a->v4.s_addr, new_ = unit_rand();

		a->v4.s_addr = new_;
		store(seg, csum_replace32(stored(seg), old, new_));
		mismatches += stored(seg) != csum_tcp(&src, &dst, seg, len);
	}
	CHECK_EQ_INT(mismatches, 0);
	CHECK(csum_tcp_valid(&src, &dst, seg, len));
}

static const struct unit_test tests[] = {
	UNIT(rfc1071_example),
	UNIT(fold),
	UNIT(odd_length),
	UNIT(long_input_carries),
	UNIT(pseudo_header),
	UNIT(tcp_ipv4),
	UNIT(tcp_ipv6),
	UNIT(replace16_zero_result),
	UNIT(replace_random_fields),
	UNIT(replace32_address),
};

UNIT_MAIN("csum", tests)
