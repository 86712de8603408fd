/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The classic EDP announcement: what an enhanced server sends, last
 * before EOF, to a client that connected and shut down its write side
 * without sending anything. 1024 bytes, per host, self-verifying:
 *
 *   magic "racks-announce-1" (16) | random (976) | BLAKE2b-256 of both (32)
 *
 * A client recognises it without knowing the host in advance; the random
 * part identifies the host.
 */
#ifndef RACKS_EDP_ANNOUNCE_H
#define RACKS_EDP_ANNOUNCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EDP_ANNOUNCE_LEN 1024
#define EDP_ANNOUNCE_MAGIC "racks-announce-1"
#define EDP_ANNOUNCE_MAGIC_LEN 16
#define EDP_ANNOUNCE_HASH_LEN 32
#define EDP_HOST_ID_STRLEN 17	/* 16 hex digits + NUL */

/* Probes mark their packets with DSCP "LE" (RFC 8622, value 1), the
 * TOS / traffic class byte 0x04; rackd answers only such probes, so an
 * ordinary client that half-closes first is never sent an announcement. */
#define EDP_PROBE_DSCP 1
#define EDP_PROBE_TOS (EDP_PROBE_DSCP << 2)

/* Fill OUT with a fresh announcement (libsodium must be initialised). */
void edp_announce_new(uint8_t out[EDP_ANNOUNCE_LEN]);
/* True when the LEN bytes at BUF end with a valid announcement. */
bool edp_announce_valid(const uint8_t *buf, size_t len);
/* Host id: the first 8 random bytes of a valid announcement, in hex. */
void edp_announce_host_id(const uint8_t a[EDP_ANNOUNCE_LEN],
			  char out[EDP_HOST_ID_STRLEN]);

#endif
