/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host's static X25519 key pair: its identity towards other rackds
 * (edp/hostid.h for the public key's text forms). The pair lives in
 * struct rackd; its file is rackd/persist/hostkey_file.h's. Secrets are
 * wiped with hostkey_wipe() before their memory goes.
 */
#ifndef RACKS_HOSTKEY_H
#define RACKS_HOSTKEY_H

#include <stdbool.h>
#include <stdint.h>

#define HOSTKEY_LEN 32

struct hostkey {
	uint8_t pk[HOSTKEY_LEN];
	uint8_t sk[HOSTKEY_LEN];
};

/* A fresh pair (libsodium initialised). */
void hostkey_generate(struct hostkey *k);
/* Complete K from its secret half: pk = X25519(sk, base point). */
void hostkey_from_secret(struct hostkey *k);
/* Whether K's public half is the one its secret half makes. */
bool hostkey_matches(const struct hostkey *k);
void hostkey_wipe(struct hostkey *k);

#endif
