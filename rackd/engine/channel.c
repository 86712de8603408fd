// SPDX-License-Identifier: GPL-2.0-only
#include "channel.h"

#include <errno.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>

#include "inject.h"
#include "keystate.h"
#include "rackd.h"
#include "sockdiag.h"

/* The window our messages advertise: the peer kernel only ever sees one
 * if the peer rackd is gone, and then a large window cannot stall it. */
#define CHANNEL_WINDOW 65535
/* How far from the first numbers a set-up message may be: one
 * unscaled window (what either end can have sent before set-up ends). */
#define FIRST_WINDOW 65535
/* What a message's numbers may have moved between its sender's reading
 * of them and ours, beyond the windows (tight checks). */
#define TIGHT_MARGIN 65536

int channel_handle(struct rackd *d, uint8_t type, channel_fn fn)
{
	struct channel *ch = d->channel;

	if (type <= EDP_SYNACK || type >= EDP_TYPE_MAX)
		return -EINVAL;
	if (ch->handlers[type])
		return -EEXIST;
	ch->handlers[type] = fn;
	return 0;
}

int channel_handle_unchecked(struct rackd *d, uint8_t type, channel_fn fn)
{
	struct channel *ch = d->channel;

	if (type <= EDP_SYNACK || type >= EDP_TYPE_MAX)
		return -EINVAL;
	if (ch->handlers[type] || ch->unchecked[type])
		return -EEXIST;
	ch->unchecked[type] = fn;
	return 0;
}

/* How far a message's numbers may be from ours: the larger of the two
 * windows either end can advertise (RFC 7323 scaling), at least 64 KiB. */
static uint32_t seq_slack(const struct sockdiag_progress *pr)
{
	uint32_t shift = pr->snd_wscale > pr->rcv_wscale ? pr->snd_wscale :
			 pr->rcv_wscale;

	return (uint32_t)0xffff << (shift > 14 ? 14 : shift);
}

/*
 * Where C's socket is now: snd_una and rcv_nxt from its byte counters,
 * and the window around them (seq_slack). A socket the kernel shows no
 * more (closed, or checkpointed) is where it was last seen (SEQ_LAST),
 * or at its first numbers if it never was (SEQ_GONE: nothing filled in);
 * one still in its handshake (a SYN-ACK in our queue, the last ACK on
 * its way) is at its first numbers (SEQ_FIRST, nothing filled in).
 */
enum seq_source { SEQ_FIRST, SEQ_NOW, SEQ_LAST, SEQ_GONE };

static enum seq_source live_seq(struct conn *c, uint32_t *snd_una,
				uint32_t *rcv_nxt, uint32_t *slack, int *diag)
{
	struct sockdiag_progress pr;
	enum seq_source src = c->seq_seen ? SEQ_LAST : SEQ_GONE;

	*diag = sockdiag_progress(&c->local, &c->remote, &pr);
	if (*diag == 0) {
		if (pr.state == TCP_STATE_SYN_SENT ||
		    pr.state == TCP_STATE_SYN_RECV)
			return SEQ_FIRST;
		conn_seq_progress(c, &pr, &c->seen_snd_una, &c->seen_rcv_nxt);
		c->seen_slack = seq_slack(&pr);
		c->seen_rwin = pr.rcv_ssthresh;
		c->seen_swin = pr.snd_wnd;
		c->seq_seen = true;
		src = SEQ_NOW;
	}
	*snd_una = c->seen_snd_una;
	*rcv_nxt = c->seen_rcv_nxt;
	*slack = c->seen_slack;
	return src;
}

int channel_send(struct rackd *d, struct conn *c, const struct edp_msg *m)
{
	uint32_t snd_una, rcv_nxt, slack;
	int diag;
	uint8_t opt[EDP_OPT_MAX_LEN + 3];
	/*
	 * Almost a keepalive's numbers (RFC 1122 4.2.3.6): one below what the
	 * peer acknowledged, inside the window, so every middlebox that
	 * tracks windows (pf, conntrack) passes it as it passes keepalives,
	 * and a peer kernel without rackd finds it one byte old and answers
	 * with an ACK (rate limited, NOTES.md section 3): nothing delivered,
	 * no counter shifted. Its acknowledgement is one below our rcv_nxt
	 * too: a kernel that answers it with a RST (no socket there: a kept
	 * table that no rackd serves passes it unrewritten) gives that RST
	 * our rcv_nxt - 1 as its sequence number, which our socket drops as
	 * outside its window (RFC 5961 3.2) rather than dying of it.
	 * Before the socket was ever seen established, the connection's
	 * first numbers, which are inside its first window; once it is gone
	 * (closed, checkpointed), where it was last seen.
	 */
	struct inject_segment seg = {
		.src = &c->local, .dst = &c->remote,
		.seq = c->lend.isn + 1, .ack = c->rend.isn + 1,
		.flags = TCP_FLAG_ACK, .window = CHANNEL_WINDOW,
		.options = opt, .optlen = edp_option_build(m, opt, sizeof(opt)),
	};

	enum seq_source src;

	if (d->channel->hint_conn == c && !edp_type_numbered(m->type)) {
		/* Set-up's answers: numbers as good as the kernel's, without
		 * its round trip, which set-up would pay several times per
		 * connection. Heartbeats and the rest (at most a few per
		 * path and interval) ask the kernel: a closed carrier must
		 * not answer at all (below). */
		seg.seq = d->channel->hint_seq;
		seg.ack = d->channel->hint_ack;
		return channel_inject(d, &seg);
	}
	src = live_seq(c, &snd_una, &rcv_nxt, &slack, &diag);

	/* A heartbeat belongs to the path, not to its carrier: one whose
	 * socket is gone (its last seen numbers may be far behind the
	 * window, where strict trackers drop them) leaves it to another.
	 * -ENOENT: the kernel has no open socket of it (closed, in
	 * TIME_WAIT, or checkpointed); -ENOTCONN: it could not be asked. */
	if ((src == SEQ_LAST || src == SEQ_GONE) &&
	    (m->type == EDP_HEARTBEAT || m->type == EDP_HEARTBEAT_ACK))
		return diag == -ENOENT ? -ENOENT : -ENOTCONN;
	if (src == SEQ_NOW || src == SEQ_LAST) {
		seg.seq = snd_una - 1;
		seg.ack = rcv_nxt - 1;
	}
	return channel_inject(d, &seg);
}

int channel_inject(struct rackd *d, const struct inject_segment *seg)
{
	int ret = inject_send(d->inject, seg);

	if (ret)
		d->edp.send_errors++;
	else
		d->edp.msgs_out++;
	return ret;
}

bool channel_snd_una(struct conn *c, uint32_t *snd_una)
{
	uint32_t una, rcv_nxt, slack;
	int diag;

	switch (live_seq(c, &una, &rcv_nxt, &slack, &diag)) {
	case SEQ_NOW:
		*snd_una = una;
		return true;
	case SEQ_LAST:
		*snd_una = una;
		return false;
	default:
		return false;
	}
}

static bool seq_near(uint32_t seq, uint32_t ours, uint32_t slack)
{
	uint32_t dist = seq - ours;

	return dist <= slack || -dist <= slack + 1;
}

/*
 * Whether C may still take messages at its first numbers without asking
 * the kernel: only while its handshake's set-up runs. The first numbers
 * are no secret from anyone who saw the handshake pass; once set-up is
 * over (or for a connection adopted long after its handshake) only where
 * the connection is now proves anything.
 */
static bool in_first_window(const struct conn *c)
{
	return (c->state == CONN_HANDSHAKE || c->state == CONN_SETUP) &&
	       !c->rebased;
}

/*
 * Whether P's numbers belong to C: a forger off the path must know where
 * the connection is (RFC 5961's bar for RSTs and SYNs). Our messages
 * carry the connection's first numbers or its current ones (channel_send);
 * during set-up the first window is checked without asking the kernel,
 * which spares set-up a query per message. The current ones are
 * the sender's snd_una - 1 (at most one window behind or ahead of our
 * rcv_nxt, as either end reads its counters a little later) and its
 * rcv_nxt - 1 (likewise around our snd_una).
 */
/* Whether DIST, a distance in sequence space, lies in [-BELOW, ABOVE]. */
static bool seq_within(uint32_t dist, uint32_t below, uint32_t above)
{
	return (int64_t)(int32_t)dist >= -(int64_t)below &&
	       (int64_t)(int32_t)dist <= (int64_t)above;
}

/*
 * A message with SEQ (its sender's snd_una - 1) and ACK (its rcv_nxt - 1)
 * as a TCP socket would judge a segment: the sender's snd_una is at most
 * what we received, and behind it by no more than our receive window
 * (what it can have in flight to us); its rcv_nxt is at least our snd_una
 * and ahead of it by no more than its own window. TIGHT (a message
 * without a MAC: ADOPT, set-up) takes the socket's windows as they are,
 * so that the numbers prove what an in-window segment proves; else the
 * largest windows the connection could have (messages under the key,
 * checked for where they sit only).
 */
static bool numbers_plausible(struct conn *c, uint32_t seq, uint32_t ack,
			      bool tight)
{
	uint32_t snd_una, rcv_nxt, slack, rwin, swin;
	int diag;

	if (in_first_window(c) &&
	    seq_near(seq + 1, c->rend.isn + 1, FIRST_WINDOW) &&
	    seq_near(ack, c->lend.isn + 1, FIRST_WINDOW))
		return true;
	switch (live_seq(c, &snd_una, &rcv_nxt, &slack, &diag)) {
	case SEQ_NOW:
	case SEQ_LAST:
		break;
	default:
		return false;
	}
	if (!tight)
		return seq_near(seq + 1, rcv_nxt, slack) &&
		       seq_near(ack, snd_una, slack);
	/* What moves between the sender's reading and ours. */
	rwin = c->seen_rwin + TIGHT_MARGIN;
	swin = c->seen_swin + TIGHT_MARGIN;
	return seq_within(seq + 1 - rcv_nxt, rwin, TIGHT_MARGIN) &&
	       seq_within(ack + 1 - snd_una, TIGHT_MARGIN + 1, swin);
}

static bool seq_plausible(struct conn *c, const struct packet *p, bool tight)
{
	return numbers_plausible(c, p->seq, p->ack, tight);
}

bool channel_seq_plausible(struct conn *c, const struct packet *p)
{
	return seq_plausible(c, p, true);
}

bool channel_numbers_plausible(struct conn *c, uint32_t seq, uint32_t ack)
{
	return numbers_plausible(c, seq, ack, true);
}

/* Heartbeats and reconnections: the MAC's role by type and sender. */
static enum edp_role numbered_role(uint8_t type, bool client)
{
	return (enum edp_role)(EDP_ROLE_CLIENT_HEARTBEAT +
			       2 * (type - EDP_HEARTBEAT) + (client ? 0 : 1));
}

void channel_numbered_msg(struct conn *c, uint8_t type, uint32_t counter,
			  struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	*m = (struct edp_msg){ .version = EDP_VERSION, .type = type,
			       .conn_id = e->conn_id, .counter = counter };
	edp_mac_counter(e->key, numbered_role(type, conn_is_client(c)),
			counter, &e->t, m->mac);
}

void channel_confirm_msg(struct conn *c, uint32_t counter,
			 const uint8_t *challenge, struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	*m = (struct edp_msg){ .version = EDP_VERSION,
			       .type = EDP_RECONNECT_CONFIRM,
			       .conn_id = e->conn_id, .counter = counter };
	edp_mac_challenge(e->key, numbered_role(EDP_RECONNECT_CONFIRM,
						conn_is_client(c)),
			  counter, challenge, &e->t, m->mac);
}

bool channel_confirm_valid(struct rackd *d, struct conn *c,
			   const struct edp_msg *m, const uint8_t *challenge)
{
	struct conn_edp *e = c->edp;

	if (m->type != EDP_RECONNECT_CONFIRM ||
	    edp_mac_challenge_verify(e->key,
				     numbered_role(m->type, !conn_is_client(c)),
				     m->counter, challenge, &e->t, m->mac)) {
		d->edp.bad_mac++;
		return false;
	}
	return true;
}

int channel_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			  uint32_t counter)
{
	struct edp_msg m;

	channel_numbered_msg(c, type, counter, &m);
	return channel_send(d, c, &m);
}

int channel_send_numbered_at(struct rackd *d, struct conn *c, uint8_t type,
			     uint32_t counter, uint32_t seq, uint32_t ack)
{
	uint8_t opt[EDP_OPT_MAX_LEN + 3];
	struct edp_msg m;
	struct inject_segment seg = {
		.src = &c->local, .dst = &c->remote, .seq = seq, .ack = ack,
		.flags = TCP_FLAG_ACK, .window = CHANNEL_WINDOW, .options = opt,
	};

	channel_numbered_msg(c, type, counter, &m);
	seg.optlen = edp_option_build(&m, opt, sizeof(opt));
	return channel_inject(d, &seg);
}

bool channel_numbered_valid(struct rackd *d, struct conn *c,
			    const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	/* A confirmation's MAC covers its challenge too: never this one. */
	if (m->type == EDP_RECONNECT_CONFIRM) {
		d->edp.bad_mac++;
		return false;
	}
	/* The sender is the other end of this connection. */
	if (edp_mac_counter_verify(e->key,
				   numbered_role(m->type, !conn_is_client(c)),
				   m->counter, &e->t, m->mac)) {
		d->edp.bad_mac++;
		return false;
	}
	return true;
}

/*
 * The cheap checks first, so that a forgery never costs a question to the
 * kernel (the sequence check asks for the socket's numbers): a numbered
 * message must carry a MAC under the connection's key (its handler checks
 * again what it needs: the counter, the MAC of a reconnection's
 * confirmation, which covers its challenge).
 */
static bool worth_checking(struct rackd *d, struct conn *c,
			   const struct edp_msg *m)
{
	if (!edp_type_numbered(m->type) || m->type == EDP_RECONNECT_CONFIRM)
		return true;
	if (!c->edp->keyed) {
		d->edp.unexpected++;
		return false;
	}
	return channel_numbered_valid(d, c, m);
}

/* Set-up messages once set-up is over are late copies, which their
 * handler only counts (or, for a CONFIRM under the key, answers once
 * more): where they sit changes nothing. A reconnection's confirmation
 * needs no check of its numbers either: its handler takes it only from
 * where a reconnection SYN came and with a MAC over that SYN's fresh
 * challenge, both cheaper and stronger than a question to the kernel. */
static bool needs_seq_check(const struct conn *c, const struct edp_msg *m)
{
	if (m->type == EDP_RECONNECT_CONFIRM)
		return false;
	return edp_type_numbered(m->type) || c->state == CONN_HANDSHAKE ||
	       c->state == CONN_SETUP;
}

uint32_t channel_input(struct rackd *d, struct conn *c, const struct packet *p,
		       const struct edp_msg *m)
{
	channel_fn fn = m->type < EDP_TYPE_MAX ?
			d->channel->handlers[m->type] : NULL;
	uint32_t verdict;

	d->edp.msgs_in++;
	/* Our messages never carry data; one that does is not ours to
	 * consume: the kernel decides about it as about any segment. */
	if (p->payload_len) {
		d->edp.with_payload++;
		return NF_ACCEPT;
	}
	if (m->type < EDP_TYPE_MAX && d->channel->unchecked[m->type])
		return d->channel->unchecked[m->type](d, c, p, m);
	if (!c) {
		/* Not ours: it goes on as any segment would (to a socket
		 * rackd does not manage, or a host behind this one), and is
		 * the kernel's to judge. Our messages' numbers make a kernel
		 * without their connection answer harmlessly (channel_send). */
		d->edp.unknown_conn++;
		return NF_ACCEPT;
	}
	if (!c->edp || !fn) {
		/* A released connection, or a handshake option out of place. */
		d->edp.unexpected++;
		return NF_DROP;
	}
	if (!worth_checking(d, c, m))
		return NF_DROP;
	/* Set-up's messages carry no MAC (or one that proves set-up, not
	 * where the connection is): judged as tightly as a segment. */
	if (needs_seq_check(c, m) &&
	    !seq_plausible(c, p, !edp_type_numbered(m->type))) {
		d->edp.bad_seq++;
		return NF_DROP;
	}
	/* Its sender acknowledges our SYN-ACK (or where the connection is
	 * now): it receives what goes to its address. */
	conn_halfopen_proven(&d->conns, c);
	c->edp->received++;
	/*
	 * What the handler answers goes with the numbers the peer's message
	 * says it is at, mirrored: its ack (the peer's rcv_nxt - 1) is about
	 * our snd_una - 1, its seq (the peer's snd_una - 1) about our
	 * rcv_nxt - 1. As far inside the window as the message was.
	 */
	channel_hint(d, c, p->ack, p->seq);
	verdict = fn(d, c, p, m);
	channel_hint_clear(d);
	return verdict;
}

void channel_hint(struct rackd *d, const struct conn *c, uint32_t seq,
		  uint32_t ack)
{
	d->channel->hint_conn = c;
	d->channel->hint_seq = seq;
	d->channel->hint_ack = ack;
}

void channel_hint_clear(struct rackd *d)
{
	d->channel->hint_conn = NULL;
}
