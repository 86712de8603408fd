/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The service manager's notification protocol (sd_notify(3)) without
 * libsystemd: newline-separated KEY=VALUE lines in one datagram to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or '@' for an abstract
 * name). Without $NOTIFY_SOCKET every call does nothing, so rackd behaves
 * the same outside systemd.
 */
#ifndef RACKS_NOTIFY_H
#define RACKS_NOTIFY_H

#include <stdint.h>

struct loop;
struct notify_watchdog;

/* Send one message; 0 when sent or when there is no $NOTIFY_SOCKET. */
int notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* READY=1 with STATUS=status: start-up or a reload is complete. */
void notify_ready(const char *status);
/* RELOADING=1 with MONOTONIC_USEC=, as Type=notify-reload expects. */
void notify_reloading(void);
void notify_stopping(void);
void notify_status(const char *status);

/*
 * As sd_watchdog_enabled(): 1 and *usec when $WATCHDOG_USEC asks this
 * process (per $WATCHDOG_PID, if set) for keep-alives, 0 when not,
 * -EINVAL when either variable is malformed.
 */
int notify_watchdog_enabled(uint64_t *usec);

/*
 * Send WATCHDOG=1 every half interval from a timer of LOOP, but only while
 * the loop serves QUEUE_FD: it ran the fd's callback since the last kick,
 * or nothing is waiting on it. A loop that is stopped, deadlocked or no
 * longer reading its queue stops kicking, and the service manager kills
 * and restarts rackd. NULL when the watchdog is not enabled.
 */
struct notify_watchdog *notify_watchdog_new(struct loop *loop, int queue_fd);
void notify_watchdog_free(struct notify_watchdog *w);

#endif
