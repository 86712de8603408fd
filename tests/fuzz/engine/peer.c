// SPDX-License-Identifier: GPL-2.0-only
/*
 * The remote hosts of the stateful fuzzer (engine.h): for each flow, the
 * remote end's kernel socket and, if its host runs one, a well-behaved
 * peer rackd. That rackd does what rackd does on the other end: it
 * offers racks in its SYN and SYN-ACK, completes set-up (peer_setup.c:
 * a host handshake or a key derived from a host pair; the anonymous
 * exchange of a rackd before host keys), answers heartbeats, AWAY and
 * reconnections (in SYN-ACKs, rcsyn.h) with valid MACs and counters,
 * follows a reconnection to where it came from, answers ADOPT with the
 * connection's true numbers and sets up after it; and, when the input
 * says so, heartbeats, moves, goes away or forgets the connection of its
 * own accord. Without it rackd's deep states (connected, suspended,
 * spliced, migrating) would stay out of reach.
 *
 * A numbered message of ours that such a peer, connected, cannot verify
 * is a violation, unless raw segments (fz_peer_raw) touched the flow:
 * then the keys may differ by design (an attacker on the path can always
 * race set-up). A set-up message may fail for no fault of rackd's: a KEY
 * of an earlier set-up, delayed on the wire, can have been taken for
 * the current one's; those are only counted.
 */
#include <string.h>

#include "engine.h"
#include "announce.h"
#include "option.h"
#include "packet.h"
#include "rcsyn.h"

struct fz_peer fz_peers[FZ_FLOWS];

/* A reconnection message in a SYN's payload. */
#define RC_PAYLOAD EDP_NUMBERED_SIZE

static unsigned index_of(const struct fz_peer *p)
{
	return (unsigned)(p - fz_peers);
}

/* Its rackd starts over for this connection (a new handshake); its
 * host's key and host pairs stay. */
void fz_peer_clear(struct fz_peer *p)
{
	p->offered = p->setup = p->client = p->have_ours = false;
	p->keyed = p->connected = p->wait_done = p->adopting = false;
	p->away = p->claim = false;
	memset(&p->kp, 0, sizeof(p->kp));
	memset(&p->t, 0, sizeof(p->t));
	memset(p->key, 0, sizeof(p->key));
	memset(&p->offer, 0, sizeof(p->offer));
	noise_hs_wipe(&p->hs.noise);
	memset(&p->hs, 0, sizeof(p->hs));
	p->source = FZ_KEY_NONE;
	p->hp_id = 0;
	p->retry_at = p->retry_ms = 0;
	p->retries = 0;
	p->conn_id = 0;
	p->hb_out = p->hb_in = p->hb_acked = 0;
}

static void send_seg(const struct fz_seg *s)
{
	uint8_t buf[FZ_PKT_MAX];
	size_t len = fz_seg_build(s, buf, sizeof(buf));

	if (len)
		fz_net_from_peer(buf, len);
}

static void base_seg(const struct fz_peer *p, struct fz_seg *s, uint8_t flags)
{
	memset(s, 0, sizeof(*s));
	s->src = p->wire;
	s->dst = p->ours;
	s->flags = flags;
	s->window = 65535;
	s->seq = p->snd_nxt;
	s->ack = p->rcv_nxt;
	s->tos = p->probe ? EDP_PROBE_TOS : 0;
}

/* As channel_send() sends them: zero-length, a keepalive's numbers. */
void fz_peer_send_msg(const struct fz_peer *p, const struct edp_msg *m)
{
	struct fz_seg s;

	base_seg(p, &s, TCP_FLAG_ACK);
	s.seq = p->snd_nxt - 1;
	s.ack = p->rcv_nxt - 1;
	s.optlen = edp_option_build(m, s.opt, sizeof(s.opt));
	send_seg(&s);
}

/* channel.c's numbered_role(): by type and sender. */
static enum edp_role numbered_role(uint8_t type, bool client)
{
	return (enum edp_role)(EDP_ROLE_CLIENT_HEARTBEAT +
			       2 * (type - EDP_HEARTBEAT) + (client ? 0 : 1));
}

void fz_peer_numbered(const struct fz_peer *p, uint8_t type, uint32_t counter,
		      struct edp_msg *m)
{
	*m = (struct edp_msg){ .version = EDP_VERSION, .type = type,
			       .conn_id = p->conn_id, .counter = counter };
	edp_mac_counter(p->key, numbered_role(type, p->client), counter, &p->t,
			m->mac);
}

static void send_numbered(const struct fz_peer *p, uint8_t type,
			  uint32_t counter)
{
	struct edp_msg m;

	fz_peer_numbered(p, type, counter, &m);
	fz_peer_send_msg(p, &m);
}

uint64_t fz_peer_unverified, fz_peer_stale_confirms;

/* A message of ours that a well-behaved peer could not verify. */
void fz_peer_verified(const struct fz_peer *p, bool ok, const char *what)
{
	bool numbered = strcmp(what, "CONFIRM") && strcmp(what, "DONE");

	if (ok)
		return;
	fz_peer_unverified++;
	FZ_CHECK(!numbered || !p->connected || p->tainted, "flow %u: rackd's "
		 "%s does not verify at a well-behaved peer rackd",
		 index_of(p), what);
}

/* ---- after set-up: numbered messages ---- */

static bool numbered_ok(const struct fz_peer *p, const struct edp_msg *m)
{
	bool ok = p->keyed && !edp_mac_counter_verify(
			p->key, numbered_role(m->type, !p->client), m->counter,
			&p->t, m->mac);

	if (p->keyed)
		fz_peer_verified(p, ok, edp_type_name(m->type));
	return ok;
}

/* The third segment of our reconnection, from where its SYN came: the
 * peer follows there, and says so once it has (RECONNECT_ACK). */
static bool challenge_ok(const struct fz_peer *p, const struct edp_msg *m,
			 const uint8_t *challenge)
{
	return !edp_mac_challenge_verify(p->key,
					 numbered_role(m->type, !p->client),
					 m->counter, challenge, &p->t, m->mac);
}

static void confirmed(struct fz_peer *p, const struct fz_seg *s,
		      const struct edp_msg *m)
{
	bool ok = p->keyed && challenge_ok(p, m, p->challenge), stale = false;

	if (!p->claim || !endpoint_equal(&s->src, &p->claim_from) ||
	    !endpoint_equal(&s->dst, &p->claim_to))
		return;		/* not where the claim came from */
	/* An answer to an earlier claim, confirmed late from where the
	 * connection is now: refused, but rackd's MAC is right. */
	for (unsigned i = 0; !ok && p->keyed && i < p->nold && i < 4; i++)
		stale |= challenge_ok(p, m, p->old_challenges[i]);
	if (stale)
		fz_peer_stale_confirms++;
	fz_peer_verified(p, ok || stale, "RECONNECT_CONFIRM");
	if (!ok || m->counter <= p->hb_in)
		return;
	p->hb_in = m->counter;
	p->claim = false;
	/* A late copy of this confirmation, behind the next claim, is
	 * stale, not forged: rackd's MAC was right. */
	memcpy(p->old_challenges[p->nold++ % 4], p->challenge,
	       EDP_CHALLENGE_LEN);
	p->ours = s->src;
	p->away = false;
	send_numbered(p, EDP_RECONNECT_ACK, m->counter);
}

static void numbered_message(struct fz_peer *p, const struct fz_seg *s,
			     const struct edp_msg *m)
{
	bool request = m->type == EDP_HEARTBEAT || m->type == EDP_AWAY;

	if (m->type == EDP_RECONNECT_CONFIRM) {
		confirmed(p, s, m);
		return;
	}
	/* A zero-length RECONNECT is followed no more (rcsyn.h). */
	if (m->type == EDP_RECONNECT || !numbered_ok(p, m))
		return;
	if (!request) {
		if (m->counter <= p->hb_out && m->counter > p->hb_acked)
			p->hb_acked = m->counter;
		return;
	}
	if (m->counter <= p->hb_in)
		return;		/* a replay */
	p->hb_in = m->counter;
	if (m->type == EDP_AWAY)
		p->away = true;
	send_numbered(p, (uint8_t)(m->type + 1), m->counter);
}

/* ---- adoption: the true numbers, and set-up once they agree ---- */

static void send_adopt(const struct fz_peer *p, bool agreed, bool wrong)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_ADOPT,
			     .x_own = p->isn + 1 + (wrong ? 7 : 0),
			     .x_peer = p->risn + 1,
			     .flags = agreed ? EDP_ADOPT_AGREED : 0 };

	fz_peer_send_msg(p, &m);
}

static void adopt_message(struct fz_peer *p, const struct edp_msg *m)
{
	uint32_t own = p->isn + 1, peer = p->risn + 1;
	bool match = m->x_own == peer && m->x_peer == own;

	if (!p->sock || !p->established)
		return;
	if (!match) {
		send_adopt(p, false, false);
		return;
	}
	if (!(m->flags & EDP_ADOPT_AGREED))
		send_adopt(p, true, false);
	if (p->adopting && (p->setup || p->connected))
		return;		/* agreed already: set-up is under way */
	p->adopting = true;
	/* The end whose own first byte is the lower one is the client. */
	fz_peer_setup_start(p, own < peer);
}

/* ---- reconnection SYNs (rcsyn.h) ---- */

size_t fz_rcsyn_options(uint8_t type, uint32_t tsecr, uint8_t *o)
{
	size_t i = 0;

	o[i++] = TCP_OPT_MSS;
	o[i++] = 4;
	o[i++] = 0x05;
	o[i++] = 0xb4;
	o[i++] = TCP_OPT_NOP;
	o[i++] = TCP_OPT_WSCALE;
	o[i++] = 3;
	o[i++] = 7;
	o[i++] = TCP_OPT_SACK_PERM;
	o[i++] = 2;
	o[i++] = TCP_OPT_TIMESTAMP;
	o[i++] = 10;
	for (int b = 0; b < 4; b++) {
		o[i + b] = (uint8_t)((uint32_t)fz_now >> (24 - 8 * b));
		o[i + 4 + b] = (uint8_t)(tsecr >> (24 - 8 * b));
	}
	i += 8;
	return i + edp_marker_build(type, o + i, EDP_MARKER_SIZE);
}

/*
 * A RECONNECT in a SYN from where P's host is (ANSWER NULL), or the
 * answer to ours: RECONNECT_ACK and a challenge in a SYN-ACK, back to
 * where that SYN came from (its source is the claim; rcsyn.h).
 */
static void send_rcsyn(struct fz_peer *p, uint32_t counter,
		       const struct rcsyn_seen *answer,
		       const struct fz_seg *syn)
{
	uint8_t type = answer ? EDP_RECONNECT_ACK : EDP_RECONNECT;
	struct edp_msg m;
	struct fz_seg s;

	base_seg(p, &s, TCP_FLAG_SYN | (answer ? TCP_FLAG_ACK : 0));
	fz_peer_numbered(p, type, counter, &m);
	s.paylen = edp_option_build(&m, s.payload, EDP_NUMBERED_SIZE);
	if (answer) {
		s.src = syn->dst;
		s.dst = syn->src;
		/* Retries of one claim keep its challenge (reconnect.c
		 * claim()): a confirmation of an earlier answer counts. */
		if (!p->claim || !endpoint_equal(&p->claim_from, &syn->src) ||
		    !endpoint_equal(&p->claim_to, &syn->dst)) {
			if (p->claim)
				memcpy(p->old_challenges[p->nold++ % 4],
				       p->challenge, EDP_CHALLENGE_LEN);
			for (int i = 0; i < EDP_CHALLENGE_LEN; i++)
				p->challenge[i] = (uint8_t)fz_rand();
		}
		p->claim = true;
		p->claim_from = syn->src;
		p->claim_to = syn->dst;
		memcpy(s.payload + s.paylen, p->challenge, EDP_CHALLENGE_LEN);
		s.paylen += EDP_CHALLENGE_LEN;
	}
	s.optlen = fz_rcsyn_options(type, answer ? answer->tsval : 0, s.opt);
	s.seq = p->snd_nxt - 1 - (uint32_t)s.paylen;
	s.ack = answer ? answer->end : 0;
	send_seg(&s);
}

static struct fz_peer *by_id(uint64_t id, const struct endpoint *dst)
{
	for (unsigned n = 0; n < FZ_FLOWS; n++) {
		struct fz_peer *p = &fz_peers[n];

		/* Only where its host is now. */
		if (p->keyed && p->conn_id == id && endpoint_equal(&p->wire, dst))
			return p;
	}
	return NULL;
}

static struct fz_peer *by_tuple(const struct endpoint *dst,
				const struct endpoint *src)
{
	for (unsigned n = 0; n < FZ_FLOWS; n++)
		if (endpoint_equal(&fz_peers[n].wire, dst) &&
		    endpoint_equal(&fz_peers[n].ours, src))
			return &fz_peers[n];
	return NULL;
}

static void rcsyn_message(const struct fz_seg *s, const struct packet *pk)
{
	struct rcsyn_seen seen;
	struct edp_msg m;
	struct fz_peer *p;

	if (rcsyn_parse(pk, &m, &seen) || !(p = by_id(m.conn_id, &s->dst)) ||
	    !p->racks || p->silent || !numbered_ok(p, &m))
		return;
	if (m.type == EDP_RECONNECT_ACK) {
		/* Our move answered: the third segment proves we read the
		 * challenge (rcsyn.c rcsyn_send_confirm()). */
		struct fz_seg a;

		if (m.counter > p->hb_out || m.counter <= p->hb_acked ||
		    !seen.has_challenge)
			return;
		p->hb_acked = m.counter;
		base_seg(p, &a, TCP_FLAG_ACK);
		a.seq = seen.ack;
		a.ack = seen.end;
		m = (struct edp_msg){ .version = EDP_VERSION,
				      .type = EDP_RECONNECT_CONFIRM,
				      .conn_id = p->conn_id,
				      .counter = ++p->hb_out };
		edp_mac_challenge(p->key, numbered_role(EDP_RECONNECT_CONFIRM,
							p->client),
				  m.counter, seen.challenge, &p->t, m.mac);
		a.optlen = edp_option_build(&m, a.opt, sizeof(a.opt));
		send_seg(&a);
		return;
	}
	/* A claim: answered with a challenge, followed only once the third
	 * segment proves it (numbered_message()). */
	if (m.counter <= p->hb_in)
		return;
	p->hb_in = m.counter;
	send_rcsyn(p, m.counter, &seen, s);
}

/* ---- the remote kernel ---- */

static void kernel_synack(struct fz_peer *p)
{
	struct fz_seg s;
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_SYNACK };

	base_seg(p, &s, TCP_FLAG_SYN | TCP_FLAG_ACK);
	s.seq = p->isn;
	s.optlen = fz_rcsyn_options(EDP_RECONNECT, 0, s.opt) - EDP_MARKER_SIZE;
	if (p->offered) {
		fz_peer_offer(p, EDP_SYNACK, false, &m);
		s.optlen += edp_option_build(&m, s.opt + s.optlen,
					     sizeof(s.opt) - s.optlen);
	}
	send_seg(&s);
}

/* S's racks option of TYPE, into M; false if it carries none. */
static bool carries(const struct fz_seg *s, uint8_t type, struct edp_msg *m)
{
	size_t len = 0;
	const uint8_t *o = fz_exp_option(s, &len);

	return o && edp_option_parse(o, len, m) == EDP_OK && m->type == type;
}

static void kernel_ack(const struct fz_peer *p)
{
	struct fz_seg s;

	base_seg(p, &s, TCP_FLAG_ACK);
	send_seg(&s);
}

static void kernel_receive(struct fz_peer *p, const struct fz_seg *s)
{
	bool syn = s->flags & TCP_FLAG_SYN, ack = s->flags & TCP_FLAG_ACK;
	struct edp_msg m;

	if (s->flags & TCP_FLAG_RST) {
		if (p->sock && (s->seq == p->rcv_nxt || !p->established))
			p->sock = p->established = false;
		return;
	}
	if (syn && !ack) {
		if (p->sock && !p->active && s->seq == p->risn) {
			/* Its SYN again: answered again until the handshake
			 * is over, then only with an ACK (RFC 5961 4.2). */
			if (p->established)
				kernel_ack(p);
			else
				kernel_synack(p);
			return;
		}
		if (p->sock && p->established)
			return;
		fz_peer_clear(p);
		p->sock = true;
		p->active = p->established = false;
		p->isn = fz_rand();
		p->risn = s->seq;
		p->snd_nxt = p->isn + 1;
		p->rcv_nxt = s->seq + 1;
		p->offered = p->racks && !p->silent && carries(s, EDP_SYN, &m);
		if (p->offered)
			fz_peer_heard(p, &m);
		kernel_synack(p);
		if (p->offered)
			fz_peer_setup_start(p, false);
		return;
	}
	if (syn) {
		if (p->sock && p->active && !p->established &&
		    s->ack == p->isn + 1) {
			p->established = true;
			p->risn = s->seq;
			p->rcv_nxt = s->seq + 1;
			kernel_ack(p);
			if (p->syn_offered && carries(s, EDP_SYNACK, &m)) {
				fz_peer_heard(p, &m);
				fz_peer_setup_start(p, true);
			} else if (p->syn_offered)
				/* Answered plain (our offer lost, late or
				 * stripped): its rackd adopts (adopt.c). */
				send_adopt(p, false, false);
		} else if (p->established) {
			kernel_ack(p);
		}
		return;
	}
	if (!p->sock)
		return;
	if (!p->established && ack && s->ack == p->isn + 1)
		p->established = true;
	if (s->paylen || (s->flags & TCP_FLAG_FIN)) {
		if (s->seq == p->rcv_nxt)
			p->rcv_nxt += (uint32_t)s->paylen +
				      !!(s->flags & TCP_FLAG_FIN);
		kernel_ack(p);
	}
}

void fz_peer_receive(const uint8_t *pkt, size_t len)
{
	struct packet pk;
	struct fz_seg s;
	struct fz_peer *p;
	struct edp_msg m;
	size_t olen = 0;
	const uint8_t *o;

	if (!fz_seg_parse(pkt, len, &s, &pk))
		return;
	if ((s.flags & (TCP_FLAG_SYN | TCP_FLAG_RST | TCP_FLAG_FIN)) ==
	    TCP_FLAG_SYN && rcsyn_carried(&pk)) {
		rcsyn_message(&s, &pk);
		return;
	}
	o = fz_exp_option(&s, &olen);
	if (!(s.flags & TCP_FLAG_SYN) && o && fz_racks_exid(o, olen)) {
		/* Its rackd's, consumed there, whatever it says. */
		if (edp_option_parse(o, olen, &m) != EDP_OK || s.paylen)
			return;
		p = edp_type_numbered(m.type) ? by_id(m.conn_id, &s.dst)
					      : by_tuple(&s.dst, &s.src);
		if (!p || !p->racks || p->silent)
			return;
		if (edp_type_numbered(m.type))
			numbered_message(p, &s, &m);
		else if (m.type == EDP_ADOPT)
			adopt_message(p, &m);
		else if (p->setup)
			fz_peer_setup_message(p, &m);
		return;
	}
	p = by_tuple(&s.dst, &s.src);
	if (p)
		kernel_receive(p, &s);
}

/* ---- what the input makes the remote hosts do ---- */

void fz_peer_connect(unsigned n, uint32_t isn, uint8_t optbits, bool probe)
{
	struct fz_peer *p = &fz_peers[n];
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_SYN };
	struct fz_seg s;

	if (p->sock && p->established)
		return;
	fz_peer_clear(p);
	fz_flow_endpoints(n, &p->ours, &p->wire);
	p->sock = p->active = true;
	p->established = false;
	p->probe = probe;
	p->isn = isn;
	p->snd_nxt = isn + 1;
	p->rcv_nxt = 0;
	p->syn_offered = p->racks && !p->silent && !(optbits & 0x20);
	base_seg(p, &s, TCP_FLAG_SYN);
	s.seq = isn;
	s.ack = 0;
	s.optlen = optbits & 1 ? fz_rcsyn_options(EDP_RECONNECT, 0, s.opt) -
				 EDP_MARKER_SIZE : 0;
	if (p->syn_offered) {
		/* 0x40: no room for the long form (TCP-MD5's signature). */
		fz_peer_offer(p, EDP_SYN, optbits & 0x40, &m);
		s.optlen += edp_option_build(&m, s.opt + s.optlen,
					     sizeof(s.opt) - s.optlen);
	}
	send_seg(&s);
}

void fz_peer_retransmit_syn(unsigned n)
{
	struct fz_peer *p = &fz_peers[n];
	struct fz_seg s;

	if (!p->sock || !p->active || p->established)
		return;
	base_seg(p, &s, TCP_FLAG_SYN);
	s.seq = p->isn;
	s.ack = 0;
	s.optlen = fz_rcsyn_options(EDP_RECONNECT, 0, s.opt) - EDP_MARKER_SIZE;
	send_seg(&s);
}

void fz_peer_send(unsigned n, unsigned len, bool fin)
{
	struct fz_peer *p = &fz_peers[n];
	struct fz_seg s;

	if (!p->sock || !p->established)
		return;
	base_seg(p, &s, TCP_FLAG_ACK | TCP_FLAG_PSH | (fin ? TCP_FLAG_FIN : 0));
	s.paylen = len % 200;
	memset(s.payload, 'p', s.paylen);
	p->snd_nxt += (uint32_t)s.paylen + (fin ? 1 : 0);
	send_seg(&s);
}

void fz_peer_message(unsigned n, uint8_t what, uint8_t arg)
{
	struct fz_peer *p = &fz_peers[n];

	if (!p->racks)
		return;
	switch (what % 8) {
	case 0:		/* its heartbeat (a replay with ARG's low bit) */
		if (p->connected)
			send_numbered(p, EDP_HEARTBEAT,
				      arg & 1 ? p->hb_out : ++p->hb_out);
		return;
	case 1:		/* its set-up's first message again */
	case 2:		/* its CONFIRM again */
		fz_peer_setup_again(p, what % 8);
		return;
	case 3:		/* its process is being checkpointed */
		if (p->connected)
			send_numbered(p, EDP_AWAY, ++p->hb_out);
		return;
	case 4:		/* a zero-length RECONNECT, as older rackds sent */
		if (p->connected)
			send_numbered(p, EDP_RECONNECT, ++p->hb_out);
		return;
	case 5:		/* its adoption of the connection */
		if (p->sock && p->established)
			send_adopt(p, arg & 1, arg & 2);
		return;
	case 6:
		if (p->connected)
			send_rcsyn(p, ++p->hb_out, NULL, NULL);
		return;
	default:	/* its DONE again */
		fz_peer_setup_again(p, 3);
	}
}

void fz_peer_move(unsigned n, int ai, int pi, bool reconnect)
{
	struct fz_peer *p = &fz_peers[n];
	int f = p->wire.addr.family == AF_INET6;

	p->wire.addr = *fz_remote_addr(f, ai % FZ_REMOTE_ADDRS);
	p->wire.port = fz_remote_port(pi % 3);
	if (reconnect && p->racks && p->connected)
		send_rcsyn(p, ++p->hb_out, NULL, NULL);
}

void fz_peer_forget(unsigned n)
{
	fz_peer_clear(&fz_peers[n]);
}

void fz_peer_reset(void)
{
	memset(fz_peers, 0, sizeof(fz_peers));
	for (unsigned n = 0; n < FZ_FLOWS; n++) {
		fz_flow_endpoints(n, &fz_peers[n].ours, &fz_peers[n].wire);
		fz_peers[n].racks = true;
		fz_peers[n].hostkeys = fz_model.hostkeys;
	}
}
