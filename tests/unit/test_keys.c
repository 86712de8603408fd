// SPDX-License-Identifier: GPL-2.0-only
/*
 * EDP key agreement (edp/keys.c): both ends of a simulated set-up derive
 * the same key from the same transcript and a different one from any
 * other, MACs bind key, role and transcript, low-order peer keys are
 * refused, and what is shown (connection id, fingerprint) reveals no
 * part of the key.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "unit.h"

struct side {
	struct edp_keypair kp;
	uint8_t key[EDP_SECRET_LEN];
};

/* A fresh set-up: two key pairs and the transcript both ends see. */
static void setup(struct side *client, struct side *server,
		  struct edp_transcript *t)
{
	edp_keypair_new(&client->kp);
	edp_keypair_new(&server->kp);
	memset(t, 0, sizeof(*t));
	memcpy(t->pk_client, client->kp.pk, EDP_KEY_LEN);
	memcpy(t->pk_server, server->kp.pk, EDP_KEY_LEN);
	t->isn_client = unit_rand();
	t->isn_server = unit_rand();
}

/* Both ends derive; true when both succeeded. */
static bool derive_both(struct side *client, struct side *server,
			const struct edp_transcript *t)
{
	int c = edp_derive(&client->kp, server->kp.pk, t, client->key);
	int s = edp_derive(&server->kp, client->kp.pk, t, server->key);

	return CHECK_EQ_INT(c, 0) & CHECK_EQ_INT(s, 0);
}

static bool contains_window(const uint8_t key[EDP_SECRET_LEN],
			    const uint8_t w[8])
{
	for (size_t i = 0; i + 8 <= EDP_SECRET_LEN; i++)
		if (memcmp(key + i, w, 8) == 0)
			return true;
	return false;
}

TEST(init_sodium)
{
	CHECK(sodium_init() >= 0);
}

TEST(both_sides_agree)
{
	for (int rep = 0; rep < 20; rep++) {
		struct side c, s;
		struct edp_transcript t;
		static const uint8_t zero[EDP_SECRET_LEN];

		setup(&c, &s, &t);
		if (!derive_both(&c, &s, &t))
			return;
		CHECK_EQ_MEM(c.key, s.key, EDP_SECRET_LEN);
		CHECK(memcmp(c.key, zero, EDP_SECRET_LEN) != 0);
		/* Not the raw shared secret. */
		uint8_t shared[crypto_scalarmult_BYTES];

		if (CHECK_EQ_INT(crypto_scalarmult(shared, c.kp.sk, s.kp.pk),
				 0))
			CHECK(memcmp(shared, c.key, EDP_SECRET_LEN) != 0);
	}
}

TEST(transcript_binds_key)
{
	struct side c, s;
	struct edp_transcript t, u;
	uint8_t k[EDP_SECRET_LEN];

	setup(&c, &s, &t);
	if (!derive_both(&c, &s, &t))
		return;

	u = t;
	u.isn_client++;
	if (CHECK_EQ_INT(edp_derive(&c.kp, s.kp.pk, &u, k), 0))
		CHECK(memcmp(k, c.key, EDP_SECRET_LEN) != 0);
	u = t;
	u.isn_server ^= 1;
	if (CHECK_EQ_INT(edp_derive(&s.kp, c.kp.pk, &u, k), 0))
		CHECK(memcmp(k, s.key, EDP_SECRET_LEN) != 0);
	/* Swapped ISNs: the byte order of the transcript matters. */
	u = t;
	u.isn_client = t.isn_server;
	u.isn_server = t.isn_client;
	if (CHECK_EQ_INT(edp_derive(&c.kp, s.kp.pk, &u, k), 0))
		CHECK(memcmp(k, c.key, EDP_SECRET_LEN) != 0);
	/* Swapped public keys (who is client): same secret, other key. */
	u = t;
	memcpy(u.pk_client, t.pk_server, EDP_KEY_LEN);
	memcpy(u.pk_server, t.pk_client, EDP_KEY_LEN);
	if (CHECK_EQ_INT(edp_derive(&c.kp, s.kp.pk, &u, k), 0))
		CHECK(memcmp(k, c.key, EDP_SECRET_LEN) != 0);
	/* One bit of one public key in the transcript. */
	u = t;
	u.pk_server[31] ^= 0x01;
	if (CHECK_EQ_INT(edp_derive(&c.kp, s.kp.pk, &u, k), 0))
		CHECK(memcmp(k, c.key, EDP_SECRET_LEN) != 0);

	/* Another peer key pair with the same transcript. */
	struct side x;

	edp_keypair_new(&x.kp);
	if (CHECK_EQ_INT(edp_derive(&c.kp, x.kp.pk, &t, k), 0))
		CHECK(memcmp(k, c.key, EDP_SECRET_LEN) != 0);
	/* Deterministic: deriving again gives the same key. */
	if (CHECK_EQ_INT(edp_derive(&c.kp, s.kp.pk, &t, k), 0))
		CHECK_EQ_MEM(k, c.key, EDP_SECRET_LEN);
}

TEST(macs)
{
	static const enum edp_role roles[] = {
		EDP_ROLE_SERVER_CONFIRM, EDP_ROLE_CLIENT_CONFIRM,
		EDP_ROLE_SERVER_DONE,
	};
	struct side c, s;
	struct edp_transcript t, u;
	uint8_t mac[3][EDP_MAC_LEN], other[EDP_SECRET_LEN];

	setup(&c, &s, &t);
	if (!derive_both(&c, &s, &t))
		return;
	memcpy(other, c.key, sizeof(other));
	other[0] ^= 0x80;
	for (size_t i = 0; i < 3; i++) {
		edp_mac(s.key, roles[i], &t, mac[i]);
		CHECK_EQ_INT(edp_mac_verify(c.key, roles[i], &t, mac[i]), 0);
		CHECK_EQ_INT(edp_mac_verify(other, roles[i], &t, mac[i]),
			     -EBADMSG);
		for (size_t j = 0; j < 3; j++)
			if (j != i)
				CHECK_EQ_INT(edp_mac_verify(c.key, roles[j], &t,
							    mac[i]),
					     -EBADMSG);
		for (size_t j = 0; j < i; j++)
			CHECK(memcmp(mac[i], mac[j], EDP_MAC_LEN) != 0);
		/* Every single flipped bit is caught. */
		for (size_t bit = 0; bit < 8 * EDP_MAC_LEN; bit++) {
			uint8_t bad[EDP_MAC_LEN];

			memcpy(bad, mac[i], sizeof(bad));
			bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			if (!CHECK_EQ_INT(edp_mac_verify(c.key, roles[i], &t,
							 bad),
					  -EBADMSG))
				break;
		}
		u = t;
		u.isn_server++;
		CHECK_EQ_INT(edp_mac_verify(c.key, roles[i], &u, mac[i]),
			     -EBADMSG);
	}
}

/* A reconnection's confirmation: its MAC covers the challenge, the
 * counter, the role and the transcript; none of them can be swapped. */
TEST(challenge_macs)
{
	struct side c, s;
	struct edp_transcript t;
	uint8_t ch[EDP_CHALLENGE_LEN], other[EDP_CHALLENGE_LEN];
	uint8_t mac[EDP_MAC_LEN], plain[EDP_MAC_LEN];

	setup(&c, &s, &t);
	if (!derive_both(&c, &s, &t))
		return;
	memset(ch, 0x11, sizeof(ch));
	memcpy(other, ch, sizeof(other));
	other[EDP_CHALLENGE_LEN - 1] ^= 1;
	edp_mac_challenge(c.key, EDP_ROLE_CLIENT_RECONNECT_CONFIRM, 9, ch, &t,
			  mac);
	CHECK_EQ_INT(edp_mac_challenge_verify(s.key,
					      EDP_ROLE_CLIENT_RECONNECT_CONFIRM,
					      9, ch, &t, mac), 0);
	CHECK_EQ_INT(edp_mac_challenge_verify(s.key,
					      EDP_ROLE_CLIENT_RECONNECT_CONFIRM,
					      9, other, &t, mac), -EBADMSG);
	CHECK_EQ_INT(edp_mac_challenge_verify(s.key,
					      EDP_ROLE_CLIENT_RECONNECT_CONFIRM,
					      10, ch, &t, mac), -EBADMSG);
	CHECK_EQ_INT(edp_mac_challenge_verify(s.key,
					      EDP_ROLE_SERVER_RECONNECT_CONFIRM,
					      9, ch, &t, mac), -EBADMSG);
	/* Not the counter MAC of any numbered message either. */
	edp_mac_counter(c.key, EDP_ROLE_CLIENT_RECONNECT_CONFIRM, 9, &t,
			plain);
	CHECK(memcmp(plain, mac, EDP_MAC_LEN) != 0);
}

TEST(low_order_points_refused)
{
	/* All zero, and a point of order 8 on Curve25519. */
	static const uint8_t low[][EDP_KEY_LEN] = {
		{ 0 },
		{ 0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae,
		  0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
		  0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd,
		  0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00 },
		{ 1 },	/* order 1 */
	};
	struct side c, s;
	struct edp_transcript t;

	setup(&c, &s, &t);
	for (size_t i = 0; i < sizeof(low) / sizeof(low[0]); i++) {
		uint8_t key[EDP_SECRET_LEN];

		memcpy(t.pk_server, low[i], EDP_KEY_LEN);
		memset(key, 0xee, sizeof(key));
		if (!CHECK_EQ_INT(edp_derive(&c.kp, low[i], &t, key), -EINVAL))
			fprintf(stderr, "  low-order point #%zu\n", i);
	}
}

TEST(public_values)
{
	for (int rep = 0; rep < 20; rep++) {
		struct side c, s;
		struct edp_transcript t;
		char fc[EDP_FINGERPRINT_STRLEN], fs[EDP_FINGERPRINT_STRLEN];
		uint8_t idb[8], fpb[8];
		uint64_t id;

		setup(&c, &s, &t);
		if (!derive_both(&c, &s, &t))
			return;
		id = edp_conn_id(c.key);
		CHECK_EQ_INT(id, edp_conn_id(s.key));
		memset(fc, 'X', sizeof(fc));
		edp_fingerprint(c.key, fc);
		edp_fingerprint(s.key, fs);
		if (!CHECK_EQ_INT(strnlen(fc, sizeof(fc)), 16))
			continue;
		CHECK_EQ_STR(fc, fs);
		for (size_t i = 0; i < 16; i++)
			CHECK((fc[i] >= '0' && fc[i] <= '9') ||
			      (fc[i] >= 'a' && fc[i] <= 'f'));
		for (size_t i = 0; i < 8; i++) {
			unsigned v = 0;

			CHECK(sscanf(fc + 2 * i, "%2x", &v) == 1);
			fpb[i] = (uint8_t)v;
			idb[i] = (uint8_t)(id >> (56 - 8 * i));
		}
		/* Neither shows any 8 bytes of K, in either byte order. */
		CHECK(!contains_window(c.key, idb));
		CHECK(!contains_window(c.key, fpb));
		CHECK(memcmp(idb, fpb, 8) != 0);	/* separate labels */
		for (size_t i = 0; i < 8; i++)
			idb[i] = (uint8_t)(id >> (8 * i));
		CHECK(!contains_window(c.key, idb));
		/* And a different key shows different values. */
		c.key[5] ^= 0x10;
		CHECK(edp_conn_id(c.key) != id);
		edp_fingerprint(c.key, fs);
		CHECK(strcmp(fc, fs) != 0);
	}
}

TEST(keypair_wipe)
{
	struct edp_keypair kp, zero;

	memset(&zero, 0, sizeof(zero));
	edp_keypair_new(&kp);
	CHECK(memcmp(&kp, &zero, sizeof(kp)) != 0);
	edp_keypair_wipe(&kp);
	CHECK_EQ_MEM(&kp, &zero, sizeof(kp));
}

static const struct unit_test tests[] = {
	UNIT(init_sodium),
	UNIT(both_sides_agree),
	UNIT(transcript_binds_key),
	UNIT(macs),
	UNIT(challenge_macs),
	UNIT(low_order_points_refused),
	UNIT(public_values),
	UNIT(keypair_wipe),
};

UNIT_MAIN("keys", tests)
