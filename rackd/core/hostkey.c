// SPDX-License-Identifier: GPL-2.0-only
#include "hostkey.h"

#include <sodium.h>

_Static_assert(HOSTKEY_LEN == crypto_scalarmult_BYTES &&
	       HOSTKEY_LEN == crypto_scalarmult_SCALARBYTES, "X25519");

void hostkey_generate(struct hostkey *k)
{
	randombytes_buf(k->sk, sizeof(k->sk));
	hostkey_from_secret(k);
}

void hostkey_from_secret(struct hostkey *k)
{
	crypto_scalarmult_base(k->pk, k->sk);
}

bool hostkey_matches(const struct hostkey *k)
{
	uint8_t pk[HOSTKEY_LEN];
	bool same;

	crypto_scalarmult_base(pk, k->sk);
	same = sodium_memcmp(pk, k->pk, sizeof(pk)) == 0;
	sodium_memzero(pk, sizeof(pk));
	return same;
}

void hostkey_wipe(struct hostkey *k)
{
	sodium_memzero(k, sizeof(*k));
}
