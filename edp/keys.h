/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-connection key agreement between two rackds: each end makes an
 * ephemeral X25519 key pair, they exchange public keys, and both derive
 *
 *   K = BLAKE2b-256(key = X25519 shared secret,
 *                   "racks key v1" | pk_client | pk_server |
 *                   isn_client | isn_server)
 *
 * The ephemeral keys are the nonces; the ISNs bind K to this connection.
 * Each end proves it holds K with a MAC over the same transcript, and the
 * connection id and the displayed fingerprint are derived from K, so both
 * ends show the same ones without ever revealing K.
 */
#ifndef RACKS_EDP_KEYS_H
#define RACKS_EDP_KEYS_H

#include <stdint.h>

#include "option.h"

#define EDP_SECRET_LEN 32
#define EDP_FINGERPRINT_STRLEN 17	/* 16 hex digits + NUL */

struct edp_keypair {
	uint8_t pk[EDP_KEY_LEN];
	uint8_t sk[EDP_KEY_LEN];
};

/* What both ends agree on before deriving K. */
struct edp_transcript {
	uint8_t pk_client[EDP_KEY_LEN];
	uint8_t pk_server[EDP_KEY_LEN];
	uint32_t isn_client, isn_server;
};

/* Who proves possession of K with a MAC. */
enum edp_role {
	EDP_ROLE_SERVER_CONFIRM = 1,	/* server -> client */
	EDP_ROLE_CLIENT_CONFIRM = 2,	/* client -> server */
	EDP_ROLE_SERVER_DONE = 3,	/* server -> client, last */
	/* Heartbeats, by sender, so none can be reflected back. */
	EDP_ROLE_CLIENT_HEARTBEAT = 4,
	EDP_ROLE_SERVER_HEARTBEAT = 5,
	EDP_ROLE_CLIENT_HEARTBEAT_ACK = 6,
	EDP_ROLE_SERVER_HEARTBEAT_ACK = 7,
	/* Reconnections, likewise by sender. */
	EDP_ROLE_CLIENT_RECONNECT = 8,
	EDP_ROLE_SERVER_RECONNECT = 9,
	EDP_ROLE_CLIENT_RECONNECT_ACK = 10,
	EDP_ROLE_SERVER_RECONNECT_ACK = 11,
	/* Migrations (AWAY), likewise by sender. */
	EDP_ROLE_CLIENT_AWAY = 12,
	EDP_ROLE_SERVER_AWAY = 13,
	EDP_ROLE_CLIENT_AWAY_ACK = 14,
	EDP_ROLE_SERVER_AWAY_ACK = 15,
	/* 16, 17: type 12 (ADOPT) carries no MAC. Reconnection confirmations,
	 * by sender, over the challenge they answer. */
	EDP_ROLE_CLIENT_RECONNECT_CONFIRM = 18,
	EDP_ROLE_SERVER_RECONNECT_CONFIRM = 19,
};

/* The random challenge a reconnection's SYN-ACK carries (rcsyn.h). */
#define EDP_CHALLENGE_LEN 16

void edp_keypair_new(struct edp_keypair *kp);
void edp_keypair_wipe(struct edp_keypair *kp);
/* Derive K from our secret key and the peer's public key. Returns
 * -EINVAL for a peer key of low order (all-zero shared secret). */
int edp_derive(const struct edp_keypair *ours, const uint8_t *peer_pk,
	       const struct edp_transcript *t, uint8_t key[EDP_SECRET_LEN]);
void edp_mac(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
	     const struct edp_transcript *t, uint8_t mac[EDP_MAC_LEN]);
/* The MAC of a numbered message (heartbeats): COUNTER is covered too. */
void edp_mac_counter(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
		     uint32_t counter, const struct edp_transcript *t,
		     uint8_t mac[EDP_MAC_LEN]);
int edp_mac_counter_verify(const uint8_t key[EDP_SECRET_LEN],
			   enum edp_role role, uint32_t counter,
			   const struct edp_transcript *t, const uint8_t *mac);
/* The MAC of a reconnection's confirmation: COUNTER and the CHALLENGE
 * (EDP_CHALLENGE_LEN bytes) it answers are covered too. */
void edp_mac_challenge(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
		       uint32_t counter, const uint8_t *challenge,
		       const struct edp_transcript *t, uint8_t mac[EDP_MAC_LEN]);
int edp_mac_challenge_verify(const uint8_t key[EDP_SECRET_LEN],
			     enum edp_role role, uint32_t counter,
			     const uint8_t *challenge,
			     const struct edp_transcript *t, const uint8_t *mac);
/* Constant-time check of a received MAC. */
int edp_mac_verify(const uint8_t key[EDP_SECRET_LEN], enum edp_role role,
		   const struct edp_transcript *t, const uint8_t *mac);
uint64_t edp_conn_id(const uint8_t key[EDP_SECRET_LEN]);
void edp_fingerprint(const uint8_t key[EDP_SECRET_LEN],
		     char out[EDP_FINGERPRINT_STRLEN]);

#endif
