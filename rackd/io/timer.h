/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Timers kept in a binary min-heap ordered by deadline. Timers are
 * embedded in their owners (connections, the sweep), so arming one never
 * allocates except when the heap itself grows.
 */
#ifndef RACKS_TIMER_H
#define RACKS_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIMER_NEVER UINT64_MAX

struct timer;
typedef void (*timer_fn)(struct timer *t, void *arg);

struct timer {
	uint64_t deadline;	/* monotonic milliseconds */
	size_t index;		/* position in the heap, SIZE_MAX if idle */
	timer_fn fn;
	void *arg;
};

struct timer_heap {
	struct timer **items;
	size_t count, cap;
};

void timer_init(struct timer *t, timer_fn fn, void *arg);
bool timer_pending(const struct timer *t);

void timer_heap_init(struct timer_heap *h);
void timer_heap_free(struct timer_heap *h);
/* Arm (or re-arm) T for DEADLINE. */
void timer_heap_arm(struct timer_heap *h, struct timer *t, uint64_t deadline);
void timer_heap_cancel(struct timer_heap *h, struct timer *t);
/* Earliest deadline, or TIMER_NEVER when nothing is armed. */
uint64_t timer_heap_next(const struct timer_heap *h);
/* Run every timer whose deadline is <= NOW; returns how many ran. */
size_t timer_heap_run(struct timer_heap *h, uint64_t now);

#endif
