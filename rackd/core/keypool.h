/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Ephemeral X25519 key pairs made ahead of time. A racks handshake takes
 * one instead of computing it while the SYN-ACK is on its way: the
 * scalar multiplication then runs when rackd is otherwise idle, not in
 * the window where the application waits for connect().
 */
#ifndef RACKS_KEYPOOL_H
#define RACKS_KEYPOOL_H

#include "keys.h"
#include "timer.h"

#define KEYPOOL_SIZE 32

struct loop;

struct keypool {
	struct edp_keypair pairs[KEYPOOL_SIZE];
	unsigned count;
	struct loop *loop;
	struct timer refill;
};

void keypool_init(struct keypool *kp, struct loop *loop);
/* Take a fresh key pair (made now if the pool is empty). */
void keypool_take(struct keypool *kp, struct edp_keypair *out);
/* Wipe every key pair still in the pool. */
void keypool_wipe(struct keypool *kp);

#endif
