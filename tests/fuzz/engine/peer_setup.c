// SPDX-License-Identifier: GPL-2.0-only
/*
 * The set-up of the remote hosts' rackd (engine.h), as rackd's setup.c,
 * hostauth.c and track.c do it on the other end, written again from the
 * protocol (option.h, hostauth.h, hostpair.h) over edp/'s pure library:
 *
 *  - A rackd with host keys sends the long SYN / SYN-ACK option: a fresh
 *    nonce and a host pair, the newest confirmed one as client, the
 *    client's echoed as server when it holds it too (or, where the SYN
 *    has no room, the short form with the host-keys flag: neither nonce
 *    nor host pair, zeros in their place). When both named the same
 *    one, the key is derived at once (edp_conn_key over both ISNs and
 *    both nonces): the client sends CONFIRM, the server answers DONE.
 *    Otherwise the client runs Noise XX as initiator between the two
 *    host keys (message 1; message 3 and CONFIRM once message 2 came),
 *    the server as responder, each message cut into HANDSHAKE fragments
 *    of 32 bytes; the pair it makes keys this connection and is kept
 *    for the next. Its trust is accept-new and it has no known-hosts
 *    file: it takes whatever host key our rackd shows.
 *  - A rackd before host keys (or one whose trust is anonymous) keys
 *    with KEY, as edp/keys.c says; one with host keys still answers a
 *    host handshake as server (rackd does). A rackd with host keys and
 *    accept-new ignores a KEY (rackd's anonymous_refused).
 *  - An adoption's set-up has no nonces (the two ends may have heard
 *    different options, or none): zeros in the prologue and in K, and a
 *    host handshake always.
 *  - A client that named no host pair may derive from one made since
 *    (rackd's wait_for_pair(), a burst to a host met for the first
 *    time): the server tries its host pairs on that CONFIRM (setup.c
 *    key_from_later_pair()). The model does the server's part only.
 *
 * The client retransmits as rackd's setup_retry() does, from
 * SETUP_RETRY_MS doubling (fake.c runs these timers with rackd's); a
 * rackd before host keys only when the input says so (as before). The
 * server answers every complete copy of message 1 and every CONFIRM. A
 * handshake message that fails to decrypt is dropped (hostauth.c).
 */
#include <sodium.h>
#include <string.h>

#include "engine.h"
#include "option.h"
#include "setup.h"

#define PROLOGUE_LABEL "racks hostauth v1"
#define MODEL_KEY_LABEL "racks fuzz model host key"
/* Message 2 or 3 may carry a rotation proof (hostauth.h). */
#define ROTATION_LEN (32 + 16)
/* Retransmissions of one set-up message: past setup_timeout. */
#define RETRIES 6

struct fz_model fz_model;
uint64_t fz_model_exchanges, fz_model_derived, fz_model_anonymous,
	fz_model_hs_failed;

/* ---- the model's host: its key and its host pairs ---- */

static void model_key(void)
{
	uint8_t in[8];

	for (int i = 0; i < 4; i++) {
		in[i] = (uint8_t)(fz_model.seed >> (24 - 8 * i));
		in[4 + i] = (uint8_t)(fz_model.generation >> (24 - 8 * i));
	}
	/* Not from fz_rand(): the input's other draws stay where they were. */
	crypto_generichash(fz_model.sk, sizeof(fz_model.sk), in, sizeof(in),
			   (const uint8_t *)MODEL_KEY_LABEL,
			   sizeof(MODEL_KEY_LABEL) - 1);
	crypto_scalarmult_base(fz_model.pk, fz_model.sk);
}

void fz_model_reset(bool hostkeys, bool anonymous, uint32_t seed)
{
	memset(&fz_model, 0, sizeof(fz_model));
	fz_model.hostkeys = hostkeys;
	fz_model.anonymous = anonymous;
	fz_model.seed = seed;
	model_key();
}

void fz_model_forget_pairs(void)
{
	memset(fz_model.pairs, 0, sizeof(fz_model.pairs));
	fz_model.npairs = 0;
}

void fz_model_new_key(void)
{
	fz_model.generation++;
	model_key();
	fz_model_forget_pairs();
}

uint32_t fz_model_add_pair(const uint8_t *secret, const uint8_t *rackd_pk)
{
	struct fz_model_pair *h = &fz_model.pairs[0];

	memmove(h + 1, h, sizeof(*h) * (FZ_MODEL_PAIRS - 1));
	memcpy(h->secret, secret, sizeof(h->secret));
	memcpy(h->peer_pk, rackd_pk, sizeof(h->peer_pk));
	h->id = edp_hostpair_id(secret);
	h->confirmed = false;
	if (fz_model.npairs < FZ_MODEL_PAIRS)
		fz_model.npairs++;
	return h->id;
}

static struct fz_model_pair *pair_by_id(uint32_t id)
{
	for (unsigned i = 0; id && i < fz_model.npairs; i++)
		if (fz_model.pairs[i].id == id)
			return &fz_model.pairs[i];
	return NULL;
}

/* ---- the SYN and SYN-ACK ---- */

/* The host pair P names: its newest confirmed one as client, the
 * client's as server if it holds it; none where its trust is
 * anonymous. */
static uint32_t offer_pair(const struct fz_peer *p, uint8_t type)
{
	const struct fz_offer *o = &p->offer;

	if (fz_model.anonymous)
		return 0;
	if (type == EDP_SYN) {
		for (unsigned i = 0; i < fz_model.npairs; i++)
			if (fz_model.pairs[i].confirmed)
				return fz_model.pairs[i].id;
		return 0;
	}
	return o->heard_long && pair_by_id(o->hp_heard) ? o->hp_heard : 0;
}

void fz_peer_offer(struct fz_peer *p, uint8_t type, bool short_form,
		   struct edp_msg *m)
{
	struct fz_offer *o = &p->offer;

	if (!p->hostkeys)
		return;
	m->flags = EDP_OFFER_HOSTKEYS;
	if (!o->made) {
		o->short_form = short_form;
		for (int i = 0; i < EDP_NONCE_LEN && !short_form; i++)
			o->nonce_local[i] = (uint8_t)fz_rand();
		o->hp_sent = short_form ? 0 : offer_pair(p, type);
		o->made = true;
	}
	if (o->short_form)
		return;
	m->has_nonce = 1;
	m->hp_id = o->hp_sent;
	memcpy(m->nonce, o->nonce_local, EDP_NONCE_LEN);
}

void fz_peer_heard(struct fz_peer *p, const struct edp_msg *m)
{
	struct fz_offer *o = &p->offer;

	if ((!m->has_nonce && !(m->flags & EDP_OFFER_HOSTKEYS)) ||
	    o->heard_long)
		return;
	o->heard_long = true;
	o->hp_heard = m->hp_id;
	memcpy(o->nonce_remote, m->nonce, EDP_NONCE_LEN);
}

/* ---- messages ---- */

static void send_key(const struct fz_peer *p)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_KEY };

	memcpy(m.key, p->kp.pk, EDP_KEY_LEN);
	fz_peer_send_msg(p, &m);
}

static void send_mac(const struct fz_peer *p, uint8_t type, enum edp_role role)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = type };

	edp_mac(p->key, role, &p->t, m.mac);
	fz_peer_send_msg(p, &m);
}

/* Our last handshake message, every fragment (hostauth_resend()). */
static void hs_resend(const struct fz_peer *p)
{
	const struct fz_hs *hs = &p->hs;
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_HANDSHAKE,
			     .hs_msg = hs->out_msg, .hs_len = hs->out_len };
	unsigned frags = (hs->out_len + EDP_HS_FRAG - 1u) / EDP_HS_FRAG;

	if (!hs->on)
		return;
	for (unsigned i = 0; i < frags; i++) {
		m.hs_frag = (uint8_t)i;
		memset(m.key, 0, EDP_HS_FRAG);
		memcpy(m.key, hs->out + i * EDP_HS_FRAG,
		       i + 1 < frags ? EDP_HS_FRAG
				     : hs->out_len - i * EDP_HS_FRAG);
		fz_peer_send_msg(p, &m);
	}
}

/* The client's retransmissions start over (a new message of its). */
static void arm(struct fz_peer *p)
{
	p->retry_ms = SETUP_RETRY_MS;
	p->retries = 0;
	p->retry_at = fz_now + p->retry_ms;
}

/* ---- keys ---- */

/* The nonces of P's set-up: none for an adoption's. */
static void nonces(const struct fz_peer *p, uint8_t *nc, uint8_t *ns)
{
	const struct fz_offer *o = &p->offer;

	if (p->adopting) {
		memset(nc, 0, EDP_NONCE_LEN);
		memset(ns, 0, EDP_NONCE_LEN);
		return;
	}
	memcpy(nc, p->client ? o->nonce_local : o->nonce_remote, EDP_NONCE_LEN);
	memcpy(ns, p->client ? o->nonce_remote : o->nonce_local, EDP_NONCE_LEN);
}

/* P's key from a host pair's SECRET (setup.c key_from_pair()): the
 * MACs' transcript names the two host keys. */
static void key_from(struct fz_peer *p, const uint8_t *secret,
		     const uint8_t *rackd_pk, enum fz_key_source source)
{
	struct edp_conn_transcript ct = { .isn_client = p->t.isn_client,
					  .isn_server = p->t.isn_server };

	nonces(p, ct.nonce_client, ct.nonce_server);
	edp_conn_key(secret, &ct, p->key);
	p->hp_id = edp_hostpair_id(secret);
	memcpy(p->client ? p->t.pk_client : p->t.pk_server, fz_model.pk,
	       EDP_KEY_LEN);
	memcpy(p->client ? p->t.pk_server : p->t.pk_client, rackd_pk,
	       EDP_KEY_LEN);
	p->keyed = true;
	p->conn_id = edp_conn_id(p->key);
	p->source = source;
}

/* The anonymous exchange's KEY (edp_derive); false if refused. */
static bool take_key(struct fz_peer *p, const uint8_t *pk)
{
	uint8_t *slot = p->client ? p->t.pk_server : p->t.pk_client;

	if (p->have_ours)
		return memcmp(slot, pk, EDP_KEY_LEN) == 0;
	memcpy(slot, pk, EDP_KEY_LEN);
	if (edp_derive(&p->kp, pk, &p->t, p->key))
		return false;
	p->have_ours = p->keyed = true;
	p->source = FZ_KEY_ANONYMOUS;
	p->conn_id = edp_conn_id(p->key);
	fz_model_anonymous++;
	return true;
}

/* ---- the host handshake ---- */

static void hs_init(struct fz_peer *p, enum noise_role role)
{
	uint8_t pro[sizeof(PROLOGUE_LABEL) - 1 + 8 + 2 * EDP_NONCE_LEN];
	size_t n = sizeof(PROLOGUE_LABEL) - 1;

	memcpy(pro, PROLOGUE_LABEL, n);
	for (int i = 0; i < 4; i++) {
		pro[n + i] = (uint8_t)(p->t.isn_client >> (24 - 8 * i));
		pro[n + 4 + i] = (uint8_t)(p->t.isn_server >> (24 - 8 * i));
	}
	nonces(p, pro + n + 8, pro + n + 8 + EDP_NONCE_LEN);
	noise_hs_wipe(&p->hs.noise);
	memset(&p->hs, 0, sizeof(p->hs));
	noise_hs_init(&p->hs.noise, role, pro, sizeof(pro), fz_model.sk);
	p->hs.on = true;
	p->hs.expect = role == NOISE_INITIATOR ? 2 : 1;
	p->source = FZ_KEY_EXCHANGE;
}

static bool hs_write(struct fz_peer *p, uint8_t index)
{
	size_t len;

	if (noise_hs_write(&p->hs.noise, NULL, 0, p->hs.out,
			   sizeof(p->hs.out), &len))
		return false;
	p->hs.out_msg = index;
	p->hs.out_len = (uint8_t)len;
	hs_resend(p);
	return true;
}

static void hs_start(struct fz_peer *p)
{
	hs_init(p, NOISE_INITIATOR);
	hs_write(p, 1);
	arm(p);
}

/* The handshake is over: the host pair, kept, and this connection's key
 * from it; RS: our rackd's host key. */
static void hs_finish(struct fz_peer *p, const uint8_t *rs)
{
	uint8_t h[NOISE_HASH_LEN], k1[NOISE_KEY_LEN], k2[NOISE_KEY_LEN];
	uint8_t secret[EDP_HOSTPAIR_SECRET_LEN];

	noise_hs_result(&p->hs.noise, h, k1, k2);
	edp_hostpair_secret(h, k1, k2, secret);
	fz_model_add_pair(secret, rs);
	key_from(p, secret, rs, FZ_KEY_EXCHANGE);
	p->hs.done = true;
	fz_model_exchanges++;
}

/* rackd's complete message INDEX: read it, answer it. */
static void hs_read(struct fz_peer *p, uint8_t index)
{
	struct fz_hs *hs = &p->hs;
	struct noise_hs before = hs->noise;
	uint8_t payload[ROTATION_LEN], rs[NOISE_KEY_LEN];
	size_t plen;

	if (noise_hs_read(&hs->noise, hs->in, hs->in_len, payload,
			  sizeof(payload), &plen)) {
		/* Damaged or forged: dropped, the genuine one comes again. */
		fz_model_hs_failed++;
		hs->noise = before;
		return;
	}
	if (index == 1) {
		hs->expect = 3;
		hs_write(p, 2);
		return;
	}
	memcpy(rs, noise_hs_remote_static(&hs->noise), sizeof(rs));
	if (!p->client) {
		hs_finish(p, rs);	/* CONFIRM comes next */
		return;
	}
	if (!hs_write(p, 3))
		return;
	hs_finish(p, rs);
	p->wait_done = true;
	send_mac(p, EDP_CONFIRM, EDP_ROLE_CLIENT_CONFIRM);
	arm(p);
}

static bool hs_valid(const struct edp_msg *m, unsigned frags)
{
	return m->hs_len && frags <= EDP_HS_MAX_FRAGS && m->hs_frag < frags &&
	       m->hs_msg >= 1 && m->hs_msg <= 3 &&
	       (m->hs_len == noise_xx_msg_len(m->hs_msg - 1, 0) ||
		(m->hs_msg > 1 &&
		 m->hs_len == noise_xx_msg_len(m->hs_msg - 1, ROTATION_LEN)));
}

/* A HANDSHAKE fragment (hostauth_input()). */
static void hs_message(struct fz_peer *p, const struct edp_msg *m)
{
	struct fz_hs *hs = &p->hs;
	unsigned frags = (m->hs_len + EDP_HS_FRAG - 1u) / EDP_HS_FRAG;
	size_t n;

	/* A rackd before host keys knows no such message. */
	if (!p->hostkeys || p->source == FZ_KEY_ANONYMOUS ||
	    p->source == FZ_KEY_DERIVED || !hs_valid(m, frags))
		return;
	if (!hs->on) {
		if (p->client || m->hs_msg != 1)
			return;
		hs_init(p, NOISE_RESPONDER);
	}
	if (hs->done || m->hs_msg < hs->expect) {
		/* Our answer may be what got lost. */
		if (!p->client && m->hs_msg == 1 && !hs->done &&
		    m->hs_frag == frags - 1)
			hs_resend(p);
		return;
	}
	if (m->hs_msg != hs->expect)
		return;
	if (hs->in_msg != m->hs_msg) {
		hs->in_msg = m->hs_msg;
		hs->in_len = m->hs_len;
		hs->in_have = 0;
	}
	n = m->hs_frag + 1u < frags ? EDP_HS_FRAG
				    : m->hs_len - m->hs_frag * EDP_HS_FRAG;
	memcpy(hs->in + m->hs_frag * EDP_HS_FRAG, m->key, n);
	hs->in_have |= (uint8_t)(1u << m->hs_frag);
	if (hs->in_have != (uint8_t)((1u << frags) - 1))
		return;
	hs->in_have = 0;
	hs->in_msg = 0;
	hs_read(p, m->hs_msg);
}

/* ---- set-up ---- */

/* The host pair both named in the SYN and SYN-ACK (setup.c
 * agreed_pair()); never for an adoption. */
static const struct fz_model_pair *agreed_pair(const struct fz_peer *p)
{
	const struct fz_offer *o = &p->offer;

	if (p->adopting || !o->heard_long || !o->hp_sent ||
	    o->hp_sent != o->hp_heard)
		return NULL;
	return pair_by_id(o->hp_sent);
}

void fz_peer_setup_start(struct fz_peer *p, bool client)
{
	bool adopting = p->adopting;
	struct fz_offer o = p->offer;
	const struct fz_model_pair *h;

	fz_peer_clear(p);
	p->adopting = adopting;
	p->offer = o;
	p->offered = true;
	p->setup = true;
	p->client = client;
	p->t.isn_client = client ? p->isn : p->risn;
	p->t.isn_server = client ? p->risn : p->isn;
	if (!p->hostkeys || fz_model.anonymous) {
		/* The server keeps its key pair for a KEY, and answers a
		 * host handshake all the same. */
		edp_keypair_new(&p->kp);
		memcpy(client ? p->t.pk_client : p->t.pk_server, p->kp.pk,
		       EDP_KEY_LEN);
		if (!client)
			return;
		p->source = FZ_KEY_ANONYMOUS;
		send_key(p);
		if (p->hostkeys)
			arm(p);
		return;
	}
	/* Our rackd offered the short form: a rackd before host keys,
	 * which accept-new refuses (it waits, for nothing). */
	if (!adopting && !o.heard_long)
		return;
	if ((h = agreed_pair(p))) {
		key_from(p, h->secret, h->peer_pk, FZ_KEY_DERIVED);
		fz_model_derived++;
		if (client) {
			p->wait_done = true;
			send_mac(p, EDP_CONFIRM, EDP_ROLE_CLIENT_CONFIRM);
			arm(p);
		}
		return;
	}
	if (client)
		hs_start(p);
}

/* Set-up complete: a host pair its key came from is confirmed. */
static void connected(struct fz_peer *p)
{
	struct fz_model_pair *h;

	p->connected = true;
	p->retry_at = 0;
	if (p->source != FZ_KEY_ANONYMOUS && (h = pair_by_id(p->hp_id)))
		h->confirmed = true;
}

/* A server's CONFIRM for a connection whose SYN named no host pair:
 * under a key from a host pair made since, if one verifies it. */
static void key_from_later_pair(struct fz_peer *p, const struct edp_msg *m)
{
	struct fz_peer try = *p;

	if (p->adopting || p->client || p->keyed || !p->hostkeys ||
	    fz_model.anonymous || !p->offer.heard_long ||
	    (p->source != FZ_KEY_NONE && p->source != FZ_KEY_EXCHANGE) ||
	    (p->hs.on && p->hs.expect > 1))
		return;
	for (unsigned i = 0; i < fz_model.npairs; i++) {
		const struct fz_model_pair *h = &fz_model.pairs[i];

		key_from(&try, h->secret, h->peer_pk, FZ_KEY_DERIVED);
		if (edp_mac_verify(try.key, EDP_ROLE_CLIENT_CONFIRM, &try.t,
				   m->mac))
			continue;
		key_from(p, h->secret, h->peer_pk, FZ_KEY_DERIVED);
		fz_model_derived++;
		return;
	}
}

void fz_peer_setup_message(struct fz_peer *p, const struct edp_msg *m)
{
	switch (m->type) {
	case EDP_HANDSHAKE:
		hs_message(p, m);
		return;
	case EDP_KEY:
		/* accept-new refuses the anonymous exchange. */
		if ((p->hostkeys && !fz_model.anonymous) ||
		    (p->source != FZ_KEY_NONE && p->source != FZ_KEY_ANONYMOUS) ||
		    !take_key(p, m->key) || p->client)
			return;
		send_key(p);
		send_mac(p, EDP_CONFIRM, EDP_ROLE_SERVER_CONFIRM);
		return;
	case EDP_CONFIRM:
		if (!p->keyed)
			key_from_later_pair(p, m);
		if (!p->keyed)
			return;
		if (!p->client) {
			bool ok = !edp_mac_verify(p->key,
						  EDP_ROLE_CLIENT_CONFIRM,
						  &p->t, m->mac);

			fz_peer_verified(p, ok, "CONFIRM");
			if (!ok)
				return;
			connected(p);
			send_mac(p, EDP_DONE, EDP_ROLE_SERVER_DONE);
			return;
		}
		/* The server's CONFIRM: the anonymous exchange's only. */
		if (p->source != FZ_KEY_ANONYMOUS)
			return;
		fz_peer_verified(p, !edp_mac_verify(p->key,
						    EDP_ROLE_SERVER_CONFIRM,
						    &p->t, m->mac), "CONFIRM");
		p->wait_done = true;
		send_mac(p, EDP_CONFIRM, EDP_ROLE_CLIENT_CONFIRM);
		return;
	case EDP_DONE:
		if (!p->keyed || !p->client)
			return;
		fz_peer_verified(p, !edp_mac_verify(p->key,
						    EDP_ROLE_SERVER_DONE,
						    &p->t, m->mac), "DONE");
		connected(p);
		return;
	}
}

void fz_peer_setup_again(struct fz_peer *p, int what)
{
	switch (what) {
	case 1:
		if (!p->setup || !p->client || p->connected)
			return;
		if (p->source == FZ_KEY_ANONYMOUS)
			send_key(p);
		else
			hs_resend(p);
		return;
	case 2:
		if (p->keyed && p->client && p->wait_done)
			send_mac(p, EDP_CONFIRM, EDP_ROLE_CLIENT_CONFIRM);
		return;
	default:
		if (p->keyed && !p->client)
			send_mac(p, EDP_DONE, EDP_ROLE_SERVER_DONE);
	}
}

/* ---- retransmission ---- */

uint64_t fz_peer_next_due(void)
{
	uint64_t next = UINT64_MAX;

	for (unsigned n = 0; n < FZ_FLOWS; n++)
		if (fz_peers[n].retry_at && fz_peers[n].retry_at < next)
			next = fz_peers[n].retry_at;
	return next;
}

/* What P's set-up sends again (setup_retry()): KEY, or CONFIRM once
 * keyed; or its last handshake message, with CONFIRM once keyed. */
static void retry(struct fz_peer *p)
{
	if (p->source == FZ_KEY_ANONYMOUS) {
		if (p->wait_done)
			send_mac(p, EDP_CONFIRM, EDP_ROLE_CLIENT_CONFIRM);
		else
			send_key(p);
		return;
	}
	hs_resend(p);
	if (p->wait_done)
		send_mac(p, EDP_CONFIRM, EDP_ROLE_CLIENT_CONFIRM);
}

void fz_peer_run_due(void)
{
	for (unsigned n = 0; n < FZ_FLOWS; n++) {
		struct fz_peer *p = &fz_peers[n];

		if (!p->retry_at || p->retry_at > fz_now)
			continue;
		if (!p->racks || p->silent || !p->sock || !p->setup ||
		    p->connected || ++p->retries > RETRIES) {
			p->retry_at = 0;
			continue;
		}
		retry(p);
		p->retry_ms *= 2;
		p->retry_at = fz_now + p->retry_ms;
	}
}
