// SPDX-License-Identifier: GPL-2.0-only
/*
 * The classic EDP announcement (layout in announce.h). It needs no key:
 * the hash only lets a client tell an announcement from application data
 * that happens to end the stream, so a plain BLAKE2b-256 is enough.
 */
#include <string.h>

#include <sodium.h>

#include "announce.h"

#define EDP_ANNOUNCE_HASH_OFF (EDP_ANNOUNCE_LEN - EDP_ANNOUNCE_HASH_LEN)
#define EDP_HOST_ID_BYTES ((EDP_HOST_ID_STRLEN - 1) / 2)

_Static_assert(sizeof(EDP_ANNOUNCE_MAGIC) - 1 == EDP_ANNOUNCE_MAGIC_LEN,
	       "magic length");
_Static_assert(sizeof(EDP_ANNOUNCE_MAGIC_V2) - 1 == EDP_ANNOUNCE_MAGIC_LEN,
	       "magic length");
_Static_assert(EDP_ANNOUNCE_HASH_LEN == crypto_generichash_BYTES,
	       "BLAKE2b-256");
_Static_assert(EDP_ANNOUNCE_HASH_OFF - EDP_ANNOUNCE_MAGIC_LEN -
	       EDP_ANNOUNCE_KEY_LEN >= EDP_HOST_ID_BYTES, "host id");

/* Where the random part begins in version V. */
static size_t random_off(int v)
{
	return EDP_ANNOUNCE_MAGIC_LEN + (v == 2 ? EDP_ANNOUNCE_KEY_LEN : 0);
}

/* The hash of everything before the hash. */
static void announce_hash(const uint8_t a[EDP_ANNOUNCE_LEN],
			  uint8_t out[EDP_ANNOUNCE_HASH_LEN])
{
	crypto_generichash(out, EDP_ANNOUNCE_HASH_LEN, a,
			   EDP_ANNOUNCE_HASH_OFF, NULL, 0);
}

/* The version that A's magic names, or 0. */
static int magic_version(const uint8_t a[EDP_ANNOUNCE_LEN])
{
	if (!memcmp(a, EDP_ANNOUNCE_MAGIC, EDP_ANNOUNCE_MAGIC_LEN))
		return 1;
	if (!memcmp(a, EDP_ANNOUNCE_MAGIC_V2, EDP_ANNOUNCE_MAGIC_LEN))
		return 2;
	return 0;
}

void edp_announce_new(uint8_t out[EDP_ANNOUNCE_LEN], const uint8_t *host_key)
{
	int v = host_key ? 2 : 1;
	size_t off = random_off(v);

	memcpy(out, v == 2 ? EDP_ANNOUNCE_MAGIC_V2 : EDP_ANNOUNCE_MAGIC,
	       EDP_ANNOUNCE_MAGIC_LEN);
	if (host_key)
		memcpy(out + EDP_ANNOUNCE_MAGIC_LEN, host_key,
		       EDP_ANNOUNCE_KEY_LEN);
	randombytes_buf(out + off, EDP_ANNOUNCE_HASH_OFF - off);
	announce_hash(out, out + EDP_ANNOUNCE_HASH_OFF);
}

int edp_announce_version(const uint8_t *buf, size_t len)
{
	uint8_t want[EDP_ANNOUNCE_HASH_LEN];
	const uint8_t *a;
	int v;

	if (!buf || len < EDP_ANNOUNCE_LEN)
		return 0;
	/* Only the end counts: the announcement is the last thing sent
	 * before EOF, whatever the server wrote before it. */
	a = buf + len - EDP_ANNOUNCE_LEN;
	v = magic_version(a);
	if (!v)
		return 0;
	announce_hash(a, want);
	if (sodium_memcmp(want, a + EDP_ANNOUNCE_HASH_OFF,
			  EDP_ANNOUNCE_HASH_LEN) != 0)
		return 0;
	return v;
}

bool edp_announce_valid(const uint8_t *buf, size_t len)
{
	return edp_announce_version(buf, len) != 0;
}

void edp_announce_host_id(const uint8_t a[EDP_ANNOUNCE_LEN],
			  char out[EDP_HOST_ID_STRLEN])
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *id = a + random_off(magic_version(a));

	for (size_t i = 0; i < EDP_HOST_ID_BYTES; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 0x0f];
	}
	out[2 * EDP_HOST_ID_BYTES] = '\0';
}

bool edp_announce_host_key(const uint8_t a[EDP_ANNOUNCE_LEN], uint8_t *key)
{
	if (magic_version(a) != 2)
		return false;
	memcpy(key, a + EDP_ANNOUNCE_MAGIC_LEN, EDP_ANNOUNCE_KEY_LEN);
	return true;
}
