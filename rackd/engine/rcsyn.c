// SPDX-License-Identifier: GPL-2.0-only
#include "rcsyn.h"

#include <errno.h>
#include <string.h>

#include "channel.h"
#include "hold.h"
#include "inject.h"
#include "keystate.h"
#include "loop.h"
#include "rackd.h"

/* The unscaled window of our SYNs: a SYN's window is never scaled, and
 * the sockets' own segments advertise their real windows right after. */
#define RCSYN_WINDOW 65535

static uint32_t rd32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static void wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static const uint8_t *payload_of(const struct packet *p)
{
	return p->data + p->tcp_off + p->hdr_len;
}

bool rcsyn_carried(const struct packet *p)
{
	uint8_t type;

	if (p->hdr_len == 4 * EDP_RCSYN_DOFF && p->payload_len >= 4 &&
	    rd32(payload_of(p)) == EDP_RCSYN_MAGIC)
		return true;
	if (!p->opt.racks_len)
		return false;
	type = edp_marker_type(p->data + p->opt.racks_off, p->opt.racks_len);
	return type == EDP_RECONNECT || type == EDP_RECONNECT_ACK;
}

int rcsyn_parse(const struct packet *p, struct edp_msg *m,
		struct rcsyn_seen *s)
{
	const uint8_t *pl = payload_of(p);
	uint8_t want = p->flags & TCP_FLAG_ACK ? EDP_RECONNECT_ACK
					       : EDP_RECONNECT;

	/* The message is the payload's first option, whole; a marker
	 * without it (or a message cut short) is nothing to act on. */
	if (p->payload_len < EDP_NUMBERED_LEN || pl[1] > p->payload_len ||
	    edp_option_parse(pl, pl[1], m) != EDP_OK || m->type != want)
		return -EBADMSG;
	s->end = p->seq + 1 + (uint32_t)p->payload_len;
	s->ack = p->ack;
	s->has_ts = p->opt.has_timestamp;
	s->tsval = p->opt.tsval;
	/* The challenge follows the message's padded option. */
	s->has_challenge = want == EDP_RECONNECT_ACK &&
		p->payload_len >= EDP_NUMBERED_SIZE + EDP_CHALLENGE_LEN;
	if (s->has_challenge)
		memcpy(s->challenge, pl + EDP_NUMBERED_SIZE, EDP_CHALLENGE_LEN);
	return 0;
}

/* Where C's socket has been acknowledged up to: the kernel's count, or
 * what the hold last read, or where the channel last saw the socket, or
 * (never seen) the first byte. */
static uint32_t own_snd_una(struct conn *c)
{
	uint32_t snd_una = c->lend.isn + 1;

	if (channel_snd_una(c, &snd_una))
		return snd_una;
	if (c->hold && c->hold->known)
		return c->hold->snd_una;
	return snd_una;
}

static size_t nops(uint8_t *o, size_t i, size_t n)
{
	memset(o + i, TCP_OPT_NOP, n);
	return i + n;
}

/*
 * The original handshake's options as this end announced them, always
 * EDP_RCSYN_OPTLEN bytes (NOPs where one was not negotiated), the marker
 * of TYPE last. TSval: the monotonic clock in ms, which never goes back
 * between retries; nothing but middleboxes ever reads it.
 */
static size_t build_options(const struct conn *c, uint8_t type,
			    uint32_t tsecr, uint8_t *o)
{
	struct conn_negotiated n;
	size_t i = 0;

	conn_negotiate(c, &n);
	o[i++] = TCP_OPT_MSS;
	o[i++] = 4;
	o[i++] = (uint8_t)(n.local_mss >> 8);
	o[i++] = (uint8_t)n.local_mss;
	o[i++] = TCP_OPT_NOP;
	if (n.wscale) {
		o[i++] = TCP_OPT_WSCALE;
		o[i++] = 3;
		o[i++] = n.rcv_wscale;
	} else {
		i = nops(o, i, 3);
	}
	if (n.sack) {
		o[i++] = TCP_OPT_SACK_PERM;
		o[i++] = 2;
	} else {
		i = nops(o, i, 2);
	}
	if (n.timestamps) {
		o[i++] = TCP_OPT_TIMESTAMP;
		o[i++] = 10;
		wr32(o + i, (uint32_t)loop_now());
		wr32(o + i + 4, tsecr);
		i += 8;
	} else {
		i = nops(o, i, 10);
	}
	i += edp_marker_build(type, o + i, EDP_MARKER_SIZE);
	return i;
}

/* A SYN (ANSWER NULL) or SYN-ACK of C carrying the numbered message of
 * TYPE (and, in a SYN-ACK, CHALLENGE), from WL to WR. */
static int send_syn(struct rackd *d, struct conn *c, uint8_t type,
		    uint32_t counter, const struct rcsyn_seen *answer,
		    const struct endpoint *wl, const struct endpoint *wr,
		    const uint8_t *challenge)
{
	uint8_t opt[EDP_RCSYN_OPTLEN];
	uint8_t pay[EDP_NUMBERED_SIZE + EDP_CHALLENGE_LEN];
	struct edp_msg m;
	size_t paylen;
	/* An answer goes to where the SYN came from, which the splices
	 * (of the connection's current endpoints) must not rewrite. */
	struct inject_segment seg = {
		.src = wl, .dst = wr,
		.flags = TCP_FLAG_SYN | (answer ? TCP_FLAG_ACK : 0),
		.ack = answer ? answer->end : 0,
		.window = RCSYN_WINDOW, .options = opt, .payload = pay,
		.unspliced = answer != NULL,
	};

	channel_numbered_msg(c, type, counter, &m);
	paylen = edp_option_build(&m, pay, EDP_NUMBERED_SIZE);
	if (challenge) {
		memcpy(pay + paylen, challenge, EDP_CHALLENGE_LEN);
		paylen += EDP_CHALLENGE_LEN;
	}
	seg.optlen = build_options(c, type,
				   answer && answer->has_ts ? answer->tsval : 0,
				   opt);
	seg.paylen = paylen;
	/* Its end (SYN and payload) is snd_una: the socket's next
	 * segment follows it in sequence. */
	seg.seq = own_snd_una(c) - 1 - (uint32_t)paylen;
	return channel_inject(d, &seg);
}

int rcsyn_send_syn(struct rackd *d, struct conn *c, uint32_t counter)
{
	/* What a reset answering it acknowledges (reconnect_reset()). */
	c->edp->rc_syn_end = own_snd_una(c);
	return send_syn(d, c, EDP_RECONNECT, counter, NULL, &c->wire_local,
			&c->wire_remote, NULL);
}

int rcsyn_send_synack(struct rackd *d, struct conn *c, uint32_t counter,
		      const struct rcsyn_seen *syn,
		      const struct endpoint *wire_local,
		      const struct endpoint *wire_remote,
		      const uint8_t *challenge)
{
	return send_syn(d, c, EDP_RECONNECT_ACK, counter, syn, wire_local,
			wire_remote, challenge);
}

int rcsyn_send_confirm(struct rackd *d, struct conn *c,
		       const struct rcsyn_seen *synack)
{
	uint8_t opt[EDP_NUMBERED_SIZE];
	struct edp_msg m;
	struct inject_segment seg = {
		.src = &c->wire_local, .dst = &c->wire_remote,
		.seq = synack->ack, .ack = synack->end,
		.flags = TCP_FLAG_ACK, .window = RCSYN_WINDOW, .options = opt,
	};

	if (!synack->has_challenge)
		return -EPROTO;
	channel_confirm_msg(c, ++c->edp->hb_out, synack->challenge, &m);
	seg.optlen = edp_option_build(&m, opt, sizeof(opt));
	return channel_inject(d, &seg);
}
