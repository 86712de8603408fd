// SPDX-License-Identifier: GPL-2.0-only
/*
 * Segments crafted from the fuzz input (engine.h, fz_peer_raw): what an
 * attacker on or off the path, a confused middlebox or an odd local
 * application could send, for flow N. Six bytes choose the flags, the
 * sequence and acknowledgement numbers (random, or derived from what
 * either end knows, so that plausible ones come often), the option
 * (racks' messages valid or not, with valid MACs where the peer's keys
 * allow, ADOPT, markers, a reconnection SYN's layout, host handshake
 * fragments replayed or forged, the long SYN option, others), the
 * payload, the DSCP and checksum, and the direction.
 *
 * Incoming ones go straight to prerouting, with the queue's checksum
 * flags; outgoing ones leave from the flow's socket. Either way the
 * flow is tainted: the peer model's keys may no longer be rackd's.
 */
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter/nfnetlink_queue.h>
#include <string.h>

#include "announce.h"
#include "engine.h"
#include "option.h"
#include "packet.h"

static const uint8_t flag_table[16] = {
	TCP_FLAG_SYN, TCP_FLAG_SYN | TCP_FLAG_ACK, TCP_FLAG_ACK,
	TCP_FLAG_ACK | TCP_FLAG_PSH, TCP_FLAG_FIN | TCP_FLAG_ACK,
	TCP_FLAG_RST, TCP_FLAG_RST | TCP_FLAG_ACK, TCP_FLAG_FIN,
	TCP_FLAG_SYN | TCP_FLAG_FIN, 0, TCP_FLAG_ACK, TCP_FLAG_ACK,
	TCP_FLAG_SYN, TCP_FLAG_SYN | TCP_FLAG_ACK, TCP_FLAG_FIN | TCP_FLAG_ACK,
	0xff,
};

/* Eight candidates for a number, chosen by MODE's low bits; the rest of
 * MODE offsets them a little. */
static uint32_t pick(uint8_t mode, const uint32_t cand[8])
{
	uint32_t v = cand[mode & 7];

	if (mode & 0x80)
		v += (uint32_t)((mode >> 3) & 0x0f) * 8192 - 65536;
	return v;
}

static void racks_option(struct fz_seg *s, const struct edp_msg *m)
{
	s->optlen += edp_option_build(m, s->opt + s->optlen,
				      sizeof(s->opt) - s->optlen);
}

/* Option KIND (and the payload some kinds bring). */
static void options(struct fz_seg *s, const struct fz_peer *p, uint8_t kind,
		    uint8_t arg)
{
	static const uint8_t numbered[] = {
		EDP_HEARTBEAT, EDP_HEARTBEAT_ACK, EDP_RECONNECT,
		EDP_RECONNECT_ACK, EDP_AWAY, EDP_AWAY_ACK,
		EDP_RECONNECT_CONFIRM,
	};
	struct edp_msg m = { .version = EDP_VERSION };
	uint8_t type = numbered[arg % sizeof(numbered)];

	/* Kinds 19 and 20 came with host keys: below 19, as before. */
	kind %= 21;
	switch (kind) {
	case 0:
		return;
	case 1:
	case 2:
		m.type = kind == 1 ? EDP_SYN : EDP_SYNACK;
		m.flags = arg;
		break;
	case 3:
	case 4:
		m.type = EDP_KEY;
		for (int i = 0; i < EDP_KEY_LEN; i++)
			m.key[i] = kind == 4 ? p->kp.pk[i] : (uint8_t)fz_rand();
		break;
	case 5:
	case 6:
	case 7:
		m.type = kind == 7 ? EDP_DONE : EDP_CONFIRM;
		if (kind == 6)
			for (int i = 0; i < EDP_MAC_LEN; i++)
				m.mac[i] = (uint8_t)fz_rand();
		else
			edp_mac(p->key, kind == 7 ? EDP_ROLE_SERVER_DONE :
				p->client ? EDP_ROLE_CLIENT_CONFIRM
					  : EDP_ROLE_SERVER_CONFIRM,
				&p->t, m.mac);
		break;
	case 8:		/* valid, the next counter or an old one */
	case 9:
		fz_peer_numbered(p, type, kind == 8 ? p->hb_out + 1 :
				 p->hb_in, &m);
		break;
	case 10:	/* a forged MAC */
	case 11:	/* for a connection nobody knows */
		fz_peer_numbered(p, type, p->hb_out + 1, &m);
		m.mac[arg % EDP_MAC_LEN] ^= 1;
		if (kind == 11)
			m.conn_id = (uint64_t)fz_rand() << 32 | fz_rand();
		break;
	case 12:
	case 13:
		m.type = EDP_ADOPT;
		m.x_own = kind == 12 ? p->isn + 1 : fz_rand();
		m.x_peer = kind == 12 ? p->risn + 1 + (arg & 0x10) : fz_rand();
		m.flags = arg & 1;
		break;
	case 14:
		s->optlen += edp_marker_build(arg & 1 ? EDP_RECONNECT_ACK :
					      EDP_RECONNECT, s->opt + s->optlen,
					      sizeof(s->opt) - s->optlen);
		return;
	case 15: {	/* malformed: version, length or type */
		uint8_t *o = s->opt + s->optlen;

		m.type = (uint8_t)(1 + arg % 12);
		racks_option(s, &m);
		if (arg & 0x10)
			o[4] = (uint8_t)(2 << 4 | (o[4] & 0x0f));
		else if (arg & 0x20)
			o[1] = (uint8_t)(o[1] - 1);
		else
			o[4] = (uint8_t)(EDP_VERSION << 4 | 13);
		return;
	}
	case 16: {	/* the reconnection SYN's layout, its message inside */
		uint8_t t = arg & 1 ? EDP_RECONNECT_ACK : EDP_RECONNECT;

		s->optlen = fz_rcsyn_options(t, 0, s->opt);
		fz_peer_numbered(p, t, arg & 2 ? p->hb_in : p->hb_out + 1, &m);
		s->paylen = edp_option_build(&m, s->payload, sizeof(s->payload));
		return;
	}
	case 19: {	/* a host handshake's fragment: the peer's, or forged */
		const struct fz_hs *hs = &p->hs;
		unsigned frags, n;

		m.type = EDP_HANDSHAKE;
		m.hs_msg = (uint8_t)(1 + arg % 3);
		m.hs_len = (uint8_t)noise_xx_msg_len(m.hs_msg - 1, 0);
		frags = (m.hs_len + EDP_HS_FRAG - 1u) / EDP_HS_FRAG;
		m.hs_frag = (uint8_t)((arg >> 2) % frags);
		n = m.hs_frag + 1u < frags ? EDP_HS_FRAG
					   : m.hs_len - m.hs_frag * EDP_HS_FRAG;
		if (arg & 0x80 && hs->out_msg == m.hs_msg)
			memcpy(m.key, hs->out + m.hs_frag * EDP_HS_FRAG, n);
		else
			for (unsigned i = 0; i < n; i++)
				m.key[i] = (uint8_t)fz_rand();
		break;
	}
	case 20:	/* the long SYN / SYN-ACK option: a known host pair */
		m.type = arg & 1 ? EDP_SYNACK : EDP_SYN;
		m.has_nonce = 1;
		m.hp_id = arg & 2 && fz_model.npairs ? fz_model.pairs[0].id
						     : fz_rand();
		for (int i = 0; i < EDP_NONCE_LEN; i++)
			m.nonce[i] = (uint8_t)fz_rand();
		break;
	case 17: {	/* TCP Fast Open's experimental option */
		static const uint8_t tfo[] = { 254, 4, 0xf9, 0x89 };

		memcpy(s->opt + s->optlen, tfo, sizeof(tfo));
		s->optlen += sizeof(tfo);
		return;
	}
	default:
		s->optlen = fz_rcsyn_options(EDP_RECONNECT, 0, s->opt) -
			    EDP_MARKER_SIZE;
		return;
	}
	racks_option(s, &m);
}

void fz_peer_raw(unsigned n, struct fz_input *in)
{
	struct fz_peer *p = &fz_peers[n];
	struct fz_sock *k = &fz_socks[n];
	uint8_t fsel = fz_u8(in), sm = fz_u8(in), am = fz_u8(in);
	uint8_t kind = fz_u8(in), len = fz_u8(in), misc = fz_u8(in);
	bool out = misc & 0x40;
	struct fz_seg s = { .window = misc & 0x80 ? 0 : 65535 };
	uint32_t skbinfo = 0;
	uint8_t buf[FZ_PKT_MAX];
	size_t blen;

	p->tainted = true;
	if (out) {
		const uint32_t seqs[8] = { fz_rand(), k->snd_una - 1,
					   k->snd_nxt, k->isn, k->snd_una,
					   k->snd_una - 37, k->isn + 1, p->rcv_nxt };
		const uint32_t acks[8] = { fz_rand(), k->rcv_nxt - 1,
					   k->rcv_nxt, p->snd_nxt, 0,
					   k->risn + 1, k->rcv_nxt + 1, p->isn };

		fz_flow_endpoints(n, &s.src, &s.dst);
		s.seq = pick(sm, seqs);
		s.ack = pick(am, acks);
	} else {
		const uint32_t seqs[8] = { fz_rand(), p->snd_nxt - 1,
					   p->snd_nxt, p->isn, k->rcv_nxt,
					   k->rcv_nxt - 1 - EDP_NUMBERED_SIZE,
					   k->rcv_nxt - 1, p->risn };
		const uint32_t acks[8] = { fz_rand(), p->rcv_nxt - 1,
					   p->rcv_nxt, k->snd_una, k->snd_nxt,
					   0, k->snd_una - 1, k->isn + 1 };

		fz_flow_endpoints(n, &s.dst, &s.src);
		if (misc & 0x10)
			s.src = p->wire;
		if (misc & 0x20)
			s.dst = p->ours;
		s.seq = pick(sm, seqs);
		s.ack = pick(am, acks);
	}
	s.flags = flag_table[fsel & 15];
	if (s.flags == 0xff)
		s.flags = fsel;
	options(&s, p, kind, (uint8_t)(fsel >> 4 | len << 4));
	while (s.optlen % 4)
		s.opt[s.optlen++] = TCP_OPT_NOP;
	if (!s.paylen) {
		s.paylen = len & 0x3f;
		memset(s.payload, 'x', s.paylen);
	}
	if (misc & 1)
		s.tos = EDP_PROBE_TOS;
	if (out) {
		fz_host_emit(&s);
		return;
	}
	if (misc & 2)
		skbinfo |= NFQA_SKB_CSUM_NOTVERIFIED | FZ_BAD_CSUM;
	if (misc & 4)
		skbinfo |= NFQA_SKB_CSUM_NOTVERIFIED;
	if (misc & 8)
		skbinfo |= NFQA_SKB_CSUMNOTREADY;
	blen = fz_seg_build(&s, buf, sizeof(buf));
	if (blen && fz_present(&s.dst.addr))
		fz_net_input(buf, blen, skbinfo, len & 0x80 ? blen + 1000 : blen);
}
