/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The classic EDP announcement: what an enhanced server sends, last
 * before EOF, to a client that connected and shut down its write side
 * without sending anything. 1024 bytes, per host, self-verifying, in
 * one of two versions:
 *
 *   1: magic "racks-announce-1" (16) | random (976)         | BLAKE2b-256 (32)
 *   2: magic "racks-announce-2" (16) | host key (32) | random (944)
 *                                                            | BLAKE2b-256 (32)
 *
 * the hash over everything before it. A client recognises either without
 * knowing the host in advance; the first 8 random bytes identify the
 * host until it restarts (the host id), and version 2 carries the host's
 * static X25519 public key (edp/hostid.h: what `rackctl keyscan` learns).
 * The hash only tells an announcement from application data that happens
 * to end the stream: it proves nothing about the key, which is taken on
 * trust, as ssh-keyscan's are. rackd sends version 2; clients accept both.
 */
#ifndef RACKS_EDP_ANNOUNCE_H
#define RACKS_EDP_ANNOUNCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EDP_ANNOUNCE_LEN 1024
#define EDP_ANNOUNCE_MAGIC "racks-announce-1"
#define EDP_ANNOUNCE_MAGIC_V2 "racks-announce-2"
#define EDP_ANNOUNCE_MAGIC_LEN 16
#define EDP_ANNOUNCE_KEY_LEN 32	/* version 2: right after the magic */
#define EDP_ANNOUNCE_HASH_LEN 32
#define EDP_HOST_ID_STRLEN 17	/* 16 hex digits + NUL */

/* Probes mark their packets with DSCP "LE" (RFC 8622, value 1), the
 * TOS / traffic class byte 0x04; rackd answers only such probes, so an
 * ordinary client that half-closes first is never sent an announcement. */
#define EDP_PROBE_DSCP 1
#define EDP_PROBE_TOS (EDP_PROBE_DSCP << 2)

/* Fill OUT with a fresh announcement (libsodium must be initialised):
 * version 2 carrying HOST_KEY, or version 1 when HOST_KEY is NULL. */
void edp_announce_new(uint8_t out[EDP_ANNOUNCE_LEN], const uint8_t *host_key);
/* The version (1 or 2) of the valid announcement that the LEN bytes at
 * BUF end with, or 0 if they do not end with one. */
int edp_announce_version(const uint8_t *buf, size_t len);
/* True when the LEN bytes at BUF end with a valid announcement. */
bool edp_announce_valid(const uint8_t *buf, size_t len);
/* Host id: the first 8 random bytes of a valid announcement, in hex. */
void edp_announce_host_id(const uint8_t a[EDP_ANNOUNCE_LEN],
			  char out[EDP_HOST_ID_STRLEN]);
/* The host key of a valid version 2 announcement into KEY (32 bytes);
 * false for version 1, which has none. */
bool edp_announce_host_key(const uint8_t a[EDP_ANNOUNCE_LEN], uint8_t *key);

#endif
