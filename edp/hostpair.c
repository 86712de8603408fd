// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host-pair derivations (formulas and reasons in hostpair.h): each a
 * keyed BLAKE2b over a label and fixed-size fields in a fixed order.
 */
#include "hostpair.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

#define SECRET_LABEL "racks host pair v1"
#define ID_LABEL "racks host pair id"
#define CONN_LABEL "racks derived key v1"
#define ROTATION_LABEL "racks key rotation v1"

_Static_assert(EDP_HOST_KEY_LEN == crypto_scalarmult_BYTES, "X25519");

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void edp_hostpair_secret(const uint8_t h[64], const uint8_t k1[32],
			 const uint8_t k2[32],
			 uint8_t secret[EDP_HOSTPAIR_SECRET_LEN])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, k1, 32, EDP_HOSTPAIR_SECRET_LEN);
	crypto_generichash_update(&st, (const uint8_t *)SECRET_LABEL,
				  sizeof(SECRET_LABEL) - 1);
	crypto_generichash_update(&st, k2, 32);
	crypto_generichash_update(&st, h, 64);
	crypto_generichash_final(&st, secret, EDP_HOSTPAIR_SECRET_LEN);
	sodium_memzero(&st, sizeof(st));
}

uint32_t edp_hostpair_id(const uint8_t secret[EDP_HOSTPAIR_SECRET_LEN])
{
	uint8_t b[crypto_generichash_BYTES_MIN];
	uint32_t id;

	crypto_generichash(b, sizeof(b), (const uint8_t *)ID_LABEL,
			   sizeof(ID_LABEL) - 1, secret,
			   EDP_HOSTPAIR_SECRET_LEN);
	id = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	     (uint32_t)b[2] << 8 | b[3];
	return id ? id : 1;
}

void edp_conn_key(const uint8_t secret[EDP_HOSTPAIR_SECRET_LEN],
		  const struct edp_conn_transcript *t, uint8_t key[32])
{
	uint8_t msg[sizeof(CONN_LABEL) - 1 + 4 + 4 + 8 + 8 + 16 + 2 + 16 + 2];
	uint8_t *p = msg;

	memcpy(p, CONN_LABEL, sizeof(CONN_LABEL) - 1);
	p += sizeof(CONN_LABEL) - 1;
	put_be32(p, t->isn_client);
	put_be32(p + 4, t->isn_server);
	p += 8;
	memcpy(p, t->nonce_client, 8);
	memcpy(p + 8, t->nonce_server, 8);
	p += 16;
	memcpy(p, t->addr_client, 16);
	put_be16(p + 16, t->port_client);
	p += 18;
	memcpy(p, t->addr_server, 16);
	put_be16(p + 16, t->port_server);
	crypto_generichash(key, 32, msg, sizeof(msg), secret,
			   EDP_HOSTPAIR_SECRET_LEN);
}

/* The proof under the DH of the old key and the verifier's. */
static int rotation_mac(const uint8_t sk[EDP_HOST_KEY_LEN],
			const uint8_t peer_pk[EDP_HOST_KEY_LEN],
			const uint8_t old_pk[EDP_HOST_KEY_LEN],
			const uint8_t new_pk[EDP_HOST_KEY_LEN],
			const uint8_t verifier_pk[EDP_HOST_KEY_LEN],
			uint8_t proof[EDP_ROTATION_PROOF_LEN])
{
	uint8_t shared[crypto_scalarmult_BYTES];
	uint8_t msg[sizeof(ROTATION_LABEL) - 1 + 3 * EDP_HOST_KEY_LEN];
	uint8_t *p = msg + sizeof(ROTATION_LABEL) - 1;

	/* Fails for low-order points, whose shared secret is all zeroes. */
	if (crypto_scalarmult(shared, sk, peer_pk) != 0)
		return -EINVAL;
	memcpy(msg, ROTATION_LABEL, sizeof(ROTATION_LABEL) - 1);
	memcpy(p, old_pk, EDP_HOST_KEY_LEN);
	memcpy(p + EDP_HOST_KEY_LEN, new_pk, EDP_HOST_KEY_LEN);
	memcpy(p + 2 * EDP_HOST_KEY_LEN, verifier_pk, EDP_HOST_KEY_LEN);
	crypto_generichash(proof, EDP_ROTATION_PROOF_LEN, msg, sizeof(msg),
			   shared, sizeof(shared));
	sodium_memzero(shared, sizeof(shared));
	return 0;
}

int edp_rotation_proof(const uint8_t old_sk[EDP_HOST_KEY_LEN],
		       const uint8_t verifier_pk[EDP_HOST_KEY_LEN],
		       const uint8_t new_pk[EDP_HOST_KEY_LEN],
		       uint8_t proof[EDP_ROTATION_PROOF_LEN])
{
	uint8_t old_pk[EDP_HOST_KEY_LEN];

	crypto_scalarmult_base(old_pk, old_sk);
	return rotation_mac(old_sk, verifier_pk, old_pk, new_pk, verifier_pk,
			    proof);
}

int edp_rotation_verify(const uint8_t our_sk[EDP_HOST_KEY_LEN],
			const uint8_t old_pk[EDP_HOST_KEY_LEN],
			const uint8_t new_pk[EDP_HOST_KEY_LEN],
			const uint8_t proof[EDP_ROTATION_PROOF_LEN])
{
	uint8_t our_pk[EDP_HOST_KEY_LEN], want[EDP_ROTATION_PROOF_LEN];
	int err;

	crypto_scalarmult_base(our_pk, our_sk);
	err = rotation_mac(our_sk, old_pk, old_pk, new_pk, our_pk, want);
	if (!err && sodium_memcmp(want, proof, EDP_ROTATION_PROOF_LEN) != 0)
		err = -EBADMSG;
	sodium_memzero(want, sizeof(want));
	return err;
}
