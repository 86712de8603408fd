/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The local end of spliced connections: which local address reaches a
 * peer now, and keeping a removed address usable for the sockets still
 * bound to it. A socket whose local address disappears is not reset by
 * the kernel, but its segments fail routing before any netfilter hook;
 * kept as a host route on "lo" the address lets it send again (into the
 * splice) and receive what the splice hands it, until its connection
 * ends. rackd's kept addresses carry their own IFA_PROTO value, so that
 * "ip address" shows who added them.
 */
#ifndef RACKS_LOCAL_H
#define RACKS_LOCAL_H

#include "lohost.h"

#include <stdbool.h>

#include "addr.h"

#define LOCAL_IFA_PROTO LOHOST_IFA_PROTO

struct local_kept {
	struct addr addr;
	unsigned refs;
	bool added;		/* by us: removed when the last user ends */
	struct local_kept *next;
};

struct local_state {
	struct local_kept *kept;
	unsigned long keeps, keep_errors;
};

/* The source address the kernel would use to reach DST now; -errno when
 * there is no route (or only a tentative IPv6 address). */
int local_source(const struct addr *dst, struct addr *src);
/* Whether A can be a peer's address: a unicast address this host routes
 * elsewhere (not one of its own, nor loopback, multicast, broadcast,
 * unspecified or IPv4-mapped). */
bool local_remote_usable(const struct addr *a);
/* One more user of ADDR, kept on "lo" unless it is local anyway. */
int local_keep(struct local_state *s, const struct addr *addr);
/* One user less; the last one removes an address we added. */
void local_unkeep(struct local_state *s, const struct addr *addr);
/* Whether ADDR is one we keep on "lo" (its events are our own). */
bool local_is_kept(const struct local_state *s, const struct addr *addr);
/* Remove every address we added (shutdown). */
void local_free(struct local_state *s);
/* ADDR is kept for a connection taken over from a state file: added if
 * missing, and removed with its last connection even if a previous rackd
 * added it. */
void local_adopt(struct local_state *s, const struct addr *addr);
/* Forget the kept addresses without removing them (handed over with the
 * table to the next rackd). */
void local_leave(struct local_state *s);

#endif
