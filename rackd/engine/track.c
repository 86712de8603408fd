// SPDX-License-Identifier: GPL-2.0-only
#include "track.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "adopt.h"
#include "answer.h"
#include "channel.h"
#include "csum.h"
#include "event.h"
#include "inject.h"
#include "hold.h"
#include "knownhosts.h"
#include "liveness.h"
#include "log.h"
#include "loop.h"
#include "migrate.h"
#include "offerset.h"
#include "rcsyn.h"
#include "reconnect.h"
#include "rewrite.h"
#include "rstguard.h"
#include "setup.h"
#include "sockdiag.h"

/* Rewritten packets are built here: rackd is single-threaded. */
static uint8_t rewrite_buf[0xffff];

static void release_plain(struct rackd *d, struct conn *c,
			  enum conn_unmanaged why);

/*
 * How long a handshake goes unchecked: within setup_timeout every
 * connection must be decided (connected, adopting or released), so its
 * handshake is looked at by then even though the kernel may go on
 * retransmitting its SYN up to syn_timeout.
 */
static uint64_t handshake_wait(const struct config *cfg)
{
	return cfg->setup_timeout_ms < cfg->syn_timeout_ms ?
	       cfg->setup_timeout_ms : cfg->syn_timeout_ms;
}

/* Whether the kernel's socket in STATE (sockdiag_state()) is past its
 * handshake: established, or already closing after it. */
static bool handshake_over(int state)
{
	switch (state) {
	case TCP_STATE_ESTABLISHED:
	case TCP_STATE_FIN_WAIT1:
	case TCP_STATE_FIN_WAIT2:
	case TCP_STATE_CLOSE_WAIT:
	case TCP_STATE_LAST_ACK:
	case TCP_STATE_CLOSING:
		return true;
	default:
		return false;
	}
}

/*
 * The kernel's state of C's socket. An incoming entry may stand for any
 * sender's SYN (a flood of them fills the half-open entries): asking
 * for it is paced with the other questions that unauthenticated
 * segments cause; -EAGAIN when not asked.
 */
static int handshake_state(struct rackd *d, struct conn *c)
{
	if (c->dir == CONN_INCOMING && !rackd_unauth_query(d))
		return -EAGAIN;
	return sockdiag_state(&c->local, &c->remote);
}

/*
 * C is still in its handshake when it should be decided. The SYN-ACK it
 * needed may never have come by rackd while the kernel finished the
 * handshake plain: a SYN delayed behind its plain retransmission (same
 * ISN) reaches an established socket, which answers no SYN-ACK; a
 * SYN-ACK answered the plain copy before the offer arrived. The kernel
 * says where the handshake is: over, it is adopted (or released when
 * adoption cannot help); still under way (or no socket shown yet: a
 * request socket may not be; or not asked), it is looked at again until
 * syn_timeout; then forgotten.
 */
static void handshake_expire(struct rackd *d, struct conn *c)
{
	uint64_t age = loop_now() - c->created_mono;
	int state = handshake_state(d, c);

	if (handshake_over(state)) {
		if (c->offered &&
		    adopt_unfinished(d, c, "handshake ended without its "
					   "SYN-ACK: adopting"))
			return;
		/* Not offered: our SYN had no room (that cause stays). */
		release_plain(d, c, UNMANAGED_HANDSHAKE_UNSEEN);
		return;
	}
	/* Our own socket shows from its first SYN on: gone, it failed
	 * (refused, reset, closed); closing, likewise. */
	if ((state == -ENOENT && c->dir == CONN_OUTGOING) ||
	    state == TCP_STATE_TIME_WAIT || state == TCP_STATE_CLOSE) {
		conn_log(c, "handshake failed: its socket is gone");
		d->stats.conns_expired++;
		rackd_forget(d, c);
		return;
	}
	if (age < d->cfg->syn_timeout_ms) {
		uint64_t left = d->cfg->syn_timeout_ms - age;
		uint64_t wait = handshake_wait(d->cfg);

		loop_timer_arm(d->loop, &c->expiry, left < wait ? left : wait);
		return;
	}
	conn_log(c, "handshake timed out");
	d->stats.conns_expired++;
	rackd_forget(d, c);
}

static void track_expire(struct timer *t, void *arg)
{
	struct conn *c = arg;
	struct rackd *d = rackd_of_conn(c);

	(void)t;
	if (c->state == CONN_HANDSHAKE) {
		handshake_expire(d, c);
		return;
	}
	if (c->state == CONN_SETUP) {
		d->edp.setup_failed++;
		/* Refused by trust (the peer offered only an anonymous
		 * exchange): said as such, and not adopted. */
		if (conn_trust_refused(c)) {
			setup_release(d, c, conn_unmanaged_name(c->unmanaged));
			return;
		}
		c->unmanaged = UNMANAGED_SETUP_TIMEOUT;
		setup_release(d, c, "set-up timed out: released");
		adopt_released(d, c);
		return;
	}
	if (c->state == CONN_SUSPENDED) {
		hold_abort(d, c);
		live_detach(d, c);
		c->migration = MIG_NONE;
		/* Reset on purpose: its keys go, as a released one's do. */
		setup_free(d, c);
		c->peer = PEER_NONE;
		return;
	}
	if (c->hold) {
		/* A resumption that never heard back: stop holding. */
		hold_finish(d, c);
		return;
	}
	conn_log(c, "handshake timed out");
	d->stats.conns_expired++;
	rackd_forget(d, c);
}

static void conn_end_set(struct conn_end *e, const struct packet *p)
{
	e->seen = true;
	e->isn = p->seq;
	e->paylen = p->payload_len > UINT16_MAX ? UINT16_MAX
						: (uint16_t)p->payload_len;
	e->has_mss = p->opt.has_mss;
	e->mss = p->opt.mss;
	e->has_wscale = p->opt.has_wscale;
	e->wscale = p->opt.wscale;
	e->sack_permitted = p->opt.sack_permitted;
	e->has_timestamp = p->opt.has_timestamp;
}

static void packet_endpoints(const struct packet *p, bool outbound,
			     struct endpoint *local, struct endpoint *remote)
{
	struct endpoint src = { .addr = p->src, .port = p->sport };
	struct endpoint dst = { .addr = p->dst, .port = p->dport };

	*local = outbound ? src : dst;
	*remote = outbound ? dst : src;
}

static struct conn *lookup(struct rackd *d, const struct packet *p,
			   bool outbound)
{
	struct endpoint local, remote;

	packet_endpoints(p, outbound, &local, &remote);
	return conn_lookup(&d->conns, &local, &remote);
}

/* The end that sends a connection's SYN. */
static struct conn_end *syn_end(struct conn *c)
{
	return c->dir == CONN_OUTGOING ? &c->lend : &c->rend;
}

/*
 * The racks option of an incoming SYN or SYN-ACK: parsed, counted when
 * malformed. Returns true when it is a valid option of TYPE.
 */
static bool racks_option(struct rackd *d, struct conn *c,
			 const struct packet *p, uint8_t type)
{
	struct edp_msg m;
	enum edp_error err;

	if (!p->opt.racks_len)
		return false;
	err = edp_option_parse(p->data + p->opt.racks_off, p->opt.racks_len,
			       &m);
	if (err) {
		d->edp.rejected_by[err]++;
		return false;
	}
	if (m.type != type) {
		d->edp.unexpected++;
		return false;
	}
	/* The peer's nonce and host pair (setup.h): the first copy's. A
	 * short option speaks host keys by its flag (no room for more). */
	if (c && (m.has_nonce || (m.flags & EDP_OFFER_HOSTKEYS)) &&
	    !c->peer_long) {
		c->peer_long = true;
		c->hp_heard = m.hp_id;
		memcpy(c->nonce_remote, m.nonce, EDP_NONCE_LEN);
	}
	return true;
}

/*
 * The host pair C's offer names (hostpairs.h), 0 for none: the client
 * names the one it shares with the host at the address it connects to,
 * while it is fresh; the server echoes the client's if it has it too.
 * Neither where trust is anonymous, or where the peer's key is no longer
 * trusted there (pinned: no longer pinned).
 */
static uint32_t offer_pair(struct rackd *d, const struct conn *c)
{
	enum trust_policy pol = config_trust_for(d->cfg, &c->remote.addr);
	const struct known_host *other;
	struct host_pair *h;

	if (pol == TRUST_ANONYMOUS)
		return 0;
	if (conn_is_client(c)) {
		h = host_pairs_at(&d->host_pairs, &c->remote.addr);
		if (!h || !host_pair_offer(h, (int64_t)time(NULL),
					   d->cfg->hostpair_lifetime_ms / 1000,
					   d->cfg->hostpair_max_connections))
			return 0;
	} else if (!c->peer_long ||
		   !(h = host_pairs_by_id(&d->host_pairs, c->hp_heard))) {
		return 0;
	}
	if (known_hosts_judge(d->known_hosts, pol, h->peer_pk,
			      &c->remote.addr, &other) != TRUST_KNOWN)
		return 0;
	return h->id;
}

/* Can we rewrite this incoming packet without hiding a bad checksum? */
static bool checksum_trusted(struct rackd *d, const struct queue_packet *qp,
			     const struct packet *p)
{
	if (!(qp->skbinfo & NFQA_SKB_CSUM_NOTVERIFIED) ||
	    (qp->skbinfo & NFQA_SKB_CSUMNOTREADY))
		return true;
	if (csum_tcp_valid(&p->src, &p->dst, p->data + p->tcp_off,
			   p->tcp_len))
		return true;
	d->stats.csum_bad++;
	return false;
}

/* Remove the racks option; the socket sees what the peer kernel sent. */
static void verdict_stripped(struct rackd *d, struct queue *q,
			     const struct queue_packet *qp,
			     const struct packet *p)
{
	int len;

	(void)d;
	/* track_packet() checked the checksum of every incoming segment. */
	len = rewrite_remove_option(p, p->opt.racks_off, p->opt.racks_len,
				    rewrite_buf, sizeof(rewrite_buf));
	if (len < 0)
		queue_verdict(q, qp->id, NF_ACCEPT);
	else
		queue_verdict_replace(q, qp->id, rewrite_buf, (size_t)len);
}

/* Add a racks option of TYPE for C; false when the options have no
 * room. A retransmission carries the same nonce and host pair. */
static bool verdict_offered(struct rackd *d, struct conn *c,
			    struct queue *q, const struct queue_packet *qp,
			    const struct packet *p, uint8_t type)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = type,
			     .flags = EDP_OFFER_HOSTKEYS,
			     .has_nonce = !c->offer_short };
	uint8_t opt[EDP_OFFER_SIZE];
	size_t optlen;
	int len;

	if (!c->offer_made) {
		randombytes_buf(c->nonce_local, EDP_NONCE_LEN);
		c->hp_sent = offer_pair(d, c);
		c->offer_made = true;
	}
	m.hp_id = c->hp_sent;
	memcpy(m.nonce, c->nonce_local, EDP_NONCE_LEN);
	optlen = edp_option_build(&m, opt, sizeof(opt));
	len = rewrite_add_option(p, opt, optlen, rewrite_buf,
				 sizeof(rewrite_buf));
	if (len < 0 && !c->offer_short) {
		/* No room for 20 bytes (a TCP-MD5 signature leaves 8): the
		 * short form, which says host keys by its flag; no nonce,
		 * no host pair: the host handshake keys the connection. */
		c->offer_short = true;
		c->hp_sent = 0;
		sodium_memzero(c->nonce_local, EDP_NONCE_LEN);
		m.has_nonce = 0;
		optlen = edp_option_build(&m, opt, sizeof(opt));
		len = rewrite_add_option(p, opt, optlen, rewrite_buf,
					 sizeof(rewrite_buf));
	}
	if (len < 0)
		return false;
	queue_verdict_replace(q, qp->id, rewrite_buf, (size_t)len);
	return true;
}

/* An entry made by a SYN whose sender never proved its address: gone,
 * to make room for another (halfopen.h). */
static void evict(struct rackd *d, struct conn *c)
{
	conn_log(c, "evicted: half-open entries full");
	d->stats.halfopen_evicted++;
	/* Its SYN-ACK would still be diverted, to a connection we no longer
	 * know: the flow leaves the offered set too. */
	if (c->offered && c->state != CONN_RELEASED && d->offers &&
	    loop_now() - c->created_mono < OFFERSET_TIMEOUT_MS)
		(void)offerset_remove(d->offers, &c->local, &c->remote);
	rackd_forget(d, c);
}

bool track_make_room(struct rackd *d, const struct addr *src)
{
	/* A full table makes room as full half-open entries do: a real
	 * connection is worth more than an entry nobody proved. */
	unsigned max = d->conns.count >= d->cfg->max_connections ?
		       0 : d->cfg->max_half_open;
	struct conn *victim = conn_halfopen_victim(&d->conns, src, max,
						   d->cfg->max_half_open_per_prefix);

	if (victim)
		evict(d, victim);
	return d->conns.count < d->cfg->max_connections;
}

static struct conn *new_conn(struct rackd *d, const struct packet *p,
			     bool outbound)
{
	struct endpoint local, remote;
	struct conn *c;

	if (!outbound)
		track_make_room(d, &p->src);
	if (d->conns.count >= d->cfg->max_connections) {
		d->stats.conns_refused++;
		return NULL;
	}
	packet_endpoints(p, outbound, &local, &remote);
	c = conn_insert(&d->conns, &local, &remote,
			outbound ? CONN_OUTGOING : CONN_INCOMING);
	timer_init(&c->expiry, track_expire, c);
	c->created_mono = c->state_since = loop_now();
	d->stats.conns_total++;
	/* Anyone can send a SYN from any address: until its sender shows
	 * that it receives what we send there, the entry is half-open. */
	if (!outbound)
		conn_halfopen_add(&d->conns, c);
	conn_log(c, "handshake");
	return c;
}

struct conn *track_restore(struct rackd *d, const struct endpoint *local,
			   const struct endpoint *remote, enum conn_dir dir)
{
	struct conn *c = conn_insert(&d->conns, local, remote, dir);

	timer_init(&c->expiry, track_expire, c);
	c->created_mono = c->state_since = loop_now();
	d->stats.conns_total++;
	return c;
}

/*
 * A SYN with a new ISN (or in the other direction) on the endpoints of a
 * connection we know. Our own kernel sends one only once the old socket
 * is gone (closed, or in TIME_WAIT). An incoming one is judged by the
 * kernel's socket, as the kernel judges it: a new ISN on a live socket is
 * no new connection (the socket answers it with a challenge ACK, RFC
 * 5961), and anyone who knows the four numbers of the flow can send it.
 * Only when no live socket holds the endpoints does it start a connection.
 */
static bool syn_replaces(struct rackd *d, struct conn *c, bool outbound)
{
	int state;

	if (outbound)
		return true;
	/* Asking costs; without the budget, nothing changes. */
	if (!rackd_unauth_query(d))
		return false;
	state = sockdiag_state(&c->local, &c->remote);
	if (state == -ENOENT || state == TCP_STATE_TIME_WAIT ||
	    state == TCP_STATE_CLOSE)
		return true;
	d->stats.syn_live_socket++;
	return false;
}

/* Released as plain: WHY is kept unless an earlier cause was found. */
static void release_plain(struct rackd *d, struct conn *c,
			  enum conn_unmanaged why)
{
	if (c->unmanaged == UNMANAGED_NO)
		c->unmanaged = why;
	setup_release(d, c, "plain peer: released");
	adopt_released(d, c);
}

/* Divert the SYN-ACK answering C's SYN; false (counted) when we cannot. */
static bool offer_synack(struct rackd *d, struct conn *c)
{
	int ret = d->offers ? offerset_add(d->offers, &c->local, &c->remote)
			    : -ENOTCONN;

	if (ret == 0)
		return true;
	conn_log(c, "its SYN-ACK cannot be diverted: stays plain");
	/* The first one is logged; all are counted (edp_offer_errors). */
	if (d->edp.offer_errors++ == 0)
		log_warnx("offered set: %s; racks clients now get plain "
			  "connections", strerror(-ret));
	return false;
}

/*
 * A new connection on the very tuple a spliced connection's segments
 * travel with: the kernel, which knows nothing of splices, handed it out
 * (an ephemeral port) or a peer chose it. The splicing rules would
 * rewrite its segments into the spliced connection's socket, so it
 * cannot be: refused, our own at once (a RST to the connecting socket,
 * whose connect() then fails and may be tried again from another port),
 * a peer's by dropping its SYN.
 */
static bool splice_taken(struct rackd *d, const struct packet *p,
			 bool outbound, struct queue *q,
			 const struct queue_packet *qp)
{
	struct endpoint local, remote;
	struct conn *other;

	packet_endpoints(p, outbound, &local, &remote);
	other = conn_lookup_wire(&d->conns, &local, &remote);
	if (!other || !conn_spliced(other))
		return false;
	d->stats.syn_splice_taken++;
	if (outbound) {
		struct inject_segment rst = {
			.src = &remote, .dst = &local, .ack = p->seq + 1,
			.flags = TCP_FLAG_RST | TCP_FLAG_ACK,
		};

		if (inject_send(d->inject, &rst))
			d->edp.send_errors++;
	}
	conn_log(other, "a new connection on its spliced tuple refused");
	queue_verdict(q, qp->id, NF_DROP);
	return true;
}

static void track_syn(struct rackd *d, struct queue *q,
		      const struct queue_packet *qp, const struct packet *p,
		      bool outbound)
{
	enum conn_dir dir = outbound ? CONN_OUTGOING : CONN_INCOMING;
	struct conn *c = lookup(d, p, outbound);
	bool usable;

	d->stats.syn++;
	if (!c && splice_taken(d, p, outbound, q, qp))
		return;
	if (c && c->dir == dir && syn_end(c)->isn == p->seq) {
		/* A retransmission, also of a SYN whose SYN-ACK is already
		 * on its way: the state it reached stands. */
		d->stats.syn_retransmit++;
		if (c->state != CONN_HANDSHAKE) {
			if (!outbound && p->opt.racks_len)
				verdict_stripped(d, q, qp, p);
			else
				queue_verdict(q, qp->id, NF_ACCEPT);
			if (outbound && c->offered)
				d->edp.syn_fallback++;
			return;
		}
	} else if (c && !syn_replaces(d, c, outbound)) {
		/* The kernel's business alone: nothing here changes. */
		if (p->opt.racks_len)
			verdict_stripped(d, q, qp, p);
		else
			queue_verdict(q, qp->id, NF_ACCEPT);
		return;
	} else if (c) {
		/* The old connection is over: every module lets go of it
		 * (its path, hold, splice, keys), and a new one begins. */
		conn_log(c, "replaced by a new handshake");
		rackd_forget(d, c);
		c = NULL;
	}
	if (!c && !(c = new_conn(d, p, outbound)))
		goto accept;
	conn_end_set(outbound ? &c->lend : &c->rend, p);
	/* Armed once: a late copy of the SYN must not put off the check
	 * that decides the connection within setup_timeout. */
	if (!timer_pending(&c->expiry))
		loop_timer_arm(d->loop, &c->expiry, handshake_wait(d->cfg));
	c->syns++;

	if (outbound) {
		/* Only the first SYN offers racks: if a middlebox drops SYNs
		 * with unknown options, the kernel's retransmission is plain
		 * and the connection still opens. */
		if (c->syns > 1) {
			if (c->offered)
				d->edp.syn_fallback++;
			goto accept;
		}
		c->offered = verdict_offered(d, c, q, qp, p, EDP_SYN);
		if (c->offered) {
			d->edp.syn_offered++;
			return;
		}
		d->edp.syn_no_room++;
		c->unmanaged = UNMANAGED_NO_OPTION_ROOM;
		goto accept;
	}
	/* Only SYNs with racks' option are diverted here. Its SYN-ACK must
	 * reach us too: the flow joins the offered set before the kernel
	 * sees the SYN and answers it. */
	usable = racks_option(d, c, p, EDP_SYN);
	/* On the BPF path (a probe's SYN, the only one diverted) the
	 * program answers in the SYN-ACK, and its record decides
	 * (kernelopt.h). */
	c->offered = usable && (d->cfg->bpf_handshakes || offer_synack(d, c));
	if (p->opt.racks_len)
		verdict_stripped(d, q, qp, p);
	else
		queue_verdict(q, qp->id, NF_ACCEPT);
	/* No SYN-ACK of ours will be diverted: nothing more to decide. */
	if (!c->offered)
		release_plain(d, c, usable ? UNMANAGED_OFFER_FAILED
					   : UNMANAGED_BAD_OFFER);
	return;
accept:
	queue_verdict(q, qp->id, NF_ACCEPT);
}

/* Whether SYN-ACK P acknowledges the SYN E: its SYN, and with TCP Fast
 * Open some or all of the data the SYN carried. */
static bool acks_syn(const struct conn_end *e, const struct packet *p)
{
	return p->ack - (e->isn + 1) <= e->paylen;
}

static void track_synack(struct rackd *d, struct queue *q,
			 const struct queue_packet *qp, const struct packet *p,
			 bool outbound)
{
	struct conn *c = lookup(d, p, outbound);

	d->stats.synack++;
	/* The SYN-ACK must travel against its SYN and acknowledge it:
	 * anything else answers no SYN we saw (the kernel resets or ignores
	 * it) and must not change what we know of the connection. */
	if (!c || c->dir != (outbound ? CONN_INCOMING : CONN_OUTGOING) ||
	    !acks_syn(syn_end(c), p)) {
		d->stats.synack_unmatched++;
		if (!outbound && p->opt.racks_len)
			verdict_stripped(d, q, qp, p);
		else
			queue_verdict(q, qp->id, NF_ACCEPT);
		return;
	}
	if (c->state != CONN_HANDSHAKE) {
		/* A retransmitted SYN-ACK (or a copy): its ISN and options
		 * were taken the first time, and set-up is bound to them.
		 * Offer again if we did before. */
		if (outbound && c->peer == PEER_RACKS &&
		    p->seq == c->lend.isn &&
		    verdict_offered(d, c, q, qp, p, EDP_SYNACK))
			return;
		if (!outbound && p->opt.racks_len) {
			verdict_stripped(d, q, qp, p);
			return;
		}
		queue_verdict(q, qp->id, NF_ACCEPT);
		return;
	}
	conn_end_set(outbound ? &c->lend : &c->rend, p);

	if (outbound) {
		/* We are the server: answer racks with racks. */
		if (c->offered && verdict_offered(d, c, q, qp, p, EDP_SYNACK)) {
			d->edp.synack_offered++;
			/* Key generation must not hold the SYN-ACK back. */
			queue_flush(q);
			setup_begin(d, c);
			return;
		}
		if (c->offered)
			d->edp.synack_no_room++;
		release_plain(d, c, c->offered ? UNMANAGED_NO_OPTION_ROOM
					       : UNMANAGED_BAD_OFFER);
		queue_verdict(q, qp->id, NF_ACCEPT);
		return;
	}
	/* We are the client: the server's answer decides. */
	if (c->offered && racks_option(d, c, p, EDP_SYNACK)) {
		verdict_stripped(d, q, qp, p);
		/* The application's connect() completes first. */
		queue_flush(q);
		/* Its first KEY: nothing beyond the initial window can have
		 * been sent yet, so the first numbers are the current ones. */
		channel_hint(d, c, c->lend.isn, c->rend.isn);
		setup_begin(d, c);
		channel_hint_clear(d);
		return;
	}
	/* Only the first SYN offered: a SYN-ACK without racks after a
	 * retransmission most likely answers the plain one. */
	release_plain(d, c, c->syns > 1 ? UNMANAGED_SYN_RETRANSMITTED
					: UNMANAGED_PLAIN_ANSWER);
	if (p->opt.racks_len)
		verdict_stripped(d, q, qp, p);
	else
		queue_verdict(q, qp->id, NF_ACCEPT);
}

/* An inbound reset for C that is not its socket's business: a
 * middlebox's answer to our reconnection SYN, or one from elsewhere than
 * the peer (rstguard.h). */
static bool track_inbound_rst(struct rackd *d, struct queue *q,
			      const struct queue_packet *qp, struct conn *c,
			      const struct packet *p)
{
	if ((c->hold && reconnect_reset(d, c, p)) ||
	    rstguard_inbound(d, c, p) == NF_DROP) {
		queue_verdict(q, qp->id, NF_DROP);
		return true;
	}
	return false;
}

static void track_inbound_held(struct rackd *d, struct queue *q,
			       const struct queue_packet *qp, struct conn *c,
			       const struct packet *p)
{
	int len;

	/* The peer's process was checkpointed: whatever still comes from
	 * where it was is not from the socket that will resume. */
	if (c->migration == MIG_AWAY) {
		queue_verdict(q, qp->id, NF_DROP);
		return;
	}
	len = hold_inbound(d, c, p, rewrite_buf, sizeof(rewrite_buf));
	if (len > 0)
		queue_verdict_replace(q, qp->id, rewrite_buf, (size_t)len);
	else
		queue_verdict(q, qp->id, NF_ACCEPT);
}

/*
 * A segment with racks' option that is not ours to consume goes on as any
 * segment would. Incoming, it was taken by the first rule of the
 * prerouting chain, before the splicing rules: it goes through that chain
 * again, with rackd's mark so that the first rule lets it by.
 */
static void pass_on(struct rackd *d, struct queue *q,
		    const struct queue_packet *qp, bool outbound)
{
	/* Marked already, it came back past every rule that lets marked
	 * segments by and met one that does not: never round again. */
	if (outbound || qp->mark == d->cfg->mark)
		queue_verdict(q, qp->id, NF_ACCEPT);
	else
		queue_verdict_repeat(q, qp->id, d->cfg->mark);
}

/* The connection an incoming message M is for, if known. */
static struct conn *message_conn(struct rackd *d, const struct packet *p,
				 const struct edp_msg *m)
{
	/* Possibly from endpoints we do not know yet: by its id. */
	if (edp_type_numbered(m->type))
		return conn_find_edp(&d->conns, m->conn_id);
	return lookup(d, p, false);
}

/* A segment carrying racks' option that is not a SYN: a set-up message. */
static void track_message(struct rackd *d, struct queue *q,
			  const struct queue_packet *qp,
			  const struct packet *p, bool outbound)
{
	struct edp_msg m;
	enum edp_error err;
	struct conn *c;

	err = edp_option_parse(p->data + p->opt.racks_off, p->opt.racks_len,
			       &m);
	if (err) {
		d->edp.rejected_by[err]++;
		/* Malformed and not ours to consume: the kernel decides. */
		pass_on(d, q, qp, outbound);
		return;
	}
	c = outbound ? NULL : message_conn(d, p, &m);
	/* The BPF path: the kernel pushed the connection's record when it
	 * took the third ACK, before the peer's first message could come,
	 * but rackd may not have read it yet (a burst of connections, or a
	 * record pushed between the last drain and this read): read them
	 * all now, rather than let the peer resend after SETUP_RETRY_MS. */
	if (!c && !outbound && d->records_pull) {
		d->records_pull(d);
		c = message_conn(d, p, &m);
		if (c)
			d->stats.bpf_pulled++;
	}
	if (channel_input(d, c, p, &m) == NF_ACCEPT)
		pass_on(d, q, qp, outbound);
	else
		queue_verdict(q, qp->id, NF_DROP);
}

void track_packet(void *arg, struct queue *q, const struct queue_packet *qp)
{
	struct rackd *d = arg;
	struct packet p;
	enum packet_error err;
	bool outbound = qp->hook == NF_INET_LOCAL_OUT;
	uint8_t syn_ack = 0;
	struct conn *c;

	err = packet_parse(qp->data, qp->len, &p);
	if (err) {
		d->stats.malformed++;
		d->stats.malformed_by[err]++;
		log_debug("packet %u rejected: %s (%zu bytes)", qp->id,
			  packet_error_name(err), qp->len);
		queue_verdict(q, qp->id, NF_ACCEPT);
		return;
	}
	/* A segment the kernel will drop for its checksum must not change
	 * what we believe about a connection either. */
	if (!outbound && !checksum_trusted(d, qp, &p)) {
		queue_verdict(q, qp->id, NF_ACCEPT);
		return;
	}
	syn_ack = p.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST);
	/* A reconnection travels in a SYN (SYN-ACK) of the connection's
	 * peer rackd: by its id to reconnection, never an offer of a new
	 * connection, and never seen by a socket (a listener's included). */
	if (!outbound && (syn_ack & ~TCP_FLAG_ACK) == TCP_FLAG_SYN &&
	    rcsyn_carried(&p))
		queue_verdict(q, qp->id, reconnect_syn_input(d, &p));
	else if (syn_ack == TCP_FLAG_SYN)
		track_syn(d, q, qp, &p, outbound);
	else if (syn_ack == (TCP_FLAG_SYN | TCP_FLAG_ACK))
		track_synack(d, q, qp, &p, outbound);
	else if (!(p.flags & TCP_FLAG_SYN) && p.opt.racks_len)
		track_message(d, q, qp, &p, outbound);
	else if (outbound && (c = lookup(d, &p, true)) && c->adopt)
		queue_verdict(q, qp->id, adopt_segment(d, c, &p));
	else if (outbound && (c = lookup(d, &p, true)) && c->hold)
		queue_verdict(q, qp->id, hold_segment(d, c, &p));
	else if (!outbound && (p.flags & TCP_FLAG_RST) &&
		 (c = lookup(d, &p, false)) &&
		 track_inbound_rst(d, q, qp, c, &p))
		;
	else if (!outbound && (c = lookup(d, &p, false)) && c->hold &&
		 qp->len >= qp->orig_len)
		track_inbound_held(d, q, qp, c, &p);
	else if (!outbound && (p.flags & TCP_FLAG_FIN)) {
		d->edp.probe_fins++;
		queue_verdict(q, qp->id,
			      answer_probe(d, lookup(d, &p, false), &p));
	}
	else {
		d->stats.unexpected++;
		queue_verdict(q, qp->id, NF_ACCEPT);
	}
}

static void sweep_socket(void *arg, const struct sockdiag_entry *e)
{
	struct rackd *d = arg;
	struct conn *c = conn_lookup(&d->conns, &e->local, &e->remote);

	if (c) {
		c->swept = true;
		c->tcp_state = e->state;
		/* Established: the peer acknowledged our SYN-ACK. */
		if (e->state == TCP_STATE_ESTABLISHED)
			conn_halfopen_proven(&d->conns, c);
		/* Its segments unanswered on a path that answers. */
		if (c->host)
			reconnect_stalled(d, c, e->retransmits);
		/* Closing for good: nothing left to keep alive, and the peer
		 * may have forgotten it already. */
		/* Its path, kept address and map entries go (event.h): a
		 * TIME_WAIT socket only ever re-acknowledges a FIN, and the
		 * peer's socket closes just as well without that. */
		if (c->host && (e->state == TCP_STATE_TIME_WAIT ||
				e->state == TCP_STATE_CLOSE))
			event_post(&d->events, EVENT_CLOSING, c, NULL);
	}
}

void track_sweep_fresh(struct rackd *d)
{
	/* Any local user may ask: at most one dump per interval. */
	if (loop_now() - d->last_sweep >= TRACK_FRESH_MS)
		track_sweep(d);
}

void track_sweep(struct rackd *d)
{
	int ret;

	d->last_sweep = loop_now();
	for (struct conn *c = d->conns.head; c; c = c->next)
		c->swept = false;
	ret = sockdiag_dump(sweep_socket, d);
	if (ret) {
		/* Without a complete dump nothing may be forgotten. */
		log_warnx("socket sweep failed: %s", strerror(-ret));
		return;
	}
	d->stats.sweeps++;
	for (struct conn *c = d->conns.head, *next; c; c = next) {
		next = c->next;
		/* Handshakes and set-ups have their own timers; the kernel
		 * may not show a socket yet for a SYN still in flight, nor,
		 * under a burst of SYNs answered with SYN cookies, for a
		 * connection whose last ACK has not arrived: there is no
		 * request socket to show until it does. */
		if (c->swept && c->migration == MIG_ARRIVING) {
			/* Restored, and rackckpt has not said so (yet). */
			migrate_arrived(d, c);
			continue;
		}
		if (c->swept || c->state == CONN_HANDSHAKE ||
		    c->state == CONN_SETUP)
			continue;
		/* An imported connection's socket is restored after it. */
		if (c->migration == MIG_ARRIVING && loop_now() < c->arrive_by)
			continue;
		if (c->migration == MIG_ARRIVING)
			d->migrate->arrive_expired++;
		conn_log(c, "closed");
		d->stats.conns_closed++;
		if (c->peer == PEER_RACKS)
			event_post(&d->events, EVENT_CLOSE, c, NULL);
		rackd_forget(d, c);
	}
}
