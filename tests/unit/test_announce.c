// SPDX-License-Identifier: GPL-2.0-only
/*
 * The classic EDP announcement, in both versions: fresh ones validate and
 * differ, the host id, version 2's host key, and that validation looks at
 * exactly the last 1024 bytes and notices any change in them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "announce.h"
#include "unit.h"

/* A version 1 announcement (most tests), or version 2 with KEY. */
static void fresh_with(uint8_t a[EDP_ANNOUNCE_LEN], const uint8_t *key)
{
	if (sodium_init() < 0)
		abort();
	edp_announce_new(a, key);
}

static void fresh(uint8_t a[EDP_ANNOUNCE_LEN])
{
	fresh_with(a, NULL);
}

static const uint8_t host_key[32] = {
	0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
};

TEST(fresh_is_valid)
{
	uint8_t a[EDP_ANNOUNCE_LEN];

	for (int i = 0; i < 16; i++) {
		fresh(a);
		CHECK(edp_announce_valid(a, sizeof(a)));
	}
	CHECK_EQ_MEM(a, EDP_ANNOUNCE_MAGIC, EDP_ANNOUNCE_MAGIC_LEN);
}

TEST(fresh_ones_differ)
{
	uint8_t a[EDP_ANNOUNCE_LEN], b[EDP_ANNOUNCE_LEN];
	char ida[EDP_HOST_ID_STRLEN], idb[EDP_HOST_ID_STRLEN];

	fresh(a);
	fresh(b);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	edp_announce_host_id(a, ida);
	edp_announce_host_id(b, idb);
	CHECK(strcmp(ida, idb) != 0);
}

TEST(host_id)
{
	uint8_t a[EDP_ANNOUNCE_LEN];
	char id[EDP_HOST_ID_STRLEN], again[EDP_HOST_ID_STRLEN], want[17];

	fresh(a);
	edp_announce_host_id(a, id);
	CHECK_EQ_INT(strlen(id), 16);
	CHECK_EQ_INT(strspn(id, "0123456789abcdef"), 16);
	edp_announce_host_id(a, again);
	CHECK_EQ_STR(id, again);
	/* The first 8 random bytes, right after the magic. */
	for (int i = 0; i < 8; i++)
		snprintf(want + 2 * i, 3, "%02x", a[EDP_ANNOUNCE_MAGIC_LEN + i]);
	CHECK_EQ_STR(id, want);

	memset(a + EDP_ANNOUNCE_MAGIC_LEN, 0, 8);
	a[EDP_ANNOUNCE_MAGIC_LEN] = 0x1a;
	a[EDP_ANNOUNCE_MAGIC_LEN + 7] = 0xf0;
	edp_announce_host_id(a, id);
	CHECK_EQ_STR(id, "1a000000000000f0");
}

/* One byte changed anywhere (magic, random part, hash) is noticed. */
TEST(any_flipped_byte_invalidates)
{
	static const size_t edges[] = {
		0, 1, 15, 16, 17, 23, 24, 500, 991, 992, 993, 1022, 1023,
	};
	uint8_t a[EDP_ANNOUNCE_LEN];

	fresh(a);
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]) + 200; i++) {
		size_t pos = i < sizeof(edges) / sizeof(edges[0])
			? edges[i] : unit_rand() % EDP_ANNOUNCE_LEN;
		uint8_t bit = (uint8_t)(1u << (unit_rand() % 8));

		a[pos] ^= bit;
		if (!CHECK(!edp_announce_valid(a, sizeof(a))))
			fprintf(stderr, "  accepted with byte %zu ^ 0x%02x\n",
				pos, bit);
		a[pos] ^= bit;
	}
	CHECK(edp_announce_valid(a, sizeof(a)));
}

/* Whatever the server sent before the announcement does not matter. */
TEST(preceded_by_anything)
{
	static const size_t lens[] = { 1, 2, 16, 1000, 1024, 1025, 4096 };
	uint8_t *buf = malloc(4096 + EDP_ANNOUNCE_LEN);

	if (!buf)
		abort();
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n = lens[i];

		for (size_t j = 0; j < n; j++)
			buf[j] = (uint8_t)unit_rand();
		fresh(buf + n);
		if (!CHECK(edp_announce_valid(buf, n + EDP_ANNOUNCE_LEN)))
			fprintf(stderr, "  after %zu bytes\n", n);
	}
	/* ...even another announcement, or the same magic. */
	fresh(buf);
	fresh(buf + EDP_ANNOUNCE_LEN);
	CHECK(edp_announce_valid(buf, 2 * EDP_ANNOUNCE_LEN));
	memcpy(buf, EDP_ANNOUNCE_MAGIC, EDP_ANNOUNCE_MAGIC_LEN);
	fresh(buf + 5);
	CHECK(edp_announce_valid(buf, 5 + EDP_ANNOUNCE_LEN));
	free(buf);
}

/* The announcement must be the very last thing before EOF. */
TEST(followed_by_anything)
{
	uint8_t buf[EDP_ANNOUNCE_LEN + 16];

	fresh(buf);
	CHECK(edp_announce_valid(buf, EDP_ANNOUNCE_LEN));
	for (size_t extra = 1; extra <= 16; extra++) {
		memset(buf + EDP_ANNOUNCE_LEN, 0, extra);
		if (!CHECK(!edp_announce_valid(buf, EDP_ANNOUNCE_LEN + extra)))
			fprintf(stderr, "  with %zu bytes after\n", extra);
	}
	/* A trailing newline, as a line-based server would add. */
	buf[EDP_ANNOUNCE_LEN] = '\n';
	CHECK(!edp_announce_valid(buf, EDP_ANNOUNCE_LEN + 1));
}

TEST(too_short)
{
	uint8_t a[EDP_ANNOUNCE_LEN];

	fresh(a);
	CHECK(!edp_announce_valid(a, 0));
	CHECK(!edp_announce_valid(a, 1));
	CHECK(!edp_announce_valid(a, EDP_ANNOUNCE_MAGIC_LEN));
	CHECK(!edp_announce_valid(a, EDP_ANNOUNCE_LEN - 1));
	/* Truncated at the front: the hash is intact but the magic is not. */
	CHECK(!edp_announce_valid(a + 1, EDP_ANNOUNCE_LEN - 1));
	CHECK(!edp_announce_valid(NULL, 0));
	CHECK(edp_announce_valid(a, EDP_ANNOUNCE_LEN));
}

/* The magic alone is not enough: the hash must cover it and the rest. */
TEST(magic_without_hash)
{
	uint8_t a[EDP_ANNOUNCE_LEN] = { 0 };

	memcpy(a, EDP_ANNOUNCE_MAGIC, EDP_ANNOUNCE_MAGIC_LEN);
	CHECK(!edp_announce_valid(a, sizeof(a)));
	/* A hash of the random part alone, without the magic. */
	fresh(a);
	crypto_generichash(a + EDP_ANNOUNCE_LEN - EDP_ANNOUNCE_HASH_LEN,
			   EDP_ANNOUNCE_HASH_LEN, a + EDP_ANNOUNCE_MAGIC_LEN,
			   EDP_ANNOUNCE_LEN - EDP_ANNOUNCE_MAGIC_LEN -
				   EDP_ANNOUNCE_HASH_LEN,
			   NULL, 0);
	CHECK(!edp_announce_valid(a, sizeof(a)));
}

/* The layout is the protocol: a known announcement, built here by hand,
 * validates (interoperability with other implementations). */
TEST(known_layout)
{
	uint8_t a[EDP_ANNOUNCE_LEN];
	char id[EDP_HOST_ID_STRLEN];

	memcpy(a, "racks-announce-1", 16);
	for (size_t i = 16; i < 992; i++)
		a[i] = (uint8_t)i;
	crypto_generichash(a + 992, 32, a, 992, NULL, 0);
	CHECK(edp_announce_valid(a, sizeof(a)));
	edp_announce_host_id(a, id);
	CHECK_EQ_STR(id, "1011121314151617");
}

TEST(version_2_carries_the_host_key)
{
	uint8_t a[EDP_ANNOUNCE_LEN], b[EDP_ANNOUNCE_LEN], got[32];

	fresh_with(a, host_key);
	CHECK_EQ_INT(edp_announce_version(a, sizeof(a)), 2);
	CHECK(edp_announce_valid(a, sizeof(a)));
	CHECK_EQ_MEM(a, EDP_ANNOUNCE_MAGIC_V2, EDP_ANNOUNCE_MAGIC_LEN);
	CHECK_EQ_MEM(a + EDP_ANNOUNCE_MAGIC_LEN, host_key, 32);
	memset(got, 0, sizeof(got));
	CHECK(edp_announce_host_key(a, got));
	CHECK_EQ_MEM(got, host_key, 32);
	/* Fresh ones with the same key differ in their random part. */
	fresh_with(b, host_key);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	/* Version 1 has none. */
	fresh(b);
	CHECK_EQ_INT(edp_announce_version(b, sizeof(b)), 1);
	CHECK(!edp_announce_host_key(b, got));
	CHECK_EQ_INT(edp_announce_version(b, sizeof(b) - 1), 0);
}

/* A changed key, or a version 1 magic on a version 2 body, is noticed:
 * the hash covers the magic and the key. */
TEST(version_2_tampering)
{
	uint8_t a[EDP_ANNOUNCE_LEN];

	fresh_with(a, host_key);
	for (size_t i = EDP_ANNOUNCE_MAGIC_LEN;
	     i < EDP_ANNOUNCE_MAGIC_LEN + 32; i++) {
		a[i] ^= 0x40;
		CHECK(!edp_announce_valid(a, sizeof(a)));
		a[i] ^= 0x40;
	}
	a[EDP_ANNOUNCE_MAGIC_LEN - 1] = '1';
	CHECK_EQ_INT(edp_announce_version(a, sizeof(a)), 0);
	a[EDP_ANNOUNCE_MAGIC_LEN - 1] = '3';
	CHECK_EQ_INT(edp_announce_version(a, sizeof(a)), 0);
	a[EDP_ANNOUNCE_MAGIC_LEN - 1] = '2';
	CHECK_EQ_INT(edp_announce_version(a, sizeof(a)), 2);
}

/* Version 2's layout, by hand: magic, key, random, hash; its host id
 * comes from the random part, after the key. */
TEST(known_layout_v2)
{
	uint8_t a[EDP_ANNOUNCE_LEN], got[32];
	char id[EDP_HOST_ID_STRLEN];

	memcpy(a, "racks-announce-2", 16);
	memcpy(a + 16, host_key, 32);
	for (size_t i = 48; i < 992; i++)
		a[i] = (uint8_t)i;
	crypto_generichash(a + 992, 32, a, 992, NULL, 0);
	CHECK_EQ_INT(edp_announce_version(a, sizeof(a)), 2);
	CHECK(edp_announce_host_key(a, got));
	CHECK_EQ_MEM(got, host_key, 32);
	edp_announce_host_id(a, id);
	CHECK_EQ_STR(id, "3031323334353637");
}

static const struct unit_test tests[] = {
	UNIT(fresh_is_valid),
	UNIT(fresh_ones_differ),
	UNIT(host_id),
	UNIT(any_flipped_byte_invalidates),
	UNIT(preceded_by_anything),
	UNIT(followed_by_anything),
	UNIT(too_short),
	UNIT(magic_without_hash),
	UNIT(known_layout),
	UNIT(version_2_carries_the_host_key),
	UNIT(version_2_tampering),
	UNIT(known_layout_v2),
};

UNIT_MAIN("announce", tests)
