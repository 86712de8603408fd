/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Rewriting the TCP options of a parsed packet into a new buffer: adding
 * racks' option to a SYN / SYN-ACK and removing it again. The IP length
 * fields, the IPv4 header checksum, the data offset and the full TCP
 * checksum of the result are always right; the caller verified the
 * original's checksum where that matters.
 */
#ifndef RACKS_REWRITE_H
#define RACKS_REWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "packet.h"

#define TCP_MAX_HDR 60

/*
 * Copy PKT into OUT with OPT (OPTLEN bytes, a multiple of four) placed
 * first among the TCP options. Returns the new length, or -ENOSPC when
 * the TCP header would exceed 60 bytes, -EMSGSIZE when OUT is too small.
 */
int rewrite_add_option(const struct packet *pkt, const uint8_t *opt,
		       size_t optlen, uint8_t *out, size_t outsize);
/*
 * Copy PKT into OUT without the option at offset OFF (LEN bytes) and the
 * NOPs right after it, padding the options to a multiple of four.
 */
int rewrite_remove_option(const struct packet *pkt, size_t off, size_t len,
			  uint8_t *out, size_t outsize);
/* Recompute the IP length fields and checksums of a packet in BUF whose
 * TCP header starts at TCP_OFF; used after any change. */
void rewrite_fix(uint8_t *buf, size_t len, size_t tcp_off,
		 const struct packet *orig);

#endif
