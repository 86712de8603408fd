// SPDX-License-Identifier: GPL-2.0-only
#include "answer.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>

#include "inject.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "sockdiag.h"

#define ANSWER_WINDOW 65535
/* Never cut the announcement finer than this, whatever MSS the prober
 * announced (RFC 879's default, which every IPv4 and IPv6 path carries):
 * two segments per copy at most. */
#define ANSWER_MIN_MSS 536

static void send_announcement(struct rackd *d, const struct conn *c,
			      const struct packet *fin)
{
	size_t mss = c->rend.has_mss && c->rend.mss > ANSWER_MIN_MSS ?
		     c->rend.mss : ANSWER_MIN_MSS;
	uint32_t seq = fin->ack;

	for (size_t off = 0; off < EDP_ANNOUNCE_LEN;) {
		size_t n = EDP_ANNOUNCE_LEN - off < mss ? EDP_ANNOUNCE_LEN - off
							: mss;
		bool last = off + n == EDP_ANNOUNCE_LEN;
		/* Our data acknowledges the probe's FIN; the last segment
		 * closes: the announcement is the last thing before EOF. */
		struct inject_segment seg = {
			.src = &c->local, .dst = &c->remote,
			.seq = seq + (uint32_t)off, .ack = fin->seq + 1,
			.flags = TCP_FLAG_ACK | TCP_FLAG_PSH |
				 (last ? TCP_FLAG_FIN : 0),
			.window = ANSWER_WINDOW,
			.payload = d->announcement + off, .paylen = n,
		};

		if (inject_send(d->inject, &seg))
			d->edp.send_errors++;
		off += n;
	}
}

/*
 * Whether FIN P is a probe's, worth an answer. Only a FIN that is the
 * client's very first byte of sequence space (a client that sent data is
 * no probe), on a connection whose handshake the kernel completed: its
 * socket is established, so the client has acknowledged our SYN-ACK's
 * ISN and proved that it receives what is sent to its address (QUIC's
 * address validation, RFC 9000 8.1). A forger who sends SYN and FIN
 * from someone else's address never gets that far, so the answer can
 * never be aimed at a third party. Once per connection, and at most
 * ANSWER_RATE a second in all.
 */
static bool worth_answer(struct rackd *d, struct conn *c,
			 const struct packet *p)
{
	if (!d->cfg->answer_probes || !c || c->dir != CONN_INCOMING ||
	    p->payload_len || !c->rend.seen || p->seq != c->rend.isn + 1)
		return false;
	/* The rate limit before the question to the kernel, which a forger
	 * can make us ask too. */
	if (c->probed || !ratelimit_take(&d->probe_answers, loop_now())) {
		d->edp.probes_refused++;
		return false;
	}
	if (sockdiag_state(&c->local, &c->remote) != TCP_STATE_ESTABLISHED) {
		d->edp.probes_unproven++;
		return false;
	}
	return true;
}

uint32_t answer_probe(struct rackd *d, struct conn *c, const struct packet *p)
{
	if (!worth_answer(d, c, p))
		return NF_ACCEPT;
	c->probed = true;
	/* Twice: a lost copy would turn an enhanced host into an ordinary
	 * one for the prober, a duplicate costs nothing. Both leave before
	 * the FIN reaches the application, so nothing it answers can come
	 * first. */
	send_announcement(d, c, p);
	send_announcement(d, c, p);
	d->edp.probes_answered++;
	log_debug("conn %llu: answered an EDP probe",
		  (unsigned long long)c->id);
	return NF_ACCEPT;
}

void answer_init(struct rackd *d)
{
	ratelimit_init(&d->probe_answers, ANSWER_RATE, ANSWER_RATE);
}
