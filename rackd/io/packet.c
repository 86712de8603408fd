// SPDX-License-Identifier: GPL-2.0-only
#include "packet.h"

#include <string.h>
#include <sys/socket.h>

#include "option.h"

#define IPV4_MIN_HDR 20
#define IPV6_HDR 40
#define TCP_MIN_HDR 20
#define IPV6_MAX_EXT_HEADERS 8

/* IPv6 next-header values rackd walks through. */
enum {
	NH_HOPOPTS = 0,
	NH_TCP = 6,
	NH_ROUTING = 43,
	NH_FRAGMENT = 44,
	NH_AH = 51,
	NH_DSTOPTS = 60,
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static enum packet_error parse_ipv4(const uint8_t *d, size_t caplen,
				    struct packet *pkt)
{
	size_t ihl, total;
	uint16_t frag;

	if (caplen < IPV4_MIN_HDR)
		return PACKET_ERR_SHORT;
	ihl = (size_t)(d[0] & 0x0f) * 4;
	total = get16(d + 2);
	frag = get16(d + 6);
	/* total == 0 is IPv4 BIG TCP: longer than any copy we receive. */
	if (ihl < IPV4_MIN_HDR || total < ihl)
		return PACKET_ERR_IP_HEADER;
	if (total > caplen || ihl > caplen)
		return PACKET_ERR_TRUNCATED;
	/* MF set or a fragment offset: the TCP header is not all here. */
	if (frag & 0x3fff)
		return PACKET_ERR_FRAGMENT;
	if (d[9] != NH_TCP)
		return PACKET_ERR_NOT_TCP;

	pkt->family = AF_INET;
	pkt->ttl = d[8];
	pkt->len = total;
	pkt->src.family = pkt->dst.family = AF_INET;
	memcpy(pkt->src.bytes, d + 12, 4);
	memcpy(pkt->dst.bytes, d + 16, 4);
	pkt->tcp_off = ihl;
	return PACKET_OK;
}

static enum packet_error parse_ipv6(const uint8_t *d, size_t caplen,
				    struct packet *pkt)
{
	size_t payload, off = IPV6_HDR;
	uint8_t nh;

	if (caplen < IPV6_HDR)
		return PACKET_ERR_SHORT;
	payload = get16(d + 4);
	/* payload == 0: jumbogram / BIG TCP, never fully copied to us. */
	if (payload == 0)
		return PACKET_ERR_IP_HEADER;
	if (IPV6_HDR + payload > caplen)
		return PACKET_ERR_TRUNCATED;
	pkt->len = IPV6_HDR + payload;

	nh = d[6];
	for (int i = 0; nh != NH_TCP; i++) {
		size_t hlen;

		if (i == IPV6_MAX_EXT_HEADERS)
			return PACKET_ERR_EXT_HEADER;
		if (nh != NH_HOPOPTS && nh != NH_ROUTING &&
		    nh != NH_FRAGMENT && nh != NH_AH && nh != NH_DSTOPTS)
			return PACKET_ERR_NOT_TCP;
		if (off + 8 > pkt->len)
			return PACKET_ERR_EXT_HEADER;
		if (nh == NH_FRAGMENT) {
			/* Only an atomic fragment (offset 0, no M) is whole. */
			if (get16(d + off + 2) & 0xfff9)
				return PACKET_ERR_FRAGMENT;
			hlen = 8;
		} else if (nh == NH_AH) {
			hlen = ((size_t)d[off + 1] + 2) * 4;
		} else {
			hlen = ((size_t)d[off + 1] + 1) * 8;
		}
		if (off + hlen > pkt->len)
			return PACKET_ERR_EXT_HEADER;
		nh = d[off];
		off += hlen;
	}

	pkt->family = AF_INET6;
	pkt->ttl = d[7];
	pkt->src.family = pkt->dst.family = AF_INET6;
	memcpy(pkt->src.bytes, d + 8, 16);
	memcpy(pkt->dst.bytes, d + 24, 16);
	pkt->tcp_off = off;
	return PACKET_OK;
}

/* Expected total length of a known option, 0 for "any length >= 2". */
static int option_len_ok(uint8_t kind, uint8_t len)
{
	switch (kind) {
	case TCP_OPT_MSS:
		return len == 4;
	case TCP_OPT_WSCALE:
		return len == 3;
	case TCP_OPT_SACK_PERM:
		return len == 2;
	case TCP_OPT_TIMESTAMP:
		return len == 10;
	case TCP_OPT_SACK:
		return len >= 10 && (len - 2) % 8 == 0 &&
		       (len - 2) / 8 <= TCP_MAX_SACK_BLOCKS;
	case TCP_OPT_EXP:
		return len >= 4;	/* kind, length, 16-bit ExID */
	default:
		return len >= 2;
	}
}

static void option_store(struct packet *pkt, const uint8_t *o, size_t off)
{
	struct tcp_options *opt = &pkt->opt;
	uint8_t kind = o[0], len = o[1];

	switch (kind) {
	case TCP_OPT_MSS:
		opt->has_mss = true;
		opt->mss = get16(o + 2);
		break;
	case TCP_OPT_WSCALE:
		opt->has_wscale = true;
		opt->wscale = o[2];
		break;
	case TCP_OPT_SACK_PERM:
		opt->sack_permitted = true;
		break;
	case TCP_OPT_TIMESTAMP:
		opt->has_timestamp = true;
		opt->tsval = get32(o + 2);
		opt->tsecr = get32(o + 6);
		break;
	case TCP_OPT_SACK:
		opt->nsack = (uint8_t)((len - 2) / 8);
		for (unsigned i = 0; i < opt->nsack; i++) {
			opt->sack[i].left = get32(o + 2 + 8 * i);
			opt->sack[i].right = get32(o + 6 + 8 * i);
		}
		break;
	case TCP_OPT_EXP:
		if (!opt->racks_len && get16(o + 2) == EDP_EXID) {
			opt->racks_off = (uint16_t)off;
			opt->racks_len = len;
		}
		break;
	}
}

static enum packet_error parse_tcp_options(struct packet *pkt)
{
	size_t off = pkt->tcp_off + TCP_MIN_HDR;
	size_t end = pkt->tcp_off + pkt->hdr_len;
	const uint8_t *d = pkt->data;

	while (off < end) {
		uint8_t kind = d[off];

		if (kind == TCP_OPT_EOL)
			break;
		if (kind == TCP_OPT_NOP) {
			off++;
			continue;
		}
		if (off + 2 > end)
			return PACKET_ERR_TCP_OPTION;
		uint8_t len = d[off + 1];

		if (len < 2 || off + len > end || !option_len_ok(kind, len))
			return PACKET_ERR_TCP_OPTION;
		option_store(pkt, d + off, off);
		off += len;
	}
	return PACKET_OK;
}

enum packet_error packet_parse(const uint8_t *data, size_t caplen,
			       struct packet *pkt)
{
	enum packet_error err;

	memset(pkt, 0, sizeof(*pkt));
	pkt->data = data;
	if (caplen < 1)
		return PACKET_ERR_SHORT;
	switch (data[0] >> 4) {
	case 4:
		err = parse_ipv4(data, caplen, pkt);
		break;
	case 6:
		err = parse_ipv6(data, caplen, pkt);
		break;
	default:
		return PACKET_ERR_VERSION;
	}
	if (err)
		return err;

	if (pkt->len < pkt->tcp_off + TCP_MIN_HDR)
		return PACKET_ERR_TCP_HEADER;
	const uint8_t *t = data + pkt->tcp_off;

	pkt->tcp_len = pkt->len - pkt->tcp_off;
	pkt->hdr_len = (size_t)(t[12] >> 4) * 4;
	if (pkt->hdr_len < TCP_MIN_HDR || pkt->hdr_len > pkt->tcp_len)
		return PACKET_ERR_TCP_HEADER;
	pkt->payload_len = pkt->tcp_len - pkt->hdr_len;
	pkt->sport = get16(t);
	pkt->dport = get16(t + 2);
	pkt->seq = get32(t + 4);
	pkt->ack = get32(t + 8);
	pkt->flags = t[13];
	pkt->window = get16(t + 14);
	return parse_tcp_options(pkt);
}

const char *packet_error_name(enum packet_error err)
{
	static const char *const names[PACKET_ERR_MAX] = {
		[PACKET_OK] = "ok",
		[PACKET_ERR_SHORT] = "short",
		[PACKET_ERR_VERSION] = "ip_version",
		[PACKET_ERR_IP_HEADER] = "ip_header",
		[PACKET_ERR_TRUNCATED] = "truncated",
		[PACKET_ERR_FRAGMENT] = "fragment",
		[PACKET_ERR_EXT_HEADER] = "ext_header",
		[PACKET_ERR_NOT_TCP] = "not_tcp",
		[PACKET_ERR_TCP_HEADER] = "tcp_header",
		[PACKET_ERR_TCP_OPTION] = "tcp_option",
	};

	if ((unsigned)err >= PACKET_ERR_MAX)
		return "unknown";
	return names[err];
}
