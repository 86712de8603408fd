// SPDX-License-Identifier: GPL-2.0-only
#include "setup.h"

#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "event.h"
#include "hostauth.h"
#include "hostpair.h"
#include "knownhosts.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"

static void set_state(struct conn *c, enum conn_state state)
{
	c->state = state;
	c->state_since = loop_now();
}

static void setup_send(struct rackd *d, struct conn *c, uint8_t type)
{
	struct conn_edp *e = c->edp;
	struct edp_msg m = { .version = EDP_VERSION, .type = type };
	enum edp_role role = 0;
	int ret;

	switch (type) {
	case EDP_KEY:
		memcpy(m.key, e->kp.pk, EDP_KEY_LEN);
		break;
	case EDP_CONFIRM:
		role = conn_is_client(c) ? EDP_ROLE_CLIENT_CONFIRM
				    : EDP_ROLE_SERVER_CONFIRM;
		break;
	case EDP_DONE:
		role = EDP_ROLE_SERVER_DONE;
		break;
	}
	if (role)
		edp_mac(e->key, role, &e->t, m.mac);
	ret = channel_send(d, c, &m);
	sodium_memzero(&m, sizeof(m));
	if (ret) {
		log_debug("conn %llu: sending %s: %s",
			  (unsigned long long)c->id, edp_type_name(type),
			  strerror(-ret));
		return;
	}
	e->sent++;
	d->edp.setup_msgs_out++;
}

static bool wait_for_pair(struct rackd *d, struct conn *c);

static void setup_retry(struct timer *t, void *arg)
{
	struct conn *c = arg;
	struct rackd *d = rackd_of_conn(c);
	struct conn_edp *e = c->edp;

	(void)t;
	if (c->state != CONN_SETUP)
		return;
	if (e->phase == SETUP_WAIT_PAIR) {
		wait_for_pair(d, c);
		return;
	}
	if (e->source == KEY_SOURCE_ANONYMOUS)
		setup_send(d, c, e->phase == SETUP_WAIT_DONE ? EDP_CONFIRM
							     : EDP_KEY);
	else {
		/* Message 1 until message 2 comes; message 3 with CONFIRM
		 * until DONE does (a derived key has no message 3). */
		hostauth_resend(d, c);
		if (e->phase == SETUP_WAIT_DONE)
			setup_send(d, c, EDP_CONFIRM);
	}
	e->retry_ms *= 2;
	loop_timer_arm(d->loop, &e->retry, e->retry_ms);
}

/* Our ephemeral key pair for C's set-up, and its public half in the
 * transcript. */
static void take_keypair(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;

	keypool_take(&d->keys, &e->kp);
	e->have_own_key = true;
	memcpy(conn_is_client(c) ? e->t.pk_client : e->t.pk_server, e->kp.pk,
	       EDP_KEY_LEN);
}

/*
 * C's key from host pair H (hostpairs.h) and the connection's own
 * transcript: both ISNs and both nonces (edp_conn_key). The MACs'
 * transcript carries the two host keys, so that every message also
 * names who it is between.
 */
/* The key C would have from host pair H, and the MACs' transcript (both
 * host keys): no side effect. */
static void derive(const struct rackd *d, const struct conn *c,
		   const struct host_pair *h, uint8_t key[EDP_SECRET_LEN],
		   struct edp_transcript *mt)
{
	struct edp_conn_transcript t = {
		.isn_client = c->edp->t.isn_client,
		.isn_server = c->edp->t.isn_server,
	};
	bool client = conn_is_client(c);

	conn_setup_nonces(c, t.nonce_client, t.nonce_server);
	edp_conn_key(h->secret, &t, key);
	*mt = c->edp->t;
	memcpy(client ? mt->pk_client : mt->pk_server, d->hostkey.pk,
	       EDP_KEY_LEN);
	memcpy(client ? mt->pk_server : mt->pk_client, h->peer_pk,
	       EDP_KEY_LEN);
	sodium_memzero(&t, sizeof(t));
}

static void key_from_pair(struct rackd *d, struct conn *c,
			  struct host_pair *h, enum key_source source)
{
	struct conn_edp *e = c->edp;

	derive(d, c, h, e->key, &e->t);
	memcpy(e->peer_host, h->peer_pk, sizeof(e->peer_host));
	e->have_peer_host = true;
	e->hp_id = h->id;
	e->have_peer_key = e->keyed = true;
	e->conn_id = edp_conn_id(e->key);
	edp_fingerprint(e->key, e->fingerprint);
	e->source = source;
	host_pairs_count_use(&d->host_pairs, h);
}

/*
 * The server's side of a client that waited for a host pair (below): its
 * CONFIRM, for a connection whose SYN named none, is under a key derived
 * from a host pair made since with the host at its address. The few
 * candidates are tried; the one whose key verifies keys the connection.
 */
static bool key_from_later_pair(struct rackd *d, struct conn *c,
				const struct edp_msg *m)
{
	uint8_t key[EDP_SECRET_LEN];
	struct edp_transcript mt;
	bool found = false;

	if (c->adoption != ADOPTION_NONE || !c->peer_long || c->edp->keyed ||
	    c->edp->source != KEY_SOURCE_NONE)
		return false;
	for (struct host_pair *h = d->host_pairs.head; h && !found;
	     h = h->next) {
		if (!h->have_addr || !addr_equal(&h->peer_addr, &c->remote.addr))
			continue;
		derive(d, c, h, key, &mt);
		if (!edp_mac_verify(key, EDP_ROLE_CLIENT_CONFIRM, &mt, m->mac)) {
			key_from_pair(d, c, h, KEY_SOURCE_DERIVED);
			d->edp.keyed_later++;
			found = true;
		}
	}
	sodium_memzero(key, sizeof(key));
	return found;
}

#define SETUP_PAIR_POLL_MS 10
#define SETUP_PAIR_WAIT_MS 2000

/* The client waits for a host pair another connection's handshake with
 * the same host is making: true while it does (polling). Found, it
 * derives its key and sends CONFIRM; not coming, it runs its own. */
static bool wait_for_pair(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;
	struct host_pair *h = host_pairs_at(&d->host_pairs, &c->remote.addr);

	/* Not the one our SYN named: the server did not echo it (it lost
	 * it, or no longer trusts us), and would not verify its CONFIRM. */
	if (h && h->id != c->hp_sent) {
		key_from_pair(d, c, h, KEY_SOURCE_DERIVED);
		e->phase = SETUP_WAIT_DONE;
		setup_send(d, c, EDP_CONFIRM);
		e->retry_ms = SETUP_RETRY_MS;
		loop_timer_arm(d->loop, &e->retry, e->retry_ms);
		return false;
	}
	if (host_pairs_pending(&d->host_pairs, &c->remote.addr, loop_now(),
			       SETUP_PAIR_WAIT_MS) &&
	    loop_now() - e->started < SETUP_PAIR_WAIT_MS) {
		loop_timer_arm(d->loop, &e->retry, SETUP_PAIR_POLL_MS);
		return true;
	}
	e->source = KEY_SOURCE_EXCHANGE;
	e->phase = SETUP_WAIT_HS;
	e->retry_ms = SETUP_RETRY_MS;
	loop_timer_arm(d->loop, &e->retry, e->retry_ms);
	hostauth_start(d, c);
	return false;
}

/* The host pair both ends named in the SYN and SYN-ACK, if C may derive
 * its key from it: a fresh handshake (not an adoption, whose set-up has
 * no nonces) that offered it both ways. */
static struct host_pair *agreed_pair(struct rackd *d, const struct conn *c)
{
	if (c->adoption != ADOPTION_NONE || !c->peer_long || !c->hp_sent ||
	    c->hp_heard != c->hp_sent)
		return NULL;
	return host_pairs_by_id(&d->host_pairs, c->hp_sent);
}

/* The client's first message: a derived key's CONFIRM, the host
 * handshake's message 1, or an anonymous KEY. */
static void client_begin(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;
	struct host_pair *h = agreed_pair(d, c);
	bool anonymous = config_trust_for(d->cfg, &c->remote.addr) ==
			 TRUST_ANONYMOUS;

	e->retry_ms = SETUP_RETRY_MS;
	loop_timer_arm(d->loop, &e->retry, e->retry_ms);
	if (anonymous || (!c->peer_long && c->adoption == ADOPTION_NONE)) {
		/* A peer rackd from before host keys can only do this (an
		 * adopted connection's handshake said nothing of the peer:
		 * the host handshake is tried). */
		e->source = KEY_SOURCE_ANONYMOUS;
		if (!anonymous) {
			d->edp.anonymous_refused++;
			c->unmanaged = UNMANAGED_ANONYMOUS_REFUSED;
			setup_release(d, c, "the peer rackd has no host key "
				      "(an anonymous exchange only), and "
				      "trust for it is not anonymous");
			return;
		}
		take_keypair(d, c);
		setup_send(d, c, EDP_KEY);
		return;
	}
	if (h) {
		key_from_pair(d, c, h, KEY_SOURCE_DERIVED);
		e->phase = SETUP_WAIT_DONE;
		setup_send(d, c, EDP_CONFIRM);
		return;
	}
	/* Another connection's handshake with this host is under way (a
	 * burst of connections to a host met for the first time): this one
	 * waits for its host pair rather than run one more. Not an adopted
	 * one: with no nonces in its transcript, a key derived for it would
	 * come again at its next adoption, and the server never derives one
	 * for it (key_from_later_pair). */
	if (c->adoption == ADOPTION_NONE &&
	    host_pairs_pending(&d->host_pairs, &c->remote.addr, loop_now(),
			       SETUP_PAIR_WAIT_MS)) {
		e->phase = SETUP_WAIT_PAIR;
		wait_for_pair(d, c);
		return;
	}
	e->source = KEY_SOURCE_EXCHANGE;
	e->phase = SETUP_WAIT_HS;
	hostauth_start(d, c);
}

void setup_begin(struct rackd *d, struct conn *c)
{
	struct conn_edp *e;
	struct host_pair *h;

	/* A set-up afresh (adoption after an abort): the old keys go first,
	 * wiped, and out of the id index. */
	setup_free(d, c);
	e = xcalloc(1, sizeof(*e));

	c->edp = e;
	c->peer = PEER_RACKS;
	set_state(c, CONN_SETUP);
	e->started = loop_now();
	e->phase = SETUP_WAIT_KEY;
	e->t.isn_client = conn_is_client(c) ? c->lend.isn : c->rend.isn;
	e->t.isn_server = conn_is_client(c) ? c->rend.isn : c->lend.isn;
	timer_init(&e->retry, setup_retry, c);
	d->edp.setup_started++;
	/* The deadline shares the handshake timer: one per connection. */
	loop_timer_arm(d->loop, &c->expiry, d->cfg->setup_timeout_ms);
	conn_log(c, "racks peer: set-up");
	if (conn_is_client(c)) {
		client_begin(d, c);
		return;
	}
	/* The server derives at once when its SYN-ACK echoed the host pair,
	 * and waits for CONFIRM; else for KEY or the host handshake. Its
	 * key pair, if any, waits for the client's KEY: anyone can send a
	 * SYN with racks' offer from any address, and only a client that
	 * receives our SYN-ACK gets a key pair's worth of work. */
	if ((h = agreed_pair(d, c))) {
		key_from_pair(d, c, h, KEY_SOURCE_DERIVED);
		e->phase = SETUP_WAIT_CONFIRM;
	}
}

static void setup_connected(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;

	e->phase = SETUP_COMPLETE;
	e->setup_ms = loop_now() - e->started;
	hostauth_free(c);
	if (e->source != KEY_SOURCE_ANONYMOUS) {
		struct host_pair *h = host_pairs_by_id(&d->host_pairs,
						       e->hp_id);

		/* Where the client offers it next time; it replaces the
		 * older ones. */
		if (h)
			host_pairs_confirm(&d->host_pairs, h, &c->remote.addr);
	}
	switch (e->source) {
	case KEY_SOURCE_ANONYMOUS: d->edp.keyed_anonymous++; break;
	case KEY_SOURCE_EXCHANGE: d->edp.keyed_exchange++; break;
	case KEY_SOURCE_DERIVED: d->edp.keyed_derived++; break;
	case KEY_SOURCE_NONE: break;
	}
	set_state(c, CONN_CONNECTED);
	loop_timer_cancel(d->loop, &c->expiry);
	loop_timer_cancel(d->loop, &e->retry);
	/* The key pair did its job; only K is needed from now on. */
	edp_keypair_wipe(&e->kp);
	d->edp.setup_ok++;
	conn_log(c, "connected");
	conn_index_edp(&d->conns, c, e->conn_id);
	/* Its path's heartbeats, the state file and the event stream. */
	event_post(&d->events, EVENT_CONNECTED, c, NULL);
}

void setup_save(const struct conn *c, struct setup_saved *out)
{
	const struct conn_edp *e = c->edp;

	out->conn_id = e->conn_id;
	memcpy(out->key, e->key, sizeof(out->key));
	out->t = e->t;
	out->hb_out = e->hb_out;
	out->hb_acked = e->hb_acked;
	out->hb_in = e->hb_in;
	out->rc_base = e->rc_base;
	out->source = e->source;
	out->have_peer_host = e->have_peer_host;
	memcpy(out->peer_host, e->peer_host, sizeof(out->peer_host));
}

void setup_restore(struct rackd *d, struct conn *c,
		   const struct setup_saved *k)
{
	struct conn_edp *e = xcalloc(1, sizeof(*e));

	timer_init(&e->retry, setup_retry, c);
	memcpy(e->key, k->key, sizeof(e->key));
	e->t = k->t;
	e->have_peer_key = e->keyed = true;
	e->phase = SETUP_COMPLETE;
	e->conn_id = k->conn_id;
	edp_fingerprint(e->key, e->fingerprint);
	e->hb_out = k->hb_out;
	e->hb_acked = k->hb_acked;
	e->hb_in = k->hb_in;
	e->rc_base = k->rc_base;
	e->source = k->source;
	e->have_peer_host = k->have_peer_host;
	memcpy(e->peer_host, k->peer_host, sizeof(e->peer_host));
	e->started = loop_now();
	c->edp = e;
	c->peer = PEER_RACKS;
	c->offered = true;
	c->state = CONN_CONNECTED;
	c->state_since = loop_now();
	conn_index_edp(&d->conns, c, e->conn_id);
}

/* Store the peer's public key and derive K; false if it is refused. */
static bool setup_take_key(struct rackd *d, struct conn *c, const uint8_t *pk)
{
	struct conn_edp *e = c->edp;
	uint8_t *slot = conn_is_client(c) ? e->t.pk_server : e->t.pk_client;

	if (e->have_peer_key) {
		/* The same key again is a retransmission; another one is a
		 * forgery or a replay from some other connection. */
		if (sodium_memcmp(slot, pk, EDP_KEY_LEN) == 0) {
			d->edp.duplicate++;
			return true;
		}
		d->edp.bad_key++;
		return false;
	}
	memcpy(slot, pk, EDP_KEY_LEN);
	if (edp_derive(&e->kp, pk, &e->t, e->key)) {
		sodium_memzero(slot, EDP_KEY_LEN);
		d->edp.bad_key++;
		return false;
	}
	e->have_peer_key = true;
	e->keyed = true;
	e->conn_id = edp_conn_id(e->key);
	edp_fingerprint(e->key, e->fingerprint);
	return true;
}

static bool mac_ok(struct rackd *d, struct conn *c, enum edp_role role,
		   const struct edp_msg *m)
{
	if (!c->edp->keyed) {
		d->edp.unexpected++;
		return false;
	}
	if (edp_mac_verify(c->edp->key, role, &c->edp->t, m->mac)) {
		struct host_pair *h;

		d->edp.bad_mac++;
		/* A key derived from a host pair that does not verify: the
		 * next connection runs a new handshake. */
		if (c->state == CONN_SETUP &&
		    c->edp->source == KEY_SOURCE_DERIVED &&
		    (h = host_pairs_by_id(&d->host_pairs, c->edp->hp_id)) &&
		    !h->retired) {
			host_pairs_retire(&d->host_pairs, h);
			d->edp.hostpair_bad_mac++;
		}
		return false;
	}
	return true;
}

/* What set-up does with the host handshake's news for C. */
static void handshake_input(struct rackd *d, struct conn *c,
			    const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;
	struct host_pair *h;

	if (e->source == KEY_SOURCE_ANONYMOUS || e->source == KEY_SOURCE_DERIVED ||
	    (conn_is_client(c) ? e->phase != SETUP_WAIT_HS
			       : e->phase != SETUP_WAIT_KEY)) {
		d->edp.duplicate++;
		return;
	}
	switch (hostauth_input(d, c, m)) {
	case HOSTAUTH_MORE:
		return;
	case HOSTAUTH_ANSWERED:
		e->source = KEY_SOURCE_EXCHANGE;
		return;
	case HOSTAUTH_FAILED:
		/* Ours could not be written: the server waits for message 1
		 * again, the client starts over (new ephemeral key). */
		hostauth_free(c);
		e->have_peer_host = false;
		if (conn_is_client(c))
			hostauth_start(d, c);
		return;
	case HOSTAUTH_REFUSED:
		setup_release(d, c, conn_unmanaged_name(c->unmanaged));
		return;
	case HOSTAUTH_DONE:
		break;
	}
	h = host_pairs_by_id(&d->host_pairs, e->hp_id);
	if (!h)		/* made just now: cannot be */
		return;
	key_from_pair(d, c, h, KEY_SOURCE_EXCHANGE);
	if (conn_is_client(c)) {
		/* Message 3 went out; CONFIRM follows it. */
		e->phase = SETUP_WAIT_DONE;
		setup_send(d, c, EDP_CONFIRM);
		e->retry_ms = SETUP_RETRY_MS;
		loop_timer_arm(d->loop, &e->retry, e->retry_ms);
	} else {
		e->phase = SETUP_WAIT_CONFIRM;
	}
}

/* An anonymous KEY where trust for the peer forbids it: counted, logged
 * once, and left to time out (a forged KEY must not end a set-up). */
static bool anonymous_allowed(struct rackd *d, struct conn *c)
{
	if (config_trust_for(d->cfg, &c->remote.addr) == TRUST_ANONYMOUS)
		return true;
	d->edp.anonymous_refused++;
	if (!c->edp->anonymous_seen) {
		c->edp->anonymous_seen = true;
		conn_log(c, "the peer offers an anonymous exchange only, "
			 "and trust for it is not anonymous");
		c->unmanaged = UNMANAGED_ANONYMOUS_REFUSED;
	}
	return false;
}

/*
 * A message for a connection whose set-up is over: a retransmission (or
 * a replay) is counted as a duplicate, anything that does not match what
 * was agreed as a forgery. Nothing changes either way.
 */
static void after_setup(struct rackd *d, struct conn *c,
			const struct edp_msg *m)
{
	const struct conn_edp *e = c->edp;
	const uint8_t *peer = conn_is_client(c) ? e->t.pk_server : e->t.pk_client;
	enum edp_role role;

	switch (m->type) {
	case EDP_HANDSHAKE:
		/* A host handshake's late copy, or a replay: its state is
		 * gone, nothing can use it. */
		d->edp.hs_late++;
		return;
	case EDP_KEY:
		if (sodium_memcmp(peer, m->key, EDP_KEY_LEN) == 0)
			d->edp.duplicate++;
		else
			d->edp.bad_key++;
		return;
	case EDP_CONFIRM:
		role = conn_is_client(c) ? EDP_ROLE_SERVER_CONFIRM
				    : EDP_ROLE_CLIENT_CONFIRM;
		break;
	default:
		role = EDP_ROLE_SERVER_DONE;
		break;
	}
	if (mac_ok(d, c, role, m))
		d->edp.duplicate++;
}

static void server_input(struct rackd *d, struct conn *c,
			 const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	if (c->state != CONN_SETUP) {
		after_setup(d, c, m);
		/* The client retransmits CONFIRM until it hears DONE. */
		if (m->type == EDP_CONFIRM && c->state == CONN_CONNECTED &&
		    e->keyed && !edp_mac_verify(e->key, EDP_ROLE_CLIENT_CONFIRM,
						&e->t, m->mac))
			setup_send(d, c, EDP_DONE);
		return;
	}
	switch (m->type) {
	case EDP_HANDSHAKE:
		handshake_input(d, c, m);
		return;
	case EDP_KEY:
		if (e->source != KEY_SOURCE_NONE &&
		    e->source != KEY_SOURCE_ANONYMOUS) {
			d->edp.unexpected++;
			return;
		}
		if (!anonymous_allowed(d, c))
			return;
		e->source = KEY_SOURCE_ANONYMOUS;
		if (!e->have_own_key)
			take_keypair(d, c);
		if (!setup_take_key(d, c, m->key))
			return;
		/* Answer every copy: our answer may be what got lost. */
		setup_send(d, c, EDP_KEY);
		setup_send(d, c, EDP_CONFIRM);
		e->phase = SETUP_WAIT_CONFIRM;
		return;
	case EDP_CONFIRM:
		if (!key_from_later_pair(d, c, m) &&
		    !mac_ok(d, c, EDP_ROLE_CLIENT_CONFIRM, m))
			return;
		setup_connected(d, c);
		setup_send(d, c, EDP_DONE);
		return;
	default:
		d->edp.unexpected++;
	}
}

static void client_input(struct rackd *d, struct conn *c,
			 const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	if (c->state != CONN_SETUP) {
		after_setup(d, c, m);
		return;
	}
	switch (m->type) {
	case EDP_HANDSHAKE:
		handshake_input(d, c, m);
		return;
	case EDP_KEY:
		if (e->source != KEY_SOURCE_ANONYMOUS) {
			d->edp.unexpected++;
			return;
		}
		setup_take_key(d, c, m->key);
		return;
	case EDP_CONFIRM:
		if (!mac_ok(d, c, EDP_ROLE_SERVER_CONFIRM, m))
			return;
		if (e->phase == SETUP_WAIT_DONE) {
			d->edp.duplicate++;
			return;
		}
		e->phase = SETUP_WAIT_DONE;
		setup_send(d, c, EDP_CONFIRM);
		e->retry_ms = SETUP_RETRY_MS;
		loop_timer_arm(d->loop, &e->retry, e->retry_ms);
		return;
	case EDP_DONE:
		if (e->phase == SETUP_WAIT_DONE &&
		    mac_ok(d, c, EDP_ROLE_SERVER_DONE, m))
			setup_connected(d, c);
		else if (e->phase != SETUP_WAIT_DONE)
			d->edp.unexpected++;
		return;
	default:
		d->edp.unexpected++;
	}
}

static uint32_t setup_input(struct rackd *d, struct conn *c,
			    const struct packet *p, const struct edp_msg *m)
{
	(void)p;
	if (conn_is_client(c))
		client_input(d, c, m);
	else
		server_input(d, c, m);
	return NF_DROP;
}

int setup_handle_messages(struct rackd *d)
{
	static const uint8_t types[] = { EDP_KEY, EDP_CONFIRM, EDP_DONE,
					 EDP_HANDSHAKE };
	int ret = 0;

	for (size_t i = 0; i < sizeof(types) && !ret; i++)
		ret = channel_handle(d, types[i], setup_input);
	return ret;
}

void setup_free(struct rackd *d, struct conn *c)
{
	struct conn_edp *e = c->edp;

	if (!e)
		return;
	conn_unindex_edp(&d->conns, c);
	loop_timer_cancel(d->loop, &e->retry);
	hostauth_free(c);
	sodium_memzero(e, sizeof(*e));
	free(e);
	c->edp = NULL;
}

void setup_event(void *arg, enum event_type type, struct conn *c,
		 const char *reason)
{
	(void)type;
	(void)reason;
	setup_free(arg, c);
}

void setup_release(struct rackd *d, struct conn *c, const char *why)
{
	conn_log(c, why);
	if (c->peer == PEER_RACKS)
		event_post(&d->events, EVENT_RELEASED, c, why);
	setup_free(d, c);
	loop_timer_cancel(d->loop, &c->expiry);
	c->peer = PEER_NONE;
	set_state(c, CONN_RELEASED);
	d->edp.released++;
}
