// SPDX-License-Identifier: GPL-2.0-only
#include "answer.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>

#include "inject.h"
#include "log.h"
#include "rackd.h"

#define ANSWER_WINDOW 65535
#define DEFAULT_MSS 536

static void send_announcement(struct rackd *d, const struct conn *c,
			      const struct packet *fin)
{
	size_t mss = c->rend.has_mss && c->rend.mss ? c->rend.mss : DEFAULT_MSS;
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

uint32_t answer_probe(struct rackd *d, struct conn *c, const struct packet *p)
{
	/* Only a FIN that is the client's very first byte of sequence
	 * space: a client that sent data is no probe. */
	if (!d->cfg->answer_probes || !c || c->dir != CONN_INCOMING ||
	    p->payload_len || !c->rend.seen || p->seq != c->rend.isn + 1)
		return NF_ACCEPT;

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
