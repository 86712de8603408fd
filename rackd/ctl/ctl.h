/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control socket: a UNIX stream socket speaking the line protocol
 * of common/proto.h. Commands that change state need a root peer
 * (SO_PEERCRED); read-only commands are open to every local user.
 */
#ifndef RACKS_CTL_H
#define RACKS_CTL_H

#include "event.h"

struct rackd;
struct ctl;

/* Create the socket at PATH (its directory too); fails with -EADDRINUSE
 * when another rackd answers there. */
int ctl_open(struct ctl **out, struct rackd *d, const char *path);
/* Close every client and unlink the socket. */
void ctl_close(struct ctl *ctl);

struct conn;

/* Tell every `rackctl events` subscriber what happened to C: an
 * event_fn (event.h), ARG the struct ctl. Events without a name on the
 * stream are ignored. */
void ctl_event(void *arg, enum event_type type, struct conn *c,
	       const char *reason);

#endif
