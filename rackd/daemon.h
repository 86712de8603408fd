/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rackd's start-up, reload and shutdown (daemon.c), for main.c.
 */
#ifndef RACKS_DAEMON_H
#define RACKS_DAEMON_H

#include <stddef.h>

#include "rackd.h"

/* Open everything, take over the state file's connections, install the
 * ruleset; exits with a message on failure. */
void daemon_start(struct rackd *d);
/* Re-read the configuration file, keeping the old one if the new is bad
 * (SIGHUP, and d->reload for the control socket); 0 or -errno. */
int daemon_reload(struct rackd *d, char *err, size_t errlen);
/* Close everything; the table stays for the next rackd if it holds or
 * splices connections kept in the state file. */
void daemon_stop(struct rackd *d);
/* The socket sweep (track_sweep) soon rather than at its interval: at
 * most one every TRACK_FRESH_MS (closed connections found early). */
void daemon_sweep_soon(struct rackd *d);
/* The one-line status the service manager shows. */
const char *daemon_status(const struct rackd *d, char *buf, size_t len);

#endif
