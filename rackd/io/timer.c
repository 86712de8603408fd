// SPDX-License-Identifier: GPL-2.0-only
#include "timer.h"

#include <stdlib.h>

#include "log.h"

void timer_init(struct timer *t, timer_fn fn, void *arg)
{
	t->deadline = TIMER_NEVER;
	t->index = SIZE_MAX;
	t->fn = fn;
	t->arg = arg;
}

bool timer_pending(const struct timer *t)
{
	return t->index != SIZE_MAX;
}

void timer_heap_init(struct timer_heap *h)
{
	h->items = NULL;
	h->count = h->cap = 0;
}

void timer_heap_free(struct timer_heap *h)
{
	for (size_t i = 0; i < h->count; i++)
		h->items[i]->index = SIZE_MAX;
	free(h->items);
	timer_heap_init(h);
}

static void heap_place(struct timer_heap *h, size_t i, struct timer *t)
{
	h->items[i] = t;
	t->index = i;
}

static void sift_up(struct timer_heap *h, size_t i)
{
	struct timer *t = h->items[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h->items[parent]->deadline <= t->deadline)
			break;
		heap_place(h, i, h->items[parent]);
		i = parent;
	}
	heap_place(h, i, t);
}

static void sift_down(struct timer_heap *h, size_t i)
{
	struct timer *t = h->items[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= h->count)
			break;
		if (child + 1 < h->count &&
		    h->items[child + 1]->deadline < h->items[child]->deadline)
			child++;
		if (t->deadline <= h->items[child]->deadline)
			break;
		heap_place(h, i, h->items[child]);
		i = child;
	}
	heap_place(h, i, t);
}

void timer_heap_cancel(struct timer_heap *h, struct timer *t)
{
	size_t i = t->index;

	if (i == SIZE_MAX)
		return;
	t->index = SIZE_MAX;
	h->count--;
	if (i == h->count)
		return;
	struct timer *moved = h->items[h->count];

	/* The last item fills the hole and moves whichever way it must. */
	heap_place(h, i, moved);
	sift_down(h, i);
	sift_up(h, moved->index);
}

void timer_heap_arm(struct timer_heap *h, struct timer *t, uint64_t deadline)
{
	timer_heap_cancel(h, t);
	if (h->count == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct timer **items = realloc(h->items, cap * sizeof(*items));

		if (!items)
			fatalx(EXIT_NOMEM, "out of memory growing timers");
		h->items = items;
		h->cap = cap;
	}
	t->deadline = deadline;
	heap_place(h, h->count++, t);
	sift_up(h, t->index);
}

uint64_t timer_heap_next(const struct timer_heap *h)
{
	return h->count ? h->items[0]->deadline : TIMER_NEVER;
}

size_t timer_heap_run(struct timer_heap *h, uint64_t now)
{
	size_t ran = 0;

	while (h->count && h->items[0]->deadline <= now) {
		struct timer *t = h->items[0];

		timer_heap_cancel(h, t);
		/* The callback may re-arm t or free its owner. */
		t->fn(t, t->arg);
		ran++;
	}
	return ran;
}
