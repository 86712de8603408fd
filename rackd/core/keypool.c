// SPDX-License-Identifier: GPL-2.0-only
#include "keypool.h"

#include <sodium.h>

#include "loop.h"

/* Refill shortly after a burst, a few pairs per turn of the loop, so a
 * burst of handshakes is not followed by a burst of computation. */
#define KEYPOOL_REFILL_DELAY_MS 2
#define KEYPOOL_REFILL_BATCH 4

static void keypool_refill(struct timer *t, void *arg)
{
	struct keypool *kp = arg;

	for (int i = 0; i < KEYPOOL_REFILL_BATCH && kp->count < KEYPOOL_SIZE;
	     i++)
		edp_keypair_new(&kp->pairs[kp->count++]);
	if (kp->count < KEYPOOL_SIZE)
		loop_timer_arm(kp->loop, t, KEYPOOL_REFILL_DELAY_MS);
}

void keypool_init(struct keypool *kp, struct loop *loop)
{
	kp->count = 0;
	kp->loop = loop;
	timer_init(&kp->refill, keypool_refill, kp);
	loop_timer_arm(loop, &kp->refill, 0);
}

void keypool_take(struct keypool *kp, struct edp_keypair *out)
{
	if (kp->count == 0) {
		edp_keypair_new(out);
	} else {
		*out = kp->pairs[--kp->count];
		edp_keypair_wipe(&kp->pairs[kp->count]);
	}
	if (!timer_pending(&kp->refill))
		loop_timer_arm(kp->loop, &kp->refill, KEYPOOL_REFILL_DELAY_MS);
}

void keypool_wipe(struct keypool *kp)
{
	loop_timer_cancel(kp->loop, &kp->refill);
	sodium_memzero(kp->pairs, sizeof(kp->pairs));
	kp->count = 0;
}
