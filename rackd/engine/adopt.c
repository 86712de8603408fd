// SPDX-License-Identifier: GPL-2.0-only
#include "adopt.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adopt_learn.h"
#include "adoptset.h"
#include "channel.h"
#include "hold.h"
#include "keystate.h"
#include "liveness.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "setup.h"
#include "sockdiag.h"

/* How long the peer has to answer the heartbeat an ADOPT for a managed
 * connection makes us send, before we believe it forgot (readopt()). */
#define READOPT_WAIT_MS 500

/* A connection's adoption, from its start until the ends agree. */
struct conn_adopt {
	struct adopt_learning learn;	/* while learning */
	struct timer timer;		/* ADOPT retransmissions */
	bool learnt;
	bool exact;			/* from the handshake: never raised */
	uint32_t x_snd, x_rcv;		/* ours: first byte sent, received */
	unsigned sent;			/* ADOPTs sent of our own accord */
	unsigned replies;		/* ADOPTs sent in answer */
	bool peer_heard;		/* an ADOPT came: its numbers */
	uint32_t peer_own, peer_peer;
	bool peer_agreed;
	/* The ADOPT that made us adopt an unknown flow came before its
	 * numbers could be checked: where it sat, checked once learnt. */
	bool peer_unchecked;
	uint32_t peer_seq, peer_ack;
};

void adopt_set_ops(struct rackd *d, const struct adopt_ops *ops)
{
	d->adopt->ops = ops;
}

static void set_state(struct conn *c, enum conn_state state)
{
	c->state = state;
	c->state_since = loop_now();
}

static void adopt_free(struct rackd *d, struct conn *c)
{
	struct conn_adopt *a = c->adopt;

	if (!a)
		return;
	adopt_learn_stop(d, &a->learn);
	loop_timer_cancel(d->loop, &a->timer);
	free(a);
	c->adopt = NULL;
}

/* Adoption ends without a managed connection: left alone for good. */
static void give_up(struct rackd *d, struct conn *c, enum conn_adoption how,
		    enum conn_unmanaged why, const char *what)
{
	adopt_free(d, c);
	c->adoption = how;
	c->unmanaged = why;
	c->peer = PEER_NONE;
	set_state(c, CONN_RELEASED);
	if (how == ADOPTION_UNANSWERED)
		d->adopt->stats.unanswered++;
	else
		d->adopt->stats.failed++;
	conn_log(c, what);
}

/*
 * The connection takes the numbers both ends agree on: virtual ISNs
 * X - 1 (the real ones) and the bases of its byte counters, so that
 * conn_seq_progress() gives its live snd_una and rcv_nxt whatever its
 * direction says from now on.
 */
static void apply(struct conn *c, uint32_t x_snd, uint32_t x_rcv, bool active)
{
	c->rebased = true;
	c->snd_base = active ? x_snd - 1 : x_snd;
	c->rcv_base = x_rcv;
	c->lend.isn = x_snd - 1;
	c->rend.isn = x_rcv - 1;
	c->lend.seen = c->rend.seen = true;
}

static int send_adopt(struct rackd *d, struct conn *c, bool agreed)
{
	struct conn_adopt *a = c->adopt;
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_ADOPT,
			     .x_own = a->x_snd, .x_peer = a->x_rcv,
			     .flags = agreed ? EDP_ADOPT_AGREED : 0 };
	int ret = channel_send(d, c, &m);

	if (ret)
		return ret;
	d->adopt->stats.msgs_out++;
	return 0;
}

/* Our own ADOPTs: ADOPT_SENDS of them, then the wait for an answer. */
static void offer_tick(struct timer *t, void *arg)
{
	static const uint64_t waits[ADOPT_SENDS] = {
		ADOPT_WAIT1_MS, ADOPT_WAIT2_MS, ADOPT_WAIT3_MS
	};
	struct conn *c = arg;
	struct rackd *d = rackd_of_conn(c);
	struct conn_adopt *a = c->adopt;
	struct sockdiag_progress pr;

	(void)t;
	/* A socket closing (or gone) is not worth a word more. */
	if (sockdiag_progress(&c->local, &c->remote, &pr) ||
	    pr.state != TCP_STATE_ESTABLISHED) {
		give_up(d, c, ADOPTION_FAILED, c->unmanaged,
			"adoption: the socket is closing");
		return;
	}
	if (a->sent >= ADOPT_SENDS) {
		give_up(d, c, ADOPTION_UNANSWERED,
			UNMANAGED_ADOPTION_UNANSWERED,
			"adoption unanswered: a plain peer");
		return;
	}
	send_adopt(d, c, false);
	loop_timer_arm(d->loop, &a->timer, waits[a->sent++]);
}

/* Both ends hold the same numbers: set-up, as after a handshake. */
static void agreed(struct rackd *d, struct conn *c)
{
	struct conn_adopt *a = c->adopt;
	bool client;

	/* Plain comparison, not sequence order: exactly one end is
	 * client, even for numbers 2^31 apart. */
	if (a->x_snd == a->x_rcv) {
		give_up(d, c, ADOPTION_FAILED, UNMANAGED_ADOPTION_FAILED,
			"adoption: both streams start at the same number");
		return;
	}
	client = a->x_snd < a->x_rcv;
	c->dir = client ? CONN_OUTGOING : CONN_INCOMING;
	adopt_free(d, c);
	c->adoption = ADOPTION_SETUP;
	conn_log(c, client ? "adoption agreed: set-up client"
			   : "adoption agreed: set-up server");
	setup_begin(d, c);
}

/*
 * Take the peer's number THEIRS for one of our streams if it is larger
 * than OURS: ours may be a little low (learnt while bytes moved), never
 * high. Never for numbers from the handshake (exact), and never by more
 * than ADOPT_RAISE_MAX, the bytes that can move while rackd reads one
 * segment: a number too high would make snd_una or rcv_nxt too high, and
 * an ACK beyond what the peer received frees data it never got.
 */
static bool raise(const struct conn_adopt *a, uint32_t *ours, uint32_t theirs)
{
	uint32_t up = theirs - *ours;

	if (a->exact || (int32_t)up <= 0 || up > ADOPT_RAISE_MAX)
		return false;
	*ours = theirs;
	return true;
}

/*
 * The peer's numbers against ours. Both are lower bounds of the truth,
 * so each end takes the larger of each pair and says so; equal numbers
 * on both sides end it. An answer only goes to an ADOPT that did not
 * say it agreed already, so two ends never answer each other forever.
 */
static void compare(struct rackd *d, struct conn *c)
{
	struct conn_adopt *a = c->adopt;
	bool raised = false, match;

	if (!a->learnt || !a->peer_heard)
		return;
	a->peer_heard = false;
	if (a->peer_unchecked) {
		/* Anyone could have sent the ADOPT that started this: it is
		 * taken only if it sat where the connection is. */
		a->peer_unchecked = false;
		if (!channel_numbers_plausible(c, a->peer_seq, a->peer_ack)) {
			d->edp.bad_seq++;
			d->adopt->stats.unchecked_dropped++;
			/* Forged, or the connection moved on while we learnt:
			 * our own ADOPT asks the peer, whose answer sits
			 * where the connection is now. */
			if (!timer_pending(&a->timer))
				loop_timer_arm(d->loop, &a->timer, 0);
			return;
		}
	}
	match = a->peer_own == a->x_rcv && a->peer_peer == a->x_snd;
	if (!match) {
		d->adopt->stats.disagreed++;
		raised = raise(a, &a->x_rcv, a->peer_own) |
			 raise(a, &a->x_snd, a->peer_peer);
		if (raised) {
			bool active = c->snd_base == c->lend.isn;

			apply(c, a->x_snd, a->x_rcv, active);
		}
		if (a->replies++ >= ADOPT_REPLIES) {
			give_up(d, c, ADOPTION_FAILED,
				UNMANAGED_ADOPTION_FAILED,
				"adoption: the ends disagree");
			return;
		}
		send_adopt(d, c, false);
		/* Equal now if the peer's were the larger ones. */
		match = a->peer_own == a->x_rcv && a->peer_peer == a->x_snd;
		if (!match)
			return;
	} else if (!a->peer_agreed && a->replies++ < ADOPT_REPLIES) {
		send_adopt(d, c, true);
	}
	agreed(d, c);
}

/* Ours are known: tell the peer (or answer what it said already). */
static void learnt(struct rackd *d, struct conn *c, uint32_t x_snd,
		   uint32_t x_rcv, bool active, bool from_handshake)
{
	struct conn_adopt *a = c->adopt;

	a->learnt = true;
	a->x_snd = x_snd;
	a->x_rcv = x_rcv;
	apply(c, x_snd, x_rcv, active);
	c->adoption = ADOPTION_OFFERED;
	timer_init(&a->timer, offer_tick, c);
	if (a->peer_heard) {
		compare(d, c);
		return;
	}
	/* After a handshake, its last ACK goes before our first word. */
	loop_timer_arm(d->loop, &a->timer, from_handshake ? ADOPT_FIRST_MS : 0);
}

static void learn_done(struct rackd *d, struct conn *c, bool ok,
		       const struct adopt_learnt *l, const char *why)
{
	char line[96];

	if (!ok) {
		snprintf(line, sizeof(line), "adoption: %s", why);
		give_up(d, c, ADOPTION_FAILED, UNMANAGED_ADOPTION_FAILED, line);
		return;
	}
	if (log_debug_enabled())
		log_debug("conn %llu learnt: first bytes sent %u, received %u, "
			  "%s opener%s", (unsigned long long)c->id, l->x_snd,
			  l->x_rcv, l->active ? "active" : "passive",
			  l->active_known ? "" : " (assumed)");
	/* The socket's options stand in for the handshake nobody saw;
	 * apply() sets the numbers. */
	c->lend = l->lend;
	c->rend = l->rend;
	learnt(d, c, l->x_snd, l->x_rcv, l->active, false);
}

/* Start adopting C, released or new; CAUSE says why it needs it. */
static void begin(struct rackd *d, struct conn *c, enum conn_unmanaged cause)
{
	struct conn_adopt *a = xcalloc(1, sizeof(*a));

	c->adopt = a;
	c->adoptions++;
	c->cause = cause;
	if (c->unmanaged == UNMANAGED_NO ||
	    c->unmanaged == UNMANAGED_ADOPTION_UNANSWERED ||
	    c->unmanaged == UNMANAGED_ADOPTION_FAILED)
		c->unmanaged = cause;
	c->peer = PEER_UNKNOWN;
	set_state(c, CONN_ADOPTING);
	timer_init(&a->timer, offer_tick, c);
	d->adopt->stats.started++;
	if (c->lend.seen && c->rend.seen) {
		/* It saw the handshake (or an earlier adoption): known. */
		bool active = c->rebased ? c->snd_base == c->lend.isn
					 : c->dir == CONN_OUTGOING;

		a->exact = true;
		learnt(d, c, c->lend.isn + 1, c->rend.isn + 1, active, true);
		return;
	}
	conn_log(c, "adoption: learning its sequence numbers");
	c->adoption = ADOPTION_LEARNING;
	adopt_learn_start(d, c, &a->learn, learn_done);
}

void adopt_reset(struct rackd *d, struct conn *c)
{
	adopt_free(d, c);
	c->adoption = ADOPTION_NONE;
	c->adoptions = 0;
	c->cause = UNMANAGED_NO;
}

void adopt_released(struct rackd *d, struct conn *c)
{
	if (c->adoption == ADOPTION_SETUP) {
		/* Set-up after adoption timed out: it is over. */
		c->adoption = ADOPTION_FAILED;
		d->adopt->stats.failed++;
		return;
	}
	if (c->adoption != ADOPTION_NONE || c->adoptions >= ADOPT_TRIES)
		return;
	switch (c->unmanaged) {
	case UNMANAGED_SYN_RETRANSMITTED:
	case UNMANAGED_PLAIN_ANSWER:
	case UNMANAGED_SETUP_TIMEOUT:
	case UNMANAGED_NO_OPTION_ROOM:
		begin(d, c, c->unmanaged);
		return;
	default:
		/* A malformed offer, or our own ruleset failing: adoption
		 * would not do better. */
		return;
	}
}

void adopt_write_state(struct rackd *d, FILE *f)
{
	for (struct conn *c = d->conns.head; c; c = c->next) {
		struct flowset_flow flow = { c->local, c->remote };

		if (c->adopt && c->adopt->learn.in_set)
			adoptset_write(f, &flow);
	}
}

uint32_t adopt_segment(struct rackd *d, struct conn *c, const struct packet *p)
{
	if (!c->adopt || c->adoption != ADOPTION_LEARNING)
		return NF_ACCEPT;
	return adopt_learn_segment(d, &c->adopt->learn, p);
}

/* Whether this end's configuration considers the flow, as its ruleset
 * does for handshakes: the remote not excluded, the server's port (which
 * end's it is, we do not know) among the server ports. */
static bool considered(const struct config *cfg, const struct endpoint *local,
		       const struct endpoint *remote)
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };
	bool port = cfg->all_ports;

	/* Over loopback, as for handshakes: both ends are this host. */
	if (addr_equal(&local->addr, &remote->addr) ||
	    (remote->addr.family == AF_INET && remote->addr.bytes[0] == 127) ||
	    (remote->addr.family == AF_INET6 &&
	     !memcmp(remote->addr.bytes, v6_loopback, 16)))
		return false;

	for (size_t i = 0; i < cfg->nexclude; i++)
		if (prefix_contains(&cfg->exclude[i], &remote->addr))
			return false;
	for (size_t i = 0; i < cfg->nports && !port; i++) {
		const struct port_range *r = &cfg->ports[i];

		port = (local->port >= r->first && local->port <= r->last) ||
		       (remote->port >= r->first && remote->port <= r->last);
	}
	return port;
}

/* A connection the table does not know: a new entry, adopted. */
static struct conn *adopt_new(struct rackd *d, const struct endpoint *local,
			      const struct endpoint *remote,
			      enum conn_unmanaged cause)
{
	struct conn *c;

	if (!considered(d->cfg, local, remote) || !d->adopt->ops) {
		d->adopt->stats.refused++;
		return NULL;
	}
	if (!(d->adopt->ops->make_room ?
	      d->adopt->ops->make_room(d, &remote->addr) :
	      d->conns.count < d->cfg->max_connections)) {
		d->stats.conns_refused++;
		return NULL;
	}
	/* Its direction is set-up's role once the ends agree. */
	c = d->adopt->ops->new_conn(d, local, remote, CONN_OUTGOING);
	c->unmanaged = cause;
	begin(d, c, cause);
	return c;
}

/*
 * An ADOPT for a connection we manage, naming exactly its numbers: the
 * peer's rackd may have lost its state (restarted without it). An ADOPT
 * carries no MAC (that peer has no key any more), so it never releases,
 * resumes or re-keys a connection by itself: it only makes us ask the
 * peer, with a heartbeat under the key, whether it still holds it. Only
 * when that heartbeat has gone unanswered for READOPT_WAIT_MS, while the
 * peer goes on asking from where the connection is (the channel checked
 * the ADOPT's numbers against the live ones), is the connection set up
 * again. A forger off the path cannot silence the answer of a peer that
 * still holds the key; a held connection (its path silent, or resuming)
 * is never touched. Returns true when C is adopted again.
 */
static bool readopt(struct rackd *d, struct conn *c, const struct edp_msg *m)
{
	struct adopt_stats *s = &d->adopt->stats;
	struct conn_edp *e = c->edp;

	if (m->x_own != c->rend.isn + 1 || m->x_peer != c->lend.isn + 1 ||
	    conn_parked(c) || !e || !e->keyed)
		return false;
	if (c->state != CONN_CONNECTED || c->hold) {
		s->readopt_refused++;
		return false;
	}
	if (e->readopt_hb && e->hb_acked >= e->readopt_hb) {
		/* Answered under the key: the peer never forgot. */
		s->readopt_refused++;
		e->readopt_hb = 0;
	}
	if (!e->readopt_hb) {
		if (channel_send_numbered(d, c, EDP_HEARTBEAT,
					  ++e->hb_out) == 0)
			d->live->stats.heartbeats_out++;
		e->readopt_hb = e->hb_out;
		e->readopt_ms = loop_now();
		s->readopt_asked++;
		return false;
	}
	if (loop_now() - e->readopt_ms < READOPT_WAIT_MS)
		return false;
	s->readopted++;
	/* Off its path's heartbeats until set-up completes again. */
	live_detach(d, c);
	c->adoption = ADOPTION_NONE;
	c->adoptions = 0;
	setup_release(d, c, "the peer rackd forgot it: adopting again");
	c->unmanaged = UNMANAGED_PEER_FORGOT;
	begin(d, c, UNMANAGED_PEER_FORGOT);
	return true;
}

/* Whether C's socket is established (its handshake complete). */
static bool established(struct conn *c)
{
	struct sockdiag_progress pr;

	return sockdiag_progress(&c->local, &c->remote, &pr) == 0 &&
	       pr.state == TCP_STATE_ESTABLISHED;
}

/* C's handshake or set-up is over, without racks: released, so that
 * adoption can begin. WHY goes to the log. */
static void finish_plain(struct rackd *d, struct conn *c, const char *why)
{
	conn_halfopen_proven(&d->conns, c);
	c->unmanaged = UNMANAGED_HANDSHAKE_UNSEEN;
	if (c->state == CONN_SETUP) {
		setup_release(d, c, why);
		return;
	}
	loop_timer_cancel(d->loop, &c->expiry);
	c->peer = PEER_NONE;
	set_state(c, CONN_RELEASED);
	conn_log(c, why);
}

bool adopt_unfinished(struct rackd *d, struct conn *c, const char *why)
{
	if ((c->state != CONN_HANDSHAKE && c->state != CONN_SETUP) ||
	    c->adopt || c->adoptions >= ADOPT_TRIES)
		return false;
	finish_plain(d, c, why);
	begin(d, c, UNMANAGED_HANDSHAKE_UNSEEN);
	return true;
}

static uint32_t adopt_input(struct rackd *d, struct conn *c,
			    const struct packet *p, const struct edp_msg *m)
{
	struct adopt_stats *s = &d->adopt->stats;
	struct conn_adopt *a;
	bool asked = false;	/* the budget paid for this message already */
	int ret;

	s->msgs_in++;
	if (!c) {
		struct endpoint local = { .addr = p->dst, .port = p->dport };
		struct endpoint remote = { .addr = p->src, .port = p->sport };
		struct sockdiag_progress pr;

		/* Only for a socket that exists (the lookup may find the
		 * listener instead): anyone can send an ADOPT, from any
		 * address, to any port, and each one makes us ask. */
		if (!considered(d->cfg, &local, &remote)) {
			s->refused++;
			return NF_DROP;
		}
		if (!rackd_unauth_query(d))
			return NF_DROP;
		asked = true;
		ret = sockdiag_progress(&local, &remote, &pr);
		if (ret || (pr.state != TCP_STATE_ESTABLISHED &&
			    pr.state != TCP_STATE_SYN_RECV &&
			    pr.state != TCP_STATE_NEW_SYN_RECV)) {
			if (log_debug_enabled()) {
				char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];

				log_debug("ADOPT %s <- %s: no socket to adopt "
					  "(%s, state %u)",
					  endpoint_format(&local, l, sizeof(l)),
					  endpoint_format(&remote, r, sizeof(r)),
					  ret ? strerror(-ret) : "found",
					  pr.state);
			}
			/* Not ours: on as any segment (a container behind a
			 * port forward may have the socket). */
			d->edp.unknown_conn++;
			return NF_ACCEPT;
		}
		c = adopt_new(d, &local, &remote, UNMANAGED_HANDSHAKE_UNSEEN);
		if (!c)
			return NF_DROP;
	} else if (c->adoption == ADOPTION_SETUP) {
		/* Our agreeing answer was lost: say it again. */
		if (!(m->flags & EDP_ADOPT_AGREED) &&
		    m->x_own == c->rend.isn + 1 && m->x_peer == c->lend.isn + 1) {
			struct edp_msg ans = {
				.version = EDP_VERSION, .type = EDP_ADOPT,
				.x_own = m->x_peer, .x_peer = m->x_own,
				.flags = EDP_ADOPT_AGREED };

			if (!channel_send(d, c, &ans))
				s->msgs_out++;
		}
		return NF_DROP;
	} else if (!c->adopt) {
		/* A host its trust refused is never adopted: that would
		 * only run the refused handshake again. */
		bool again = c->state == CONN_RELEASED &&
			     c->adoptions < ADOPT_TRIES &&
			     !conn_trust_refused(c);
		bool unfinished = (c->state == CONN_HANDSHAKE ||
				   c->state == CONN_SETUP) &&
				  c->adoptions < ADOPT_TRIES;

		/* Nothing it could change: no question to the kernel. */
		if (!again && !unfinished && !(conn_managed(c) &&
					      m->x_own == c->rend.isn + 1 &&
					      m->x_peer == c->lend.isn + 1)) {
			d->edp.unexpected++;
			return NF_DROP;
		}
		/* Its numbers known (handshake, set-up): the message must sit
		 * where the connection is, as every racks message does. */
		if (!rackd_unauth_query(d))
			return NF_DROP;
		asked = true;
		if (unfinished && !established(c)) {
			d->edp.unexpected++;
			return NF_DROP;
		}
		if (c->lend.seen && c->rend.seen &&
		    !channel_seq_plausible(c, p)) {
			d->edp.bad_seq++;
			return NF_DROP;
		}
		if (unfinished) {
			/* The kernel finished the handshake, and the peer's
			 * ended plain (its offer, or our answer, lost or late),
			 * or what we took for one was stale: adopted. */
			adopt_unfinished(d, c, c->state == CONN_SETUP ?
					 "the peer's handshake ended plain: "
					 "adopting" :
					 "handshake unseen by the peer: "
					 "adopting");
		} else if (again) {
			/* The peer is racks after all: ask again. */
			c->adoption = ADOPTION_NONE;
			begin(d, c, c->unmanaged == UNMANAGED_NO ?
			      UNMANAGED_HANDSHAKE_UNSEEN : c->unmanaged);
		} else if (!(conn_managed(c) && readopt(d, c, m))) {
			d->edp.unexpected++;
			return NF_DROP;
		}
	}
	a = c->adopt;
	if (!a)
		return NF_DROP;	/* given up at once */
	/* Likewise once ours are learnt; before, its numbers are kept
	 * and checked once they can be (compare()). */
	if (a->learnt && ((!asked && !rackd_unauth_query(d)) ||
			  !channel_seq_plausible(c, p))) {
		d->edp.bad_seq++;
		return NF_DROP;
	}
	a->peer_unchecked = !a->learnt;
	a->peer_seq = p->seq;
	a->peer_ack = p->ack;
	a->peer_heard = true;
	a->peer_own = m->x_own;
	a->peer_peer = m->x_peer;
	a->peer_agreed = m->flags & EDP_ADOPT_AGREED;
	compare(d, c);
	return NF_DROP;
}

int adopt_handle_messages(struct rackd *d)
{
	return channel_handle_unchecked(d, EDP_ADOPT, adopt_input);
}

void adopt_event(void *arg, enum event_type type, struct conn *c,
		 const char *reason)
{
	struct rackd *d = arg;

	(void)reason;
	if (type == EVENT_GONE) {
		adopt_free(d, c);
		return;
	}
	if (type == EVENT_CONNECTED && c->adoption == ADOPTION_SETUP) {
		c->adoption = ADOPTION_DONE;
		c->unmanaged = UNMANAGED_NO;
		d->adopt->stats.completed++;
	}
}

/* Start-up: every established socket the table does not know predates
 * this rackd (or its state file was lost). */
static void scan_socket(void *arg, const struct sockdiag_entry *e)
{
	struct rackd *d = arg;

	if (e->state != TCP_STATE_ESTABLISHED ||
	    conn_lookup(&d->conns, &e->local, &e->remote))
		return;
	adopt_new(d, &e->local, &e->remote, UNMANAGED_PREDATES_RACKD);
}

static void scan(struct timer *t, void *arg)
{
	struct rackd *d = arg;
	int ret;

	(void)t;
	ret = sockdiag_dump(scan_socket, d);
	if (ret)
		log_warnx("adoption scan: %s", strerror(-ret));
}

void adopt_init(struct rackd *d)
{
	struct adopt_state *a = d->adopt;
	int ret = flowset_open(&d->adoptset);

	if (ret)
		log_warnx("adopt sets: %s: no adoption", strerror(-ret));
	timer_init(&a->kick, adopt_learn_kick, d);
	timer_init(&a->scan, scan, d);
	loop_timer_arm(d->loop, &a->scan, 0);
}

void adopt_close(struct rackd *d)
{
	struct adopt_state *a = d->adopt;

	if (d->loop) {
		loop_timer_cancel(d->loop, &a->kick);
		loop_timer_cancel(d->loop, &a->scan);
	}
	flowset_close(d->adoptset);
	d->adoptset = NULL;
	free(a->pending);
	free(a->leaving);
	a->pending = NULL;
	a->leaving = NULL;
	a->npending = a->nleaving = a->pending_cap = a->leaving_cap = 0;
}
