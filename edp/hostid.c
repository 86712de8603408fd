// SPDX-License-Identifier: GPL-2.0-only
/*
 * A host key's text forms (hostid.h). libsodium's base64 decoder is
 * strict already: it refuses missing or extra padding, characters of
 * the other alphabet and non-zero unused bits, so a key has exactly one
 * text form.
 */
#include "hostid.h"

#include <errno.h>
#include <string.h>

#include <sodium.h>

#define KEY_PREFIX_LEN (sizeof(EDP_HOST_KEY_PREFIX) - 1)
#define FP_PREFIX_LEN (sizeof(EDP_HOST_FP_PREFIX) - 1)
#define KEY_B64_LEN (EDP_HOST_KEY_STRLEN - 1 - KEY_PREFIX_LEN)
#define FP_B64_LEN (EDP_HOST_FP_STRLEN - 1 - FP_PREFIX_LEN)

_Static_assert(KEY_B64_LEN + 1 == sodium_base64_ENCODED_LEN(
	EDP_HOST_KEY_LEN, sodium_base64_VARIANT_ORIGINAL), "key length");
_Static_assert(FP_B64_LEN + 1 == sodium_base64_ENCODED_LEN(
	crypto_hash_sha256_BYTES, sodium_base64_VARIANT_ORIGINAL_NO_PADDING),
	"fingerprint length");

void edp_host_fingerprint(const uint8_t pk[EDP_HOST_KEY_LEN], char *out)
{
	uint8_t h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, pk, EDP_HOST_KEY_LEN);
	memcpy(out, EDP_HOST_FP_PREFIX, FP_PREFIX_LEN);
	sodium_bin2base64(out + FP_PREFIX_LEN, FP_B64_LEN + 1, h, sizeof(h),
			  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

void edp_host_key_format(const uint8_t pk[EDP_HOST_KEY_LEN], char *out)
{
	memcpy(out, EDP_HOST_KEY_PREFIX, KEY_PREFIX_LEN);
	sodium_bin2base64(out + KEY_PREFIX_LEN, KEY_B64_LEN + 1, pk,
			  EDP_HOST_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
}

int edp_host_key_parse(const char *s, uint8_t pk[EDP_HOST_KEY_LEN])
{
	uint8_t bin[EDP_HOST_KEY_LEN];
	char back[KEY_B64_LEN + 1];
	const char *end = NULL;
	size_t len = 0;

	if (!s || strncmp(s, EDP_HOST_KEY_PREFIX, KEY_PREFIX_LEN) ||
	    strlen(s + KEY_PREFIX_LEN) != KEY_B64_LEN)
		return -EINVAL;
	s += KEY_PREFIX_LEN;
	if (sodium_base642bin(bin, sizeof(bin), s, KEY_B64_LEN, NULL, &len,
			      &end, sodium_base64_VARIANT_ORIGINAL) ||
	    len != sizeof(bin) || end != s + KEY_B64_LEN)
		return -EINVAL;
	/* But libsodium 1.0.18 decodes some bytes above 0x7f as base64
	 * characters (a signed char compared as unsigned: 0xb2 as '/'):
	 * only the one canonical spelling of the key is taken. */
	sodium_bin2base64(back, sizeof(back), bin, sizeof(bin),
			  sodium_base64_VARIANT_ORIGINAL);
	if (memcmp(back, s, KEY_B64_LEN) != 0)
		return -EINVAL;
	memcpy(pk, bin, sizeof(bin));
	return 0;
}

bool edp_host_fp_valid(const char *s)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";

	return s && !strncmp(s, EDP_HOST_FP_PREFIX, FP_PREFIX_LEN) &&
	       strlen(s + FP_PREFIX_LEN) == FP_B64_LEN &&
	       strspn(s + FP_PREFIX_LEN, b64) == FP_B64_LEN;
}
