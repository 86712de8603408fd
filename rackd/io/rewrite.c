// SPDX-License-Identifier: GPL-2.0-only
#include "rewrite.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "csum.h"

#define TCP_MIN_HDR 20
#define TCP_OPT_NOP_BYTE 1

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void rewrite_fix(uint8_t *buf, size_t len, size_t tcp_off,
		 const struct packet *orig)
{
	uint8_t *tcp = buf + tcp_off;

	if (orig->family == AF_INET) {
		put16(buf + 2, len);
		buf[10] = buf[11] = 0;
		uint16_t ipsum = (uint16_t)~csum_fold(
			csum_add(0, buf, (size_t)(buf[0] & 0x0f) * 4));
		put16(buf + 10, ipsum);
	} else {
		/* Extension headers (if any) are counted in the payload. */
		put16(buf + 4, len - 40);
	}
	uint16_t sum = csum_tcp(&orig->src, &orig->dst, tcp, len - tcp_off);

	memcpy(tcp + 16, &sum, 2);
}

/* Copy everything up to the end of the TCP options' fixed part. */
static size_t copy_head(const struct packet *pkt, uint8_t *out)
{
	size_t head = pkt->tcp_off + TCP_MIN_HDR;

	memcpy(out, pkt->data, head);
	return head;
}

int rewrite_add_option(const struct packet *pkt, const uint8_t *opt,
		       size_t optlen, uint8_t *out, size_t outsize)
{
	size_t hdr = pkt->hdr_len + optlen;
	size_t len = pkt->len + optlen;
	size_t off, rest;

	if (optlen % 4 || hdr > TCP_MAX_HDR)
		return -ENOSPC;
	if (len > outsize || len > 0xffff)
		return -EMSGSIZE;
	off = copy_head(pkt, out);
	/* First among the options: after an EOL it would be ignored. */
	memcpy(out + off, opt, optlen);
	rest = pkt->len - off;
	memcpy(out + off + optlen, pkt->data + off, rest);
	out[pkt->tcp_off + 12] = (uint8_t)((hdr / 4) << 4 |
					    (out[pkt->tcp_off + 12] & 0x0f));
	rewrite_fix(out, len, pkt->tcp_off, pkt);
	return (int)len;
}

int rewrite_remove_option(const struct packet *pkt, size_t off, size_t len,
			  uint8_t *out, size_t outsize)
{
	size_t opt_end = pkt->tcp_off + pkt->hdr_len;
	size_t cut_end, head, optbytes, pad, hdr, total;

	/* Checked apart so that no sum can wrap around. */
	if (off < pkt->tcp_off + TCP_MIN_HDR || off > opt_end ||
	    len > opt_end - off)
		return -EINVAL;
	cut_end = off + len;
	/* Our own option travels with the NOPs that pad it to a multiple of
	 * four: take exactly those too, so that removing reverses adding. */
	while (cut_end < opt_end && cut_end - off < ((len + 3) & ~(size_t)3) &&
	       pkt->data[cut_end] == TCP_OPT_NOP_BYTE)
		cut_end++;
	optbytes = (off - (pkt->tcp_off + TCP_MIN_HDR)) + (opt_end - cut_end);
	pad = (4 - optbytes % 4) % 4;
	hdr = TCP_MIN_HDR + optbytes + pad;
	total = pkt->len - (cut_end - off) + pad;
	if (total > outsize)
		return -EMSGSIZE;

	head = copy_head(pkt, out);
	memcpy(out + head, pkt->data + head, off - head);
	size_t w = off;

	memcpy(out + w, pkt->data + cut_end, opt_end - cut_end);
	w += opt_end - cut_end;
	memset(out + w, TCP_OPT_NOP_BYTE, pad);
	w += pad;
	memcpy(out + w, pkt->data + opt_end, pkt->len - opt_end);
	out[pkt->tcp_off + 12] = (uint8_t)((hdr / 4) << 4 |
					    (out[pkt->tcp_off + 12] & 0x0f));
	rewrite_fix(out, total, pkt->tcp_off, pkt);
	return (int)total;
}
