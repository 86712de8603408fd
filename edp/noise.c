// SPDX-License-Identifier: GPL-2.0-only
/*
 * Noise_XX_25519_ChaChaPoly_BLAKE2b (noise.h), following the spec's
 * objects: the CipherState (k, n) and the SymmetricState (ck, h) are
 * fields of struct noise_hs, and each message is a row of tokens that
 * noise_hs_write() and noise_hs_read() walk. Names in comments are the
 * spec's (section 5).
 */
#include "noise.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "hostpair.h"

#define BLOCK_LEN 128	/* BLAKE2b's BLOCKLEN, for HMAC */

_Static_assert(sizeof(NOISE_PROTOCOL_NAME) - 1 <= NOISE_HASH_LEN,
	       "the protocol name is padded, not hashed");
_Static_assert(NOISE_HASH_LEN == crypto_generichash_BYTES_MAX, "BLAKE2b-512");
_Static_assert(NOISE_KEY_LEN == crypto_scalarmult_BYTES &&
	       NOISE_KEY_LEN == crypto_scalarmult_SCALARBYTES &&
	       NOISE_KEY_LEN == crypto_aead_chacha20poly1305_ietf_KEYBYTES,
	       "DHLEN and the cipher's key");
_Static_assert(NOISE_TAG_LEN == crypto_aead_chacha20poly1305_ietf_ABYTES,
	       "Poly1305");

enum { HS_DONE = 3, HS_FAILED = -1 };

enum token { T_END, T_E, T_S, T_EE, T_ES, T_SE, T_SS };

/* XX's messages, in order; the initiator writes the even ones. */
static const enum token xx[][5] = {
	{ T_E, T_END },
	{ T_E, T_EE, T_S, T_ES, T_END },
	{ T_S, T_SE, T_END },
};
#define XX_MESSAGES ((int)(sizeof(xx) / sizeof(xx[0])))

/* Which of our keys and which of the peer's a DH token combines, by role
 * (the spec's "es": the initiator's e with the responder's s). */
enum which { KEY_E, KEY_S };
static const struct {
	enum which ours, theirs;
} dh_keys[][2] = {
	[T_EE] = { { KEY_E, KEY_E }, { KEY_E, KEY_E } },
	[T_ES] = { { KEY_E, KEY_S }, { KEY_S, KEY_E } },
	[T_SE] = { { KEY_S, KEY_E }, { KEY_E, KEY_S } },
	[T_SS] = { { KEY_S, KEY_S }, { KEY_S, KEY_S } },
};

/* HMAC-BLAKE2b (RFC 2104, B = 128) of D1 | D2 under a HASHLEN key: the
 * only keys Noise's HKDF uses, so no key is ever hashed first. */
static void hmac(const uint8_t key[NOISE_HASH_LEN], const uint8_t *d1,
		 size_t l1, const uint8_t *d2, size_t l2,
		 uint8_t out[NOISE_HASH_LEN])
{
	uint8_t pad[BLOCK_LEN], inner[NOISE_HASH_LEN];
	crypto_generichash_state st;

	memset(pad, 0x36, sizeof(pad));
	for (size_t i = 0; i < NOISE_HASH_LEN; i++)
		pad[i] ^= key[i];
	crypto_generichash_init(&st, NULL, 0, NOISE_HASH_LEN);
	crypto_generichash_update(&st, pad, sizeof(pad));
	crypto_generichash_update(&st, d1, l1);
	crypto_generichash_update(&st, d2, l2);
	crypto_generichash_final(&st, inner, sizeof(inner));

	memset(pad, 0x5c, sizeof(pad));
	for (size_t i = 0; i < NOISE_HASH_LEN; i++)
		pad[i] ^= key[i];
	crypto_generichash_init(&st, NULL, 0, NOISE_HASH_LEN);
	crypto_generichash_update(&st, pad, sizeof(pad));
	crypto_generichash_update(&st, inner, sizeof(inner));
	crypto_generichash_final(&st, out, NOISE_HASH_LEN);

	sodium_memzero(pad, sizeof(pad));
	sodium_memzero(inner, sizeof(inner));
	sodium_memzero(&st, sizeof(st));
}

/* HKDF(ck, ikm, 2): XX needs no third output (that is for PSKs). */
static void hkdf2(const uint8_t ck[NOISE_HASH_LEN], const uint8_t *ikm,
		  size_t ikm_len, uint8_t o1[NOISE_HASH_LEN],
		  uint8_t o2[NOISE_HASH_LEN])
{
	static const uint8_t one = 0x01, two = 0x02;
	uint8_t temp_key[NOISE_HASH_LEN];

	hmac(ck, ikm, ikm_len, NULL, 0, temp_key);
	hmac(temp_key, &one, 1, NULL, 0, o1);
	hmac(temp_key, o1, NOISE_HASH_LEN, &two, 1, o2);
	sodium_memzero(temp_key, sizeof(temp_key));
}

static void mix_hash(struct noise_hs *hs, const uint8_t *data, size_t len)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, NOISE_HASH_LEN);
	crypto_generichash_update(&st, hs->h, NOISE_HASH_LEN);
	crypto_generichash_update(&st, data, len);
	crypto_generichash_final(&st, hs->h, NOISE_HASH_LEN);
}

/* MixKey(ikm): HASHLEN 64, so temp_k is truncated to the key's 32. */
static void mix_key(struct noise_hs *hs, const uint8_t ikm[NOISE_KEY_LEN])
{
	uint8_t temp_k[NOISE_HASH_LEN];

	hkdf2(hs->ck, ikm, NOISE_KEY_LEN, hs->ck, temp_k);
	memcpy(hs->k, temp_k, NOISE_KEY_LEN);
	hs->n = 0;
	hs->has_k = true;
	sodium_memzero(temp_k, sizeof(temp_k));
}

#define NONCE_LEN crypto_aead_chacha20poly1305_ietf_NPUBBYTES

/* ChaChaPoly's nonce: 32 zero bits, then n as 64 bits little-endian. */
static void nonce_bytes(uint64_t n, uint8_t out[NONCE_LEN])
{
	memset(out, 0, 4);
	for (int i = 0; i < 8; i++)
		out[4 + i] = (uint8_t)(n >> (8 * i));
}

/* EncryptAndHash(PT) into OUT; returns the ciphertext's length. */
static size_t encrypt_and_hash(struct noise_hs *hs, const uint8_t *pt,
			       size_t len, uint8_t *out)
{
	uint8_t nonce[NONCE_LEN];
	unsigned long long clen;

	if (!hs->has_k) {
		if (len)
			memcpy(out, pt, len);
		mix_hash(hs, out, len);
		return len;
	}
	nonce_bytes(hs->n++, nonce);
	crypto_aead_chacha20poly1305_ietf_encrypt(out, &clen, pt, len, hs->h,
						  NOISE_HASH_LEN, NULL, nonce,
						  hs->k);
	mix_hash(hs, out, (size_t)clen);
	return (size_t)clen;
}

/* DecryptAndHash(CT) into OUT: 0, or -EBADMSG when it does not decrypt. */
static int decrypt_and_hash(struct noise_hs *hs, const uint8_t *ct,
			    size_t len, uint8_t *out)
{
	uint8_t nonce[NONCE_LEN];

	if (hs->has_k) {
		nonce_bytes(hs->n, nonce);
		if (crypto_aead_chacha20poly1305_ietf_decrypt(
			    out, NULL, NULL, ct, len, hs->h, NOISE_HASH_LEN,
			    nonce, hs->k) != 0)
			return -EBADMSG;
		hs->n++;
	} else if (len) {
		memcpy(out, ct, len);
	}
	mix_hash(hs, ct, len);
	return 0;
}

/* MixKey(DH(ours, theirs)) for a DH token; -EBADMSG when the peer's key
 * is of low order (libsodium refuses the all-zero shared secret). */
static int mix_dh(struct noise_hs *hs, enum token tok)
{
	enum which ours = dh_keys[tok][hs->role].ours;
	enum which theirs = dh_keys[tok][hs->role].theirs;
	uint8_t shared[NOISE_KEY_LEN];
	int err = 0;

	if (crypto_scalarmult(shared, ours == KEY_E ? hs->e_sk : hs->s_sk,
			      theirs == KEY_E ? hs->re : hs->rs) != 0)
		err = -EBADMSG;
	else
		mix_key(hs, shared);
	sodium_memzero(shared, sizeof(shared));
	return err;
}

/* A received public key is of low order when its product with any
 * clamped scalar is zero: refused as soon as it is read, even when the
 * message that brings it uses it in no DH (XX's first). */
static bool low_order(const uint8_t pk[NOISE_KEY_LEN])
{
	static const uint8_t probe[NOISE_KEY_LEN] = { 0x2a, 0x2a, 0x2a, 0x2a };
	uint8_t out[NOISE_KEY_LEN];

	return crypto_scalarmult(out, probe, pk) != 0;
}

/* Split() once the last message is through; what remains is public but
 * for k1 and k2. */
static void finish(struct noise_hs *hs)
{
	uint8_t t1[NOISE_HASH_LEN], t2[NOISE_HASH_LEN];

	hkdf2(hs->ck, NULL, 0, t1, t2);
	memcpy(hs->k1, t1, NOISE_KEY_LEN);
	memcpy(hs->k2, t2, NOISE_KEY_LEN);
	sodium_memzero(t1, sizeof(t1));
	sodium_memzero(t2, sizeof(t2));
	sodium_memzero(hs->ck, sizeof(hs->ck));
	sodium_memzero(hs->k, sizeof(hs->k));
	sodium_memzero(hs->s_sk, sizeof(hs->s_sk));
	sodium_memzero(hs->e_sk, sizeof(hs->e_sk));
	hs->has_k = false;
	hs->state = HS_DONE;
}

static int fail(struct noise_hs *hs, int err)
{
	noise_hs_wipe(hs);
	hs->state = HS_FAILED;
	return err;
}

/* Whether message hs->state is ours to write (WRITING) or to read. */
static bool our_turn(const struct noise_hs *hs, bool writing)
{
	if (hs->state < 0 || hs->state >= XX_MESSAGES)
		return false;
	return ((hs->state % 2 == 0) == (hs->role == NOISE_INITIATOR)) ==
	       writing;
}

void noise_hs_init(struct noise_hs *hs, enum noise_role role,
		   const uint8_t *prologue, size_t prologue_len,
		   const uint8_t s_sk[NOISE_KEY_LEN])
{
	memset(hs, 0, sizeof(*hs));
	hs->role = role;
	/* InitializeSymmetric: the name fits in HASHLEN, so h is the name
	 * padded with zeroes, and ck = h. */
	memcpy(hs->h, NOISE_PROTOCOL_NAME, sizeof(NOISE_PROTOCOL_NAME) - 1);
	memcpy(hs->ck, hs->h, NOISE_HASH_LEN);
	mix_hash(hs, prologue, prologue_len);
	memcpy(hs->s_sk, s_sk, NOISE_KEY_LEN);
	crypto_scalarmult_base(hs->s_pk, hs->s_sk);
}

void noise_hs_set_ephemeral(struct noise_hs *hs,
			    const uint8_t e_sk[NOISE_KEY_LEN])
{
	memcpy(hs->e_sk, e_sk, NOISE_KEY_LEN);
	hs->e_fixed = true;
}

int noise_hs_write(struct noise_hs *hs, const uint8_t *payload,
		   size_t payload_len, uint8_t *out, size_t room,
		   size_t *out_len)
{
	size_t len, off = 0;
	int err;

	if (!our_turn(hs, true))
		return -EINVAL;
	len = noise_xx_msg_len(hs->state, payload_len);
	if (len > NOISE_MAX_MSG_LEN || len > room)
		return -EMSGSIZE;
	for (const enum token *tok = xx[hs->state]; *tok != T_END; tok++) {
		switch (*tok) {
		case T_E:
			if (!hs->e_fixed)
				randombytes_buf(hs->e_sk, NOISE_KEY_LEN);
			crypto_scalarmult_base(hs->e_pk, hs->e_sk);
			memcpy(out + off, hs->e_pk, NOISE_KEY_LEN);
			mix_hash(hs, hs->e_pk, NOISE_KEY_LEN);
			off += NOISE_KEY_LEN;
			break;
		case T_S:
			off += encrypt_and_hash(hs, hs->s_pk, NOISE_KEY_LEN,
						out + off);
			break;
		default:
			err = mix_dh(hs, *tok);
			if (err)
				return fail(hs, err);
		}
	}
	off += encrypt_and_hash(hs, payload, payload_len, out + off);
	*out_len = off;
	if (++hs->state == XX_MESSAGES)
		finish(hs);
	return 0;
}

int noise_hs_read(struct noise_hs *hs, const uint8_t *msg, size_t len,
		  uint8_t *payload, size_t room, size_t *payload_len)
{
	size_t overhead, off = 0;
	int err;

	if (!our_turn(hs, false))
		return -EINVAL;
	overhead = noise_xx_msg_len(hs->state, 0);
	if (len < overhead || len > NOISE_MAX_MSG_LEN)
		return fail(hs, -EBADMSG);
	if (len - overhead > room)
		return -EMSGSIZE;
	for (const enum token *tok = xx[hs->state]; *tok != T_END; tok++) {
		switch (*tok) {
		case T_E:
			memcpy(hs->re, msg + off, NOISE_KEY_LEN);
			if (low_order(hs->re))
				return fail(hs, -EBADMSG);
			mix_hash(hs, hs->re, NOISE_KEY_LEN);
			off += NOISE_KEY_LEN;
			break;
		case T_S: {
			size_t clen = NOISE_KEY_LEN +
				      (hs->has_k ? NOISE_TAG_LEN : 0);

			err = decrypt_and_hash(hs, msg + off, clen, hs->rs);
			if (err)
				return fail(hs, err);
			hs->has_rs = true;
			off += clen;
			break;
		}
		default:
			err = mix_dh(hs, *tok);
			if (err)
				return fail(hs, err);
		}
	}
	err = decrypt_and_hash(hs, msg + off, len - off, payload);
	if (err)
		return fail(hs, err);
	*payload_len = len - overhead;
	if (++hs->state == XX_MESSAGES)
		finish(hs);
	return 0;
}

bool noise_hs_done(const struct noise_hs *hs)
{
	return hs->state == HS_DONE;
}

const uint8_t *noise_hs_remote_static(const struct noise_hs *hs)
{
	return hs->has_rs ? hs->rs : NULL;
}

const uint8_t *noise_hs_remote_ephemeral(const struct noise_hs *hs)
{
	return hs->state >= 1 && hs->state <= XX_MESSAGES &&
	       !sodium_is_zero(hs->re, NOISE_KEY_LEN) ? hs->re : NULL;
}

int noise_hs_rotation_verify(const struct noise_hs *hs, const uint8_t *old_pk,
			     const uint8_t *new_pk, const uint8_t *proof)
{
	if (sodium_is_zero(hs->e_sk, NOISE_KEY_LEN))
		return -EINVAL;
	return edp_rotation_verify(hs->e_sk, old_pk, new_pk, proof);
}

void noise_hs_result(const struct noise_hs *hs, uint8_t h[NOISE_HASH_LEN],
		     uint8_t k1[NOISE_KEY_LEN], uint8_t k2[NOISE_KEY_LEN])
{
	if (!noise_hs_done(hs)) {
		sodium_memzero(h, NOISE_HASH_LEN);
		sodium_memzero(k1, NOISE_KEY_LEN);
		sodium_memzero(k2, NOISE_KEY_LEN);
		return;
	}
	memcpy(h, hs->h, NOISE_HASH_LEN);
	memcpy(k1, hs->k1, NOISE_KEY_LEN);
	memcpy(k2, hs->k2, NOISE_KEY_LEN);
}

void noise_hs_wipe(struct noise_hs *hs)
{
	sodium_memzero(hs, sizeof(*hs));
}

size_t noise_xx_msg_len(int index, size_t payload_len)
{
	bool has_k = false;
	size_t len = 0;

	if (index < 0 || index >= XX_MESSAGES)
		return 0;
	/* Whether a key encrypts what follows depends on earlier messages:
	 * there is one from the first DH token on. */
	for (int i = 0; i <= index; i++) {
		len = 0;
		for (const enum token *tok = xx[i]; *tok != T_END; tok++) {
			if (*tok == T_E)
				len += NOISE_KEY_LEN;
			else if (*tok == T_S)
				len += NOISE_KEY_LEN +
				       (has_k ? NOISE_TAG_LEN : 0);
			else
				has_k = true;
		}
	}
	len += has_k ? NOISE_TAG_LEN : 0;
	return payload_len > SIZE_MAX - len ? SIZE_MAX : len + payload_len;
}
