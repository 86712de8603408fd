/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Validating parser for the packets rackd receives from NFQUEUE: an IPv4
 * or IPv6 header (with extension headers), a TCP header and its options.
 * Every length is checked before it is used; a packet that fails is
 * accepted unmodified by the caller and counted by its error reason.
 */
#ifndef RACKS_PACKET_H
#define RACKS_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

enum packet_error {
	PACKET_OK = 0,
	PACKET_ERR_SHORT,	/* shorter than its IP header */
	PACKET_ERR_VERSION,	/* neither IPv4 nor IPv6 */
	PACKET_ERR_IP_HEADER,	/* bad IHL or total length */
	PACKET_ERR_TRUNCATED,	/* IP length exceeds what was copied */
	PACKET_ERR_FRAGMENT,	/* non-initial or incomplete fragment */
	PACKET_ERR_EXT_HEADER,	/* IPv6 extension header chain malformed */
	PACKET_ERR_NOT_TCP,
	PACKET_ERR_TCP_HEADER,	/* TCP header shorter than 20 or doff bad */
	PACKET_ERR_TCP_OPTION,	/* option overruns or has a wrong length */
	PACKET_ERR_MAX
};

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_RST 0x04
#define TCP_FLAG_PSH 0x08
#define TCP_FLAG_ACK 0x10

#define TCP_OPT_EOL 0
#define TCP_OPT_NOP 1
#define TCP_OPT_MSS 2
#define TCP_OPT_WSCALE 3
#define TCP_OPT_SACK_PERM 4
#define TCP_OPT_SACK 5
#define TCP_OPT_TIMESTAMP 8
#define TCP_OPT_EXP 254		/* RFC 6994 shared experimental option */

#define TCP_MAX_SACK_BLOCKS 4

struct tcp_sack_block {
	uint32_t left, right;
};

struct tcp_options {
	bool has_mss;
	bool has_wscale;
	bool sack_permitted;
	bool has_timestamp;
	uint16_t mss;
	uint8_t wscale;
	uint8_t nsack;
	uint32_t tsval, tsecr;
	struct tcp_sack_block sack[TCP_MAX_SACK_BLOCKS];
	/* The first racks option: kind 254 with racks' ExID (RFC 6994);
	 * other experimental options (TCP Fast Open's) are skipped. */
	uint16_t racks_off;	/* offset in the packet */
	uint8_t racks_len;	/* 0 if none */
};

struct packet {
	const uint8_t *data;	/* the whole IP packet */
	size_t len;		/* its length per the IP header */
	uint8_t family;
	struct addr src, dst;
	size_t tcp_off;		/* offset of the TCP header in data */
	size_t tcp_len;		/* TCP header + payload */
	size_t hdr_len;		/* TCP header incl. options */
	size_t payload_len;
	uint16_t sport, dport;	/* host order */
	uint32_t seq, ack;	/* host order */
	uint16_t window;	/* host order, unscaled */
	uint8_t flags;
	uint8_t ttl;		/* IPv4 TTL, IPv6 hop limit */
	struct tcp_options opt;
};

/*
 * Parse CAPLEN bytes at DATA. Returns PACKET_OK and fills PKT, or the
 * reason the packet was rejected (PKT is then unspecified).
 */
enum packet_error packet_parse(const uint8_t *data, size_t caplen,
			       struct packet *pkt);
const char *packet_error_name(enum packet_error err);

#endif
