/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The state file: rackd's managed connections (peer racks, connected or
 * suspended), with everything needed to carry on with them: both ends'
 * keys and handshake transcript, message counters, socket and wire
 * endpoints, suspension start. A restarted rackd reads it at start and
 * resumes the connections whose sockets still exist, in the same
 * transaction that installs its table; so a stopped rackd leaves its
 * table in place while it has spliced or held connections (their
 * rewriting and holding must not stop), and the next one takes it over.
 *
 * The file holds keys: mode 0600, written whole to PATH.tmp, synced, then
 * renamed over PATH. It is rewritten shortly after every change of the
 * set of managed connections (set-up, suspension, resumption,
 * reconnection, end) and at shutdown. Heartbeat counters advance between
 * writes: a restored connection's outgoing counter jumps ahead by
 * STATE_COUNTER_MARGIN so that the peer never sees one it has seen.
 *
 * Format, text, one connection a line (see state.c):
 *	racks-state 1
 *	conn dir=out local=ADDR:PORT remote=... key=HEX ...
 *	end COUNT
 * A file that does not parse whole (truncated, corrupt, unknown version)
 * is reported, renamed to PATH.bad, and ignored: nothing is restored.
 */
#ifndef RACKS_STATE_H
#define RACKS_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "event.h"
#include "timer.h"

#define STATE_DEFAULT_PATH "/var/lib/racks/state"
#define STATE_COUNTER_MARGIN 65536u
/* Changes are written at most this long after they happen. */
#define STATE_WRITE_DELAY_MS 200

struct state_file {
	const char *path;	/* NULL: no state file */
	struct timer write_timer;
	bool write_failing;	/* the last write failed (logged once) */
	uint64_t writes, write_errors;
	uint64_t restored, skipped;	/* at start: taken over, dropped */
	bool load_failed;	/* the file at start was refused */
};

struct rackd;
struct conn;

void state_init(struct rackd *d, const char *path);
/* Write soon (coalesced): call after a managed connection changed. */
void state_changed(struct rackd *d);
/* The events that change the file; state_event() (ARG: the rackd) is
 * their subscriber. */
#define STATE_EVENTS (EVENT_BIT(EVENT_CONNECTED) | EVENT_BIT(EVENT_SUSPEND) | \
		      EVENT_BIT(EVENT_EXPORT) | EVENT_BIT(EVENT_UNEXPORT) | \
		      EVENT_BIT(EVENT_AWAY) | EVENT_BIT(EVENT_ARRIVED) | \
		      EVENT_BIT(EVENT_SAVED) | EVENT_BIT(EVENT_GONE))
void state_event(void *arg, enum event_type type, struct conn *c,
		 const char *reason);
/* Write now; 0 or -errno (logged). */
int state_write(struct rackd *d);
/* Read the file and rebuild its connections (before the table exists:
 * their holds and splices go into the table's first transaction). */
void state_load(struct rackd *d);
/* The table could not take what the state file holds: every connection
 * it restored is forgotten (adopted again later). */
void state_forget_restored(struct rackd *d);
/* One connection as a "conn" line. */
void state_write_conn(FILE *f, const struct conn *c);
/* C's line for rackckpt: with the sequence numbers its socket has now,
 * from which the restored socket's counters start. 0 or -errno (no
 * socket). */
int state_export_conn(FILE *f, const struct conn *c);
/* A connection from an exported LINE (modified in place), keyed and set
 * up, not yet on any path nor spliced; NULL with ERR set if the line is
 * bad or the connection is known here already. */
struct conn *state_import(struct rackd *d, char *line, char *err,
			  size_t errlen);
void state_free(struct rackd *d);

#endif
