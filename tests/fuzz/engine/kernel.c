// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stateful fuzzer's local kernel (engine.h): the sockets sock_diag
 * reports (fake.c) and a small TCP behind them. Sockets connect, accept
 * on any port, send data (a window probe when the window is closed),
 * retransmit with a growing backoff (a SYN or SYN-ACK as it was),
 * acknowledge what arrives in order,
 * answer a SYN on an established socket with a challenge ACK at most
 * every 500 ms (adoption's elicitation), die of an exact RST only
 * (RFC 5961), revert a backoff step for an ICMP unreachable (RFC 6069)
 * and answer a segment for no socket with a RST. What they send goes
 * out through the host's output path (net.c).
 */
#include <string.h>

#include "engine.h"
#include "packet.h"
#include "sockdiag.h"

/* Include/net/tcp_states.h */
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_SYN_RECV 3
#define TCP_FIN_WAIT1 4
#define TCP_FIN_WAIT2 5
#define TCP_TIME_WAIT 6
#define TCP_CLOSE 7
#define TCP_CLOSE_WAIT 8
#define TCP_LAST_ACK 9

static void kernel_emit(unsigned n, uint8_t flags, uint32_t seq,
			const uint8_t *data, size_t len)
{
	struct fz_sock *k = &fz_socks[n];
	struct fz_seg s = { .seq = seq, .ack = k->rcv_nxt, .flags = flags,
			 .window = 65535 };

	fz_flow_endpoints(n, &s.src, &s.dst);
	if (!(flags & TCP_FLAG_ACK))
		s.ack = 0;
	if (k->options & SOCKDIAG_OPT_TIMESTAMPS) {
		uint32_t ts = (uint32_t)fz_now;

		s.opt[0] = s.opt[1] = TCP_OPT_NOP;
		s.opt[2] = TCP_OPT_TIMESTAMP;
		s.opt[3] = 10;
		for (int i = 0; i < 4; i++) {
			s.opt[4 + i] = (uint8_t)(ts >> (24 - 8 * i));
			s.opt[8 + i] = (uint8_t)((ts - 1) >> (24 - 8 * i));
		}
		s.optlen = 12;
	}
	if (len)
		memcpy(s.payload, data, len);
	s.paylen = len;
	fz_host_emit(&s);
}

/* A SYN or SYN-ACK with the options OPTBITS asks for (MSS, window
 * scale, SACK-permitted, timestamps). */
static void kernel_syn(unsigned n, bool ack, uint8_t optbits)
{
	struct fz_sock *k = &fz_socks[n];
	struct fz_seg s = { .seq = k->isn, .ack = ack ? k->rcv_nxt : 0,
			 .flags = TCP_FLAG_SYN | (ack ? TCP_FLAG_ACK : 0),
			 .window = 65535 };
	size_t i = 0;

	fz_flow_endpoints(n, &s.src, &s.dst);
	if (optbits & 1) {
		s.opt[i++] = TCP_OPT_MSS;
		s.opt[i++] = 4;
		s.opt[i++] = 0x05;
		s.opt[i++] = 0xb4;
	}
	if (optbits & 2) {
		s.opt[i++] = TCP_OPT_SACK_PERM;
		s.opt[i++] = 2;
	}
	if (optbits & 4) {
		s.opt[i++] = TCP_OPT_TIMESTAMP;
		s.opt[i++] = 10;
		memset(s.opt + i, 0, 8);
		s.opt[i + 3] = (uint8_t)fz_now;
		i += 8;
	}
	if (optbits & 8) {
		s.opt[i++] = TCP_OPT_NOP;
		s.opt[i++] = TCP_OPT_WSCALE;
		s.opt[i++] = 3;
		s.opt[i++] = 7;
	}
	/* Full options (40 bytes) leave racks no room. */
	while (optbits & 16 && i < 40)
		s.opt[i++] = TCP_OPT_NOP;
	while (i % 4)
		s.opt[i++] = TCP_OPT_NOP;
	s.optlen = i;
	k->options = (optbits & 4 ? SOCKDIAG_OPT_TIMESTAMPS : 0) |
		     (optbits & 2 ? SOCKDIAG_OPT_SACK : 0) |
		     (optbits & 8 ? SOCKDIAG_OPT_WSCALE : 0);
	k->snd_wscale = k->rcv_wscale = optbits & 8 ? 7 : 0;
	k->mss = 1460;
	fz_host_emit(&s);
}

void fz_kernel_connect(unsigned n, uint32_t isn, uint8_t optbits)
{
	struct fz_sock *k = &fz_socks[n];

	/* A tuple in use connects only once it is closing (TIME_WAIT
	 * reuse) or gone. Known bug "splice-new-socket": nor onto a tuple
	 * a splice uses (the kernel would, it knows nothing of it). */
	if (k->exists && k->state != TCP_TIME_WAIT &&
	    k->state != TCP_CLOSE)
		return;
	if (fz_known("splice-new-socket") && fz_d) {
		struct endpoint l, r;
		struct conn *c;

		fz_flow_endpoints(n, &l, &r);
		c = conn_lookup_wire(&fz_d->conns, &l, &r);
		if (c && !endpoint_equal(&c->local, &l))
			return;
	}
	memset(k, 0, sizeof(*k));
	k->exists = true;
	k->state = TCP_SYN_SENT;
	k->active = true;
	k->isn = isn;
	k->snd_una = isn;
	k->snd_nxt = isn + 1;
	k->syn_optbits = optbits;
	kernel_syn(n, false, optbits);
}

void fz_kernel_established(unsigned n, uint32_t isn, uint32_t risn,
			   bool active)
{
	struct fz_sock *k = &fz_socks[n];

	memset(k, 0, sizeof(*k));
	k->exists = true;
	k->state = TCP_ESTABLISHED;
	k->active = active;
	k->isn = isn;
	k->risn = risn;
	k->snd_una = k->snd_nxt = isn + 1;
	k->rcv_nxt = risn + 1;
	k->mss = 1460;
}

void fz_kernel_send(unsigned n, unsigned len, bool fin)
{
	struct fz_sock *k = &fz_socks[n];
	uint8_t data[256];

	if (!k->exists || (k->state != TCP_ESTABLISHED &&
			   k->state != TCP_CLOSE_WAIT))
		return;
	if (k->zero_window) {
		/* A window probe: one byte old. */
		kernel_emit(n, TCP_FLAG_ACK, k->snd_una - 1, NULL, 0);
		return;
	}
	len %= sizeof(data);
	memset(data, 'd', len);
	kernel_emit(n, TCP_FLAG_ACK | TCP_FLAG_PSH | (fin ? TCP_FLAG_FIN : 0),
		    k->snd_nxt, data, len);
	k->snd_nxt += len + (fin ? 1 : 0);
	if (fin)
		k->state = k->state == TCP_ESTABLISHED ? TCP_FIN_WAIT1 : TCP_LAST_ACK;
	if (k->snd_nxt != k->snd_una)
		k->unacked++;
}

static void retransmit(unsigned n)
{
	struct fz_sock *k = &fz_socks[n];
	uint32_t len = k->snd_nxt - k->snd_una;
	uint8_t data[64];

	if (!len || k->zero_window) {
		kernel_emit(n, TCP_FLAG_ACK, k->snd_una - 1, NULL, 0);
		return;
	}
	len = len > sizeof(data) ? sizeof(data) : len;
	memset(data, 'r', len);
	kernel_emit(n, TCP_FLAG_ACK, k->snd_una, data, len);
	k->retrans_bytes += len;
}

void fz_kernel_retransmit(unsigned n)
{
	struct fz_sock *k = &fz_socks[n];

	if (!k->exists)
		return;
	/* The handshake's own retransmissions: the same ISN and options
	 * (what rackd added to the first SYN is not the socket's). */
	if (k->state == TCP_SYN_SENT || k->state == TCP_SYN_RECV) {
		kernel_syn(n, k->state == TCP_SYN_RECV,
			   k->state == TCP_SYN_SENT ? k->syn_optbits : 0x0f);
		return;
	}
	retransmit(n);
	k->retransmits++;
	if (k->backoff < 15)
		k->backoff++;
	if (!k->unacked)
		k->unacked = 1;
}

/* RFC 6069: the unreachable reverts one backoff step and, at the
 * reverted timeout, the socket retransmits (at once here). */
void fz_net_unreachable(const struct endpoint *local,
			const struct endpoint *remote, uint32_t seq)
{
	int n = fz_flow_of(local, remote);

	if (n < 0 || !fz_socks[n].exists || seq != fz_socks[n].snd_una ||
	    !fz_socks[n].backoff)
		return;
	fz_socks[n].backoff--;
	retransmit((unsigned)n);
}

/* No socket: a RST back (RFC 793), unless the segment is one. */
static void kernel_reset(const struct fz_seg *in)
{
	struct fz_seg s = { .src = in->dst, .dst = in->src, .flags = TCP_FLAG_RST };

	if (in->flags & TCP_FLAG_RST)
		return;
	if (in->flags & TCP_FLAG_ACK) {
		s.seq = in->ack;
	} else {
		s.flags |= TCP_FLAG_ACK;
		s.ack = in->seq + (uint32_t)in->paylen +
			!!(in->flags & (TCP_FLAG_SYN | TCP_FLAG_FIN));
	}
	fz_host_emit(&s);
}

/* A segment that passed prerouting, for one of this host's sockets. */
void fz_kernel_receive(const struct fz_seg *s)
{
	int n = fz_flow_of(&s->dst, &s->src);
	struct fz_sock *k;
	bool syn = s->flags & TCP_FLAG_SYN, ack = s->flags & TCP_FLAG_ACK;

	if (n < 0)
		return;
	k = &fz_socks[n];
	if (!k->exists || k->state == TCP_CLOSE) {
		if (!syn || ack) {
			kernel_reset(s);
			return;
		}
		/* A listener on every port: SYN_RECV, SYN-ACK. */
		memset(k, 0, sizeof(*k));
		k->exists = true;
		k->state = TCP_SYN_RECV;
		k->isn = fz_rand();
		k->risn = s->seq;
		k->snd_una = k->isn;
		k->snd_nxt = k->isn + 1;
		k->rcv_nxt = s->seq + 1;
		kernel_syn((unsigned)n, true, 0x0f);
		return;
	}
	if (s->flags & TCP_FLAG_RST) {
		/* RFC 5961: only the exact sequence number resets. */
		if (s->seq == k->rcv_nxt || (k->state == TCP_SYN_SENT &&
					      s->ack == k->snd_nxt))
			k->exists = false;
		return;
	}
	if (syn && !ack) {
		if (k->state == TCP_SYN_RECV && s->seq == k->risn)
			kernel_syn((unsigned)n, true, 0x0f);
		else if (k->state == TCP_ESTABLISHED &&
			 fz_now - k->last_challenge >= 500) {
			/* RFC 5961 challenge ACK, rate limited (adopt_learn.c) */
			k->last_challenge = fz_now;
			kernel_emit((unsigned)n, TCP_FLAG_ACK, k->snd_nxt,
				    NULL, 0);
		}
		return;
	}
	if (syn) {
		if (k->state == TCP_SYN_SENT && s->ack == k->isn + 1) {
			k->state = TCP_ESTABLISHED;
			k->risn = s->seq;
			k->rcv_nxt = s->seq + 1;
			k->snd_una = s->ack;
		}
		if (k->state == TCP_ESTABLISHED)
			kernel_emit((unsigned)n, TCP_FLAG_ACK, k->snd_nxt,
				    NULL, 0);
		return;
	}
	if (k->state == TCP_SYN_RECV && ack && s->ack == k->isn + 1)
		k->state = TCP_ESTABLISHED;
	if (ack && (int32_t)(s->ack - k->snd_una) > 0 &&
	    (int32_t)(s->ack - k->snd_nxt) <= 0) {
		k->snd_una = s->ack;
		k->retransmits = k->backoff = 0;
		k->unacked = k->snd_una != k->snd_nxt;
		if (k->state == TCP_FIN_WAIT1 && k->snd_una == k->snd_nxt)
			k->state = TCP_FIN_WAIT2;
	}
	if (ack)
		k->zero_window = s->window == 0;
	if (s->paylen || (s->flags & TCP_FLAG_FIN)) {
		if (s->seq == k->rcv_nxt) {
			k->rcv_nxt += (uint32_t)s->paylen;
			if (s->flags & TCP_FLAG_FIN) {
				k->rcv_nxt++;
				k->state = k->state == TCP_ESTABLISHED ?
					   TCP_CLOSE_WAIT : TCP_TIME_WAIT;
			}
		}
		kernel_emit((unsigned)n, TCP_FLAG_ACK, k->snd_nxt, NULL, 0);
	}
}
