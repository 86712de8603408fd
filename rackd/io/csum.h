/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internet checksums (RFC 1071) for TCP over IPv4 and IPv6, and the
 * incremental update of RFC 1624 for fields rewritten in place.
 */
#ifndef RACKS_CSUM_H
#define RACKS_CSUM_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"

/* Add LEN bytes at DATA (network order) to a 32-bit running sum. */
uint32_t csum_add(uint32_t sum, const void *data, size_t len);
/* Fold a running sum to 16 bits (not complemented). */
uint16_t csum_fold(uint32_t sum);
/* Running sum of the TCP/UDP pseudo-header. */
uint32_t csum_pseudo(const struct addr *src, const struct addr *dst,
		     uint8_t proto, uint32_t len);

/*
 * Full TCP checksum of SEG (header + payload, LEN bytes) as it must be
 * stored in the header; the stored checksum field is treated as zero.
 */
uint16_t csum_tcp(const struct addr *src, const struct addr *dst,
		  const void *seg, size_t len);
/* 1 when the segment's stored checksum is correct. */
int csum_tcp_valid(const struct addr *src, const struct addr *dst,
		   const void *seg, size_t len);

/* RFC 1624: update stored checksum CHECK (network order) for a 16-bit
 * field changing from OLD to NEW (both network order). */
uint16_t csum_replace16(uint16_t check, uint16_t old, uint16_t new_);
uint16_t csum_replace32(uint16_t check, uint32_t old, uint32_t new_);

#endif
