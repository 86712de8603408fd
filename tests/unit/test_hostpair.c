// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host-pair derivations (edp/hostpair.c): known answers computed with
 * Python's hashlib, base64 and cryptography (so the byte layouts in
 * hostpair.h are the ones implemented), every input bound, the pair's
 * id never 0, rotation proofs that fail for any other input, and strict
 * parsing of a host key's text form.
 */
#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <string.h>

#include "hostpair.h"
#include "unit.h"

static void hex(const char *s, uint8_t *out, size_t len)
{
	size_t got = 0;

	CHECK(sodium_hex2bin(out, len, s, strlen(s), NULL, &got, NULL) == 0 &&
	      got == len);
}

/* Python's "racks-x25519:" + base64.b64encode(bytes(range(1, 33))). */
#define KEY_01_20 "racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="

/* Key K (K = 0..3) of the known answers: bytes 32K+1 .. 32K+32. */
static void seq_key(int k, uint8_t out[32])
{
	for (int i = 0; i < 32; i++)
		out[i] = (uint8_t)(32 * k + i + 1);
}

/* Client 192.0.2.1:40000, server 198.51.100.7:22. */
static void sample_transcript(struct edp_conn_transcript *t)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(t, 0, sizeof(*t));
	t->isn_client = 0x01020304;
	t->isn_server = 0xa0b0c0d0;
	for (int i = 0; i < 8; i++) {
		t->nonce_client[i] = (uint8_t)i;
		t->nonce_server[i] = (uint8_t)(8 + i);
	}
	memcpy(t->addr_client, v4mapped, 12);
	memcpy(t->addr_client + 12, (const uint8_t[]){ 192, 0, 2, 1 }, 4);
	memcpy(t->addr_server, v4mapped, 12);
	memcpy(t->addr_server + 12, (const uint8_t[]){ 198, 51, 100, 7 }, 4);
	t->port_client = 40000;
	t->port_server = 22;
}

static void sample_secret(uint8_t secret[EDP_HOSTPAIR_SECRET_LEN])
{
	uint8_t h[64], k1[32], k2[32];

	for (int i = 0; i < 64; i++)
		h[i] = (uint8_t)i;
	memset(k1, 0x11, sizeof(k1));
	memset(k2, 0x22, sizeof(k2));
	edp_hostpair_secret(h, k1, k2, secret);
}

TEST(init_sodium)
{
	CHECK(sodium_init() >= 0);
}

TEST(known_answers)
{
	uint8_t secret[32], key[32], want[32], keys[4][32], pk[3][32];
	uint8_t proof[EDP_ROTATION_PROOF_LEN];
	struct edp_conn_transcript t;
	char fp[EDP_HOST_FP_STRLEN], text[EDP_HOST_KEY_STRLEN];

	sample_secret(secret);
	hex("7d84ac08a808afbf9eeebae34c34199098a84e618481a2efaaba4b0712de9353",
	    want, 32);
	CHECK_EQ_MEM(secret, want, 32);
	CHECK_EQ_INT(edp_hostpair_id(secret), 0x38a0f812);
	sample_transcript(&t);
	edp_conn_key(secret, &t, key);
	hex("a1ac7331ce08a66f2ff820a566f6a13a465cfc6e12912497b83d5895a4f3a3ab",
	    want, 32);
	CHECK_EQ_MEM(key, want, 32);

	/* Old key 01..20, new 21..40, verifier 41..60. */
	for (int k = 0; k < 3; k++) {
		seq_key(k, keys[k]);
		crypto_scalarmult_base(pk[k], keys[k]);
	}
	if (CHECK_EQ_INT(edp_rotation_proof(keys[0], pk[2], pk[1], proof), 0)) {
		hex("b01eb7d029d8e7e26ea7f9db0b68b3ce", want, sizeof(proof));
		CHECK_EQ_MEM(proof, want, sizeof(proof));
	}

	/* hashlib.sha256 and base64.b64encode, padding stripped. */
	edp_host_fingerprint(keys[0], fp);
	CHECK_EQ_STR(fp, "SHA256:riFsLvUkejeCwTXvonmj5M3GEJQnD10r5YxiBLemEsk");
	memset(keys[3], 0, 32);
	edp_host_fingerprint(keys[3], fp);
	CHECK_EQ_STR(fp, "SHA256:Zmh6rfhivXdsj8GLjp+OIAiXFIVu4jOzkCpZHQ1fKSU");
	CHECK_EQ_INT(strlen(fp), EDP_HOST_FP_STRLEN - 1);
	edp_host_key_format(keys[0], text);
	CHECK_EQ_STR(text, KEY_01_20);
	memset(keys[3], 0xff, 32);
	edp_host_key_format(keys[3], text);
	CHECK_EQ_STR(text, "racks-x25519:"
		     "//////////////////////////////////////////8=");
	CHECK_EQ_INT(strlen(text), EDP_HOST_KEY_STRLEN - 1);
}

/* The secret depends on every byte of h, k1 and k2. */
TEST(secret_binds_handshake)
{
	uint8_t h[64], k1[32], k2[32], base[32], again[32], other[32];
	uint8_t *const parts[] = { h, k1, k2 };
	const size_t lens[] = { 64, 32, 32 };

	randombytes_buf(h, sizeof(h));
	randombytes_buf(k1, sizeof(k1));
	randombytes_buf(k2, sizeof(k2));
	edp_hostpair_secret(h, k1, k2, base);
	edp_hostpair_secret(h, k1, k2, again);
	CHECK_EQ_MEM(base, again, 32);
	for (size_t p = 0; p < 3; p++)
		for (size_t i = 0; i < lens[p]; i++) {
			parts[p][i] ^= 0x80;
			edp_hostpair_secret(h, k1, k2, other);
			CHECK(memcmp(base, other, 32) != 0);
			parts[p][i] ^= 0x80;
		}
	/* k1 and k2 are not interchangeable. */
	edp_hostpair_secret(h, k2, k1, other);
	CHECK(memcmp(base, other, 32) != 0);
}

TEST(conn_key_binds_every_field)
{
	static const struct {
		const char *name;
		size_t off, len;
	} fields[] = {
#define FIELD(f) { #f, offsetof(struct edp_conn_transcript, f), \
		   sizeof(((struct edp_conn_transcript *)0)->f) }
		FIELD(isn_client), FIELD(isn_server),
		FIELD(nonce_client), FIELD(nonce_server),
		FIELD(addr_client), FIELD(addr_server),
		FIELD(port_client), FIELD(port_server),
#undef FIELD
	};
	uint8_t secret[32], base[32], again[32], other[32];
	struct edp_conn_transcript t, swapped;
	size_t covered = 0;

	sample_secret(secret);
	sample_transcript(&t);
	edp_conn_key(secret, &t, base);
	edp_conn_key(secret, &t, again);
	CHECK_EQ_MEM(base, again, 32);
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		for (size_t i = 0; i < fields[f].len; i++) {
			uint8_t *b = (uint8_t *)&t + fields[f].off + i;

			*b ^= 0x01;
			edp_conn_key(secret, &t, other);
			if (!CHECK(memcmp(base, other, 32) != 0))
				CHECK_EQ_STR(fields[f].name, "(bound)");
			*b ^= 0x01;
		}
		covered += fields[f].len;
	}
	/* Every byte of the struct but padding was flipped. */
	CHECK_EQ_INT(covered, 4 + 4 + 8 + 8 + 16 + 16 + 2 + 2);
	/* Another secret, or the ends' roles swapped, gives another key. */
	secret[0] ^= 1;
	edp_conn_key(secret, &t, other);
	CHECK(memcmp(base, other, 32) != 0);
	secret[0] ^= 1;
	swapped = t;
	swapped.isn_client = t.isn_server;
	swapped.isn_server = t.isn_client;
	memcpy(swapped.nonce_client, t.nonce_server, 8);
	memcpy(swapped.nonce_server, t.nonce_client, 8);
	memcpy(swapped.addr_client, t.addr_server, 16);
	memcpy(swapped.addr_server, t.addr_client, 16);
	swapped.port_client = t.port_server;
	swapped.port_server = t.port_client;
	edp_conn_key(secret, &swapped, other);
	CHECK(memcmp(base, other, 32) != 0);
}

/* The id is the hash's first 4 bytes, big-endian, and never 0 (a zero
 * prefix would take some 2^32 secrets to find: not searched here). */
TEST(id_never_zero)
{
	unsigned zero = 0, wrong = 0;

	for (int rep = 0; rep < 20000; rep++) {
		uint8_t secret[32], b[16];
		uint32_t id, want;

		randombytes_buf(secret, sizeof(secret));
		id = edp_hostpair_id(secret);
		crypto_generichash(b, sizeof(b),
				   (const uint8_t *)"racks host pair id", 18,
				   secret, sizeof(secret));
		want = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
		       (uint32_t)b[2] << 8 | b[3];
		zero += id == 0;
		wrong += id != (want ? want : 1);
	}
	CHECK_EQ_INT(zero, 0);
	CHECK_EQ_INT(wrong, 0);
}

/* Points of order 1 and 2 (0, 1 and p - 1): all-zero shared secrets. */
static const char *const low_order_points[] = {
	"0000000000000000000000000000000000000000000000000000000000000000",
	"0100000000000000000000000000000000000000000000000000000000000000",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
};

TEST(rotation)
{
	uint8_t old_sk[32], old_pk[32], new_sk[32], new_pk[32];
	uint8_t ver_sk[32], ver_pk[32], other_sk[32], other_pk[32];
	uint8_t proof[EDP_ROTATION_PROOF_LEN], bad[32];

	randombytes_buf(old_sk, 32);
	randombytes_buf(new_sk, 32);
	randombytes_buf(ver_sk, 32);
	randombytes_buf(other_sk, 32);
	crypto_scalarmult_base(old_pk, old_sk);
	crypto_scalarmult_base(new_pk, new_sk);
	crypto_scalarmult_base(ver_pk, ver_sk);
	crypto_scalarmult_base(other_pk, other_sk);
	if (!CHECK_EQ_INT(edp_rotation_proof(old_sk, ver_pk, new_pk, proof), 0))
		return;
	CHECK_EQ_INT(edp_rotation_verify(ver_sk, old_pk, new_pk, proof), 0);
	/* Any changed byte of the proof, the new key or the old key. */
	for (size_t i = 0; i < 32; i++) {
		uint8_t *const what[] = { proof, new_pk, old_pk };

		for (size_t w = 0; w < 3; w++) {
			if (w == 0 && i >= sizeof(proof))
				continue;
			what[w][i] ^= 0x02;
			CHECK_EQ_INT(edp_rotation_verify(ver_sk, old_pk, new_pk,
							 proof), -EBADMSG);
			what[w][i] ^= 0x02;
		}
	}
	/* Another verifier; old and new swapped; the new key's holder. */
	CHECK_EQ_INT(edp_rotation_verify(other_sk, old_pk, new_pk, proof),
		     -EBADMSG);
	CHECK_EQ_INT(edp_rotation_verify(ver_sk, new_pk, old_pk, proof),
		     -EBADMSG);
	CHECK_EQ_INT(edp_rotation_proof(new_sk, ver_pk, new_pk, bad), 0);
	CHECK_EQ_INT(edp_rotation_verify(ver_sk, old_pk, new_pk, bad),
		     -EBADMSG);
	/* A proof made for one verifier does not convince another. */
	CHECK_EQ_INT(edp_rotation_proof(old_sk, other_pk, new_pk, bad), 0);
	CHECK_EQ_INT(edp_rotation_verify(ver_sk, old_pk, new_pk, bad),
		     -EBADMSG);
	CHECK_EQ_INT(edp_rotation_verify(other_sk, old_pk, new_pk, bad), 0);
	/* Low-order keys on either side. */
	for (size_t p = 0; p < sizeof(low_order_points) /
			       sizeof(low_order_points[0]); p++) {
		hex(low_order_points[p], bad, 32);
		CHECK_EQ_INT(edp_rotation_proof(old_sk, bad, new_pk, proof),
			     -EINVAL);
		CHECK_EQ_INT(edp_rotation_verify(ver_sk, bad, new_pk, proof),
			     -EINVAL);
	}
}

TEST(host_key_round_trip)
{
	for (int rep = 0; rep < 200; rep++) {
		uint8_t pk[32], back[32];
		char text[EDP_HOST_KEY_STRLEN];

		randombytes_buf(pk, sizeof(pk));
		edp_host_key_format(pk, text);
		CHECK_EQ_INT(strlen(text), EDP_HOST_KEY_STRLEN - 1);
		if (CHECK_EQ_INT(edp_host_key_parse(text, back), 0))
			CHECK_EQ_MEM(pk, back, 32);
	}
}

TEST(host_key_rejects)
{
	static const char *const bad[] = {
		"",
		"racks-x25519:",
		"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		"Racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		"racks-x25519 AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		"racks-ed25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		/* without its padding, or with more */
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA",
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA==",
		/* around it: spaces, a newline */
		" racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		"racks-x25519: AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n",
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVF hcYGRobHB0eHyA=",
		/* 31 and 33 bytes (44 characters both) */
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHw==",
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAh",
		/* non-zero unused bits ("HyA=" is 1f 20) */
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyB=",
		/* URL-safe characters; a character outside base64 */
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eH_A=",
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eH*A=",
		/* bytes above 0x7f that libsodium 1.0.18 decodes as base64
		 * characters (0xb2 and 0xc1 as '/') */
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0e\xb2yA=",
		"racks-x25519:\xc1QIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		/* padding in the middle */
		"racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0e=yA=",
	};
	uint8_t pk[32], untouched[32];
	char good[EDP_HOST_KEY_STRLEN];

	memset(pk, 0x5a, sizeof(pk));
	memcpy(untouched, pk, sizeof(pk));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!CHECK_EQ_INT(edp_host_key_parse(bad[i], pk), -EINVAL))
			CHECK_EQ_STR(bad[i], "(refused)");
	CHECK_EQ_MEM(pk, untouched, sizeof(pk));
	/* The positive control: the string they were all made from. */
	seq_key(0, untouched);
	edp_host_key_format(untouched, good);
	CHECK_EQ_STR(good, KEY_01_20);
	if (CHECK_EQ_INT(edp_host_key_parse(good, pk), 0))
		CHECK_EQ_MEM(pk, untouched, sizeof(pk));
}

static const struct unit_test tests[] = {
	UNIT(init_sodium),
	UNIT(known_answers),
	UNIT(secret_binds_handshake),
	UNIT(conn_key_binds_every_field),
	UNIT(id_never_zero),
	UNIT(rotation),
	UNIT(host_key_round_trip),
	UNIT(host_key_rejects),
};

UNIT_MAIN("hostpair", tests)
