// SPDX-License-Identifier: GPL-2.0-only
/*
 * packet_parse() on arbitrary bytes. When a packet is accepted, every
 * offset and length it reports must stay inside what was captured, and
 * the TCP checksum code must run over the segment it describes.
 */
#include "../../rackd/packet.c"
#include "../../rackd/csum.c"
#include "../../common/addr.c"
#include "fuzz.h"

static void check_options(const struct packet *pkt)
{
	const struct tcp_options *o = &pkt->opt;
	size_t opt_start = pkt->tcp_off + TCP_MIN_HDR;
	size_t opt_end = pkt->tcp_off + pkt->hdr_len;

	INVARIANT(o->nsack <= TCP_MAX_SACK_BLOCKS);
	if (o->racks_len) {
		INVARIANT(o->racks_len >= 4);
		INVARIANT(o->racks_off >= opt_start);
		INVARIANT((size_t)o->racks_off + o->racks_len <= opt_end);
		INVARIANT(pkt->data[o->racks_off] == TCP_OPT_EXP);
		INVARIANT(pkt->data[o->racks_off + 1] == o->racks_len);
	} else {
		INVARIANT(o->racks_off == 0);
	}
	if (opt_end == opt_start) {
		INVARIANT(!o->has_mss && !o->has_wscale && !o->has_timestamp);
		INVARIANT(!o->sack_permitted && o->nsack == 0);
	}
}

/* Checksum the segment and verify that storing the result validates it. */
static void check_csum(const struct packet *pkt)
{
	static uint8_t seg[65536 + 64];

	if (pkt->tcp_len > sizeof(seg))
		return;
	memcpy(seg, pkt->data + pkt->tcp_off, pkt->tcp_len);
	uint16_t check = csum_tcp(&pkt->src, &pkt->dst, seg, pkt->tcp_len);

	memcpy(seg + 16, &check, 2);
	INVARIANT(csum_tcp_valid(&pkt->src, &pkt->dst, seg, pkt->tcp_len));
}

/* Field by field: padding bytes carry no meaning. */
static bool same_packet(const struct packet *a, const struct packet *b)
{
	const struct tcp_options *x = &a->opt, *y = &b->opt;

	return a->data == b->data && a->len == b->len &&
	       a->family == b->family && addr_equal(&a->src, &b->src) &&
	       addr_equal(&a->dst, &b->dst) && a->tcp_off == b->tcp_off &&
	       a->tcp_len == b->tcp_len && a->hdr_len == b->hdr_len &&
	       a->payload_len == b->payload_len && a->sport == b->sport &&
	       a->dport == b->dport && a->seq == b->seq && a->ack == b->ack &&
	       a->window == b->window && a->flags == b->flags &&
	       x->has_mss == y->has_mss && x->mss == y->mss &&
	       x->has_wscale == y->has_wscale && x->wscale == y->wscale &&
	       x->sack_permitted == y->sack_permitted &&
	       x->has_timestamp == y->has_timestamp && x->tsval == y->tsval &&
	       x->tsecr == y->tsecr && x->nsack == y->nsack &&
	       memcmp(x->sack, y->sack, sizeof(x->sack)) == 0 &&
	       x->racks_off == y->racks_off && x->racks_len == y->racks_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct packet pkt, again;
	enum packet_error err = packet_parse(data, size, &pkt);

	INVARIANT((unsigned)err < PACKET_ERR_MAX);
	INVARIANT(strcmp(packet_error_name(err), "unknown") != 0);
	if (err != PACKET_OK)
		return 0;

	INVARIANT(pkt.data == data);
	INVARIANT(pkt.len <= size);
	INVARIANT(pkt.hdr_len >= TCP_MIN_HDR && pkt.hdr_len <= 60);
	INVARIANT(pkt.hdr_len % 4 == 0);
	INVARIANT(pkt.tcp_off + pkt.hdr_len <= pkt.len);
	INVARIANT(pkt.tcp_len == pkt.len - pkt.tcp_off);
	INVARIANT(pkt.payload_len == pkt.tcp_len - pkt.hdr_len);
	if (pkt.family == AF_INET) {
		INVARIANT(data[0] >> 4 == 4);
		INVARIANT(pkt.tcp_off >= 20 && pkt.tcp_off <= 60);
		INVARIANT(pkt.src.family == AF_INET && pkt.dst.family == AF_INET);
	} else {
		INVARIANT(pkt.family == AF_INET6 && data[0] >> 4 == 6);
		INVARIANT(pkt.tcp_off >= 40 && pkt.tcp_off % 4 == 0);
		INVARIANT(pkt.src.family == AF_INET6);
	}
	INVARIANT(pkt.sport == (data[pkt.tcp_off] << 8 | data[pkt.tcp_off + 1]));
	INVARIANT(pkt.flags == data[pkt.tcp_off + 13]);
	check_options(&pkt);
	check_csum(&pkt);

	/* Bytes past the IP length never matter. */
	INVARIANT(packet_parse(data, pkt.len, &again) == PACKET_OK);
	INVARIANT(same_packet(&pkt, &again));
	return 0;
}
