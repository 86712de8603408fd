/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's state, shared by its modules. There is one instance; the
 * modules receive it explicitly rather than through a global.
 */
#ifndef RACKS_RACKD_H
#define RACKS_RACKD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "announce.h"
#include "config.h"
#include "conn.h"
#include "event.h"
#include "hostkey.h"
#include "hostpairs.h"
#include "keypool.h"
#include "knownhosts.h"
#include "option.h"
#include "packet.h"
#include "ratelimit.h"
#include "timer.h"

#define RACKD_VERSION "0.1.0"
#define RACKD_DEFAULT_SOCKET "/run/racks/rackd.sock"

struct loop;
struct queue;
struct inject;
struct flowset;
struct rtnl;
struct ctl;
struct channel;
struct live_state;
struct reconnect_state;
struct rstguard_state;
struct splice_stats;
struct local_state;
struct state_file;
struct migrate_stats;
struct adopt_state;
struct known_hosts_file;
struct bpfopt;

struct rackd_stats {
	uint64_t malformed;		/* sum of malformed_by[] */
	uint64_t malformed_by[PACKET_ERR_MAX];
	uint64_t unexpected;		/* queued but not a SYN or SYN-ACK */
	uint64_t syn;
	uint64_t synack;
	uint64_t syn_retransmit;
	uint64_t syn_live_socket;	/* new ISN on a live socket: ignored */
	uint64_t syn_splice_taken;	/* new connection on a splice's tuple */
	uint64_t synack_unmatched;	/* SYN-ACK without a known SYN */
	uint64_t conns_total;
	uint64_t conns_expired;		/* handshake never completed */
	uint64_t conns_closed;		/* socket gone from the kernel */
	uint64_t conns_refused;		/* table full */
	uint64_t halfopen_evicted;	/* half-open entries made room */
	uint64_t unauth_paced;		/* segments not judged: query budget */
	uint64_t sweeps;
	uint64_t link_events;
	uint64_t addr_events;
	uint64_t ctl_requests;
	uint64_t ctl_errors;
	uint64_t csum_bad;		/* not rewritten: checksum was wrong */
	/* The BPF path (kernelopt.h): records of established connections
	 * read from the ring, racks, plain (our offer unanswered), ignored
	 * (a plain client, a peer not considered), already known; wake-ups
	 * and timer rounds that drained some. */
	uint64_t bpf_records, bpf_racks, bpf_plain, bpf_ignored;
	uint64_t bpf_duplicate, bpf_drains, bpf_map_errors;
	uint64_t bpf_pulled;	/* messages whose record a pull brought */
};

/* Peer detection and set-up (EDP). */
struct rackd_edp_stats {
	uint64_t syn_offered;		/* racks option added to our SYN */
	uint64_t syn_no_room;		/* no room in the SYN's options */
	uint64_t syn_fallback;		/* retransmitted SYN sent plain */
	uint64_t synack_offered;
	uint64_t synack_no_room;
	uint64_t offer_errors;		/* offered set not written */
	uint64_t setup_started;
	uint64_t setup_ok;
	uint64_t setup_failed;		/* timed out: released */
	uint64_t released;		/* peers without racks */
	uint64_t msgs_in;
	uint64_t msgs_out;
	uint64_t send_errors;
	uint64_t rejected_by[EDP_ERR_MAX];	/* malformed options */
	uint64_t unknown_conn;		/* message for no known connection */
	uint64_t bad_mac;
	uint64_t bad_key;		/* low-order or changed public key */
	uint64_t duplicate;
	uint64_t unexpected;		/* wrong type for the state */
	uint64_t with_payload;		/* racks option on a data segment */
	uint64_t probe_fins;		/* DSCP-LE FINs diverted */
	uint64_t probes_answered;
	uint64_t probes_unproven;	/* probe FIN, handshake not complete */
	uint64_t probes_refused;	/* answered already, or rate limit */
	uint64_t bad_seq;		/* message outside the connection's ISNs */
	/* Keys (setup.h, hostauth.h): how each set-up keyed its connection,
	 * the host handshakes and their messages. */
	uint64_t keyed_anonymous, keyed_exchange, keyed_derived;
	uint64_t setup_msgs_out;	/* KEY, CONFIRM, DONE, HANDSHAKE sent */
	uint64_t keyed_later;	/* derived from a pair made after the SYN */
	uint64_t hs_started, hs_done, hs_sent, hs_received, hs_bad;
	uint64_t hs_mismatch, hs_not_pinned, anonymous_refused;
	uint64_t hs_rotated, hs_bad_rotation;
	uint64_t hs_late;		/* fragments after set-up: ignored */
	uint64_t hostpair_bad_mac;	/* derived CONFIRM refused: rekeyed */
};

struct rackd {
	struct config *cfg;
	const char *config_path;
	const char *sock_path;
	struct loop *loop;
	struct queue *queue;		/* handshakes, held and probe segments */
	struct queue *strict_queue;	/* racks' messages and held segments:
					 * never fails open */
	enum queue_mode queue_mode;	/* in use: native or xt, never auto */
	/* The BPF path (bpfopt.h), or NULL: the queue's (kernel_option,
	 * chosen at start; daemon.c). Why, in one line, for the log and
	 * rackctl status. */
	struct bpfopt *bpf;
	char option_path_reason[256];
	struct timer bpf_timer;		/* drains the ring in rounds */
	bool bpf_polled;		/* its fd in the loop (not in a round) */
	bool bpf_busy;			/* rounds: records wake nobody */
	unsigned bpf_quiet;		/* rounds in a row that read none */
	/* The BPF path: hands every record the ring holds to the engine
	 * now (installed by optpath.c; NULL on the queue path). A message
	 * for a connection not known yet calls it first: its record may be
	 * waiting in the ring, pushed before the message was queued. */
	void (*records_pull)(struct rackd *d);
	bool table_installed;
	struct conn_table conns;
	struct events events;		/* who hears what happens to them */
	struct channel *channel;	/* who handles which message type */
	struct rtnl *rtnl;
	struct ctl *ctl;
	struct timer sweep_timer;
	uint64_t last_sweep;		/* monotonic ms */
	bool debug_option;		/* -d given: reloads keep debug on */
	int sigfd;
	time_t started;
	uint64_t started_mono;
	struct rackd_stats stats;
	struct rackd_edp_stats edp;
	struct inject *inject;
	struct flowset *offers;	/* SYN-ACKs to divert */
	struct keypool keys;
	struct host_pairs host_pairs;	/* hostpairs.h */
	struct ratelimit probe_answers;	/* answer.c */
	/* Questions to the kernel that a segment without a MAC makes
	 * rackd ask (is there a socket, where is it): anyone can send such
	 * segments, so they are paced, all together (rackd_unauth_query()). */
	struct ratelimit unauth_queries;
	/* Connections in the held sets (hold.c): the table's chains for
	 * held flows exist while there are any, and whoever rewrites the
	 * chains (splice.c too) says so. */
	unsigned held;
	/* The output chain diverts flows being adopted (adopt.c): same
	 * contract as held. */
	bool adopt_rules;
	struct adopt_state *adopt;
	struct flowset *adoptset;
	/* The engine's and the state file's own: their modules define
	 * them, main.c provides them. */
	struct live_state *live;
	struct reconnect_state *reconnect;
	struct rstguard_state *rstguard;
	struct splice_stats *splice;
	struct local_state *local;
	struct state_file *state;
	struct migrate_stats *migrate;
	uint8_t announcement[EDP_ANNOUNCE_LEN];
	/* The host's identity: its static key pair, read from (or made at)
	 * hostkey_path at start, or made in memory when there is no such
	 * file (hostkey_ephemeral); wiped at exit. */
	struct hostkey hostkey;
	bool hostkey_ephemeral;
	struct hostkey *hostkey_old;	/* the key it replaced, or NULL */
	const char *hostkey_path;	/* NULL: in memory */
	/* The peers' keys and how far they are trusted (knownhosts.h),
	 * kept in known_hosts_path (NULL: in memory only) by hosts_file. */
	struct known_hosts *known_hosts;
	const char *known_hosts_path;
	struct known_hosts_file *hosts_file;
	/* Re-read the configuration file, keeping the old one if the new is
	 * bad: installed by main.c, for the control socket. */
	int (*reload)(struct rackd *d, char *err, size_t errlen);
};

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline struct rackd *rackd_of_conn(struct conn *c)
{
	return container_of(c->table, struct rackd, conns);
}

/* About a fifth of one core at most (a question takes some 20 us), and
 * enough for thousands of connections adopted at once. */
#define RACKD_UNAUTH_QUERY_RATE 10000	/* a second */
#define RACKD_UNAUTH_QUERY_BURST 10000

/* Whether a segment without a MAC may make rackd ask the kernel about a
 * socket now; false (counted) when the budget is spent: the segment then
 * changes nothing. */
bool rackd_unauth_query(struct rackd *d);

/* C is going away: every subscriber of EVENT_GONE lets go of it, then
 * its expiry timer is cancelled and it is freed. */
void rackd_forget(struct rackd *d, struct conn *c);


#endif
