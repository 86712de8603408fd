// SPDX-License-Identifier: GPL-2.0-only
/*
 * disorder's flows (a chained hash table, both directions in one bucket:
 * nfqbox_bucket) and its held segments (a binary min-heap on due time,
 * then arrival, so that segments due at the same millisecond leave in the
 * order they came).
 */
#include "disorder.h"

#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FLOW_BUCKETS 4096

struct dhold {
	struct dflow *buckets[FLOW_BUCKETS];
	size_t flows, max_flows;
	uint64_t untracked;
	struct dheld *heap;
	size_t n, cap;
};

struct dhold *dhold_new(size_t max_flows)
{
	struct dhold *h = calloc(1, sizeof(*h));

	if (!h)
		err(1, "calloc");
	h->max_flows = max_flows;
	return h;
}

void dhold_free(struct dhold *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < FLOW_BUCKETS; i++) {
		struct dflow *f = h->buckets[i], *next;

		for (; f; f = next) {
			next = f->next;
			free(f);
		}
	}
	for (size_t i = 0; i < h->n; i++)
		free(h->heap[i].pkt);
	free(h->heap);
	free(h);
}

struct dflow *dhold_flow(struct dhold *h, const struct nfqbox_segment *s,
			 int *from)
{
	size_t b = nfqbox_bucket(s, FLOW_BUCKETS);
	struct dflow *f;

	for (f = h->buckets[b]; f; f = f->next)
		if ((*from = nfqbox_tuple_from(&f->t, s)) >= 0)
			return f;
	*from = 0;
	if (h->flows >= h->max_flows) {
		h->untracked++;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		err(1, "calloc");
	nfqbox_tuple_set(&f->t, s);
	f->next = h->buckets[b];
	h->buckets[b] = f;
	h->flows++;
	return f;
}

size_t dhold_flows(const struct dhold *h, uint64_t *untracked)
{
	*untracked = h->untracked;
	return h->flows;
}

static bool before(const struct dheld *a, const struct dheld *b)
{
	if (a->due_ms != b->due_ms)
		return a->due_ms < b->due_ms;
	return a->arrival < b->arrival;
}

static void swap(struct dheld *a, struct dheld *b)
{
	struct dheld t = *a;

	*a = *b;
	*b = t;
}

int dhold_push(struct dhold *h, const struct dheld *e)
{
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct dheld *heap = reallocarray(h->heap, cap, sizeof(*heap));

		if (!heap)
			return -ENOMEM;
		h->heap = heap;
		h->cap = cap;
	}
	i = h->n++;
	h->heap[i] = *e;
	while (i > 0 && before(&h->heap[i], &h->heap[(i - 1) / 2])) {
		swap(&h->heap[i], &h->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

bool dhold_next(const struct dhold *h, uint64_t *due_ms)
{
	if (!h->n)
		return false;
	*due_ms = h->heap[0].due_ms;
	return true;
}

bool dhold_pop(struct dhold *h, uint64_t now_ms, struct dheld *e)
{
	size_t i = 0;

	if (!h->n || h->heap[0].due_ms > now_ms)
		return false;
	*e = h->heap[0];
	h->heap[0] = h->heap[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < h->n && before(&h->heap[l], &h->heap[m]))
			m = l;
		if (r < h->n && before(&h->heap[r], &h->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&h->heap[i], &h->heap[m]);
		i = m;
	}
	return true;
}

size_t dhold_count(const struct dhold *h)
{
	return h->n;
}
