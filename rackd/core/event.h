/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The event notifier: what happens to a connection, told to whoever
 * subscribed, so that the modules it happens in never name the ones that
 * care. The control socket's event stream, the state file and every
 * module's per-connection clean-up are subscribers; main.c subscribes
 * them, in the order they must run (an event reaches its subscribers in
 * the order they subscribed).
 */
#ifndef RACKS_EVENT_H
#define RACKS_EVENT_H

#include <stdint.h>

struct conn;

enum event_type {
	EVENT_CONNECTED,	/* set-up complete: managed from now on */
	EVENT_RELEASED,		/* a racks peer left alone (set-up failed) */
	EVENT_SUSPEND,		/* held: its path went silent */
	EVENT_RESUME,		/* its path was heard again */
	EVENT_RECONNECT,	/* spliced onto new endpoints */
	EVENT_ABORT,		/* suspended too long: reset */
	EVENT_CLOSE,		/* its socket is gone from the kernel */
	EVENT_EXPORT,		/* migration: its process is leaving */
	EVENT_UNEXPORT,		/* migration undone: it stays */
	EVENT_RELEASE,		/* migration done: restored elsewhere */
	EVENT_IMPORT,		/* migration: arriving here */
	EVENT_AWAY,		/* migration: its peer's end is moving */
	EVENT_ARRIVED,		/* migration: its socket is restored here */
	EVENT_SAVED,		/* what the state file holds of it changed */
	EVENT_CLOSING,		/* its socket closes for good (TIME_WAIT):
				 * no path, splice or kept address any more */
	EVENT_GONE,		/* about to be freed: let go of it */
	EVENT_MAX
};

#define EVENT_BIT(t) (1u << (t))
#define EVENT_ALL ((1u << EVENT_MAX) - 1)

/* ARG as subscribed; REASON may be NULL. */
typedef void (*event_fn)(void *arg, enum event_type type, struct conn *c,
			 const char *reason);

#define EVENT_MAX_SUBS 16

struct event_sub {
	uint32_t mask;		/* EVENT_BIT()s wanted */
	event_fn fn;
	void *arg;
};

struct events {
	struct event_sub subs[EVENT_MAX_SUBS];
	unsigned count;
};

/* FN hears of the events in MASK from now on; -ENOSPC when full. */
int event_subscribe(struct events *ev, uint32_t mask, event_fn fn, void *arg);
/* Tell every subscriber of TYPE what happened to C. */
void event_post(const struct events *ev, enum event_type type, struct conn *c,
		const char *reason);
/* The name `rackctl events` shows, NULL for an event not on the stream. */
const char *event_name(enum event_type type);

#endif
