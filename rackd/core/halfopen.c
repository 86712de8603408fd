// SPDX-License-Identifier: GPL-2.0-only
#include "halfopen.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* A fixed table: there are never more prefixes than half-open entries,
 * which are bounded (max_half_open). */
#define HALFOPEN_BUCKETS 1024

struct halfopen_prefix {
	struct addr prefix;
	unsigned count;
	struct halfopen_prefix *next;
};

void halfopen_init(struct halfopen *h)
{
	memset(h, 0, sizeof(*h));
	h->nbuckets = HALFOPEN_BUCKETS;
	h->buckets = xcalloc(h->nbuckets, sizeof(*h->buckets));
	randombytes_buf(h->key, sizeof(h->key));
}

void halfopen_free(struct halfopen *h)
{
	for (size_t i = 0; h->buckets && i < h->nbuckets; i++) {
		while (h->buckets[i]) {
			struct halfopen_prefix *p = h->buckets[i];

			h->buckets[i] = p->next;
			free(p);
		}
	}
	free(h->buckets);
	memset(h, 0, sizeof(*h));
}

/* ADDR cut to its prefix length, the rest zero. */
static struct addr prefix_of(const struct addr *addr)
{
	struct addr p = { .family = addr->family };
	unsigned bits = addr->family == AF_INET ? HALFOPEN_V4_PREFIX
						: HALFOPEN_V6_PREFIX;

	memcpy(p.bytes, addr->bytes, bits / 8);
	return p;
}

/* Keyed, so that a flood cannot aim at one bucket. */
static struct halfopen_prefix **bucket(const struct halfopen *h,
				       const struct addr *prefix)
{
	uint8_t k[17];
	uint64_t hash;

	k[0] = prefix->family;
	memcpy(k + 1, prefix->bytes, 16);
	crypto_shorthash((unsigned char *)&hash, k, sizeof(k), h->key);
	return &h->buckets[hash & (h->nbuckets - 1)];
}

static struct halfopen_prefix **find(const struct halfopen *h,
				     const struct addr *prefix)
{
	struct halfopen_prefix **pp = bucket(h, prefix);

	while (*pp && !addr_equal(&(*pp)->prefix, prefix))
		pp = &(*pp)->next;
	return pp;
}

unsigned halfopen_prefix_count(const struct halfopen *h,
			       const struct addr *addr)
{
	struct addr prefix = prefix_of(addr);
	struct halfopen_prefix **pp = find(h, &prefix);

	return *pp ? (*pp)->count : 0;
}

struct halfopen_link *halfopen_victim(const struct halfopen *h,
				      const struct addr *src, unsigned max,
				      unsigned per_prefix)
{
	struct addr prefix = prefix_of(src);

	if (halfopen_prefix_count(h, src) >= per_prefix) {
		/* The oldest from the same prefix: a flood from one network
		 * only ever pushes out its own entries. */
		for (struct halfopen_link *l = h->head; l; l = l->next) {
			struct addr lp = prefix_of(&l->src);

			if (addr_equal(&lp, &prefix))
				return l;
		}
	}
	return h->count >= max ? h->head : NULL;
}

void halfopen_add(struct halfopen *h, struct halfopen_link *l,
		  const struct addr *src)
{
	struct addr prefix = prefix_of(src);
	struct halfopen_prefix **pp = find(h, &prefix);

	if (l->linked)
		return;
	if (!*pp) {
		*pp = xcalloc(1, sizeof(**pp));
		(*pp)->prefix = prefix;
	}
	(*pp)->count++;
	l->linked = true;
	l->src = *src;
	l->next = NULL;
	l->prev = h->tail;
	if (h->tail)
		h->tail->next = l;
	else
		h->head = l;
	h->tail = l;
	h->count++;
}

void halfopen_remove(struct halfopen *h, struct halfopen_link *l)
{
	struct addr prefix;
	struct halfopen_prefix **pp, *p;

	if (!l->linked)
		return;
	l->linked = false;
	if (l->prev)
		l->prev->next = l->next;
	else
		h->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		h->tail = l->prev;
	l->prev = l->next = NULL;
	h->count--;
	prefix = prefix_of(&l->src);
	pp = find(h, &prefix);
	p = *pp;
	if (p && --p->count == 0) {
		*pp = p->next;
		free(p);
	}
}
