/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What two racks hosts derive once they know each other: a host pair's
 * secret from a finished Noise XX handshake (noise.h), and from it the
 * key of each of their connections; proofs that a host's new static key
 * was made by the holder of the old one; and the text forms of a host's
 * public key. All are BLAKE2b (libsodium's crypto_generichash), keyed,
 * over a distinct ASCII label first:
 *
 *   secret = BLAKE2b-256(key = k1, "racks host pair v1" | k2 | h)
 *   id     = first 4 bytes, big-endian, of
 *            BLAKE2b-128(key = secret, "racks host pair id"); 0 becomes 1
 *   K      = BLAKE2b-256(key = secret, "racks derived key v1" |
 *                        isn_c | isn_s | nonce_c | nonce_s |
 *                        addr_c | port_c | addr_s | port_s)
 *   proof  = BLAKE2b-128(key = X25519(old_sk, verifier_pk),
 *                        "racks key rotation v1" |
 *                        old_pk | new_pk | verifier_pk)
 *
 * (h, k1, k2: the handshake hash and Split()'s keys; integers are
 * big-endian, addresses 16 bytes, IPv4 as ::ffff:a.b.c.d.)
 *
 * Why each input of K is there:
 * - isn_c, isn_s: the ISNs bind K to this socket pair's sequence space,
 *   as TCP-AO's traffic keys do (RFC 5925, 5.2): a later connection on
 *   the same 4-tuple gets another key.
 * - nonce_c, nonce_s: 8 fresh random bytes from each side. Either side's
 *   alone makes K new even if the other replays an old SYN (with its
 *   ISN and nonce) to reproduce a key it once saw used.
 * - addr_c, port_c, addr_s, port_s: the 4-tuple, for a caller whose
 *   two ends see the same one. rackd passes them as zero: a NAT or a
 *   port forward between the hosts shows each end another tuple, and
 *   the ISNs and both fresh nonces already make each connection's key
 *   its own.
 * The labels end in a version so that a later derivation never yields
 * the same bytes. The pair's id is public (it names the pair on the
 * wire) and reveals nothing of the secret.
 *
 * Text forms of a host key:
 *   racks-x25519:<base64 of the 32 bytes, with padding>   (44 characters)
 *   SHA256:<base64 of SHA-256(pk), without padding>      (OpenSSH's style)
 *
 * libsodium must be initialised.
 */
#ifndef RACKS_EDP_HOSTPAIR_H
#define RACKS_EDP_HOSTPAIR_H

#include <stdint.h>

#include "hostid.h"

#define EDP_HOSTPAIR_SECRET_LEN 32
#define EDP_ROTATION_PROOF_LEN 16

/* What both ends of a connection know of it when they derive its key. */
struct edp_conn_transcript {
	uint32_t isn_client, isn_server;
	uint8_t nonce_client[8], nonce_server[8];
	/* IPv4 as ::ffff:a.b.c.d */
	uint8_t addr_client[16], addr_server[16];
	uint16_t port_client, port_server;
};

/* The host pair's secret from a finished XX handshake (noise_hs_result). */
void edp_hostpair_secret(const uint8_t h[64], const uint8_t k1[32],
			 const uint8_t k2[32],
			 uint8_t secret[EDP_HOSTPAIR_SECRET_LEN]);
/* The pair's 32-bit id, the same at both ends; never 0 ("none"). */
uint32_t edp_hostpair_id(const uint8_t secret[EDP_HOSTPAIR_SECRET_LEN]);
/* A connection's key K from the pair's secret and its transcript. */
void edp_conn_key(const uint8_t secret[EDP_HOSTPAIR_SECRET_LEN],
		  const struct edp_conn_transcript *t, uint8_t key[32]);

/* A host that rotated its static key proves to the peer of static key
 * VERIFIER_PK that the holder of OLD_SK made NEW_PK: 0, or -EINVAL when
 * VERIFIER_PK is of low order (all-zero shared secret). */
int edp_rotation_proof(const uint8_t old_sk[EDP_HOST_KEY_LEN],
		       const uint8_t verifier_pk[EDP_HOST_KEY_LEN],
		       const uint8_t new_pk[EDP_HOST_KEY_LEN],
		       uint8_t proof[EDP_ROTATION_PROOF_LEN]);
/* The verifier's check, with its own secret OUR_SK: 0 when PROOF is
 * right (compared in constant time), -EBADMSG when not, -EINVAL when
 * OLD_PK is of low order. */
int edp_rotation_verify(const uint8_t our_sk[EDP_HOST_KEY_LEN],
			const uint8_t old_pk[EDP_HOST_KEY_LEN],
			const uint8_t new_pk[EDP_HOST_KEY_LEN],
			const uint8_t proof[EDP_ROTATION_PROOF_LEN]);

#endif
