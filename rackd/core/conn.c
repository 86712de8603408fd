// SPDX-License-Identifier: GPL-2.0-only
#include "conn.h"

#include <sodium.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sockdiag.h"

#define CONN_MIN_BUCKETS 1024

static size_t conn_bucket(const struct conn_table *tbl,
			  const struct endpoint *local,
			  const struct endpoint *remote)
{
	uint8_t key[2 * (16 + 2) + 1];
	uint64_t h;

	/* Serialise explicitly: struct padding must not reach the hash. */
	key[0] = local->addr.family;
	memcpy(key + 1, local->addr.bytes, 16);
	memcpy(key + 17, &local->port, 2);
	memcpy(key + 19, remote->addr.bytes, 16);
	memcpy(key + 35, &remote->port, 2);
	crypto_shorthash((unsigned char *)&h, key, sizeof(key), tbl->hash_key);
	return (size_t)(h & (tbl->nbuckets - 1));
}

static size_t conn_kbucket(const struct conn_table *tbl, uint64_t edp_id)
{
	uint64_t h;

	crypto_shorthash((unsigned char *)&h, (const unsigned char *)&edp_id,
			 sizeof(edp_id), tbl->hash_key);
	return (size_t)(h & (tbl->nbuckets - 1));
}

void conn_table_init(struct conn_table *tbl)
{
	memset(tbl, 0, sizeof(*tbl));
	tbl->nbuckets = CONN_MIN_BUCKETS;
	tbl->buckets = xcalloc(tbl->nbuckets, sizeof(*tbl->buckets));
	tbl->kbuckets = xcalloc(tbl->nbuckets, sizeof(*tbl->kbuckets));
	tbl->wbuckets = xcalloc(tbl->nbuckets, sizeof(*tbl->wbuckets));
	tbl->next_id = 1;
	randombytes_buf(tbl->hash_key, sizeof(tbl->hash_key));
	halfopen_init(&tbl->halfopen);
}

void conn_table_free(struct conn_table *tbl, void (*cb)(struct conn *))
{
	struct conn *c = tbl->head;

	while (c) {
		struct conn *next = c->next;

		if (cb)
			cb(c);
		free(c);
		c = next;
	}
	free(tbl->buckets);
	free(tbl->kbuckets);
	free(tbl->wbuckets);
	halfopen_free(&tbl->halfopen);
	memset(tbl, 0, sizeof(*tbl));
}

struct conn *conn_lookup(const struct conn_table *tbl,
			 const struct endpoint *local,
			 const struct endpoint *remote)
{
	struct conn *c = tbl->buckets[conn_bucket(tbl, local, remote)];

	for (; c; c = c->hnext)
		if (endpoint_equal(&c->local, local) &&
		    endpoint_equal(&c->remote, remote))
			return c;
	return NULL;
}

static void wire_link(struct conn_table *tbl, struct conn *c)
{
	size_t b = conn_bucket(tbl, &c->wire_local, &c->wire_remote);

	c->wnext = tbl->wbuckets[b];
	tbl->wbuckets[b] = c;
}

static void wire_unlink(struct conn_table *tbl, struct conn *c)
{
	struct conn **pp = &tbl->wbuckets[conn_bucket(tbl, &c->wire_local,
						      &c->wire_remote)];

	while (*pp && *pp != c)
		pp = &(*pp)->wnext;
	if (*pp)
		*pp = c->wnext;
	c->wnext = NULL;
}

struct conn *conn_lookup_wire(const struct conn_table *tbl,
			      const struct endpoint *local,
			      const struct endpoint *remote)
{
	struct conn *c = tbl->wbuckets[conn_bucket(tbl, local, remote)];

	for (; c; c = c->wnext)
		if (endpoint_equal(&c->wire_local, local) &&
		    endpoint_equal(&c->wire_remote, remote))
			return c;
	return NULL;
}

void conn_set_wire(struct conn_table *tbl, struct conn *c,
		   const struct endpoint *local, const struct endpoint *remote)
{
	wire_unlink(tbl, c);
	if (local)
		c->wire_local = *local;
	if (remote)
		c->wire_remote = *remote;
	wire_link(tbl, c);
}

struct conn *conn_find_id(const struct conn_table *tbl, uint64_t id)
{
	/* Only the control socket looks up by id: a scan is enough. */
	for (struct conn *c = tbl->head; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

void conn_index_edp(struct conn_table *tbl, struct conn *c, uint64_t edp_id)
{
	size_t b = conn_kbucket(tbl, edp_id);

	c->edp_id = edp_id;
	c->knext = tbl->kbuckets[b];
	tbl->kbuckets[b] = c;
}

struct conn *conn_find_edp(const struct conn_table *tbl, uint64_t edp_id)
{
	struct conn *c = tbl->kbuckets[conn_kbucket(tbl, edp_id)];

	for (; c; c = c->knext)
		if (c->edp_id == edp_id)
			return c;
	return NULL;
}

void conn_unindex_edp(struct conn_table *tbl, struct conn *c)
{
	struct conn **pp;

	if (!c->edp_id)
		return;
	pp = &tbl->kbuckets[conn_kbucket(tbl, c->edp_id)];
	while (*pp && *pp != c)
		pp = &(*pp)->knext;
	if (*pp)
		*pp = c->knext;
	c->edp_id = 0;
}

bool conn_managed(const struct conn *c)
{
	return c->peer == PEER_RACKS && c->edp &&
	       (c->state == CONN_CONNECTED || c->state == CONN_SUSPENDED);
}

bool conn_spliced(const struct conn *c)
{
	return !endpoint_equal(&c->wire_local, &c->local) ||
	       !endpoint_equal(&c->wire_remote, &c->remote);
}

static void conn_grow(struct conn_table *tbl)
{
	size_t n = tbl->nbuckets * 2;
	struct conn **old = tbl->buckets, **oldk = tbl->kbuckets;
	struct conn **oldw = tbl->wbuckets;
	size_t oldn = tbl->nbuckets;

	tbl->buckets = xcalloc(n, sizeof(*tbl->buckets));
	tbl->kbuckets = xcalloc(n, sizeof(*tbl->kbuckets));
	tbl->wbuckets = xcalloc(n, sizeof(*tbl->wbuckets));
	tbl->nbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		for (struct conn *c = oldw[i], *next; c; c = next) {
			next = c->wnext;
			wire_link(tbl, c);
		}
	}
	free(oldw);
	for (size_t i = 0; i < oldn; i++) {
		for (struct conn *c = oldk[i], *next; c; c = next) {
			next = c->knext;
			conn_index_edp(tbl, c, c->edp_id);
		}
	}
	free(oldk);
	for (size_t i = 0; i < oldn; i++) {
		struct conn *c = old[i];

		while (c) {
			struct conn *next = c->hnext;
			size_t b = conn_bucket(tbl, &c->local, &c->remote);

			c->hnext = tbl->buckets[b];
			tbl->buckets[b] = c;
			c = next;
		}
	}
	free(old);
}

struct conn *conn_insert(struct conn_table *tbl, const struct endpoint *local,
			 const struct endpoint *remote, enum conn_dir dir)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	size_t b;

	if (tbl->count + 1 > tbl->nbuckets)
		conn_grow(tbl);
	c->id = tbl->next_id++;
	c->table = tbl;
	c->local = c->wire_local = *local;
	c->remote = c->wire_remote = *remote;
	c->confirmed = true;
	c->dir = dir;
	c->state = CONN_HANDSHAKE;
	c->created = time(NULL);
	timer_init(&c->expiry, NULL, c);

	b = conn_bucket(tbl, local, remote);
	c->hnext = tbl->buckets[b];
	tbl->buckets[b] = c;
	wire_link(tbl, c);
	c->prev = tbl->tail;
	if (tbl->tail)
		tbl->tail->next = c;
	else
		tbl->head = c;
	tbl->tail = c;
	tbl->count++;
	return c;
}

void conn_remove(struct conn_table *tbl, struct conn *c)
{
	conn_unindex_edp(tbl, c);
	wire_unlink(tbl, c);
	halfopen_remove(&tbl->halfopen, &c->ho);
	struct conn **pp = &tbl->buckets[conn_bucket(tbl, &c->local,
						     &c->remote)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	if (c->prev)
		c->prev->next = c->next;
	else
		tbl->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		tbl->tail = c->prev;
	tbl->count--;
	free(c);
}

void conn_halfopen_add(struct conn_table *tbl, struct conn *c)
{
	halfopen_add(&tbl->halfopen, &c->ho, &c->remote.addr);
}

void conn_halfopen_proven(struct conn_table *tbl, struct conn *c)
{
	halfopen_remove(&tbl->halfopen, &c->ho);
}

struct conn *conn_halfopen_victim(const struct conn_table *tbl,
				  const struct addr *src, unsigned max,
				  unsigned per_prefix)
{
	struct halfopen_link *l = halfopen_victim(&tbl->halfopen, src, max,
						  per_prefix);

	return l ? (struct conn *)((char *)l - offsetof(struct conn, ho)) : NULL;
}

void conn_negotiate(const struct conn *c, struct conn_negotiated *n)
{
	const struct conn_end *l = &c->lend, *r = &c->rend;

	memset(n, 0, sizeof(*n));
	n->local_mss = l->has_mss ? l->mss : 536;
	n->remote_mss = r->has_mss ? r->mss : 536;
	/* Window scaling and timestamps need both ends (RFC 7323),
	 * SACK needs both ends' SACK-permitted (RFC 2018). */
	n->wscale = l->has_wscale && r->has_wscale;
	if (n->wscale) {
		/* RFC 7323 2.3: shifts above 14 are treated as 14. */
		n->rcv_wscale = l->wscale > 14 ? 14 : l->wscale;
		n->snd_wscale = r->wscale > 14 ? 14 : r->wscale;
	}
	n->sack = l->sack_permitted && r->sack_permitted;
	n->timestamps = l->has_timestamp && r->has_timestamp;
}

void conn_log(const struct conn *c, const char *what)
{
	char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];

	if (!log_debug_enabled())
		return;
	log_debug("conn %llu %s: %s %s %s", (unsigned long long)c->id, what,
		  endpoint_format(&c->local, l, sizeof(l)),
		  conn_is_client(c) ? "->" : "<-",
		  endpoint_format(&c->remote, r, sizeof(r)));
}

/*
 * Measured on Linux 6.18: the active opener's bytes_acked counts its SYN
 * (1001 after 1000 bytes), the passive opener's does not count its
 * SYN-ACK; bytes_received never counts the peer's SYN. A socket restored
 * with TCP repair starts both counters at zero, from the sequence numbers
 * its checkpoint had (snd_base, rcv_base).
 */
void conn_seq_progress(const struct conn *c, const struct sockdiag_progress *pr,
		       uint32_t *snd_una, uint32_t *rcv_nxt)
{
	if (c->rebased) {
		*snd_una = c->snd_base + (uint32_t)pr->bytes_acked;
		*rcv_nxt = c->rcv_base + (uint32_t)pr->bytes_received;
		return;
	}
	*snd_una = c->lend.isn + (uint32_t)pr->bytes_acked +
		   (c->dir == CONN_OUTGOING ? 0 : 1);
	*rcv_nxt = c->rend.isn + 1 + (uint32_t)pr->bytes_received;
}

const char *conn_migration_name(enum conn_migration m)
{
	switch (m) {
	case MIG_NONE: return "none";
	case MIG_LEAVING: return "leaving";
	case MIG_AWAY: return "peer-away";
	case MIG_ARRIVING: return "arriving";
	}
	return "unknown";
}

const char *conn_state_name(enum conn_state state)
{
	static const char *const names[CONN_STATE_MAX] = {
		[CONN_HANDSHAKE] = "handshake",
		[CONN_SETUP] = "setup",
		[CONN_CONNECTED] = "connected",
		[CONN_SUSPENDED] = "suspended",
		[CONN_RELEASED] = "released",
		[CONN_ADOPTING] = "adopting",
	};

	return (unsigned)state < CONN_STATE_MAX ? names[state] : "?";
}

const char *conn_peer_name(enum conn_peer peer)
{
	static const char *const names[] = { "unknown", "racks", "none" };

	return (unsigned)peer < 3 ? names[peer] : "?";
}

const char *conn_unmanaged_name(enum conn_unmanaged why)
{
	static const char *const names[] = {
		[UNMANAGED_PLAIN_ANSWER] = "plain_answer",
		[UNMANAGED_SYN_RETRANSMITTED] = "syn_retransmitted",
		[UNMANAGED_NO_OPTION_ROOM] = "no_option_room",
		[UNMANAGED_BAD_OFFER] = "bad_offer",
		[UNMANAGED_OFFER_FAILED] = "offer_failed",
		[UNMANAGED_SETUP_TIMEOUT] = "setup_timeout",
		[UNMANAGED_HOST_KEY_MISMATCH] = "host_key_mismatch",
		[UNMANAGED_HOST_NOT_PINNED] = "host_key_not_pinned",
		[UNMANAGED_ANONYMOUS_REFUSED] = "anonymous_refused",
		[UNMANAGED_PREDATES_RACKD] = "predates_rackd",
		[UNMANAGED_HANDSHAKE_UNSEEN] = "handshake_unseen",
		[UNMANAGED_ADOPTION_UNANSWERED] = "adoption_unanswered",
		[UNMANAGED_ADOPTION_FAILED] = "adoption_failed",
		[UNMANAGED_PEER_FORGOT] = "peer_forgot",
	};

	return (unsigned)why < sizeof(names) / sizeof(names[0]) ?
		names[why] : NULL;
}

const char *conn_adoption_name(enum conn_adoption a)
{
	static const char *const names[ADOPTION_MAX] = {
		[ADOPTION_NONE] = "none", [ADOPTION_LEARNING] = "learning",
		[ADOPTION_OFFERED] = "offered", [ADOPTION_SETUP] = "setup",
		[ADOPTION_DONE] = "adopted",
		[ADOPTION_UNANSWERED] = "unanswered",
		[ADOPTION_FAILED] = "failed",
	};

	return (unsigned)a < ADOPTION_MAX ? names[a] : "?";
}

const char *conn_dir_name(enum conn_dir dir)
{
	return dir == CONN_OUTGOING ? "outgoing" : "incoming";
}

const char *conn_tcp_state_name(uint8_t tcp_state)
{
	/* Kernel TCP states (include/net/tcp_states.h). */
	static const char *const names[] = {
		"unknown", "established", "syn-sent", "syn-recv",
		"fin-wait1", "fin-wait2", "time-wait", "close",
		"close-wait", "last-ack", "listen", "closing",
		"new-syn-recv", "bound-inactive",
	};

	return tcp_state < sizeof(names) / sizeof(names[0]) ? names[tcp_state]
							   : "unknown";
}

void conn_setup_nonces(const struct conn *c, uint8_t nc[8], uint8_t ns[8])
{
	bool client = c->dir == CONN_OUTGOING;

	memset(nc, 0, 8);
	memset(ns, 0, 8);
	if (c->adoption != ADOPTION_NONE)
		return;
	memcpy(nc, client ? c->nonce_local : c->nonce_remote, 8);
	memcpy(ns, client ? c->nonce_remote : c->nonce_local, 8);
}
