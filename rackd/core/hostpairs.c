// SPDX-License-Identifier: GPL-2.0-only
#include "hostpairs.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "hostpair.h"
#include "log.h"

void host_pairs_init(struct host_pairs *hp)
{
	memset(hp, 0, sizeof(*hp));
}

void host_pairs_set_notify(struct host_pairs *hp, host_pairs_notify_fn fn,
			   void *arg)
{
	hp->notify = fn;
	hp->notify_arg = arg;
}

static void notify(const struct host_pairs *hp, const struct host_pair *h,
		   bool present)
{
	if (hp->notify)
		hp->notify(hp->notify_arg, h, h->have_addr ? &h->peer_addr :
			   NULL, present);
}

static void drop(struct host_pairs *hp, struct host_pair **link)
{
	struct host_pair *h = *link;

	*link = h->next;
	notify(hp, h, false);
	sodium_memzero(h, sizeof(*h));
	free(h);
	hp->count--;
	hp->dirty = true;
}

void host_pairs_count_use(struct host_pairs *hp, struct host_pair *h)
{
	if (++h->conns % HOSTPAIR_COUNT_SAVE_EVERY == 0)
		hp->dirty = true;
	else
		hp->counts_unsaved = true;
	/* Used up now, perhaps: offered no more. */
	notify(hp, h, true);
}

void host_pairs_retire(struct host_pairs *hp, struct host_pair *h)
{
	if (h->retired)
		return;
	h->retired = true;
	hp->dirty = true;
	notify(hp, h, true);
}

void host_pairs_clear(struct host_pairs *hp)
{
	while (hp->head)
		drop(hp, &hp->head);
}

struct host_pair *host_pairs_by_id(const struct host_pairs *hp, uint32_t id)
{
	for (struct host_pair *h = hp->head; h && id; h = h->next)
		if (h->id == id)
			return h;
	return NULL;
}

struct host_pair *host_pairs_at(const struct host_pairs *hp,
				const struct addr *addr)
{
	for (struct host_pair *h = hp->head; h; h = h->next)
		if (h->have_addr && !h->retired &&
		    addr_equal(&h->peer_addr, addr))
			return h;
	return NULL;
}

static struct host_pair_pending *pending_of(struct host_pairs *hp,
					    const struct addr *addr)
{
	for (size_t i = 0; i < HOSTPAIR_PENDING; i++)
		if (hp->pending[i].users &&
		    addr_equal(&hp->pending[i].addr, addr))
			return &hp->pending[i];
	return NULL;
}

bool host_pairs_pending_add(struct host_pairs *hp, const struct addr *addr,
			    uint64_t now_ms)
{
	struct host_pair_pending *p = pending_of(hp, addr);

	for (size_t i = 0; !p && i < HOSTPAIR_PENDING; i++)
		if (!hp->pending[i].users) {
			p = &hp->pending[i];
			p->addr = *addr;
			p->since_ms = now_ms;
		}
	if (!p)
		return false;
	p->users++;
	return true;
}

void host_pairs_pending_end(struct host_pairs *hp, const struct addr *addr)
{
	struct host_pair_pending *p = pending_of(hp, addr);

	if (p)
		p->users--;
}

bool host_pairs_pending(const struct host_pairs *hp, const struct addr *addr,
			uint64_t now_ms, uint64_t max_age_ms)
{
	const struct host_pair_pending *p =
		pending_of((struct host_pairs *)hp, addr);

	return p && now_ms - p->since_ms < max_age_ms;
}

void host_pairs_confirm(struct host_pairs *hp, struct host_pair *h,
			const struct addr *addr)
{
	bool moved = !h->have_addr || !addr_equal(&h->peer_addr, addr);

	if (moved) {
		/* Where it was offered until now: offered no more. */
		if (h->have_addr && hp->notify) {
			struct addr old = h->peer_addr;

			h->peer_addr = *addr;
			hp->notify(hp->notify_arg, h, &old, true);
		}
		h->peer_addr = *addr;
		h->have_addr = true;
		hp->dirty = true;
	}
	/* Older ones follow it in the list (new ones go to the head). */
	for (struct host_pair *o = h->next; o; o = o->next)
		if (!o->retired &&
		    !sodium_memcmp(o->peer_pk, h->peer_pk, HOSTPAIR_KEY_LEN)) {
			o->retired = true;
			hp->dirty = true;
			notify(hp, o, true);
		}
	if (moved)
		notify(hp, h, true);
}

struct host_pair *host_pairs_of(const struct host_pairs *hp,
				const uint8_t peer_pk[HOSTPAIR_KEY_LEN])
{
	/* Newest first: add() puts new ones at the head. */
	for (struct host_pair *h = hp->head; h; h = h->next)
		if (!sodium_memcmp(h->peer_pk, peer_pk, HOSTPAIR_KEY_LEN))
			return h;
	return NULL;
}

struct host_pair *host_pairs_add(struct host_pairs *hp,
				 const uint8_t peer_pk[HOSTPAIR_KEY_LEN],
				 const uint8_t secret[HOSTPAIR_KEY_LEN],
				 int64_t created)
{
	struct host_pair *h = xcalloc(1, sizeof(*h));
	struct host_pair **link;
	unsigned same = 0;

	memcpy(h->peer_pk, peer_pk, HOSTPAIR_KEY_LEN);
	memcpy(h->secret, secret, HOSTPAIR_KEY_LEN);
	h->id = edp_hostpair_id(secret);
	h->created = created;
	/* The ones it will replace stay, offered until it is confirmed
	 * (host_pairs_confirm), then for the SYNs in flight that named
	 * them: at most HOSTPAIR_PER_PEER in all. */
	for (link = &hp->head; *link;) {
		if (sodium_memcmp((*link)->peer_pk, peer_pk, HOSTPAIR_KEY_LEN) ||
		    ++same < HOSTPAIR_PER_PEER) {
			link = &(*link)->next;
			continue;
		}
		drop(hp, link);
	}
	if (hp->count >= HOSTPAIR_MAX) {
		/* The oldest: the list's tail. */
		for (link = &hp->head; (*link)->next; link = &(*link)->next)
			;
		drop(hp, link);
	}
	h->next = hp->head;
	hp->head = h;
	hp->count++;
	hp->dirty = true;
	notify(hp, h, true);
	return h;
}

struct host_pair *host_pairs_add_loaded(struct host_pairs *hp,
					const struct host_pair *from)
{
	struct host_pair **link = &hp->head, *h;

	if (hp->count >= HOSTPAIR_MAX)
		return NULL;
	while (*link)
		link = &(*link)->next;
	h = xcalloc(1, sizeof(*h));
	*h = *from;
	h->next = NULL;
	*link = h;
	hp->count++;
	notify(hp, h, true);
	return h;
}

void host_pairs_forget(struct host_pairs *hp,
		       const uint8_t peer_pk[HOSTPAIR_KEY_LEN])
{
	for (struct host_pair **link = &hp->head; *link;) {
		if (!sodium_memcmp((*link)->peer_pk, peer_pk, HOSTPAIR_KEY_LEN))
			drop(hp, link);
		else
			link = &(*link)->next;
	}
}

bool host_pair_offer(struct host_pair *h, int64_t now, uint64_t lifetime_s,
		     uint64_t max_conns)
{
	if (h->retired)
		return false;
	if (host_pair_offerable(h, now, lifetime_s, max_conns))
		return true;
	if (!h->renew_started || now - h->renew_started >=
	    HOSTPAIR_RENEW_WAIT_S || now < h->renew_started) {
		h->renew_started = now;
		return false;	/* this one renews it */
	}
	/* Renewing: named still, whatever its count, while young enough;
	 * a renewal that does not come is tried again after a while. */
	return host_pair_offerable(h, now, 2 * lifetime_s, UINT64_MAX);
}

bool host_pair_offerable(const struct host_pair *h, int64_t now,
			 uint64_t lifetime_s, uint64_t max_conns)
{
	return !h->retired && now >= h->created &&
	       (uint64_t)(now - h->created) < lifetime_s &&
	       h->conns < max_conns;
}
