// SPDX-License-Identifier: GPL-2.0-only
/*
 * The known-hosts table (rules in knownhosts.h). Entries are found by key
 * and by address through two hash tables keyed with a random SipHash
 * key, so that peers choosing their keys cannot choose collisions; they
 * are listed in the order they came. Eviction looks at every entry, but
 * only when the table is full and a new key arrives.
 */
#include "knownhosts.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define KH_MIN_BUCKETS 64

struct kh_entry {
	struct known_host h;		/* first: &e->h converts back */
	struct kh_entry *key_next;	/* hash chain by key */
	struct kh_entry *prev, *next;	/* every entry, oldest first */
};

/* One of an entry's last_addrs, in the address index. */
struct kh_addr {
	struct addr a;
	struct kh_entry *owner;
	struct kh_addr *next;
};

struct known_hosts {
	size_t max, count;
	struct kh_entry *head, *tail;
	struct kh_entry **by_key;
	struct kh_addr **by_addr;
	size_t nbuckets;		/* a power of two */
	uint8_t hash_key[crypto_shorthash_KEYBYTES];
	void (*notify)(void *arg, bool seen);
	void *notify_arg;
};

_Static_assert(KNOWN_HOST_KEY_LEN == 32, "X25519 keys");

static struct kh_entry *entry_of(const struct known_host *h)
{
	return (struct kh_entry *)h;
}

static size_t hash(const struct known_hosts *kh, const void *p, size_t len)
{
	uint8_t out[crypto_shorthash_BYTES];
	uint64_t v;

	crypto_shorthash(out, p, len, kh->hash_key);
	memcpy(&v, out, sizeof(v));
	return (size_t)v & (kh->nbuckets - 1);
}

static size_t key_bucket(const struct known_hosts *kh, const uint8_t *pk)
{
	return hash(kh, pk, KNOWN_HOST_KEY_LEN);
}

/* The family and the address's own bytes, nothing else of the struct. */
static size_t addr_bucket(const struct known_hosts *kh, const struct addr *a)
{
	uint8_t buf[17];

	buf[0] = a->family;
	memcpy(buf + 1, a->bytes, addr_len(a));
	return hash(kh, buf, 1 + addr_len(a));
}

struct known_hosts *known_hosts_new(size_t max_entries)
{
	struct known_hosts *kh = xcalloc(1, sizeof(*kh));

	kh->max = max_entries ? max_entries : 1;
	kh->nbuckets = KH_MIN_BUCKETS;
	kh->by_key = xcalloc(kh->nbuckets, sizeof(*kh->by_key));
	kh->by_addr = xcalloc(kh->nbuckets, sizeof(*kh->by_addr));
	crypto_shorthash_keygen(kh->hash_key);
	return kh;
}

void known_hosts_free(struct known_hosts *kh)
{
	if (!kh)
		return;
	for (size_t i = 0; i < kh->nbuckets; i++)
		for (struct kh_addr *n = kh->by_addr[i], *next; n; n = next) {
			next = n->next;
			free(n);
		}
	for (struct kh_entry *e = kh->head, *next; e; e = next) {
		next = e->next;
		free(e);
	}
	free(kh->by_key);
	free(kh->by_addr);
	sodium_memzero(kh->hash_key, sizeof(kh->hash_key));
	free(kh);
}

void known_hosts_set_notify(struct known_hosts *kh,
			    void (*fn)(void *arg, bool seen), void *arg)
{
	kh->notify = fn;
	kh->notify_arg = arg;
}

static void changed(struct known_hosts *kh, bool seen)
{
	if (kh->notify)
		kh->notify(kh->notify_arg, seen);
}

size_t known_hosts_count(const struct known_hosts *kh)
{
	return kh->count;
}

size_t known_hosts_max(const struct known_hosts *kh)
{
	return kh->max;
}

const struct known_host *known_hosts_next(const struct known_hosts *kh,
					  const struct known_host *prev)
{
	const struct kh_entry *e = prev ? entry_of(prev)->next : kh->head;

	return e ? &e->h : NULL;
}

static struct kh_entry *find_key(const struct known_hosts *kh,
				 const uint8_t *pk)
{
	for (struct kh_entry *e = kh->by_key[key_bucket(kh, pk)]; e;
	     e = e->key_next)
		if (!memcmp(e->h.pk, pk, KNOWN_HOST_KEY_LEN))
			return e;
	return NULL;
}

static struct kh_addr **find_addr(const struct known_hosts *kh,
				  const struct addr *a)
{
	struct kh_addr **pp = &kh->by_addr[addr_bucket(kh, a)];

	while (*pp && !addr_equal(&(*pp)->a, a))
		pp = &(*pp)->next;
	return pp;
}

const struct known_host *known_hosts_by_key(const struct known_hosts *kh,
					    const uint8_t pk[32])
{
	struct kh_entry *e = find_key(kh, pk);

	return e ? &e->h : NULL;
}

const struct known_host *known_hosts_by_addr(const struct known_hosts *kh,
					     const struct addr *addr)
{
	struct kh_addr *n = *find_addr(kh, addr);

	return n ? &n->owner->h : NULL;
}

/* Twice the buckets once there are more entries than buckets. */
static void grow(struct known_hosts *kh)
{
	struct kh_entry **old_key = kh->by_key;
	struct kh_addr **old_addr = kh->by_addr;
	size_t old_n = kh->nbuckets;

	if (kh->count < kh->nbuckets || kh->nbuckets > SIZE_MAX / 4)
		return;
	kh->nbuckets *= 2;
	kh->by_key = xcalloc(kh->nbuckets, sizeof(*kh->by_key));
	kh->by_addr = xcalloc(kh->nbuckets, sizeof(*kh->by_addr));
	for (size_t i = 0; i < old_n; i++) {
		for (struct kh_entry *e = old_key[i], *next; e; e = next) {
			size_t b = key_bucket(kh, e->h.pk);

			next = e->key_next;
			e->key_next = kh->by_key[b];
			kh->by_key[b] = e;
		}
		for (struct kh_addr *n = old_addr[i], *next; n; n = next) {
			size_t b = addr_bucket(kh, &n->a);

			next = n->next;
			n->next = kh->by_addr[b];
			kh->by_addr[b] = n;
		}
	}
	free(old_key);
	free(old_addr);
}

static void index_addr(struct known_hosts *kh, struct kh_entry *e,
		       const struct addr *a)
{
	struct kh_addr *n = xcalloc(1, sizeof(*n));
	size_t b = addr_bucket(kh, a);

	n->a = *a;
	n->owner = e;
	n->next = kh->by_addr[b];
	kh->by_addr[b] = n;
}

static void unindex_addr(struct known_hosts *kh, const struct addr *a)
{
	struct kh_addr **pp = find_addr(kh, a), *n = *pp;

	if (n) {
		*pp = n->next;
		free(n);
	}
}

/* Take A out of E's last_addrs (not out of the index). */
static void drop_addr(struct kh_entry *e, const struct addr *a)
{
	struct known_host *h = &e->h;

	for (size_t i = 0; i < h->naddrs; i++) {
		if (!addr_equal(&h->last_addrs[i], a))
			continue;
		memmove(&h->last_addrs[i], &h->last_addrs[i + 1],
			(h->naddrs - i - 1) * sizeof(h->last_addrs[0]));
		h->naddrs--;
		memset(&h->last_addrs[h->naddrs], 0, sizeof(h->last_addrs[0]));
		return;
	}
}

/* A, its unused bytes zero: the form kept and hashed. */
static struct addr clean_addr(const struct addr *a)
{
	struct addr c = { .family = a->family };

	memcpy(c.bytes, a->bytes, addr_len(a));
	return c;
}

/* A becomes the latest of E's addresses, and no other entry's. */
static void note_addr(struct known_hosts *kh, struct kh_entry *e,
		      const struct addr *addr)
{
	struct addr a = clean_addr(addr);
	struct kh_addr *n = *find_addr(kh, &a);
	struct known_host *h = &e->h;

	if (n && n->owner != e) {
		drop_addr(n->owner, &a);
		unindex_addr(kh, &a);
		n = NULL;
	}
	if (n) {
		drop_addr(e, &a);	/* moved to the front below */
	} else {
		if (h->naddrs == KNOWN_HOST_ADDRS)
			unindex_addr(kh, &h->last_addrs[--h->naddrs]);
		index_addr(kh, e, &a);
	}
	memmove(&h->last_addrs[1], &h->last_addrs[0],
		h->naddrs * sizeof(h->last_addrs[0]));
	h->last_addrs[0] = a;
	h->naddrs++;
}

static void unlink_entry(struct known_hosts *kh, struct kh_entry *e)
{
	struct kh_entry **pp = &kh->by_key[key_bucket(kh, e->h.pk)];

	while (*pp != e)
		pp = &(*pp)->key_next;
	*pp = e->key_next;
	for (size_t i = 0; i < e->h.naddrs; i++)
		unindex_addr(kh, &e->h.last_addrs[i]);
	if (e->prev)
		e->prev->next = e->next;
	else
		kh->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		kh->tail = e->prev;
	kh->count--;
	free(e);
}

/* Room for one more entry: an unpinned one evicted if the table is full. */
static int make_room(struct known_hosts *kh)
{
	struct kh_entry *victim = NULL;

	if (kh->count < kh->max)
		return 0;
	for (struct kh_entry *e = kh->head; e; e = e->next)
		if (!e->h.pinned &&
		    (!victim || e->h.last_seen < victim->h.last_seen))
			victim = e;
	if (!victim)
		return -ENOSPC;
	unlink_entry(kh, victim);
	return 0;
}

/* A new entry for PK at the end of the list (the caller made room). */
static struct kh_entry *insert(struct known_hosts *kh, const uint8_t *pk)
{
	struct kh_entry *e = xcalloc(1, sizeof(*e));
	size_t b;

	kh->count++;
	grow(kh);
	memcpy(e->h.pk, pk, KNOWN_HOST_KEY_LEN);
	b = key_bucket(kh, pk);
	e->key_next = kh->by_key[b];
	kh->by_key[b] = e;
	e->prev = kh->tail;
	if (kh->tail)
		kh->tail->next = e;
	else
		kh->head = e;
	kh->tail = e;
	return e;
}

bool known_hosts_name_valid(const char *name)
{
	size_t n = 0;

	for (; name[n]; n++)
		if (name[n] <= ' ' || name[n] > '~')
			return false;
	return n < KNOWN_HOST_NAME_MAX;
}

enum trust_verdict known_hosts_judge(const struct known_hosts *kh,
				     enum trust_policy policy,
				     const uint8_t pk[32],
				     const struct addr *addr,
				     const struct known_host **other)
{
	const struct kh_entry *e = find_key(kh, pk);
	const struct known_host *there = NULL;
	enum trust_verdict v;

	if (addr) {
		struct addr a = clean_addr(addr);
		struct kh_addr *n = *find_addr(kh, &a);

		if (n && n->owner != e)
			there = &n->owner->h;
	}
	switch (policy) {
	case TRUST_ANONYMOUS:
		v = TRUST_KNOWN;
		break;
	case TRUST_PINNED:
		v = e && e->h.pinned ? TRUST_KNOWN : TRUST_NOT_PINNED;
		break;
	case TRUST_ACCEPT_NEW:
	default:
		v = e ? TRUST_KNOWN : there ? TRUST_MISMATCH : TRUST_NEW;
		break;
	}
	if (other)
		*other = v == TRUST_KNOWN ? NULL : there;
	return v;
}

int known_hosts_seen(struct known_hosts *kh, const uint8_t pk[32],
		     const struct addr *addr, int64_t now)
{
	struct kh_entry *e = find_key(kh, pk);

	if (!e) {
		int ret = make_room(kh);

		if (ret)
			return ret;
		e = insert(kh, pk);
	}
	if (!e->h.first_seen)
		e->h.first_seen = now;
	e->h.last_seen = now;
	if (addr)
		note_addr(kh, e, addr);
	changed(kh, true);
	return 0;
}

int known_hosts_add(struct known_hosts *kh, const uint8_t pk[32],
		    const char *name, bool pinned)
{
	struct kh_entry *e;
	int ret;

	if (name && !known_hosts_name_valid(name))
		return -EINVAL;
	if (find_key(kh, pk))
		return -EEXIST;
	ret = make_room(kh);
	if (ret)
		return ret;
	e = insert(kh, pk);
	e->h.pinned = pinned;
	if (name)
		strcpy(e->h.name, name);
	changed(kh, false);
	return 0;
}

int known_hosts_remove(struct known_hosts *kh, const uint8_t pk[32])
{
	struct kh_entry *e = find_key(kh, pk);

	if (!e)
		return -ENOENT;
	unlink_entry(kh, e);
	changed(kh, false);
	return 0;
}

int known_hosts_pin(struct known_hosts *kh, const uint8_t pk[32],
		    bool pinned)
{
	struct kh_entry *e = find_key(kh, pk);

	if (!e)
		return -ENOENT;
	if (e->h.pinned != pinned) {
		e->h.pinned = pinned;
		changed(kh, false);
	}
	return 0;
}

int known_hosts_set_name(struct known_hosts *kh, const uint8_t pk[32],
			 const char *name)
{
	struct kh_entry *e = find_key(kh, pk);

	if (!e)
		return -ENOENT;
	if (!name)
		name = "";
	if (!known_hosts_name_valid(name))
		return -EINVAL;
	if (strcmp(e->h.name, name)) {
		strcpy(e->h.name, name);
		changed(kh, false);
	}
	return 0;
}

int known_hosts_restore(struct known_hosts *kh, const struct known_host *h)
{
	struct addr a[KNOWN_HOST_ADDRS];
	struct kh_entry *e;

	if (h->naddrs > KNOWN_HOST_ADDRS || strnlen(h->name, sizeof(h->name))
	    == sizeof(h->name) || !known_hosts_name_valid(h->name))
		return -EINVAL;
	if (find_key(kh, h->pk))
		return -EEXIST;
	for (size_t i = 0; i < h->naddrs; i++) {
		a[i] = clean_addr(&h->last_addrs[i]);
		if (*find_addr(kh, &a[i]))
			return -EADDRINUSE;
		for (size_t j = 0; j < i; j++)
			if (addr_equal(&a[i], &a[j]))
				return -EINVAL;
	}
	if (kh->count >= kh->max)
		return -ENOSPC;
	e = insert(kh, h->pk);
	e->h = *h;
	memcpy(e->h.last_addrs, a, h->naddrs * sizeof(a[0]));
	for (size_t i = 0; i < h->naddrs; i++)
		index_addr(kh, e, &a[i]);
	return 0;
}

const char *trust_verdict_name(enum trust_verdict v)
{
	static const char *const names[] = {
		"KNOWN", "NEW", "MISMATCH", "NOT_PINNED",
	};

	return (size_t)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
