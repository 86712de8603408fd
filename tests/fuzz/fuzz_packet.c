// SPDX-License-Identifier: GPL-2.0-only
/*
 * packet_parse() on arbitrary bytes. When a packet is accepted, every
 * offset and length it reports must stay inside what was captured, and
 * the TCP checksum code must run over the segment it describes. A racks
 * option it found must parse (or be rejected) without reading outside
 * itself, and adding racks' option to the packet and removing it again
 * must give packets that parse, with consistent lengths.
 */
#include <errno.h>

#include "../../rackd/io/packet.c"
#include "../../rackd/io/csum.c"
#include "../../rackd/io/rewrite.c"
#include "../../edp/option.c"
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

/* The first racks option the parser recorded, through edp_option_parse. */
static void check_racks_option(const struct packet *pkt)
{
	const uint8_t *o = pkt->data + pkt->opt.racks_off;
	struct edp_msg m;
	enum edp_error err = edp_option_parse(o, pkt->opt.racks_len, &m);
	uint8_t buf[EDP_OPT_MAX_LEN + 3];

	INVARIANT((unsigned)err < EDP_ERR_MAX);
	INVARIANT(strcmp(edp_error_name(err), "unknown") != 0);
	/* packet_parse() records only kind 254 with racks' ExID. */
	INVARIANT(err != EDP_ERR_NOT_RACKS);
	if (err != EDP_OK)
		return;
	INVARIANT(m.version == EDP_VERSION);
	INVARIANT(strcmp(edp_type_name(m.type), "unknown") != 0);
	/* Building what was parsed gives the same bytes, then NOPs. */
	size_t n = edp_option_build(&m, buf, sizeof(buf));

	INVARIANT(n == edp_msg_option_size(&m) && n % 4 == 0);
	INVARIANT(n <= edp_option_size(m.type));
	INVARIANT(n >= pkt->opt.racks_len && n < pkt->opt.racks_len + 4);
	/* ADOPT's reserved bytes are sent as zero and ignored on receipt
	 * (option.h): the rest comes back the same. */
	INVARIANT(memcmp(buf, o, m.type == EDP_ADOPT ? EDP_ADOPT_USED :
			 pkt->opt.racks_len) == 0);
}

/* Options with the same meaning (racks' own fields aside). */
static bool same_options(const struct tcp_options *x,
			 const struct tcp_options *y)
{
	return x->has_mss == y->has_mss && x->mss == y->mss &&
	       x->has_wscale == y->has_wscale && x->wscale == y->wscale &&
	       x->sack_permitted == y->sack_permitted &&
	       x->has_timestamp == y->has_timestamp && x->tsval == y->tsval &&
	       x->tsecr == y->tsecr && x->nsack == y->nsack &&
	       memcmp(x->sack, y->sack, sizeof(x->sack)) == 0;
}

/* OUT (N bytes) parses into R as PKT rewritten to a TCP header of HDR
 * bytes, with valid checksums and the payload unchanged. */
static void check_rewritten(const struct packet *pkt, const uint8_t *out,
			    int n, size_t hdr, struct packet *r)
{
	INVARIANT(n >= 0 && (size_t)n == pkt->len - pkt->hdr_len + hdr);
	INVARIANT(packet_parse(out, (size_t)n, r) == PACKET_OK);
	INVARIANT(r->len == (size_t)n && r->tcp_off == pkt->tcp_off);
	INVARIANT(r->hdr_len == hdr && r->payload_len == pkt->payload_len);
	INVARIANT(r->family == pkt->family && r->flags == pkt->flags);
	INVARIANT(r->seq == pkt->seq && r->ack == pkt->ack);
	INVARIANT(memcmp(out + r->tcp_off + r->hdr_len,
			 pkt->data + pkt->tcp_off + pkt->hdr_len,
			 pkt->payload_len) == 0);
	INVARIANT(csum_tcp_valid(&r->src, &r->dst, out + r->tcp_off,
				 r->tcp_len));
	if (r->family == AF_INET)
		INVARIANT(csum_fold(csum_add(0, out, r->tcp_off)) == 0xffff);
}

/* The stored checksums are the ones rewrite_fix() would compute. */
static bool canonical_csums(const struct packet *pkt)
{
	const uint8_t *d = pkt->data;
	uint16_t sum = csum_tcp(&pkt->src, &pkt->dst, d + pkt->tcp_off,
				pkt->tcp_len);

	if (memcmp(d + pkt->tcp_off + 16, &sum, 2) != 0)
		return false;
	return pkt->family != AF_INET ||
	       csum_fold(csum_add(0, d, pkt->tcp_off)) == 0xffff;
}

/* Add racks' SYN option, parse the result, remove it again. */
static void check_rewrite(const struct packet *pkt)
{
	static uint8_t out[0x10000 + 64], back[0x10000 + 64];
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_SYN,
			     .flags = pkt->flags };
	uint8_t opt[8];
	size_t optlen = edp_option_build(&m, opt, sizeof(opt));
	struct packet a, r;
	int n;

	INVARIANT(optlen == 8);
	n = rewrite_add_option(pkt, opt, optlen, out, sizeof(out));
	if (pkt->hdr_len + optlen > TCP_MAX_HDR) {
		INVARIANT(n == -ENOSPC);
		return;
	}
	if (pkt->len + optlen > 0xffff) {
		INVARIANT(n == -EMSGSIZE);
		return;
	}
	check_rewritten(pkt, out, n, pkt->hdr_len + optlen, &a);
	INVARIANT(a.opt.racks_off == pkt->tcp_off + TCP_MIN_HDR);
	INVARIANT(a.opt.racks_len == 6);
	INVARIANT(memcmp(out + a.opt.racks_off, opt, optlen) == 0);
	INVARIANT(memcmp(out + a.opt.racks_off + optlen,
			 pkt->data + pkt->tcp_off + TCP_MIN_HDR,
			 pkt->hdr_len - TCP_MIN_HDR) == 0);
	INVARIANT(same_options(&a.opt, &pkt->opt));

	n = rewrite_remove_option(&a, a.opt.racks_off, a.opt.racks_len, back,
				  sizeof(back));
	check_rewritten(pkt, back, n, pkt->hdr_len, &r);
	INVARIANT(same_options(&r.opt, &pkt->opt));
	INVARIANT(r.opt.racks_len == pkt->opt.racks_len);
	/* Byte for byte the original, unless its checksums were not the
	 * canonical ones. */
	if (canonical_csums(pkt))
		INVARIANT(memcmp(back, pkt->data, pkt->len) == 0);
}

/* Strip the packet's own racks option: the rest must still parse. */
static void check_strip(const struct packet *pkt)
{
	static uint8_t out[0x10000 + 64];
	size_t start = pkt->tcp_off + TCP_MIN_HDR;
	struct packet r;
	int n = rewrite_remove_option(pkt, pkt->opt.racks_off,
				      pkt->opt.racks_len, out, sizeof(out));

	INVARIANT(n >= 0 && (size_t)n <= pkt->len);
	size_t hdr = pkt->hdr_len - (pkt->len - (size_t)n);

	INVARIANT(hdr >= TCP_MIN_HDR && hdr % 4 == 0);
	INVARIANT(hdr <= pkt->hdr_len - (pkt->opt.racks_len & ~3u));
	check_rewritten(pkt, out, n, hdr, &r);
	INVARIANT(memcmp(out + start, pkt->data + start,
			 pkt->opt.racks_off - start) == 0);
	INVARIANT(same_options(&r.opt, &pkt->opt));
	INVARIANT(r.opt.racks_len == 0 || r.opt.racks_off >= pkt->opt.racks_off);
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

	if (pkt.opt.racks_len) {
		check_racks_option(&pkt);
		check_strip(&pkt);
	}
	check_rewrite(&pkt);
	return 0;
}
