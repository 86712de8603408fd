/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sending TCP segments rackd makes itself (set-up messages, probe
 * answers) through raw sockets. Every one carries rackd's mark, so its
 * own ruleset never diverts them back (NOTES.md, section 3).
 */
#ifndef RACKS_INJECT_H
#define RACKS_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

struct inject;

struct inject_segment {
	const struct endpoint *src, *dst;
	uint32_t seq, ack;
	uint8_t flags;		/* TCP_FLAG_* */
	uint16_t window;
	uint8_t tos;		/* IPv4 TOS / IPv6 traffic class */
	const uint8_t *options;	/* a multiple of four bytes */
	size_t optlen;
	const uint8_t *payload;
	size_t paylen;
	/* Past the splices: sent with the unspliced mark, which the
	 * splicing rules let by (a reconnection's SYN-ACK to where a SYN
	 * came from, which may be the socket's own endpoints while the
	 * connection is still spliced elsewhere). */
	bool unspliced;
};

/* Raw sockets carrying MARK, and UNSPLICED_MARK for unspliced segments. */
int inject_open(struct inject **out, uint32_t mark, uint32_t unspliced_mark);
void inject_close(struct inject *inj);
void inject_set_mark(struct inject *inj, uint32_t mark,
		     uint32_t unspliced_mark);
/* Build the segment (IP header, TCP header, checksums) and send it. */
int inject_send(struct inject *inj, const struct inject_segment *seg);
/*
 * An ICMP host unreachable (ICMPv6 no route) to LOCAL about its segment
 * LOCAL -> REMOTE at SEQ: Linux reverts one step of that socket's RTO
 * backoff for each (RFC 6069, tcp_ld_RTO_revert()).
 */
int inject_unreachable(struct inject *inj, const struct endpoint *local,
		       const struct endpoint *remote, uint32_t seq);
/* Build only (exposed for tests): returns the length or -errno. */
int inject_build(const struct inject_segment *seg, uint8_t *out,
		 size_t outsize);

#endif
