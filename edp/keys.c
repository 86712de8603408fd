// SPDX-License-Identifier: GPL-2.0-only
#include "keys.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#define KEY_LABEL "racks key v1"

void edp_keypair_new(struct edp_keypair *kp)
{
	randombytes_buf(kp->sk, sizeof(kp->sk));
	crypto_scalarmult_base(kp->pk, kp->sk);
}

void edp_keypair_wipe(struct edp_keypair *kp)
{
	sodium_memzero(kp, sizeof(*kp));
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The transcript in a fixed byte order, so both ends hash the same. */
static void transcript_bytes(const struct edp_transcript *t,
			     uint8_t out[2 * EDP_KEY_LEN + 8])
{
	memcpy(out, t->pk_client, EDP_KEY_LEN);
	memcpy(out + EDP_KEY_LEN, t->pk_server, EDP_KEY_LEN);
	put_be32(out + 2 * EDP_KEY_LEN, t->isn_client);
	put_be32(out + 2 * EDP_KEY_LEN + 4, t->isn_server);
}

int edp_derive(const struct edp_keypair *ours, const uint8_t *peer_pk,
	       const struct edp_transcript *t, uint8_t key[EDP_SECRET_LEN])
{
	uint8_t shared[crypto_scalarmult_BYTES];
	uint8_t tb[2 * EDP_KEY_LEN + 8];
	crypto_generichash_state st;

	/* Fails for low-order points, whose shared secret is all zeroes. */
	if (crypto_scalarmult(shared, ours->sk, peer_pk) != 0)
		return -EINVAL;
	transcript_bytes(t, tb);
	crypto_generichash_init(&st, shared, sizeof(shared), EDP_SECRET_LEN);
	crypto_generichash_update(&st, (const uint8_t *)KEY_LABEL,
				  sizeof(KEY_LABEL) - 1);
	crypto_generichash_update(&st, tb, sizeof(tb));
	crypto_generichash_final(&st, key, EDP_SECRET_LEN);
	sodium_memzero(shared, sizeof(shared));
	sodium_memzero(&st, sizeof(st));
	return 0;
}

void edp_mac_counter(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
		     uint32_t counter, const struct edp_transcript *t,
		     uint8_t mac[EDP_MAC_LEN])
{
	uint8_t msg[1 + 4 + 2 * EDP_KEY_LEN + 8];

	msg[0] = (uint8_t)role;
	put_be32(msg + 1, counter);
	transcript_bytes(t, msg + 5);
	crypto_generichash(mac, EDP_MAC_LEN, msg, sizeof(msg), key,
			   EDP_SECRET_LEN);
}

void edp_mac_challenge(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
		       uint32_t counter, const uint8_t *challenge,
		       const struct edp_transcript *t, uint8_t mac[EDP_MAC_LEN])
{
	uint8_t msg[1 + 4 + EDP_CHALLENGE_LEN + 2 * EDP_KEY_LEN + 8];

	msg[0] = (uint8_t)role;
	put_be32(msg + 1, counter);
	memcpy(msg + 5, challenge, EDP_CHALLENGE_LEN);
	transcript_bytes(t, msg + 5 + EDP_CHALLENGE_LEN);
	crypto_generichash(mac, EDP_MAC_LEN, msg, sizeof(msg), key,
			   EDP_SECRET_LEN);
}

int edp_mac_challenge_verify(const uint8_t key[EDP_SECRET_LEN],
			     enum edp_role role, uint32_t counter,
			     const uint8_t *challenge,
			     const struct edp_transcript *t, const uint8_t *mac)
{
	uint8_t want[EDP_MAC_LEN];
	int ok;

	edp_mac_challenge(key, role, counter, challenge, t, want);
	ok = sodium_memcmp(want, mac, EDP_MAC_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok ? 0 : -EBADMSG;
}

void edp_mac(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
	     const struct edp_transcript *t, uint8_t mac[EDP_MAC_LEN])
{
	uint8_t msg[1 + 2 * EDP_KEY_LEN + 8];

	msg[0] = (uint8_t)role;
	transcript_bytes(t, msg + 1);
	crypto_generichash(mac, EDP_MAC_LEN, msg, sizeof(msg), key,
			   EDP_SECRET_LEN);
}

int edp_mac_counter_verify(const uint8_t key[EDP_SECRET_LEN],
			   enum edp_role role, uint32_t counter,
			   const struct edp_transcript *t, const uint8_t *mac)
{
	uint8_t want[EDP_MAC_LEN];
	int ok;

	edp_mac_counter(key, role, counter, t, want);
	ok = sodium_memcmp(want, mac, EDP_MAC_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok ? 0 : -EBADMSG;
}

int edp_mac_verify(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
		   const struct edp_transcript *t, const uint8_t *mac)
{
	uint8_t want[EDP_MAC_LEN];
	int ok;

	edp_mac(key, role, t, want);
	ok = sodium_memcmp(want, mac, EDP_MAC_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok ? 0 : -EBADMSG;
}

/* A label-keyed hash of K: reveals nothing about K itself. */
static void derive_public(const uint8_t key[EDP_SECRET_LEN], const char *label,
			  uint8_t *out, size_t outlen)
{
	/* BLAKE2b outputs at least 16 bytes; shorter values are prefixes. */
	uint8_t full[crypto_generichash_BYTES_MIN];

	crypto_generichash(full, sizeof(full), (const uint8_t *)label,
			   strlen(label), key, EDP_SECRET_LEN);
	memcpy(out, full, outlen < sizeof(full) ? outlen : sizeof(full));
}

uint64_t edp_conn_id(const uint8_t key[EDP_SECRET_LEN])
{
	uint8_t b[8];
	uint64_t id = 0;

	derive_public(key, "racks connection id", b, sizeof(b));
	for (size_t i = 0; i < sizeof(b); i++)
		id = id << 8 | b[i];
	return id;
}

void edp_fingerprint(const uint8_t key[EDP_SECRET_LEN],
		     char out[EDP_FINGERPRINT_STRLEN])
{
	uint8_t b[8];

	derive_public(key, "racks fingerprint", b, sizeof(b));
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}
