// SPDX-License-Identifier: GPL-2.0-only
#include "event.h"

#include <errno.h>
#include <stddef.h>

/* The stream's names are part of the control protocol (rackctl.8). */
static const char *const names[EVENT_MAX] = {
	[EVENT_CONNECTED] = "connected",
	[EVENT_RELEASED] = "released",
	[EVENT_SUSPEND] = "suspend",
	[EVENT_RESUME] = "resume",
	[EVENT_RECONNECT] = "reconnect",
	[EVENT_ABORT] = "abort",
	[EVENT_CLOSE] = "close",
	[EVENT_EXPORT] = "export",
	[EVENT_UNEXPORT] = "unexport",
	[EVENT_RELEASE] = "release",
	[EVENT_IMPORT] = "import",
	[EVENT_AWAY] = "away",
};

int event_subscribe(struct events *ev, uint32_t mask, event_fn fn, void *arg)
{
	if (ev->count == EVENT_MAX_SUBS)
		return -ENOSPC;
	ev->subs[ev->count++] = (struct event_sub){ mask, fn, arg };
	return 0;
}

void event_post(const struct events *ev, enum event_type type, struct conn *c,
		const char *reason)
{
	for (unsigned i = 0; i < ev->count; i++)
		if (ev->subs[i].mask & EVENT_BIT(type))
			ev->subs[i].fn(ev->subs[i].arg, type, c, reason);
}

const char *event_name(enum event_type type)
{
	return (unsigned)type < EVENT_MAX ? names[type] : NULL;
}
