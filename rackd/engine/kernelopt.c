// SPDX-License-Identifier: GPL-2.0-only
#include "kernelopt.h"

#include <string.h>
#include <time.h>

#include "adopt.h"
#include "channel.h"
#include "knownhosts.h"
#include "log.h"
#include "setup.h"
#include "sockdiag.h"
#include "track.h"

/*
 * Whether rackd considers the connection of R at all, as the queue
 * path's rules do (ruleset.c: syn_out, syn_in): the server's port among
 * `ports`, the peer outside every `exclude` prefix. The program, which
 * offers to everyone, has no such rules.
 */
static bool considered(const struct config *cfg, const struct bpfopt_record *r)
{
	uint16_t server = r->active ? r->remote.port : r->local.port;
	bool port = cfg->all_ports;

	for (size_t i = 0; i < cfg->nexclude; i++)
		if (prefix_contains(&cfg->exclude[i], &r->remote.addr))
			return false;
	for (size_t i = 0; i < cfg->nports && !port; i++)
		port = server >= cfg->ports[i].first &&
		       server <= cfg->ports[i].last;
	return port;
}

uint32_t kernelopt_offer(struct rackd *d, const struct addr *addr)
{
	enum trust_policy pol = config_trust_for(d->cfg, addr);
	const struct known_host *other;
	struct host_pair *h;

	if (pol == TRUST_ANONYMOUS)
		return 0;
	h = host_pairs_at(&d->host_pairs, addr);
	if (!h || !host_pair_offerable(h, (int64_t)time(NULL),
				       d->cfg->hostpair_lifetime_ms / 1000,
				       d->cfg->hostpair_max_connections))
		return 0;
	if (known_hosts_judge(d->known_hosts, pol, h->peer_pk, addr,
			      &other) != TRUST_KNOWN)
		return 0;
	return h->id;
}

/*
 * The program echoed the host pair C's SYN named because this host has
 * it (its known_ids map). Whether the engine may derive from it with
 * this peer, as the queue path's offer_pair() judges a server's echo:
 * TRUST_KNOWN, or the verdict that forbids it. An anonymous peer prefix
 * gives TRUST_NEW: no derivation, and no refusal either.
 */
static enum trust_verdict echo_verdict(struct rackd *d, const struct conn *c)
{
	enum trust_policy pol = config_trust_for(d->cfg, &c->remote.addr);
	const struct known_host *other;
	struct host_pair *h = host_pairs_by_id(&d->host_pairs, c->hp_heard);

	if (pol == TRUST_ANONYMOUS || !h)
		return TRUST_NEW;
	return known_hosts_judge(d->known_hosts, pol, h->peer_pk,
				 &c->remote.addr, &other);
}

/*
 * Both ends' ISNs from the record, and the options the handshake
 * negotiated from the socket (tcp_info, as adoption reads them:
 * adopt_learn.c), which reconnection, holds and probe answers need
 * (conn_negotiate()). Returns whether the socket was found; if so,
 * *SND_UNA and *RCV_NXT say where it is now.
 */
static bool ends_from(struct conn *c, const struct bpfopt_record *r,
		      uint32_t *snd_una, uint32_t *rcv_nxt)
{
	struct sockdiag_progress pr;
	bool found = sockdiag_progress(&c->local, &c->remote, &pr) == 0;
	bool ws = found && (pr.options & SOCKDIAG_OPT_WSCALE);
	bool sack = found && (pr.options & SOCKDIAG_OPT_SACK);
	bool ts = found && (pr.options & SOCKDIAG_OPT_TIMESTAMPS);

	c->lend = (struct conn_end){
		.seen = true, .isn = r->local_isn,
		.has_mss = found && pr.advmss > 0, .mss = (uint16_t)pr.advmss,
		.has_wscale = ws, .wscale = (uint8_t)pr.rcv_wscale,
		.sack_permitted = sack, .has_timestamp = ts,
	};
	c->rend = (struct conn_end){
		.seen = true, .isn = r->remote_isn,
		.has_mss = found && pr.snd_mss > 0,
		.mss = (uint16_t)pr.snd_mss,
		.has_wscale = ws, .wscale = (uint8_t)pr.snd_wscale,
		.sack_permitted = sack, .has_timestamp = ts,
	};
	if (!found)
		return false;
	conn_seq_progress(c, &pr, snd_una, rcv_nxt);
	return true;
}

/* The sequence number of C's SYN. */
static uint32_t syn_isn(const struct conn *c)
{
	return c->dir == CONN_OUTGOING ? c->lend.isn : c->rend.isn;
}

/*
 * The entry for R's connection: a new one, or the one a diverted SYN of
 * it made (a classic probe's, whose SYN the queue still sees), still in
 * its handshake. An entry already past its handshake with the same SYN
 * has its record already (NULL: nothing to do); one of an older
 * connection on the same endpoints is over, since the kernel
 * established a new socket there.
 */
static struct conn *entry_for(struct rackd *d, const struct bpfopt_record *r)
{
	enum conn_dir dir = r->active ? CONN_OUTGOING : CONN_INCOMING;
	uint32_t isn = r->active ? r->local_isn : r->remote_isn;
	struct conn *c = conn_lookup(&d->conns, &r->local, &r->remote);

	if (c && c->dir == dir && syn_isn(c) == isn) {
		if (c->state == CONN_HANDSHAKE)
			return c;
		d->stats.bpf_duplicate++;
		return NULL;
	}
	if (c) {
		conn_log(c, "replaced by a new handshake (kernel)");
		rackd_forget(d, c);
	}
	if (!r->active)
		track_make_room(d, &r->remote.addr);
	if (d->conns.count >= d->cfg->max_connections) {
		d->stats.conns_refused++;
		return NULL;
	}
	c = track_restore(d, &r->local, &r->remote, dir);
	conn_log(c, "handshake (kernel)");
	return c;
}

/* What the two options said, as track.c keeps it from the SYN and
 * SYN-ACK. */
static void offers_from(struct conn *c, const struct bpfopt_record *r)
{
	c->offered = true;
	c->offer_made = true;
	c->offer_short = !r->local_long;
	c->hp_sent = r->hp_sent;
	memcpy(c->nonce_local, r->nonce_local, EDP_NONCE_LEN);
	if (r->peer_long || (r->peer_flags & EDP_OFFER_HOSTKEYS)) {
		c->peer_long = true;
		c->hp_heard = r->hp_peer;
		memcpy(c->nonce_remote, r->nonce_peer, EDP_NONCE_LEN);
	}
}

/* The server echoed a host pair its trust does not allow with this
 * peer now: false when that refuses the connection (as the host
 * handshake would: host_key_mismatch, host_not_pinned). */
static bool echo_judged(struct rackd *d, struct conn *c)
{
	switch (echo_verdict(d, c)) {
	case TRUST_KNOWN:
		return true;
	case TRUST_MISMATCH:
		c->unmanaged = UNMANAGED_HOST_KEY_MISMATCH;
		break;
	case TRUST_NOT_PINNED:
		c->unmanaged = UNMANAGED_HOST_NOT_PINNED;
		break;
	case TRUST_NEW:
		/* Anonymous there (or the host pair gone): no derivation;
		 * the client's host handshake or KEY decides. */
		c->hp_sent = 0;
		return true;
	}
	setup_release(d, c, conn_unmanaged_name(c->unmanaged));
	return false;
}

void kernelopt_record(struct rackd *d, const struct bpfopt_record *r)
{
	uint32_t snd_una = r->local_isn + 1, rcv_nxt = r->remote_isn + 1;
	struct conn *c;

	d->stats.bpf_records++;
	/* A plain client of ours: none of rackd's business (the queue path
	 * never sees its SYN either); one to a peer not considered, ours or
	 * not, neither. */
	if ((!r->racks && !r->active) || !considered(d->cfg, r)) {
		d->stats.bpf_ignored++;
		return;
	}
	c = entry_for(d, r);
	if (!c)
		return;
	c->syns = 1;
	/* Established, so its peer receives what goes to its address. */
	conn_halfopen_proven(&d->conns, c);
	ends_from(c, r, &snd_una, &rcv_nxt);
	if (!r->racks) {
		/* Our SYN offered racks, the SYN-ACK did not answer it: a
		 * plain peer, or a middlebox that stripped the option. */
		d->stats.bpf_plain++;
		c->offered = true;
		/* Only the first SYN offers: a plain SYN-ACK after a
		 * retransmission most likely answers the plain one. */
		if (c->unmanaged == UNMANAGED_NO)
			c->unmanaged = r->syn_retrans ?
				       UNMANAGED_SYN_RETRANSMITTED :
				       UNMANAGED_PLAIN_ANSWER;
		setup_release(d, c, "plain peer: released");
		adopt_released(d, c);
		return;
	}
	d->stats.bpf_racks++;
	offers_from(c, r);
	if (!r->active && c->hp_sent && !echo_judged(d, c))
		return;
	/* Its first message goes at the connection's numbers as they are
	 * now: the application may have sent data since the handshake. */
	channel_hint(d, c, snd_una - 1, rcv_nxt - 1);
	setup_begin(d, c);
	channel_hint_clear(d);
}
