// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reconnection SYNs (rcsyn.c) on arbitrary packets: deciding whether a
 * parsed SYN or SYN-ACK is one, and reading its message, never reads
 * outside the packet; a message read back is a well-formed numbered
 * option of the type its flags call for, which builds back to the same
 * bytes, and its end is the segment's. rcsyn.c's senders' neighbours are
 * stubbed: only the parsing side runs.
 */
#include "../../rackd/io/packet.c"
#include "../../edp/option.c"
#include "../../common/addr.c"
#include "../../rackd/engine/rcsyn.c"
#include "fuzz.h"

void channel_numbered_msg(struct conn *c, uint8_t type, uint32_t counter,
			  struct edp_msg *m)
{
	(void)c, (void)type, (void)counter, (void)m;
	abort();
}

void channel_confirm_msg(struct conn *c, uint32_t counter,
			 const uint8_t *challenge, struct edp_msg *m)
{
	(void)c, (void)counter, (void)challenge, (void)m;
	abort();
}

int channel_inject(struct rackd *d, const struct inject_segment *seg)
{
	(void)d, (void)seg;
	abort();
}

int sockdiag_progress(const struct endpoint *local,
		      const struct endpoint *remote,
		      struct sockdiag_progress *out)
{
	(void)local, (void)remote, (void)out;
	abort();
}

void conn_seq_progress(const struct conn *c,
		       const struct sockdiag_progress *pr, uint32_t *snd_una,
		       uint32_t *rcv_nxt)
{
	(void)c, (void)pr, (void)snd_una, (void)rcv_nxt;
	abort();
}

void conn_negotiate(const struct conn *c, struct conn_negotiated *n)
{
	(void)c, (void)n;
	abort();
}

uint64_t loop_now(void)
{
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct packet pkt;
	struct edp_msg m;
	struct rcsyn_seen s;
	uint8_t buf[EDP_NUMBERED_SIZE];
	const uint8_t *pl;

	if (packet_parse(data, size, &pkt) != PACKET_OK ||
	    (pkt.flags & (TCP_FLAG_SYN | TCP_FLAG_RST)) != TCP_FLAG_SYN)
		return 0;
	(void)rcsyn_carried(&pkt);
	if (rcsyn_parse(&pkt, &m, &s))
		return 0;
	pl = pkt.data + pkt.tcp_off + pkt.hdr_len;
	INVARIANT(m.type == (pkt.flags & TCP_FLAG_ACK ? EDP_RECONNECT_ACK
						       : EDP_RECONNECT));
	INVARIANT(pl[1] == EDP_NUMBERED_LEN);
	INVARIANT(pkt.payload_len >= EDP_NUMBERED_LEN);
	INVARIANT(edp_option_build(&m, buf, sizeof(buf)) == EDP_NUMBERED_SIZE);
	INVARIANT(memcmp(buf, pl, EDP_NUMBERED_LEN) == 0);
	INVARIANT(s.end == pkt.seq + 1 + (uint32_t)pkt.payload_len);
	INVARIANT(s.ack == pkt.ack);
	/* A challenge only in a SYN-ACK, and only whole. */
	INVARIANT(!s.has_challenge || (m.type == EDP_RECONNECT_ACK &&
		  pkt.payload_len >= EDP_NUMBERED_SIZE + EDP_CHALLENGE_LEN));
	if (s.has_challenge)
		INVARIANT(memcmp(s.challenge, pl + EDP_NUMBERED_SIZE,
				 EDP_CHALLENGE_LEN) == 0);
	return 0;
}
