/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A token bucket: RATE events per second on average, BURST at once.
 * What rackd sends because of what others sent it (probe answers) or
 * sends in bulk (reconnections of many connections) goes through one, so
 * that neither an attacker nor a burst of our own can make it send more
 * than the two ends can take.
 */
#ifndef RACKS_RATELIMIT_H
#define RACKS_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	uint32_t rate;		/* tokens per second */
	uint32_t burst;		/* most tokens held */
	uint64_t milli;		/* tokens held, in thousandths */
	uint64_t last_ms;	/* monotonic ms of the last refill */
	bool started;
};

static inline void ratelimit_init(struct ratelimit *r, uint32_t rate,
				  uint32_t burst)
{
	*r = (struct ratelimit){ .rate = rate, .burst = burst ? burst : 1 };
}

/* Tokens now available (refilled up to NOW_MS). */
static inline uint32_t ratelimit_avail(struct ratelimit *r, uint64_t now_ms)
{
	uint64_t full = (uint64_t)r->burst * 1000;

	if (!r->started) {
		r->started = true;
		r->milli = full;
		r->last_ms = now_ms;
	}
	if (now_ms > r->last_ms) {
		r->milli += (now_ms - r->last_ms) * r->rate;
		r->last_ms = now_ms;
	}
	if (r->milli > full)
		r->milli = full;
	return (uint32_t)(r->milli / 1000);
}

/* Take one token if there is one. */
static inline bool ratelimit_take(struct ratelimit *r, uint64_t now_ms)
{
	if (ratelimit_avail(r, now_ms) == 0)
		return false;
	r->milli -= 1000;
	return true;
}

/* Milliseconds until a token is available (0: one is now). */
static inline uint64_t ratelimit_wait_ms(struct ratelimit *r, uint64_t now_ms)
{
	if (ratelimit_avail(r, now_ms))
		return 0;
	return r->rate ? (1000 - r->milli + r->rate - 1) / r->rate : UINT64_MAX;
}

#endif
