/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The connection table: every TCP connection rackd has seen a handshake
 * of, keyed by its local and remote endpoints. Buckets are chosen with a
 * keyed SipHash so that remote hosts cannot aim at one bucket.
 */
#ifndef RACKS_CONN_H
#define RACKS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "addr.h"
#include "halfopen.h"
#include "timer.h"

enum conn_state {
	CONN_HANDSHAKE,		/* SYN seen, SYN-ACK not yet */
	CONN_SETUP,		/* both ends offered racks: keys in exchange */
	CONN_CONNECTED,		/* managed: both rackds hold the key */
	CONN_SUSPENDED,		/* peer unheard: the socket is held open */
	CONN_RELEASED,		/* plain peer or failed set-up: left alone */
	CONN_ADOPTING,		/* established without racks: learning its
				 * sequence numbers, asking the peer (adopt.h) */
	CONN_STATE_MAX
};

enum conn_peer {
	PEER_UNKNOWN,		/* handshake not complete */
	PEER_RACKS,
	PEER_NONE,
};

struct conn_edp;		/* keys and counters, see keystate.h */
struct live_peer;		/* heartbeats, see liveness.h */
struct conn_hold;		/* suspension, see hold.h */

/* Where a connection is in a migration of one end's process (rackckpt,
 * see migrate.h). */
enum conn_migration {
	MIG_NONE,
	MIG_LEAVING,		/* exported: its process is being checkpointed */
	MIG_AWAY,		/* the peer's end is moving: held until it
				 * reconnects from wherever it is restored */
	MIG_ARRIVING,		/* imported: its socket is being restored */
};

enum conn_dir {
	CONN_OUTGOING,		/* the local end sent the SYN */
	CONN_INCOMING,
};

/* What one end announced in its SYN or SYN-ACK. */
struct conn_end {
	bool seen;		/* its SYN / SYN-ACK was seen */
	uint32_t isn;
	uint16_t paylen;	/* data it carried (TCP Fast Open) */
	bool has_mss, has_wscale, sack_permitted, has_timestamp;
	uint16_t mss;
	uint8_t wscale;
};

/* Options in force once both ends announced theirs (RFC 7323, 2018). */
struct conn_negotiated {
	bool wscale, sack, timestamps;
	uint8_t snd_wscale, rcv_wscale;	/* local send / receive shifts */
	uint16_t local_mss, remote_mss;
};

/* Why a connection racks saw is not managed: never silent (rackctl list
 * --json and show give it as "unmanaged"). */
enum conn_unmanaged {
	UNMANAGED_NO,		/* managed, or not decided yet */
	UNMANAGED_PLAIN_ANSWER,	/* our offer was answered without racks: a
				 * plain peer, or the option was stripped */
	UNMANAGED_SYN_RETRANSMITTED,	/* the offering SYN went unanswered
				 * (lost, or dropped for its option); the
				 * kernel's retransmission, plain by design,
				 * opened the connection */
	UNMANAGED_NO_OPTION_ROOM,	/* the SYN or SYN-ACK had no room */
	UNMANAGED_BAD_OFFER,	/* the peer's SYN carried an unusable option */
	UNMANAGED_OFFER_FAILED,	/* our SYN-ACK could not be diverted */
	UNMANAGED_SETUP_TIMEOUT,	/* the key agreement did not complete */
	UNMANAGED_PREDATES_RACKD,	/* established before rackd started (or
				 * before it restarted without its state) */
	UNMANAGED_HANDSHAKE_UNSEEN,	/* its handshake reached this end
				 * without racks: the peer rackd asked */
	UNMANAGED_ADOPTION_UNANSWERED,	/* adoption: the peer never answered
				 * (no rackd there) */
	UNMANAGED_ADOPTION_FAILED,	/* adoption: its sequence numbers could
				 * not be learnt, or the ends disagreed */
	UNMANAGED_PEER_FORGOT,	/* managed, until the peer rackd lost its
				 * state: adopted again */
	UNMANAGED_HOST_KEY_MISMATCH,	/* the peer host's key is not the
				 * one known there (knownhosts.h) */
	UNMANAGED_HOST_NOT_PINNED,	/* trust = pinned, and its key is not */
	UNMANAGED_ANONYMOUS_REFUSED,	/* the peer offered only an anonymous
				 * exchange, which trust does not allow */
};

/* Where a connection is in its late set-up (adopt.h); shown by rackctl. */
enum conn_adoption {
	ADOPTION_NONE,
	ADOPTION_LEARNING,	/* reading its live sequence numbers */
	ADOPTION_OFFERED,	/* ADOPT sent, waiting for the peer's */
	ADOPTION_SETUP,		/* agreed: key set-up as after a handshake */
	ADOPTION_DONE,		/* managed */
	ADOPTION_UNANSWERED,	/* given up: no answer (a plain peer) */
	ADOPTION_FAILED,	/* given up: see its unmanaged reason */
	ADOPTION_MAX
};

struct conn_adopt;		/* learning state, see adopt.h */

struct conn_table;

struct conn {
	uint64_t id;
	struct endpoint local, remote;	/* the socket's: never change */
	/* Where its segments travel now: equal to local/remote until an
	 * address change, then spliced onto them by the kernel (splice.h). */
	struct endpoint wire_local, wire_remote;
	bool confirmed;		/* the peer acknowledged our wire endpoints */
	bool kept_local;	/* holds a reference on a kept address */
	bool mapped;		/* splice maps hold mapped_local/remote */
	struct endpoint mapped_local, mapped_remote;
	uint32_t reconnections;	/* splices onto new endpoints */
	time_t reconnected;	/* wall clock of the last one, 0 if none */
	enum conn_dir dir;
	enum conn_state state;
	enum conn_peer peer;
	bool offered;		/* our SYN / the peer's SYN carried racks' option */
	bool probed;		/* its probe FIN was answered (answer.c) */
	uint8_t syns;		/* SYNs seen: only the first carries the option */
	/* What the SYN and SYN-ACK carried in racks' option (option.h):
	 * each end's nonce and host pair, ours sent and the peer's heard.
	 * peer_long: the peer speaks host keys (the long form, or the
	 * short one with EDP_OFFER_HOSTKEYS). */
	uint8_t nonce_local[8], nonce_remote[8];
	uint32_t hp_sent, hp_heard;
	bool peer_long;
	bool offer_made;	/* nonce_local and hp_sent chosen */
	bool offer_short;	/* ours had room for the short form only */
	enum conn_unmanaged unmanaged;	/* why it was released */
	enum conn_adoption adoption;
	enum conn_unmanaged cause;	/* why adoption was needed */
	struct conn_adopt *adopt;	/* only while adopting */
	uint8_t adoptions;	/* adoptions begun (bounded) */
	uint64_t state_since;	/* monotonic ms */
	struct conn_edp *edp;	/* only while / once the peer is racks */
	struct live_peer *host;	/* the path it shares heartbeats with */
	struct conn *host_next;	/* the path's connections */
	struct conn_hold *hold;	/* only while suspended */
	uint32_t suspensions;
	struct conn_end lend, rend;
	uint8_t tcp_state;	/* kernel socket state from the last sweep */
	bool swept;		/* found in the current sweep */
	time_t created;		/* wall clock, for display */
	uint64_t created_mono;	/* monotonic ms */
	struct timer expiry;	/* half-open handshakes are forgotten */
	struct conn_table *table;	/* the table holding it */
	struct conn *hnext;	/* bucket chain */
	uint64_t edp_id;	/* the id both rackds derived, once keyed */
	enum conn_migration migration;
	bool away_acked;	/* MIG_LEAVING: the peer holds its socket */
	uint64_t arrive_by;	/* MIG_ARRIVING: forgotten after (monotonic ms) */
	/* A socket restored by CRIU counts bytes acked and received from
	 * zero again: its sequence numbers then start from these. */
	bool rebased;
	uint32_t snd_base, rcv_base;
	bool imported;		/* came with a migration (state_import) */
	/* Where its socket last was (channel.c): what its messages carry
	 * once the kernel shows the socket no more (closed, not yet swept). */
	bool seq_seen;
	uint32_t seen_snd_una, seen_rcv_nxt, seen_slack;
	uint32_t seen_rwin, seen_swin;	/* its windows as last seen */
	struct conn *knext;	/* edp id bucket chain */
	struct conn *wnext;	/* wire tuple bucket chain */
	/* Made by a SYN from outside whose sender has not shown yet that
	 * it receives what goes to its address (halfopen.h). */
	struct halfopen_link ho;
	struct conn *prev, *next;	/* table order: oldest first */
};

struct conn_table {
	struct conn **buckets;
	struct conn **kbuckets;	/* by edp id, same size */
	struct conn **wbuckets;	/* by wire endpoints, same size */
	size_t nbuckets;
	size_t count;
	uint64_t next_id;
	struct conn *head, *tail;
	unsigned char hash_key[16];
	struct halfopen halfopen;	/* its half-open entries */
};

void conn_table_init(struct conn_table *tbl);
/* Frees every connection; CB (may be NULL) runs on each first. */
void conn_table_free(struct conn_table *tbl, void (*cb)(struct conn *));

struct conn *conn_lookup(const struct conn_table *tbl,
			 const struct endpoint *local,
			 const struct endpoint *remote);
struct conn *conn_find_id(const struct conn_table *tbl, uint64_t id);
/* The connection whose segments travel between LOCAL and REMOTE now (its
 * wire endpoints; a connection never spliced travels on its socket's). */
struct conn *conn_lookup_wire(const struct conn_table *tbl,
			      const struct endpoint *local,
			      const struct endpoint *remote);
/* C's segments travel between LOCAL and REMOTE from now on (NULL: that
 * end unchanged). The only way to change c->wire_local / wire_remote. */
void conn_set_wire(struct conn_table *tbl, struct conn *c,
		   const struct endpoint *local, const struct endpoint *remote);
/* Index C by the connection id both rackds derived from its key: a
 * reconnection names its connection by it, from endpoints not yet known. */
void conn_index_edp(struct conn_table *tbl, struct conn *c, uint64_t edp_id);
struct conn *conn_find_edp(const struct conn_table *tbl, uint64_t edp_id);
void conn_unindex_edp(struct conn_table *tbl, struct conn *c);
/* Whether C is managed: both rackds hold its key, connected or held
 * (what the state file keeps). */
bool conn_managed(const struct conn *c);
/* Whether C's segments travel between other endpoints than its socket's. */
bool conn_spliced(const struct conn *c);
/* A new connection in state CONN_HANDSHAKE; never NULL (OOM is fatal). */
struct conn *conn_insert(struct conn_table *tbl, const struct endpoint *local,
			 const struct endpoint *remote, enum conn_dir dir);
/* C's entry is half-open (conn_halfopen_proven() ends it). */
void conn_halfopen_add(struct conn_table *tbl, struct conn *c);
void conn_halfopen_proven(struct conn_table *tbl, struct conn *c);
/* The half-open entry to let go before one more from SRC joins
 * (halfopen_victim()), or NULL. */
struct conn *conn_halfopen_victim(const struct conn_table *tbl,
				  const struct addr *src, unsigned max,
				  unsigned per_prefix);
/* Unlinks and frees C; the caller cancels its timers first. */
void conn_remove(struct conn_table *tbl, struct conn *c);

void conn_negotiate(const struct conn *c, struct conn_negotiated *n);

/* C is migrating (migrate.h): its path sends no heartbeats and is never
 * resumed by them. */
static inline bool conn_parked(const struct conn *c)
{
	return c->migration != MIG_NONE;
}

/* The local end sent the SYN. */
static inline bool conn_is_client(const struct conn *c)
{
	return c->dir == CONN_OUTGOING;
}

struct sockdiag_progress;
/* The socket's snd_una and rcv_nxt from the kernel's byte counters. */
void conn_seq_progress(const struct conn *c, const struct sockdiag_progress *pr,
		       uint32_t *snd_una, uint32_t *rcv_nxt);
const char *conn_migration_name(enum conn_migration m);

/* A debug line "conn ID WHAT: local -> remote". */
void conn_log(const struct conn *c, const char *what);
const char *conn_state_name(enum conn_state state);
const char *conn_peer_name(enum conn_peer peer);
/*
 * The client's and the server's nonces of C's set-up, as both ends know
 * them: those of its SYN and SYN-ACK, or zeroes for an adopted
 * connection, whose offers one end may never have seen (set-up then
 * runs the host handshake, whose ephemeral keys are fresh anyway).
 */
void conn_setup_nonces(const struct conn *c, uint8_t nc[8], uint8_t ns[8]);

/* Left unmanaged because trust refused the peer host (never adopted). */
static inline bool conn_trust_refused(const struct conn *c)
{
	return c->unmanaged == UNMANAGED_HOST_KEY_MISMATCH ||
	       c->unmanaged == UNMANAGED_HOST_NOT_PINNED ||
	       c->unmanaged == UNMANAGED_ANONYMOUS_REFUSED;
}

/* NULL for UNMANAGED_NO. */
const char *conn_unmanaged_name(enum conn_unmanaged why);
const char *conn_dir_name(enum conn_dir dir);
const char *conn_adoption_name(enum conn_adoption a);
const char *conn_tcp_state_name(uint8_t tcp_state);

#endif
