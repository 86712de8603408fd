// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timer min-heap: ordering under random deadlines, cancel and re-arm
 * of arbitrary elements, and callbacks that change the heap while
 * timer_heap_run() is walking it.
 */
#include <stdlib.h>
#include <string.h>

#include "timer.h"
#include "unit.h"

#define MANY 1000

struct item {
	struct timer t;
	int fired;
	bool cancelled;
	struct item *victim;	/* cancelled by this item's callback */
	int rearm_left;		/* re-arms itself this many times */
	uint64_t period;
};

static struct timer_heap heap;
static uint64_t fired_at[4 * MANY];	/* deadlines in firing order */
static size_t nfired;

static void on_fire(struct timer *t, void *arg)
{
	struct item *it = arg;

	if (nfired < sizeof(fired_at) / sizeof(fired_at[0]))
		fired_at[nfired++] = t->deadline;
	it->fired++;
	if (it->victim)
		timer_heap_cancel(&heap, &it->victim->t);
	if (it->rearm_left > 0) {
		it->rearm_left--;
		timer_heap_arm(&heap, t, t->deadline + it->period);
	}
}

static void reset(struct item *items, size_t n)
{
	timer_heap_free(&heap);
	timer_heap_init(&heap);
	nfired = 0;
	memset(items, 0, n * sizeof(*items));
	for (size_t i = 0; i < n; i++)
		timer_init(&items[i].t, on_fire, &items[i]);
}

/* Every slot knows its index and no child is earlier than its parent. */
static bool heap_valid(void)
{
	for (size_t i = 0; i < heap.count; i++) {
		if (heap.items[i]->index != i)
			return false;
		if (i && heap.items[(i - 1) / 2]->deadline >
				 heap.items[i]->deadline)
			return false;
	}
	return true;
}

static uint64_t min_pending(const struct item *items, size_t n)
{
	uint64_t min = TIMER_NEVER;

	for (size_t i = 0; i < n; i++)
		if (timer_pending(&items[i].t) && items[i].t.deadline < min)
			min = items[i].t.deadline;
	return min;
}

static bool fired_in_order(void)
{
	for (size_t i = 1; i < nfired; i++)
		if (fired_at[i - 1] > fired_at[i])
			return false;
	return true;
}

static void arm_random(struct item *items, size_t n, uint32_t range)
{
	for (size_t i = 0; i < n; i++)
		timer_heap_arm(&heap, &items[i].t, 1000 + unit_rand() % range);
}

/* ---- tests --------------------------------------------------------- */

TEST(empty_and_idle)
{
	struct item it;

	reset(&it, 1);
	CHECK(!timer_pending(&it.t));
	CHECK_EQ_INT(it.t.deadline, TIMER_NEVER);
	CHECK(timer_heap_next(&heap) == TIMER_NEVER);
	CHECK_EQ_INT(timer_heap_run(&heap, UINT64_MAX - 1), 0);
	timer_heap_cancel(&heap, &it.t);	/* idle: no effect */
	CHECK_EQ_INT(heap.count, 0);

	timer_heap_arm(&heap, &it.t, 5);
	CHECK(timer_pending(&it.t));
	CHECK_EQ_INT(timer_heap_next(&heap), 5);
	CHECK_EQ_INT(timer_heap_run(&heap, 4), 0);
	CHECK_EQ_INT(timer_heap_run(&heap, 5), 1);
	CHECK(!timer_pending(&it.t));
	CHECK_EQ_INT(it.fired, 1);
	timer_heap_free(&heap);
}

TEST(random_deadlines_fire_in_order)
{
	static struct item items[MANY];
	size_t ran = 0, late = 0;

	reset(items, MANY);
	arm_random(items, MANY, 500);	/* many equal deadlines too */
	CHECK_EQ_INT(heap.count, MANY);
	CHECK(heap_valid());
	CHECK_EQ_INT(timer_heap_next(&heap), min_pending(items, MANY));

	for (uint64_t now = 1000; now < 1500; now += 37) {
		ran += timer_heap_run(&heap, now);
		CHECK(heap_valid());
		/* Nothing due is left behind; nothing early has fired. */
		CHECK(timer_heap_next(&heap) > now);
		for (size_t i = 0; i < MANY; i++)
			late += items[i].fired && items[i].t.deadline > now;
	}
	ran += timer_heap_run(&heap, 1500);
	CHECK_EQ_INT(ran, MANY);
	CHECK_EQ_INT(nfired, MANY);
	CHECK_EQ_INT(late, 0);
	CHECK(fired_in_order());
	CHECK_EQ_INT(heap.count, 0);
	CHECK(timer_heap_next(&heap) == TIMER_NEVER);
	for (size_t i = 0; i < MANY; i++)
		late += items[i].fired != 1;
	CHECK_EQ_INT(late, 0);
	timer_heap_free(&heap);
}

TEST(cancel_arbitrary_keeps_order)
{
	static struct item items[MANY];
	size_t ncancel = 0, bad_heap = 0, bad_next = 0, wrong = 0;

	reset(items, MANY);
	arm_random(items, MANY, 100000);
	for (size_t k = 0; k < MANY / 2; k++) {
		struct item *it = &items[unit_rand() % MANY];

		ncancel += !it->cancelled;
		it->cancelled = true;
		timer_heap_cancel(&heap, &it->t);	/* maybe twice */
		bad_heap += !heap_valid();
		bad_next += timer_heap_next(&heap) != min_pending(items, MANY);
	}
	CHECK_EQ_INT(bad_heap, 0);
	CHECK_EQ_INT(bad_next, 0);
	CHECK_EQ_INT(heap.count, MANY - ncancel);

	CHECK_EQ_INT(timer_heap_run(&heap, TIMER_NEVER - 1), MANY - ncancel);
	CHECK(fired_in_order());
	for (size_t i = 0; i < MANY; i++)
		wrong += items[i].fired != !items[i].cancelled;
	CHECK_EQ_INT(wrong, 0);
	timer_heap_free(&heap);
}

TEST(rearm_moves_timer)
{
	static struct item items[MANY];
	size_t bad = 0;

	reset(items, 2);
	timer_heap_arm(&heap, &items[0].t, 100);
	timer_heap_arm(&heap, &items[1].t, 200);
	timer_heap_arm(&heap, &items[0].t, 300);	/* later */
	CHECK_EQ_INT(heap.count, 2);
	CHECK_EQ_INT(timer_heap_next(&heap), 200);
	timer_heap_arm(&heap, &items[1].t, 50);		/* earlier */
	CHECK_EQ_INT(timer_heap_next(&heap), 50);
	CHECK_EQ_INT(timer_heap_run(&heap, 299), 1);
	CHECK_EQ_INT(items[1].fired, 1);
	CHECK_EQ_INT(items[0].fired, 0);
	CHECK_EQ_INT(timer_heap_next(&heap), 300);

	reset(items, MANY);
	arm_random(items, MANY, 100000);
	for (int k = 0; k < 5 * MANY; k++) {
		timer_heap_arm(&heap, &items[unit_rand() % MANY].t,
			       unit_rand() % 200000);
		bad += !heap_valid() ||
		       timer_heap_next(&heap) != min_pending(items, MANY);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(heap.count, MANY);
	CHECK_EQ_INT(timer_heap_run(&heap, 200000), MANY);
	CHECK(fired_in_order());
	timer_heap_free(&heap);
}

TEST(callback_rearms_itself)
{
	struct item it[2];

	reset(it, 2);
	it[0].rearm_left = 10;
	it[0].period = 10;
	timer_heap_arm(&heap, &it[0].t, 100);
	timer_heap_arm(&heap, &it[1].t, 125);

	/* Re-armed past NOW: waits for the next run. */
	CHECK_EQ_INT(timer_heap_run(&heap, 100), 1);
	CHECK(timer_pending(&it[0].t));
	CHECK_EQ_INT(timer_heap_next(&heap), 110);
	/* Re-armed to a deadline still due: runs again in the same pass,
	 * interleaved with the other timer in deadline order. */
	CHECK_EQ_INT(timer_heap_run(&heap, 135), 4);	/* 110 120 125 130 */
	CHECK_EQ_INT(it[0].fired, 4);
	CHECK_EQ_INT(it[1].fired, 1);
	CHECK(fired_in_order());
	CHECK_EQ_INT(timer_heap_run(&heap, 1000), 7);	/* 140 ... 200 */
	CHECK_EQ_INT(it[0].fired, 11);
	CHECK(!timer_pending(&it[0].t));
	CHECK(heap.count == 0);
	timer_heap_free(&heap);
}

TEST(callback_cancels_another)
{
	struct item it[4];

	reset(it, 4);
	it[0].victim = &it[1];		/* both due in the same run */
	it[2].victim = &it[3];		/* victim far in the future */
	timer_heap_arm(&heap, &it[0].t, 10);
	timer_heap_arm(&heap, &it[1].t, 20);
	timer_heap_arm(&heap, &it[2].t, 15);
	timer_heap_arm(&heap, &it[3].t, 1000);

	CHECK_EQ_INT(timer_heap_run(&heap, 30), 2);
	CHECK_EQ_INT(it[0].fired, 1);
	CHECK_EQ_INT(it[1].fired, 0);
	CHECK_EQ_INT(it[2].fired, 1);
	CHECK(!timer_pending(&it[1].t));
	CHECK(!timer_pending(&it[3].t));
	CHECK_EQ_INT(heap.count, 0);
	CHECK_EQ_INT(timer_heap_run(&heap, 2000), 0);

	/* A callback cancelling itself (already idle) is harmless. */
	reset(it, 1);
	it[0].victim = &it[0];
	timer_heap_arm(&heap, &it[0].t, 1);
	CHECK_EQ_INT(timer_heap_run(&heap, 1), 1);
	CHECK(!timer_pending(&it[0].t));
	timer_heap_free(&heap);
}

TEST(free_with_pending)
{
	struct item it[3];

	reset(it, 3);
	for (int i = 0; i < 3; i++)
		timer_heap_arm(&heap, &it[i].t, (uint64_t)i);
	timer_heap_free(&heap);
	for (int i = 0; i < 3; i++)
		CHECK(!timer_pending(&it[i].t));
	CHECK_EQ_INT(heap.count, 0);
	CHECK(heap.items == NULL);
	/* The heap is usable again. */
	timer_heap_arm(&heap, &it[1].t, 7);
	CHECK_EQ_INT(timer_heap_next(&heap), 7);
	timer_heap_free(&heap);
}

static const struct unit_test tests[] = {
	UNIT(empty_and_idle),
	UNIT(random_deadlines_fire_in_order),
	UNIT(cancel_arbitrary_keeps_order),
	UNIT(rearm_moves_timer),
	UNIT(callback_rearms_itself),
	UNIT(callback_cancels_another),
	UNIT(free_with_pending),
};

UNIT_MAIN("timer", tests)
