// SPDX-License-Identifier: GPL-2.0-only
/*
 * Noise_XX_25519_ChaChaPoly_BLAKE2b (edp/noise.c): a known answer from
 * an independent implementation, both ends agree on h, k1, k2 and each
 * other's static keys, every byte of every message is authenticated,
 * turns are kept, low-order keys and short buffers are refused.
 * tests/test_noise.py runs the same handshake against dissononce live.
 */
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "noise.h"
#include "unit.h"

#define ROOM 256

struct peer {
	struct noise_hs hs;
	uint8_t s_sk[NOISE_KEY_LEN], s_pk[NOISE_KEY_LEN];
};

/* The three messages of one handshake, as sent. */
struct flight {
	uint8_t msg[3][ROOM];
	size_t len[3];
};

static const uint8_t *const payloads[3] = {
	(const uint8_t *)"one", (const uint8_t *)"two!",
	(const uint8_t *)"three",
};
static const size_t payload_lens[3] = { 3, 4, 5 };

static void hex(const char *s, uint8_t *out, size_t len)
{
	size_t got = 0;

	CHECK(sodium_hex2bin(out, len, s, strlen(s), NULL, &got, NULL) == 0 &&
	      got == len);
}

static void peer_init(struct peer *p, enum noise_role role,
		      const uint8_t *s_sk)
{
	if (s_sk)
		memcpy(p->s_sk, s_sk, NOISE_KEY_LEN);
	else
		randombytes_buf(p->s_sk, NOISE_KEY_LEN);
	crypto_scalarmult_base(p->s_pk, p->s_sk);
	noise_hs_init(&p->hs, role, (const uint8_t *)"racks test", 10,
		      p->s_sk);
}

/* Message I from its writer to its reader, with payloads[I], kept in F;
 * TAMPER (a byte's index, or -1) flips a bit on the way. Returns what
 * the reader's noise_hs_read() returned. */
static int pass(struct peer *from, struct peer *to, int i, long tamper,
		struct flight *f)
{
	uint8_t got[ROOM];
	size_t got_len;
	int err;

	if (!CHECK_EQ_INT(noise_hs_write(&from->hs, payloads[i],
					 payload_lens[i], f->msg[i], ROOM,
					 &f->len[i]), 0))
		return -EPROTO;
	CHECK_EQ_INT(f->len[i], noise_xx_msg_len(i, payload_lens[i]));
	if (tamper >= 0)
		f->msg[i][tamper] ^= 0x04;
	err = noise_hs_read(&to->hs, f->msg[i], f->len[i], got, sizeof(got),
			    &got_len);
	/* (Message 0's payload is in clear: a flipped bit there is read.) */
	if (err == 0 && tamper < 0 && CHECK_EQ_INT(got_len, payload_lens[i]))
		CHECK_EQ_MEM(got, payloads[i], got_len);
	return err;
}

/* A whole handshake, initiator first; true when every read succeeded. */
static bool handshake(struct peer *ini, struct peer *res, struct flight *f)
{
	return CHECK_EQ_INT(pass(ini, res, 0, -1, f), 0) &&
	       CHECK_EQ_INT(pass(res, ini, 1, -1, f), 0) &&
	       CHECK_EQ_INT(pass(ini, res, 2, -1, f), 0);
}

TEST(init_sodium)
{
	CHECK(sodium_init() >= 0);
}

/* Keys 01..20, 21..40 (initiator s, e), 41..60, 61..80 (responder),
 * prologue "racks test", payloads "one", "two!", "three": the messages,
 * h and keys that dissononce 0.34.3 (Python, on the cryptography
 * package's X25519, ChaCha20-Poly1305 and HMAC) computes. */
static const char *const want_msg[3] = {
	"5869aff450549732cbaaed5e5df9b30a6da31cb0e5742bad5ad4a1a768f1a67b"
	"6f6e65",
	"244fe3b963e899dd295baffce248d3530f3a9a7479ba063002680ebfe7adad49"
	"c8135a92e0830925f2df8199a059bf3248e2cbfff8e0655f87ee503323392011"
	"a47b6ff9a1a6a1c292cc0a94d6eee2685b0715643936ab7981f8b653e65a4568"
	"18dec06d",
	"0d77afa79fe222d90f0b687a5d3c8b0d4b3a2f4b63db0a380dbeecc429a22eb4"
	"ecf68f0d52ba765cdb29b77c116f6a2c20368423660604074120517007ebdecb"
	"b36a292934",
};
static const char want_h[] =
	"e1132cd8fa1b90b861cf3243cf8ba477cfddfdea1a6e5a6a13ed3efe532fab4d"
	"68579e767798930c754e2b6a07b46f4d651eee85f4dfc1a4373e2028e200a976";
static const char want_k1[] =
	"1039822c2342f5a6a10f5a44902367e87b376c97134c83016b7ad683a0a37fd7";
static const char want_k2[] =
	"527251e665db9b261ff98d53e002d62cf6806c8d06d6157a1c8e199420bfa68a";

TEST(known_answer)
{
	uint8_t keys[4][NOISE_KEY_LEN], msg[ROOM], h[NOISE_HASH_LEN];
	uint8_t k1[NOISE_KEY_LEN], k2[NOISE_KEY_LEN], want[ROOM];
	struct peer ini, res;
	struct flight f;

	for (int k = 0; k < 4; k++)
		for (int i = 0; i < NOISE_KEY_LEN; i++)
			keys[k][i] = (uint8_t)(k * NOISE_KEY_LEN + i + 1);
	peer_init(&ini, NOISE_INITIATOR, keys[0]);
	noise_hs_set_ephemeral(&ini.hs, keys[1]);
	peer_init(&res, NOISE_RESPONDER, keys[2]);
	noise_hs_set_ephemeral(&res.hs, keys[3]);
	if (!handshake(&ini, &res, &f))
		return;
	for (int i = 0; i < 3; i++) {
		size_t len = strlen(want_msg[i]) / 2;

		hex(want_msg[i], msg, len);
		if (CHECK_EQ_INT(f.len[i], len))
			CHECK_EQ_MEM(f.msg[i], msg, len);
	}
	hex(want_h, want, NOISE_HASH_LEN);
	noise_hs_result(&ini.hs, h, k1, k2);
	CHECK_EQ_MEM(h, want, NOISE_HASH_LEN);
	hex(want_k1, want, NOISE_KEY_LEN);
	CHECK_EQ_MEM(k1, want, NOISE_KEY_LEN);
	hex(want_k2, want, NOISE_KEY_LEN);
	CHECK_EQ_MEM(k2, want, NOISE_KEY_LEN);
	noise_hs_wipe(&ini.hs);
	noise_hs_wipe(&res.hs);
}

TEST(both_ends_agree)
{
	for (int rep = 0; rep < 10; rep++) {
		uint8_t hi[NOISE_HASH_LEN], hr[NOISE_HASH_LEN];
		uint8_t k1i[NOISE_KEY_LEN], k2i[NOISE_KEY_LEN];
		uint8_t k1r[NOISE_KEY_LEN], k2r[NOISE_KEY_LEN];
		struct peer ini, res;
		struct flight f;

		peer_init(&ini, NOISE_INITIATOR, NULL);
		peer_init(&res, NOISE_RESPONDER, NULL);
		CHECK(noise_hs_remote_static(&ini.hs) == NULL);
		CHECK(noise_hs_remote_static(&res.hs) == NULL);
		if (!CHECK_EQ_INT(pass(&ini, &res, 0, -1, &f), 0) ||
		    !CHECK_EQ_INT(pass(&res, &ini, 1, -1, &f), 0))
			return;
		/* The initiator knows the responder from message 1 on. */
		CHECK(noise_hs_remote_static(&res.hs) == NULL);
		if (CHECK(noise_hs_remote_static(&ini.hs) != NULL))
			CHECK_EQ_MEM(noise_hs_remote_static(&ini.hs), res.s_pk,
				     NOISE_KEY_LEN);
		CHECK(!noise_hs_done(&ini.hs) && !noise_hs_done(&res.hs));
		if (!CHECK_EQ_INT(pass(&ini, &res, 2, -1, &f), 0))
			return;
		CHECK(noise_hs_done(&ini.hs) && noise_hs_done(&res.hs));
		if (CHECK(noise_hs_remote_static(&res.hs) != NULL))
			CHECK_EQ_MEM(noise_hs_remote_static(&res.hs), ini.s_pk,
				     NOISE_KEY_LEN);
		noise_hs_result(&ini.hs, hi, k1i, k2i);
		noise_hs_result(&res.hs, hr, k1r, k2r);
		CHECK_EQ_MEM(hi, hr, NOISE_HASH_LEN);
		CHECK_EQ_MEM(k1i, k1r, NOISE_KEY_LEN);
		CHECK_EQ_MEM(k2i, k2r, NOISE_KEY_LEN);
		CHECK(memcmp(k1i, k2i, NOISE_KEY_LEN) != 0);
		noise_hs_wipe(&ini.hs);
		noise_hs_wipe(&res.hs);
	}
}

/* No payload at all (NULL): the messages still authenticate. */
TEST(empty_payloads)
{
	struct peer ini, res;
	uint8_t msg[ROOM], got[1];
	size_t len, got_len;

	peer_init(&ini, NOISE_INITIATOR, NULL);
	peer_init(&res, NOISE_RESPONDER, NULL);
	for (int i = 0; i < 3; i++) {
		struct peer *from = i % 2 ? &res : &ini;
		struct peer *to = i % 2 ? &ini : &res;

		if (!CHECK_EQ_INT(noise_hs_write(&from->hs, NULL, 0, msg, ROOM,
						 &len), 0) ||
		    !CHECK_EQ_INT(len, noise_xx_msg_len(i, 0)) ||
		    !CHECK_EQ_INT(noise_hs_read(&to->hs, msg, len, got, 0,
						&got_len), 0))
			return;
		CHECK_EQ_INT(got_len, 0);
	}
	CHECK(noise_hs_done(&ini.hs) && noise_hs_done(&res.hs));
}

/* A flipped bit anywhere fails the handshake: in messages 1 and 2 at
 * their reader; in message 0, which nothing authenticates yet, at the
 * initiator's reading of message 1 (the responder's h and DH differ). */
TEST(every_byte_is_authenticated)
{
	for (int i = 0; i < 3; i++) {
		size_t n = noise_xx_msg_len(i, payload_lens[i]);

		for (size_t at = 0; at < n; at++) {
			struct peer ini, res, *failed = i == 2 ? &res : &ini;
			struct flight f;
			uint8_t got[ROOM];
			size_t got_len;
			int err;

			peer_init(&ini, NOISE_INITIATOR, NULL);
			peer_init(&res, NOISE_RESPONDER, NULL);
			if (i > 0 &&
			    !CHECK_EQ_INT(pass(&ini, &res, 0, -1, &f), 0))
				return;
			if (i > 1 &&
			    !CHECK_EQ_INT(pass(&res, &ini, 1, -1, &f), 0))
				return;
			err = pass(i == 1 ? &res : &ini, i == 1 ? &ini : &res,
				   i, (long)at, &f);
			if (i == 0) {
				if (!CHECK_EQ_INT(err, 0))
					return;
				err = pass(&res, &ini, 1, -1, &f);
			}
			if (!CHECK_EQ_INT(err, -EBADMSG))
				return;
			/* The failed side is wiped and unusable. */
			CHECK(sodium_is_zero(failed->hs.s_sk, NOISE_KEY_LEN));
			CHECK(sodium_is_zero(failed->hs.ck, NOISE_HASH_LEN));
			CHECK_EQ_INT(noise_hs_read(&failed->hs, f.msg[i],
						   f.len[i], got, ROOM,
						   &got_len), -EINVAL);
			CHECK_EQ_INT(noise_hs_write(&failed->hs, NULL, 0, got,
						    ROOM, &got_len), -EINVAL);
			CHECK(!noise_hs_done(&failed->hs));
			noise_hs_wipe(&ini.hs);
			noise_hs_wipe(&res.hs);
		}
	}
}

/* Out of turn is refused without harm; after the end nothing goes. */
TEST(turns)
{
	struct peer ini, res;
	struct flight f;
	uint8_t buf[ROOM];
	size_t len;

	peer_init(&ini, NOISE_INITIATOR, NULL);
	peer_init(&res, NOISE_RESPONDER, NULL);
	CHECK_EQ_INT(noise_hs_write(&res.hs, NULL, 0, buf, ROOM, &len),
		     -EINVAL);
	memset(buf, 0x55, sizeof(buf));
	CHECK_EQ_INT(noise_hs_read(&ini.hs, buf, 32, buf, ROOM, &len),
		     -EINVAL);
	if (!CHECK_EQ_INT(pass(&ini, &res, 0, -1, &f), 0))
		return;
	CHECK_EQ_INT(noise_hs_write(&ini.hs, NULL, 0, buf, ROOM, &len),
		     -EINVAL);
	CHECK_EQ_INT(noise_hs_read(&res.hs, f.msg[0], f.len[0], buf, ROOM,
				   &len), -EINVAL);
	if (!CHECK_EQ_INT(pass(&res, &ini, 1, -1, &f), 0) ||
	    !CHECK_EQ_INT(pass(&ini, &res, 2, -1, &f), 0))
		return;
	for (int k = 0; k < 2; k++) {
		struct noise_hs *hs = k ? &res.hs : &ini.hs;

		CHECK_EQ_INT(noise_hs_write(hs, NULL, 0, buf, ROOM, &len),
			     -EINVAL);
		CHECK_EQ_INT(noise_hs_read(hs, f.msg[2], f.len[2], buf, ROOM,
					   &len), -EINVAL);
		CHECK(noise_hs_done(hs));
	}
}

/* Points of order 1, 2, 4 and 8 on the curve or its twist (0, 1, an
 * order-8 point, p - 1, p, p + 1): the shared secret is zero whatever the
 * scalar. */
static const char *const low_order_points[] = {
	"0000000000000000000000000000000000000000000000000000000000000000",
	"0100000000000000000000000000000000000000000000000000000000000000",
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
	"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
};

TEST(low_order_ephemeral_refused)
{
	for (size_t p = 0; p < sizeof(low_order_points) /
			       sizeof(low_order_points[0]); p++) {
		uint8_t point[NOISE_KEY_LEN], got[ROOM];
		struct peer ini, res;
		struct flight f;
		size_t got_len;

		hex(low_order_points[p], point, NOISE_KEY_LEN);
		/* The initiator's e, read by the responder (message 0). */
		peer_init(&ini, NOISE_INITIATOR, NULL);
		peer_init(&res, NOISE_RESPONDER, NULL);
		if (!CHECK_EQ_INT(noise_hs_write(&ini.hs, payloads[0],
						 payload_lens[0], f.msg[0],
						 ROOM, &f.len[0]), 0))
			return;
		memcpy(f.msg[0], point, NOISE_KEY_LEN);
		CHECK_EQ_INT(noise_hs_read(&res.hs, f.msg[0], f.len[0], got,
					   ROOM, &got_len), -EBADMSG);
		/* The responder's e, read by the initiator (message 1). */
		peer_init(&ini, NOISE_INITIATOR, NULL);
		peer_init(&res, NOISE_RESPONDER, NULL);
		if (!CHECK_EQ_INT(pass(&ini, &res, 0, -1, &f), 0) ||
		    !CHECK_EQ_INT(noise_hs_write(&res.hs, payloads[1],
						 payload_lens[1], f.msg[1],
						 ROOM, &f.len[1]), 0))
			return;
		memcpy(f.msg[1], point, NOISE_KEY_LEN);
		CHECK_EQ_INT(noise_hs_read(&ini.hs, f.msg[1], f.len[1], got,
					   ROOM, &got_len), -EBADMSG);
		CHECK(noise_hs_remote_static(&ini.hs) == NULL);
	}
}

/* A buffer too small is refused and changes nothing: the same call with
 * room enough then succeeds. */
TEST(room_too_small)
{
	struct peer ini, res;
	uint8_t msg[ROOM], got[ROOM];
	size_t len, got_len;

	peer_init(&ini, NOISE_INITIATOR, NULL);
	peer_init(&res, NOISE_RESPONDER, NULL);
	for (int i = 0; i < 3; i++) {
		struct peer *from = i % 2 ? &res : &ini;
		struct peer *to = i % 2 ? &ini : &res;
		size_t need = noise_xx_msg_len(i, payload_lens[i]);

		CHECK_EQ_INT(noise_hs_write(&from->hs, payloads[i],
					    payload_lens[i], msg, need - 1,
					    &len), -EMSGSIZE);
		if (!CHECK_EQ_INT(noise_hs_write(&from->hs, payloads[i],
						 payload_lens[i], msg, need,
						 &len), 0))
			return;
		CHECK_EQ_INT(noise_hs_read(&to->hs, msg, len, got,
					   payload_lens[i] - 1, &got_len),
			     -EMSGSIZE);
		if (!CHECK_EQ_INT(noise_hs_read(&to->hs, msg, len, got,
						payload_lens[i], &got_len), 0))
			return;
		CHECK_EQ_MEM(got, payloads[i], payload_lens[i]);
	}
	CHECK(noise_hs_done(&ini.hs) && noise_hs_done(&res.hs));
}

/* A message shorter than its place in XX needs is malformed; one longer
 * than Noise allows is refused whole. */
TEST(lengths)
{
	static uint8_t big[NOISE_MAX_MSG_LEN + 1];
	struct peer ini, res;
	struct flight f;
	uint8_t got[ROOM];
	size_t len;

	CHECK_EQ_INT(noise_xx_msg_len(0, 7), 32 + 7);
	CHECK_EQ_INT(noise_xx_msg_len(1, 7), 32 + 48 + 7 + 16);
	CHECK_EQ_INT(noise_xx_msg_len(2, 7), 48 + 7 + 16);
	CHECK_EQ_INT(noise_xx_msg_len(3, 7), 0);
	CHECK_EQ_INT(noise_xx_msg_len(-1, 7), 0);

	peer_init(&ini, NOISE_INITIATOR, NULL);
	CHECK_EQ_INT(noise_hs_write(&ini.hs, big, NOISE_MAX_MSG_LEN - 31, big,
				    sizeof(big), &len), -EMSGSIZE);
	if (!CHECK_EQ_INT(noise_hs_write(&ini.hs, big, NOISE_MAX_MSG_LEN - 32,
					 f.msg[0], 0, &len), -EMSGSIZE))
		return;
	peer_init(&res, NOISE_RESPONDER, NULL);
	memset(got, 0x11, sizeof(got));
	CHECK_EQ_INT(noise_hs_read(&res.hs, got, 31, got, ROOM, &len),
		     -EBADMSG);
	peer_init(&res, NOISE_RESPONDER, NULL);
	CHECK_EQ_INT(noise_hs_read(&res.hs, big, sizeof(big), big, sizeof(big),
				   &len), -EBADMSG);

	/* Message 1 one byte short of its empty-payload size. */
	peer_init(&ini, NOISE_INITIATOR, NULL);
	peer_init(&res, NOISE_RESPONDER, NULL);
	if (!CHECK_EQ_INT(pass(&ini, &res, 0, -1, &f), 0) ||
	    !CHECK_EQ_INT(noise_hs_write(&res.hs, NULL, 0, f.msg[1], ROOM,
					 &f.len[1]), 0))
		return;
	CHECK_EQ_INT(noise_hs_read(&ini.hs, f.msg[1], f.len[1] - 1, got, ROOM,
				   &len), -EBADMSG);
}

/* The prologue is bound: two ends that differ in it fail at message 1. */
TEST(prologue_binds)
{
	struct peer ini, res;
	struct flight f;

	peer_init(&ini, NOISE_INITIATOR, NULL);
	peer_init(&res, NOISE_RESPONDER, NULL);
	noise_hs_init(&res.hs, NOISE_RESPONDER, (const uint8_t *)"racks tesT",
		      10, res.s_sk);
	if (!CHECK_EQ_INT(pass(&ini, &res, 0, -1, &f), 0))
		return;
	CHECK_EQ_INT(pass(&res, &ini, 1, -1, &f), -EBADMSG);
}

/* Once done, only h, the split keys and public keys remain; then
 * noise_hs_wipe leaves nothing but zeroes. */
TEST(wipe)
{
	static const uint8_t zero[sizeof(struct noise_hs)];
	struct peer ini, res;
	struct flight f;

	peer_init(&ini, NOISE_INITIATOR, NULL);
	peer_init(&res, NOISE_RESPONDER, NULL);
	if (!handshake(&ini, &res, &f))
		return;
	for (int k = 0; k < 2; k++) {
		struct noise_hs *hs = k ? &res.hs : &ini.hs;

		CHECK(sodium_is_zero(hs->s_sk, NOISE_KEY_LEN));
		CHECK(sodium_is_zero(hs->e_sk, NOISE_KEY_LEN));
		CHECK(sodium_is_zero(hs->ck, NOISE_HASH_LEN));
		CHECK(sodium_is_zero(hs->k, NOISE_KEY_LEN));
		CHECK(!sodium_is_zero(hs->k1, NOISE_KEY_LEN));
		noise_hs_wipe(hs);
		CHECK_EQ_MEM(hs, zero, sizeof(*hs));
	}
}

static const struct unit_test tests[] = {
	UNIT(init_sodium),
	UNIT(known_answer),
	UNIT(both_ends_agree),
	UNIT(empty_payloads),
	UNIT(every_byte_is_authenticated),
	UNIT(turns),
	UNIT(low_order_ephemeral_refused),
	UNIT(room_too_small),
	UNIT(lengths),
	UNIT(prologue_binds),
	UNIT(wipe),
};

UNIT_MAIN("noise", tests)
