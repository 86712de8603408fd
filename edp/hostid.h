/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A host's identity: its static X25519 public key, in the text forms
 * that rackd, rackctl, the key file and the known-hosts file share.
 *
 *   key          "racks-x25519:" + standard base64 (with padding) of the
 *                32-byte public key: 57 characters
 *   fingerprint  "SHA256:" + standard base64 without padding of the
 *                SHA-256 of the 32 bytes: 50 characters, as OpenSSH
 *                shows its host keys' (ssh-keygen -l)
 *
 * rackd keeps the secret half (rackd/core/hostkey.h); nothing here
 * touches a secret.
 */
#ifndef RACKS_EDP_HOSTID_H
#define RACKS_EDP_HOSTID_H

#include <stdbool.h>
#include <stdint.h>

#define EDP_HOST_KEY_LEN 32
#define EDP_HOST_KEY_PREFIX "racks-x25519:"
#define EDP_HOST_FP_PREFIX "SHA256:"
/* The text forms' sizes, including the terminating NUL. */
#define EDP_HOST_KEY_STRLEN (sizeof(EDP_HOST_KEY_PREFIX) - 1 + 44 + 1)
#define EDP_HOST_FP_STRLEN (sizeof(EDP_HOST_FP_PREFIX) - 1 + 43 + 1)

/* "SHA256:..." of PK into OUT (EDP_HOST_FP_STRLEN bytes). */
void edp_host_fingerprint(const uint8_t pk[EDP_HOST_KEY_LEN], char *out);
/* "racks-x25519:..." of PK into OUT (EDP_HOST_KEY_STRLEN bytes). */
void edp_host_key_format(const uint8_t pk[EDP_HOST_KEY_LEN], char *out);
/* The key written by edp_host_key_format() and nothing else: the
 * prefix, exactly 44 base64 characters with their padding, canonical
 * (unused bits zero), no blank around. 0, or -EINVAL (PK untouched). */
int edp_host_key_parse(const char *s, uint8_t pk[EDP_HOST_KEY_LEN]);
/* Whether S has the form of a fingerprint ("SHA256:" and 43 base64
 * characters); says nothing of whose it is. */
bool edp_host_fp_valid(const char *s);

#endif
