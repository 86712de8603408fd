// SPDX-License-Identifier: GPL-2.0-only
#include "hostauth.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "channel.h"
#include "config.h"
#include "hostid.h"
#include "hostpair.h"
#include "hostpairs.h"
#include "keystate.h"
#include "knownhosts.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"

#define PROLOGUE_LABEL "racks hostauth v1"

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

/* The connection the handshake rides on: what its prologue binds. */
static size_t prologue(const struct conn *c, uint8_t *out)
{
	size_t n = sizeof(PROLOGUE_LABEL) - 1;

	memcpy(out, PROLOGUE_LABEL, n);
	put_u32(out + n, c->edp->t.isn_client);
	put_u32(out + n + 4, c->edp->t.isn_server);
	conn_setup_nonces(c, out + n + 8, out + n + 8 + EDP_NONCE_LEN);
	return n + 8 + 2 * EDP_NONCE_LEN;
}

static struct hs_state *hs_new(struct conn *c, enum noise_role role,
			       const uint8_t *static_sk)
{
	uint8_t pro[64];
	struct hs_state *hs = xcalloc(1, sizeof(*hs));

	noise_hs_init(&hs->noise, role, pro, prologue(c, pro), static_sk);
	c->edp->hs = hs;
	return hs;
}

void hostauth_free(struct conn *c)
{
	if (!c->edp || !c->edp->hs)
		return;
	if (c->edp->hs->pending)
		host_pairs_pending_end(&rackd_of_conn(c)->host_pairs,
				       &c->remote.addr);
	noise_hs_wipe(&c->edp->hs->noise);
	sodium_memzero(c->edp->hs, sizeof(*c->edp->hs));
	free(c->edp->hs);
	c->edp->hs = NULL;
}

void hostauth_resend(struct rackd *d, struct conn *c)
{
	struct hs_state *hs = c->edp->hs;
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_HANDSHAKE };
	unsigned frags;

	if (!hs || !hs->out_len)
		return;
	frags = (hs->out_len + EDP_HS_FRAG - 1) / EDP_HS_FRAG;
	m.hs_msg = hs->out_msg;
	m.hs_len = hs->out_len;
	for (unsigned i = 0; i < frags; i++) {
		m.hs_frag = (uint8_t)i;
		memset(m.key, 0, EDP_HS_FRAG);
		memcpy(m.key, hs->out + i * EDP_HS_FRAG,
		       i + 1 < frags ? EDP_HS_FRAG
				     : hs->out_len - i * EDP_HS_FRAG);
		if (channel_send(d, c, &m) == 0) {
			c->edp->sent++;
			d->edp.setup_msgs_out++;
		}
	}
	d->edp.hs_sent++;
}

/*
 * Our rotation proof for message INDEX (2 or 3), if this host's key
 * replaced an older one (rackd --rotate-host-key keeps it): the old
 * public key and a MAC under X25519(old secret, the verifier's key), the
 * verifier's ephemeral key in message 2 (the server does not know the
 * client's static key yet), its static key in message 3. 0 or the
 * payload's length.
 */
static size_t rotation_payload(struct rackd *d, struct hs_state *hs,
			       uint8_t index, uint8_t *out)
{
	const uint8_t *verifier = index == 2
		? noise_hs_remote_ephemeral(&hs->noise)
		: noise_hs_remote_static(&hs->noise);

	if (!d->hostkey_old || !verifier ||
	    edp_rotation_proof(d->hostkey_old->sk, verifier, d->hostkey.pk,
			       out + EDP_HOST_KEY_LEN))
		return 0;
	memcpy(out, d->hostkey_old->pk, EDP_HOST_KEY_LEN);
	return HOSTAUTH_ROTATION_LEN;
}

/* Write our message INDEX and send it. */
static int hs_write(struct rackd *d, struct conn *c, uint8_t index)
{
	struct hs_state *hs = c->edp->hs;
	uint8_t payload[HOSTAUTH_ROTATION_LEN];
	size_t len, plen = index > 1 ? rotation_payload(d, hs, index, payload)
				     : 0;
	int ret = noise_hs_write(&hs->noise, payload, plen, hs->out,
				 sizeof(hs->out), &len);

	if (ret)
		return ret;
	hs->out_msg = index;
	hs->out_len = (uint8_t)len;
	hostauth_resend(d, c);
	return 0;
}

void hostauth_start(struct rackd *d, struct conn *c)
{
	struct hs_state *hs = hs_new(c, NOISE_INITIATOR, d->hostkey.sk);

	hs->expect = 2;
	hs->pending = host_pairs_pending_add(&d->host_pairs, &c->remote.addr,
					     loop_now());
	d->edp.hs_started++;
	if (hs_write(d, c, 1))
		log_warnx("conn %llu: host handshake: message 1 not written",
			  (unsigned long long)c->id);
}

/* The command that trusts PK in place of what was known (rackctl(8)). */
static void log_mismatch(const struct conn *c, const uint8_t *pk,
			 const struct known_host *other)
{
	char now[EDP_HOST_FP_STRLEN], was[EDP_HOST_FP_STRLEN];
	char key[EDP_HOST_KEY_STRLEN], at[ADDR_STRLEN];

	edp_host_fingerprint(pk, now);
	edp_host_key_format(pk, key);
	addr_format(&c->remote.addr, at, sizeof(at));
	if (other) {
		edp_host_fingerprint(other->pk, was);
		log_warnx("conn %llu: HOST KEY MISMATCH: %s was known as %s%s%s "
			  "and now shows %s; left unmanaged. If the peer's key "
			  "really changed: rackctl hosts remove %s && rackctl "
			  "hosts add %s", (unsigned long long)c->id, at, was,
			  other->name[0] ? " " : "", other->name, now, was,
			  key);
	} else {
		log_warnx("conn %llu: host key %s of %s is not pinned "
			  "(trust = pinned); left unmanaged. To trust it: "
			  "rackctl hosts add %s --pin",
			  (unsigned long long)c->id, now, at, key);
	}
}

/*
 * The peer proved (ROT: its old key and the proof, checked by the
 * caller) that the holder of a key we know made PK: PK takes its place,
 * with its name and pin, and the old key's host pairs go.
 */
static bool rotated(struct rackd *d, struct conn *c, const uint8_t *pk,
		    const uint8_t *old_pk)
{
	const struct known_host *old = known_hosts_by_key(d->known_hosts,
							  old_pk);
	char was[EDP_HOST_FP_STRLEN], now[EDP_HOST_FP_STRLEN];
	char name[KNOWN_HOST_NAME_MAX];
	bool pinned;

	if (!old)
		return false;
	pinned = old->pinned;
	snprintf(name, sizeof(name), "%s", old->name);
	edp_host_fingerprint(old_pk, was);
	edp_host_fingerprint(pk, now);
	if (known_hosts_add(d->known_hosts, pk, name[0] ? name : NULL, pinned))
		return false;
	known_hosts_remove(d->known_hosts, old_pk);
	host_pairs_forget(&d->host_pairs, old_pk);
	log_info("conn %llu: host key %s%s%s rotated to %s, signed by the old "
		 "key: accepted", (unsigned long long)c->id, was,
		 name[0] ? " " : "", name, now);
	d->edp.hs_rotated++;
	return true;
}

/* May the peer's static key PK be trusted for C? Records it if so.
 * ROT_OLD: the old key the peer proved it rotated from, or NULL. */
static bool trusted(struct rackd *d, struct conn *c, const uint8_t *pk,
		    const uint8_t *rot_old)
{
	enum trust_policy pol = config_trust_for(d->cfg, &c->remote.addr);
	const struct known_host *other = NULL;

	enum trust_verdict v;

	if (pol == TRUST_ANONYMOUS)
		return true;
	v = known_hosts_judge(d->known_hosts, pol, pk, &c->remote.addr,
			      &other);
	/* A client's address does not name a host: several hosts behind
	 * one NAT share it. Only the client checks that the server it
	 * reached at an address is the one it met there (as ssh does). */
	if (v == TRUST_MISMATCH && !conn_is_client(c))
		v = TRUST_NEW;
	if ((v == TRUST_MISMATCH || v == TRUST_NOT_PINNED) && rot_old &&
	    (v != TRUST_MISMATCH || !other ||
	     !sodium_memcmp(other->pk, rot_old, EDP_HOST_KEY_LEN)) &&
	    rotated(d, c, pk, rot_old))
		v = known_hosts_judge(d->known_hosts, pol, pk,
				      &c->remote.addr, &other);
	switch (v) {
	case TRUST_KNOWN:
	case TRUST_NEW:
		if (known_hosts_seen(d->known_hosts, pk, &c->remote.addr,
				     (int64_t)time(NULL)))
			log_warnx("known hosts full of pinned keys: %s not "
				  "recorded", "a new host");
		return true;
	case TRUST_MISMATCH:
		log_mismatch(c, pk, other);
		c->unmanaged = UNMANAGED_HOST_KEY_MISMATCH;
		d->edp.hs_mismatch++;
		return false;
	case TRUST_NOT_PINNED:
	default:
		log_mismatch(c, pk, NULL);
		c->unmanaged = UNMANAGED_HOST_NOT_PINNED;
		d->edp.hs_not_pinned++;
		return false;
	}
}

/* The handshake is over: the host pair's secret, kept for later ones. */
static void finish(struct rackd *d, struct conn *c)
{
	struct hs_state *hs = c->edp->hs;
	uint8_t h[NOISE_HASH_LEN], k1[NOISE_KEY_LEN], k2[NOISE_KEY_LEN];
	uint8_t secret[HOSTPAIR_KEY_LEN];
	struct host_pair *hp;

	noise_hs_result(&hs->noise, h, k1, k2);
	edp_hostpair_secret(h, k1, k2, secret);
	hp = host_pairs_add(&d->host_pairs, c->edp->peer_host, secret,
			    (int64_t)time(NULL));
	c->edp->hp_id = hp->id;
	hs->done = true;
	d->edp.hs_done++;
	sodium_memzero(h, sizeof(h));
	sodium_memzero(k1, sizeof(k1));
	sodium_memzero(k2, sizeof(k2));
	sodium_memzero(secret, sizeof(secret));
}

/*
 * The peer's complete message INDEX (1 to 3): read it, answer it. One
 * that fails to decrypt (a fragment forged or damaged on the way) is
 * dropped, and the handshake waits for the genuine one as if it had
 * never come: starting over instead would make the client's new message
 * 1 meet the server's message 2 made for the old one, which fails again,
 * and so on at the speed of the wire until set-up's deadline.
 */
static enum hostauth_result hs_read(struct rackd *d, struct conn *c,
				    uint8_t index)
{
	struct hs_state *hs = c->edp->hs;
	struct noise_hs before = hs->noise;
	uint8_t payload[HOSTAUTH_ROTATION_LEN];
	const uint8_t *rs, *rot_old = NULL;
	size_t plen;
	int ret = noise_hs_read(&hs->noise, hs->in, hs->in_len, payload,
				sizeof(payload), &plen);

	if (ret)
		hs->noise = before;
	noise_hs_wipe(&before);
	if (ret) {
		d->edp.hs_bad++;
		return HOSTAUTH_MORE;
	}
	rs = noise_hs_remote_static(&hs->noise);
	/* A rotation proof: for our ephemeral key in message 2, for our
	 * static key in message 3. A wrong one is counted and ignored. */
	if (rs && plen == HOSTAUTH_ROTATION_LEN) {
		const uint8_t *proof = payload + EDP_HOST_KEY_LEN;
		int err = index == 2
			? noise_hs_rotation_verify(&hs->noise, payload, rs, proof)
			: edp_rotation_verify(d->hostkey.sk, payload, rs, proof);

		if (!err)
			rot_old = payload;
		else
			d->edp.hs_bad_rotation++;
	}
	if (rs && !c->edp->have_peer_host) {
		memcpy(c->edp->peer_host, rs, NOISE_KEY_LEN);
		c->edp->have_peer_host = true;
		if (!trusted(d, c, rs, rot_old))
			return HOSTAUTH_REFUSED;
	}
	if (conn_is_client(c)) {
		/* Message 2: ours is the last. */
		if (hs_write(d, c, 3)) {
			d->edp.hs_bad++;
			return HOSTAUTH_FAILED;
		}
		finish(d, c);
		return HOSTAUTH_DONE;
	}
	if (index == 1) {
		hs->expect = 3;
		return hs_write(d, c, 2) ? HOSTAUTH_FAILED : HOSTAUTH_ANSWERED;
	}
	finish(d, c);
	return HOSTAUTH_DONE;
}

enum hostauth_result hostauth_input(struct rackd *d, struct conn *c,
				    const struct edp_msg *m)
{
	struct hs_state *hs = c->edp->hs;
	unsigned frags = ((unsigned)m->hs_len + EDP_HS_FRAG - 1) / EDP_HS_FRAG;
	size_t n;

	d->edp.hs_received++;
	if (!m->hs_len || frags > EDP_HS_MAX_FRAGS || m->hs_frag >= frags ||
	    (m->hs_len != noise_xx_msg_len(m->hs_msg - 1, 0) &&
	     (m->hs_msg == 1 || m->hs_len != noise_xx_msg_len(
			m->hs_msg - 1, HOSTAUTH_ROTATION_LEN)))) {
		d->edp.hs_bad++;
		return HOSTAUTH_MORE;
	}
	if (!hs) {
		/* Only the server begins on the peer's message 1. */
		if (conn_is_client(c) || m->hs_msg != 1) {
			d->edp.unexpected++;
			return HOSTAUTH_MORE;
		}
		hs = hs_new(c, NOISE_RESPONDER, d->hostkey.sk);
		hs->expect = 1;
	}
	if (hs->done || m->hs_msg < hs->expect) {
		/* A copy of a message answered already: the answer may be
		 * what got lost. The server resends message 2 for a whole
		 * message 1 only, once per copy's last fragment. */
		if (!conn_is_client(c) && m->hs_msg == 1 && !hs->done &&
		    m->hs_frag == frags - 1)
			hostauth_resend(d, c);
		d->edp.duplicate++;
		return HOSTAUTH_MORE;
	}
	if (m->hs_msg != hs->expect) {
		d->edp.unexpected++;
		return HOSTAUTH_MORE;
	}
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
		return HOSTAUTH_MORE;
	hs->in_have = 0;
	hs->in_msg = 0;
	return hs_read(d, c, m->hs_msg);
}
