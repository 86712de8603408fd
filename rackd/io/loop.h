/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one event loop of rackd: epoll over a registry of file descriptors
 * with callbacks, and one monotonic timerfd armed for the nearest timer.
 */
#ifndef RACKS_LOOP_H
#define RACKS_LOOP_H

#include <stdint.h>

#include "timer.h"

struct loop;
typedef void (*loop_fn)(void *arg, uint32_t events);

struct loop *loop_new(void);
void loop_free(struct loop *loop);

/* Watch FD for EVENTS (EPOLLIN, ...); FN(arg, events) runs when ready. */
int loop_add(struct loop *loop, int fd, uint32_t events, loop_fn fn,
	     void *arg);
int loop_mod(struct loop *loop, int fd, uint32_t events);
/* Safe to call from any callback, also for the fd being dispatched. */
void loop_del(struct loop *loop, int fd);
/* How many times FD's callback has run (0 for an unknown fd). */
uint64_t loop_dispatches(const struct loop *loop, int fd);

/* Monotonic clock in milliseconds. */
uint64_t loop_now(void);
void loop_timer_arm(struct loop *loop, struct timer *t, uint64_t delay_ms);
void loop_timer_cancel(struct loop *loop, struct timer *t);

/* Run until loop_stop(); returns 0 or -errno on a fatal epoll error. */
int loop_run(struct loop *loop);
void loop_stop(struct loop *loop);

#endif
