// SPDX-License-Identifier: GPL-2.0-only
/*
 * A host key's text forms: the fingerprint is OpenSSH's, checked against
 * values computed apart (Python: "SHA256:" +
 * base64.b64encode(hashlib.sha256(pk).digest()).rstrip(b"=")), and the key
 * parser takes exactly what the formatter writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "hostid.h"
#include "unit.h"

static void counting(uint8_t pk[32])
{
	for (int i = 0; i < 32; i++)
		pk[i] = (uint8_t)i;
}

TEST(fingerprint_as_openssh)
{
	static const struct {
		uint8_t fill;		/* 0: bytes 0..31 */
		const char *fp;
	} cases[] = {
		{ 0, "SHA256:Yw3NKWbEM2aRElRIu7JbT/QSpJxzLbLIq8G4WBvXEN0" },
		{ 0xff, "SHA256:r5YTdg9yY1+9tEpaCmPDnxKvMPlQpu5clxvhiOicQFE" },
	};
	char fp[EDP_HOST_FP_STRLEN];
	uint8_t pk[32];

	if (sodium_init() < 0)
		abort();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].fill)
			memset(pk, cases[i].fill, sizeof(pk));
		else
			counting(pk);
		edp_host_fingerprint(pk, fp);
		CHECK_EQ_STR(fp, cases[i].fp);
		CHECK_EQ_INT(strlen(fp), EDP_HOST_FP_STRLEN - 1);
		CHECK(edp_host_fp_valid(fp));
	}
}

TEST(key_format_and_parse)
{
	char s[EDP_HOST_KEY_STRLEN];
	uint8_t pk[32], back[32];

	counting(pk);
	edp_host_key_format(pk, s);
	CHECK_EQ_STR(s, "racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
	CHECK_EQ_INT(strlen(s), EDP_HOST_KEY_STRLEN - 1);
	memset(back, 0, sizeof(back));
	CHECK_EQ_INT(edp_host_key_parse(s, back), 0);
	CHECK_EQ_MEM(back, pk, sizeof(pk));
	for (int i = 0; i < 64; i++) {
		randombytes_buf(pk, sizeof(pk));
		edp_host_key_format(pk, s);
		CHECK_EQ_INT(edp_host_key_parse(s, back), 0);
		CHECK_EQ_MEM(back, pk, sizeof(pk));
	}
}

/* Anything but the one text form is refused, and the output untouched. */
TEST(key_parse_is_strict)
{
	static const char *const bad[] = {
		"",
		"racks-x25519:",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"racks-x448:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"RACKS-X25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		/* no padding, short, long */
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==",
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==",
		/* unused bits set: "Hh8=" would be canonical */
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",
		/* the URL-safe alphabet, blanks, a newline */
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd-_8=",
		" racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= ",
		"racks-x25519: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
		"racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd\nh8=",
	};
	uint8_t pk[32], zero[32] = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(pk, 0, sizeof(pk));
		if (!CHECK_EQ_INT(edp_host_key_parse(bad[i], pk), -EINVAL))
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
		CHECK_EQ_MEM(pk, zero, sizeof(pk));
	}
	CHECK_EQ_INT(edp_host_key_parse(NULL, pk), -EINVAL);
}

TEST(fingerprint_form)
{
	CHECK(edp_host_fp_valid(
		"SHA256:Yw3NKWbEM2aRElRIu7JbT/QSpJxzLbLIq8G4WBvXEN0"));
	CHECK(!edp_host_fp_valid(
		"SHA256:Yw3NKWbEM2aRElRIu7JbT/QSpJxzLbLIq8G4WBvXEN0="));
	CHECK(!edp_host_fp_valid(
		"SHA256:Yw3NKWbEM2aRElRIu7JbT/QSpJxzLbLIq8G4WBvXEN"));
	CHECK(!edp_host_fp_valid(
		"SHA256:Yw3NKWbEM2aRElRIu7JbT/QSpJxzLbLIq8G4WBvXE-0"));
	CHECK(!edp_host_fp_valid(
		"MD5:Yw3NKWbEM2aRElRIu7JbT/QSpJxzLbLIq8G4WBvXEN0"));
	CHECK(!edp_host_fp_valid(""));
	CHECK(!edp_host_fp_valid(NULL));
}

static const struct unit_test tests[] = {
	UNIT(fingerprint_as_openssh),
	UNIT(key_format_and_parse),
	UNIT(key_parse_is_strict),
	UNIT(fingerprint_form),
};

UNIT_MAIN("hostid", tests)
