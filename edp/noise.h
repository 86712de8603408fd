/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Noise protocol framework (revision 34), one protocol of it:
 *
 *   Noise_XX_25519_ChaChaPoly_BLAKE2b
 *
 *   -> e
 *   <- e, ee, s, es
 *   -> s, se
 *
 * Two hosts that know nothing of each other in advance exchange their
 * static X25519 keys, each encrypted and authenticated, and end with a
 * handshake hash h and two keys of Split(). Built on libsodium only:
 * X25519 (crypto_scalarmult), ChaCha20-Poly1305 IETF with Noise's nonce
 * (4 zero bytes, then the 64-bit counter little-endian), BLAKE2b-512
 * (HASHLEN 64, BLOCKLEN 128), and HMAC-BLAKE2b (RFC 2104) and HKDF
 * written here as the spec defines them.
 *
 * A handshake state is embeddable and uses no heap; every secret in it is
 * wiped once no longer needed, and the whole of it by noise_hs_wipe().
 * A message is at most NOISE_MAX_MSG_LEN bytes (the spec's 65535).
 * libsodium must be initialised.
 */
#ifndef RACKS_EDP_NOISE_H
#define RACKS_EDP_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NOISE_KEY_LEN 32	/* DHLEN, and a cipher key */
#define NOISE_HASH_LEN 64	/* HASHLEN of BLAKE2b */
#define NOISE_TAG_LEN 16	/* Poly1305 */
#define NOISE_MAX_MSG_LEN 65535
#define NOISE_PROTOCOL_NAME "Noise_XX_25519_ChaChaPoly_BLAKE2b"

enum noise_role { NOISE_INITIATOR, NOISE_RESPONDER };

/* Private: use the functions below. */
struct noise_hs {
	uint8_t h[NOISE_HASH_LEN];	/* handshake hash */
	uint8_t ck[NOISE_HASH_LEN];	/* chaining key */
	uint8_t k[NOISE_KEY_LEN];	/* the CipherState's key ... */
	uint64_t n;			/* ... and nonce */
	bool has_k;
	uint8_t s_sk[NOISE_KEY_LEN], s_pk[NOISE_KEY_LEN];
	uint8_t e_sk[NOISE_KEY_LEN], e_pk[NOISE_KEY_LEN];
	uint8_t rs[NOISE_KEY_LEN], re[NOISE_KEY_LEN];
	bool has_rs, e_fixed;
	uint8_t k1[NOISE_KEY_LEN], k2[NOISE_KEY_LEN];	/* Split() */
	enum noise_role role;
	/* The index of the next message (0, 1, 2), then done or failed. */
	int state;
};

/* S_SK: our static X25519 secret (the public key is derived inside).
 * PROLOGUE (may be NULL when PROLOGUE_LEN is 0) must be the same at both
 * ends, or the handshake fails. */
void noise_hs_init(struct noise_hs *hs, enum noise_role role,
		   const uint8_t *prologue, size_t prologue_len,
		   const uint8_t s_sk[NOISE_KEY_LEN]);
/* Tests only: a fixed ephemeral secret instead of a random one; before
 * the first message this side writes. */
void noise_hs_set_ephemeral(struct noise_hs *hs,
			    const uint8_t e_sk[NOISE_KEY_LEN]);
/* Write the next handshake message, carrying PAYLOAD, into OUT (ROOM
 * bytes; not overlapping PAYLOAD): 0 and its length in *OUT_LEN; -EINVAL
 * when it is the peer's turn or the handshake is over (done or failed);
 * -EMSGSIZE when it does not fit ROOM or NOISE_MAX_MSG_LEN, with HS
 * unchanged; -EBADMSG (HS unusable) when a DH gives the all-zero secret,
 * which noise_hs_read() prevents by refusing low-order keys. */
int noise_hs_write(struct noise_hs *hs, const uint8_t *payload,
		   size_t payload_len, uint8_t *out, size_t room,
		   size_t *out_len);
/* Read the peer's next message (LEN bytes at MSG): 0 with its payload in
 * PAYLOAD (ROOM bytes) and its length in *PAYLOAD_LEN. -EBADMSG when it
 * fails to decrypt, has the wrong length for its place in XX, or brings
 * a public key of low order (an all-zero shared secret): HS is then
 * unusable (the caller wipes it). -EINVAL when it is our turn or the
 * handshake is over; -EMSGSIZE when the payload does not fit ROOM, with
 * HS unchanged. */
int noise_hs_read(struct noise_hs *hs, const uint8_t *msg, size_t len,
		  uint8_t *payload, size_t room, size_t *payload_len);
bool noise_hs_done(const struct noise_hs *hs);
/* The peer's static public key (NOISE_KEY_LEN bytes), NULL until learnt
 * (the initiator learns it from message 1, the responder from 2). */
const uint8_t *noise_hs_remote_static(const struct noise_hs *hs);
/* The peer's ephemeral public key, NULL until its first message is read:
 * what a rotation proof (hostpair.h) is made for, fresh each handshake. */
const uint8_t *noise_hs_remote_ephemeral(const struct noise_hs *hs);
/* Check PROOF that the holder of OLD_PK made NEW_PK, made for our
 * ephemeral key (edp_rotation_proof with it as the verifier): 0,
 * -EBADMSG, or -EINVAL (no ephemeral key: not sent yet, or wiped when
 * the handshake finished). */
int noise_hs_rotation_verify(const struct noise_hs *hs, const uint8_t *old_pk,
			     const uint8_t *new_pk, const uint8_t *proof);
/* Once done: the handshake hash and Split()'s two keys (k1 encrypts the
 * initiator's transport messages, k2 the responder's). Before, zeroes. */
void noise_hs_result(const struct noise_hs *hs, uint8_t h[NOISE_HASH_LEN],
		     uint8_t k1[NOISE_KEY_LEN], uint8_t k2[NOISE_KEY_LEN]);
/* sodium_memzero the whole state: after use, and after any failure. */
void noise_hs_wipe(struct noise_hs *hs);
/* The length of XX's message INDEX (0, 1, 2) with a payload of
 * PAYLOAD_LEN bytes: 32 + n, 32 + 48 + n + 16, 48 + n + 16; 0 for
 * another index. */
size_t noise_xx_msg_len(int index, size_t payload_len);

#endif
