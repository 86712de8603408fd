/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rackckpt's requests to rackd (control protocol, common/proto.h): which
 * connections rackd manages, and handing their state over.
 *
 *   cmd=list                 record=conn id= state= local= remote= peer=
 *                            ... per connection
 *   cmd=export  id=N...      record=conn id=N acked=BOOL state=LINE per
 *                            connection; rackd has told each peer to hold
 *                            its socket (acked: the peer said it does);
 *                            asked again until all are acked
 *   cmd=unexport id=N...     the dump failed: carry on with them here
 *   cmd=release id=N...      the dump succeeded: forget them for good
 *   cmd=import  state=LINE...  record=conn id=N per line, in order; rackd
 *                            keeps their old local addresses and
 *                            reconnects them from this host
 *   cmd=restored id=N...     the sockets are back: reconnect them now
 *   cmd=show id=N            state=, peer_confirmed=, ...
 * LINE is one "conn ..." line of rackd's state file (rackd/persist/state.h).
 */
#ifndef RACKCKPT_MANAGED_H
#define RACKCKPT_MANAGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

#define DEFAULT_SOCKET "/run/racks/rackd.sock"

struct managed_conn {
	uint64_t id;
	struct endpoint local, remote;
	char state[16], peer[16];
};

struct managed_list {
	struct managed_conn *v;
	size_t n;
};

/* cmd=status: 0 if rackd answers at SOCK. */
int managed_ping(const char *sock, char *err, size_t errlen);
int managed_list(const char *sock, struct managed_list *l, char *err,
		 size_t errlen);
void managed_list_free(struct managed_list *l);
/* Managed: peer racks, connected or suspended. */
bool managed_is_managed(const struct managed_conn *c);
const struct managed_conn *managed_find(const struct managed_list *l,
					const struct endpoint *local,
					const struct endpoint *remote);

/* cmd=export: LINES[i] (malloc'ed; replaced on a later call) is the
 * state of IDS[i]; *UNACKED counts those whose peer does not hold its
 * socket yet. */
int managed_export(const char *sock, const uint64_t *ids, size_t n,
		   char **lines, size_t *unacked, char *err, size_t errlen);
/* cmd=unexport or cmd=release of IDS. */
int managed_ids(const char *sock, const char *cmd, const uint64_t *ids,
		size_t n, char *err, size_t errlen);
/* cmd=import: IDS[i] is rackd's id for LINES[i]. Sent in requests of
 * MANAGED_IMPORT_BATCH lines (rackd reads requests of up to 64 KiB); if
 * one is refused, those imported before it are released again. */
#define MANAGED_IMPORT_BATCH 48
int managed_import(const char *sock, char *const *lines, size_t n,
		   uint64_t *ids, char *err, size_t errlen);
/* cmd=show: STATE (of size LEN) and peer_confirmed. */
int managed_show(const char *sock, uint64_t id, char *state, size_t len,
		 bool *confirmed, char *err, size_t errlen);

#endif
