/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host pairs: the secret this host shares with each racks host it has
 * met, made by one authenticated Noise XX handshake (hostauth.h) and
 * named on the wire by a 32-bit id both ends compute from it
 * (edp_hostpair_id). A new connection between the two derives its key
 * from it (edp_conn_key) instead of running an exchange.
 *
 * A host pair ages: after hostpair_lifetime, or hostpair_max_connections
 * connections, or a MAC that failed under a key derived from it, it is
 * no longer offered, and the next connection runs a new handshake (new
 * ephemeral keys: what a later theft of the secret reveals ends there).
 * The one it replaces stays, unoffered, so that a connection whose SYN
 * named it still derives; at most two per peer host.
 */
#ifndef RACKS_HOSTPAIRS_H
#define RACKS_HOSTPAIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

#define HOSTPAIR_KEY_LEN 32
#define HOSTPAIR_MAX 65536
#define HOSTPAIR_PER_PEER 3	/* the newest and the ones it replaced */

struct host_pair {
	uint8_t peer_pk[HOSTPAIR_KEY_LEN];	/* the peer host's static key */
	uint8_t secret[HOSTPAIR_KEY_LEN];
	uint32_t id;
	int64_t created;	/* unix seconds */
	uint64_t conns;		/* connections keyed from it */
	bool retired;		/* not offered any more: rekey */
	/* Used up (age, connections): one connection renews it with a new
	 * handshake, started then (unix s); the others go on deriving
	 * until it is confirmed (host_pairs_confirm). */
	int64_t renew_started;
	/* Where the peer was last met (a client offers the host pair to
	 * the address it connects to); unset until a set-up completes. */
	bool have_addr;
	struct addr peer_addr;
	struct host_pair *next;
};

/* A host handshake this host began as client, not finished yet: the
 * connections opened meanwhile to the same address wait for its host
 * pair rather than run handshakes of their own (setup.c). */
#define HOSTPAIR_PENDING 64
struct host_pair_pending {
	struct addr addr;
	uint64_t since_ms;	/* monotonic */
	unsigned users;		/* handshakes under way to it */
};

/*
 * Who hears that the host pairs changed (installed by daemon.c; NULL:
 * nobody): H came or changed (PRESENT) or went (!PRESENT, unlinked, not
 * yet wiped), and WHERE (NULL: nowhere) is an address whose offer may
 * have changed with it (a client's next SYN there names another host
 * pair, or none). Called on every change: added, loaded, confirmed,
 * retired, a connection counted, dropped. The BPF path mirrors the host
 * pairs into the sock_ops program's maps with it (bpfopt.h).
 */
typedef void (*host_pairs_notify_fn)(void *arg, const struct host_pair *h,
				     const struct addr *where, bool present);

struct host_pairs {
	host_pairs_notify_fn notify;
	void *notify_arg;
	struct host_pair *head;
	size_t count;
	bool dirty;		/* changed since last saved */
	bool counts_unsaved;	/* uses counted since (host_pairs_count_use) */
	struct host_pair_pending pending[HOSTPAIR_PENDING];
};

/*
 * A connection keyed from H. Its count is saved every
 * HOSTPAIR_COUNT_SAVE_EVERY uses and when rackd stops, not at each one:
 * the file is synced whole at every save, and thousands of connections
 * a second would write it as often. A crash forgets fewer than that many
 * uses, which hostpair_max_connections can be exceeded by.
 */
#define HOSTPAIR_COUNT_SAVE_EVERY 256
void host_pairs_count_use(struct host_pairs *hp, struct host_pair *h);

void host_pairs_init(struct host_pairs *hp);
/* FN hears every change from now on (see host_pairs_notify_fn). */
void host_pairs_set_notify(struct host_pairs *hp, host_pairs_notify_fn fn,
			   void *arg);
/* H is no longer offered (a MAC failed under a key derived from it):
 * the next connection runs a new handshake. */
void host_pairs_retire(struct host_pairs *hp, struct host_pair *h);
/* Wipes every secret. */
void host_pairs_clear(struct host_pairs *hp);

struct host_pair *host_pairs_by_id(const struct host_pairs *hp, uint32_t id);
/* The newest host pair, not retired, whose set-up completed with its peer
 * at ADDR; NULL if none. (A scan: host pairs are few, a few per peer.) */
struct host_pair *host_pairs_at(const struct host_pairs *hp,
				const struct addr *addr);
/* The newest host pair with PEER_PK, retired or not; NULL if none. */
struct host_pair *host_pairs_of(const struct host_pairs *hp,
				const uint8_t peer_pk[HOSTPAIR_KEY_LEN]);
/*
 * A new host pair with PEER_PK (secret copied, id computed): older ones
 * with the same peer are retired, and all but the newest of them
 * dropped. At HOSTPAIR_MAX, the oldest host pair of all goes. Returns it.
 */
struct host_pair *host_pairs_add(struct host_pairs *hp,
				 const uint8_t peer_pk[HOSTPAIR_KEY_LEN],
				 const uint8_t secret[HOSTPAIR_KEY_LEN],
				 int64_t created);
/*
 * A connection keyed from H completed its set-up with the peer at ADDR:
 * H is offered to that address from now on, and replaces the older host
 * pairs of its peer (retired: named by no new SYN, still found by id for
 * the SYNs in flight). Until then the older ones are offered: a client
 * never names a host pair its peer may not have yet.
 */
void host_pairs_confirm(struct host_pairs *hp, struct host_pair *h,
			const struct addr *addr);
/* A handshake with ADDR began (NOW_MS) / ended; false when the table of
 * them is full (the connection then just runs its own). */
bool host_pairs_pending_add(struct host_pairs *hp, const struct addr *addr,
			    uint64_t now_ms);
void host_pairs_pending_end(struct host_pairs *hp, const struct addr *addr);
/* Is a handshake with ADDR under way, begun within MAX_AGE_MS? */
bool host_pairs_pending(const struct host_pairs *hp, const struct addr *addr,
			uint64_t now_ms, uint64_t max_age_ms);
/* A host pair read back from a file (newest first there): appended as it
 * is, its id kept; NULL at HOSTPAIR_MAX. */
struct host_pair *host_pairs_add_loaded(struct host_pairs *hp,
					const struct host_pair *from);
/* Drop every host pair with PEER_PK (its key removed from trust). */
void host_pairs_forget(struct host_pairs *hp,
		       const uint8_t peer_pk[HOSTPAIR_KEY_LEN]);
/* May a new connection still be keyed from H (offered in a SYN)? */
bool host_pair_offerable(const struct host_pair *h, int64_t now,
			 uint64_t lifetime_s, uint64_t max_conns);

#define HOSTPAIR_RENEW_WAIT_S 10	/* a renewal that long is retried */

/*
 * Whether a client's new connection names H (true) or renews it with a
 * host handshake (false). A used-up host pair is renewed by one
 * connection at a time: the others keep deriving from it, up to twice
 * its age limit, until the new one exists, rather than all running a
 * handshake at once (1,000 connections opened together would otherwise
 * run 1,000): its connection limit is soft, its age limit is hard at
 * twice its lifetime. A retired one is never named.
 */
bool host_pair_offer(struct host_pair *h, int64_t now, uint64_t lifetime_s,
		     uint64_t max_conns);

#endif
