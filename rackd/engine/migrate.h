/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rackd's part in moving a process with its connections to another host
 * (rackckpt, see checkpoint/). Four steps, each a control command:
 *
 *   source rackd            peer rackd               destination rackd
 *   export: AWAY ------->   hold the socket, park
 *   (hold, park)  <-------  AWAY_ACK
 *   export: lines with keys and sequence numbers --> rackckpt --> import:
 *   [CRIU dumps the process]                         keep old address,
 *   release: forget                                  splice, hold, park
 *                                                    [CRIU restores it]
 *                           follow, resume  <-----   restored: RECONNECT
 *                           RECONNECT_ACK   ----->   resume
 *
 * A parked connection (leaving, its peer away, or arriving) sends no
 * heartbeats and is never resumed by its path's: it waits for its own
 * step. A failed dump is undone with "unexport", which reconnects from
 * where the connection is; a restore that never happens ends, on the
 * peer, with max_suspend like any suspension.
 */
#ifndef RACKS_MIGRATE_H
#define RACKS_MIGRATE_H

#include <stdint.h>

#include "conn.h"
#include "option.h"

/* AWAY is repeated this often until acknowledged. */
#define MIGRATE_AWAY_RETRY_MS 200
/* An imported connection whose socket is not restored by then is
 * forgotten. */
#define MIGRATE_ARRIVE_MS (10 * 60 * 1000)

struct migrate_stats {
	uint64_t exported, unexported, released;
	uint64_t away_out, away_in, away_acks_in;
	uint64_t imported, arrived, arrive_expired;
	uint64_t refused;		/* AWAY replayed or out of place */
};

struct rackd;
struct live_peer;

/* Whether C may be exported: managed, on a path, not migrating (or
 * exported already: export is idempotent). */
bool migrate_exportable(const struct conn *c);
/* C's process is about to be checkpointed: its peer is told to hold its
 * socket (AWAY, repeated until acknowledged) and C is held here. 0, or
 * -ENOTCONN if C is not exportable. Idempotent. */
int migrate_export(struct rackd *d, struct conn *c);
/* The checkpoint failed: C resumes where it is. */
void migrate_unexport(struct rackd *d, struct conn *c);
/* The checkpoint succeeded: C is forgotten here. */
void migrate_release(struct rackd *d, struct conn *c);
/* CONNS, just built by state_import(), are held and spliced from this
 * host's address until their sockets are restored. 0 or -errno with ERR
 * set (then the caller forgets them). */
int migrate_import(struct rackd *d, struct conn **conns, unsigned n,
		   char *err, size_t errlen);
/* C, imported, has its socket back (the caller saw it in the kernel):
 * ask its peer to follow. 0, or -EINVAL if C was not arriving. */
int migrate_arrived(struct rackd *d, struct conn *c);
/* AWAY and AWAY_ACK go to migration (channel.h); 0 or -errno. */
int migrate_handle_messages(struct rackd *d);
/* A parked path's timer. */
void migrate_tick(struct rackd *d, struct live_peer *p);

#endif
