/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stateful fuzzer's world (tests/fuzz/fuzz_engine.c): rackd's whole
 * engine, wired by rackd/main.c's own code, over a fake kernel that the
 * fuzz input drives. Its parts:
 *
 *   fake.c   the kernel I/O rackd calls: clock and timers, the queue
 *            (every packet gets exactly one verdict), raw sends (built
 *            and checked), sock_diag over a table of fake sockets,
 *            rtnetlink, routes, "lo" addresses
 *   host.c   the rest of the host: reports, randomness, logging, the
 *            service manager, signals, the control socket's events
 *   nft.c    nftables: the scripts rackd writes (the real writers of
 *            nft/) interpreted into sets, maps and chain flags, all or
 *            nothing, with the kernel's ENOENT on a missing element; the
 *            flow sets with their timeouts; failures on demand
 *   net.c    the network: rackd's ruleset applied to every segment
 *            (diverted to the queue or not, spliced), the wire between
 *            the hosts
 *   kernel.c the local kernel's sockets and their TCP
 *   pool.c   the addresses and ports flows are made of
 *   peer.c   the remote hosts: a kernel and, optionally, a well-behaved
 *            peer rackd that answers with valid MACs
 *   peer_setup.c  that rackd's set-up: a host key, a Noise XX handshake
 *            and host pairs (or the anonymous exchange of a rackd
 *            before host keys), retransmitted as rackd does
 *   raw.c    segments crafted from the input, valid or not
 *   check.c  the invariants checked after every step
 *
 * wrap_*.c compile a few of rackd's own files with names redirected
 * (wrap.h). Everything is one instance, reset for every input.
 */
#ifndef RACKS_FUZZ_ENGINE_H
#define RACKS_FUZZ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "hostpair.h"
#include "keys.h"
#include "noise.h"
#include "rackd.h"
#include "rtnl.h"

/* ---- the fuzz input ---- */

struct fz_input {
	const uint8_t *data;
	size_t len, pos;
};

uint8_t fz_u8(struct fz_input *in);
uint16_t fz_u16(struct fz_input *in);

/* A property rackd must keep: print, then abort, so libFuzzer keeps the
 * input (the sanitizers catch memory errors themselves). */
#define FZ_CHECK(cond, ...)                                             \
	do {                                                            \
		if (!(cond))                                            \
			fz_violation(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)
__attribute__((noreturn, format(printf, 4, 5)))
void fz_violation(const char *file, int line, const char *cond,
		  const char *fmt, ...);
/* Whether bug ID is listed in RACKS_FUZZ_KNOWN: its check steps aside
 * (long runs looking for others; tests/fuzz/BUGS.md). */
bool fz_known(const char *id);
/* A debug line on stderr when RACKS_FUZZ_LOG is set (reproducing). */
__attribute__((format(printf, 1, 2)))
void fz_trace(const char *fmt, ...);
extern bool fz_tracing;

/* Deterministic randomness for everything (libsodium's included, see
 * fake.c): an input always runs the same way. */
void fz_rng_seed(uint64_t seed);
uint32_t fz_rand(void);

/* ---- addresses: a small pool, so that flows collide often (pool.c) ---- */

#define FZ_LOCAL_ADDRS 2	/* per family */
#define FZ_REMOTE_ADDRS 3	/* per family: the third is where peers move */
#define FZ_FLOWS 32

/* Local address I of family F (0: IPv4, 1: IPv6), its link's ifindex. */
const struct addr *fz_local_addr(int f, int i);
uint32_t fz_local_ifindex(int i);
const struct addr *fz_remote_addr(int f, int i);
uint16_t fz_local_port(int i);
uint16_t fz_remote_port(int i);
/* Flow N (a socket tuple of the pool): its endpoints, and back. */
void fz_flow_endpoints(unsigned n, struct endpoint *local,
		       struct endpoint *remote);
int fz_flow_of(const struct endpoint *local, const struct endpoint *remote);
/* The pool index of local (remote) address A, -1 if none. */
int fz_local_index(const struct addr *a);
int fz_remote_index(const struct addr *a);
/* Local address A is on an interface (the wire reaches it), kept on
 * "lo" by rackd, cut off the network (fz_cut). */
bool fz_present(const struct addr *a);
bool fz_kept(const struct addr *a);
bool fz_is_cut(const struct addr *a);
void fz_pool_init(void);

/* A TCP segment, taken apart and built again (the real inject_build). */
#define FZ_PAYLOAD_MAX 1100
struct fz_seg {
	struct endpoint src, dst;
	uint32_t seq, ack;
	uint8_t flags, tos;
	uint16_t window;
	uint8_t opt[40];
	size_t optlen;
	uint8_t payload[FZ_PAYLOAD_MAX];
	size_t paylen;
};
struct packet;
bool fz_seg_parse(const uint8_t *pkt, size_t len, struct fz_seg *s,
		  struct packet *p);
size_t fz_seg_build(const struct fz_seg *s, uint8_t *out, size_t size);
/* The first kind-254 option (what nft's "tcp option @254" reads). */
const uint8_t *fz_exp_option(const struct fz_seg *s, size_t *len);
bool fz_racks_exid(const uint8_t *o, size_t len);

/* ---- fake kernel I/O (fake.c, host.c) ---- */

extern uint64_t fz_now;
extern struct rackd *fz_d;

/* Run the timers due now, as the event loop does before each event;
 * false once the input's budget of timer runs is spent. */
bool fz_run_due(void);
/* Move the clock by MS, running every timer on the way at its time; the
 * wire is drained between them when the network is in auto mode. */
void fz_advance(uint64_t ms);
/* Timers still armed, for the invariants: the heap itself. */
size_t fz_timer_count(void);
struct timer *fz_timer_at(size_t i);

/* Hand a packet to rackd through queue WHICH, as the kernel would: HOOK
 * (NF_INET_PRE_ROUTING or NF_INET_LOCAL_OUT), SKBINFO flags, its MARK.
 * The verdict comes back (NF_ACCEPT, NF_DROP or NF_REPEAT); an accepted
 * packet may have been replaced: OUT (OUTSIZE bytes) receives what goes
 * on. The fail-open queue takes handshakes, probes and flows being
 * adopted; the strict one racks' messages and held segments. */
enum { FZ_QUEUE, FZ_QUEUE_STRICT };
struct fz_verdict {
	uint32_t verdict;
	bool replaced;
	size_t len;		/* of what goes on */
	uint32_t mark;		/* NF_REPEAT's */
};
struct fz_verdict fz_queue_packet(int which, uint8_t hook,
				  const uint8_t *data, size_t len,
				  size_t orig_len, uint32_t skbinfo,
				  uint32_t mark, uint8_t *out, size_t outsize);

/* The local kernel's sockets (sock_diag answers from these). */
struct fz_sock {
	bool exists;
	uint8_t state;			/* TCP_ESTABLISHED, ... */
	bool active;			/* it sent the SYN */
	uint32_t isn, risn;
	uint32_t snd_una, snd_nxt, rcv_nxt;
	bool restored;			/* by CRIU: counters from these */
	uint32_t base_snd, base_rcv;
	uint32_t retrans_bytes, unacked, backoff, retransmits;
	uint8_t snd_wscale, rcv_wscale;
	uint32_t options;		/* SOCKDIAG_OPT_* */
	uint16_t mss;
	bool zero_window;		/* the peer (or a hold) closed it */
	uint64_t last_challenge;	/* challenge ACK rate limit */
	uint8_t syn_optbits;		/* its SYN's options, for a retransmission */
};
extern struct fz_sock fz_socks[FZ_FLOWS];
/* sock_diag fails with this errno (dump, progress) when nonzero. */
extern int fz_sockdiag_dump_err, fz_sockdiag_progress_err;

/* rtnetlink: the handlers daemon.c installed. */
void fz_rtnl_link(const struct rtnl_link_event *ev);
void fz_rtnl_addr(const struct rtnl_addr_event *ev);
/* Local addresses present (bit per pool index, per family) and the
 * preferred source per family (route); local_source() answers from it. */
extern unsigned fz_addr_present[2];
extern int fz_route[2];
/* Addresses rackd keeps on "lo" (lohost_add), per family. */
extern unsigned fz_lo_kept[2];

/* A raw segment rackd sent (inject_send), built by the real builder and
 * checked; the network takes it from here (UNSPLICED: past the splices). */
void fz_net_injected(const uint8_t *pkt, size_t len, bool unspliced);
void fz_net_unreachable(const struct endpoint *local,
			const struct endpoint *remote, uint32_t seq);

/* Events posted (the control socket's stream subscriber), per type,
 * in this input and overall (the states reached). */
extern uint64_t fz_events[EVENT_MAX], fz_events_total[EVENT_MAX];

void fz_fake_reset(void);
/* After daemon_stop(): every timer cancelled, nothing left behind but
 * what a hand-over leaves to the next rackd (HANDED_OVER possible). */
void fz_fake_stopped(bool handed_over);

/* ---- nftables (nft.c) ---- */

/* Which kinds of nft operations fail next, and how many times. */
enum {
	FZ_NFT_RUN = 1,		/* ruleset_run: holds, splices, chains */
	FZ_NFT_OFFER = 2,	/* the offered set */
	FZ_NFT_ADOPT = 4,	/* the adopt sets */
	FZ_NFT_INSTALL = 8,	/* ruleset_install (reload) */
};
void fz_nft_fail(unsigned kinds, unsigned count);
/* Whether an nft failure was ever injected in this input: the sets may
 * then disagree with rackd's books by design. */
extern bool fz_nft_failed;

/* The chains' rules in force (ruleset_chains_write's flags). */
struct fz_chains {
	bool held_out, held_in, adopt_out, splice_in, splice_out;
};
extern struct fz_chains fz_chains;
extern bool fz_table;		/* the table exists */
/* What the table script (ruleset_script()) says, as far as the network
 * model follows it: a strict queue for racks' messages and held
 * segments, a mark test on the probe FIN rule. */
struct fz_rules {
	bool strict, probe_fin_marked;
};
extern struct fz_rules fz_rules;

bool fz_nft_held(const struct endpoint *local, const struct endpoint *remote);
bool fz_nft_adopting(const struct endpoint *local,
		     const struct endpoint *remote);
bool fz_nft_offered(const struct endpoint *local,
		    const struct endpoint *remote);
unsigned fz_nft_held_count(void);
/* Splice maps, as the kernel's rules apply them: outgoing from the
 * socket's tuple to the wire's, incoming back; false when no entry. */
bool fz_nft_splice_out(struct endpoint *src, struct endpoint *dst);
bool fz_nft_splice_in(struct endpoint *src, struct endpoint *dst);
/* Whether the maps hold entries for the socket tuple, and where to. */
bool fz_nft_spliced(const struct endpoint *local, const struct endpoint *remote,
		    struct endpoint *wire_local, struct endpoint *wire_remote);
unsigned fz_nft_splice_count(void);
void fz_nft_reset(void);

/* ---- the network (net.c) ---- */

/* A segment on the wire between this host and the remote ones. */
#define FZ_PKT_MAX 1600
struct fz_pkt {
	bool to_peer;
	size_t len;
	uint8_t data[FZ_PKT_MAX];
};

extern bool fz_auto;		/* deliver the wire after every step */
/* Whether the wire loses W as it delivers it (a middlebox), when set. */
extern bool (*fz_net_loses)(const struct fz_pkt *w);
extern unsigned fz_cut;		/* local address indexes cut off (bits) */

/* A segment a socket of this host sends: through rackd's output rules
 * (queue or not), the splice, the wire. */
void fz_net_output(const uint8_t *pkt, size_t len);
/* A segment arriving for this host: prerouting (queue or not), the
 * splice, the local kernel. SKBINFO as the queue reports it, with
 * FZ_BAD_CSUM: its checksum is corrupted on the way. */
#define FZ_BAD_CSUM 0x80000000u
void fz_net_input(const uint8_t *pkt, size_t len, uint32_t skbinfo,
		  size_t orig_len);
/* The local kernel sends S (after the current step, net.c's backlog). */
void fz_host_emit(const struct fz_seg *s);
/* What the backlog holds, handled now. */
void fz_net_settle(void);
/* Put a remote host's segment on the wire towards this host. */
void fz_net_from_peer(const uint8_t *pkt, size_t len);
/* Deliver (or drop, DROP) the wire's first segment; false when empty. */
bool fz_net_deliver(bool drop);
/* The segments on the wire, and the I-th of them (0 first, NULL when
 * none); deliver the I-th ahead of the others. */
unsigned fz_net_wire_count(void);
const struct fz_pkt *fz_net_wire_at(unsigned i);
bool fz_net_deliver_at(unsigned i, bool drop);
void fz_net_drain(void);
/* Duplicate, or move to the back, the wire's first segment. */
void fz_net_dup(void);
/* A copy of the I-th at the back. */
void fz_net_dup_at(unsigned i);
void fz_net_rotate(void);
/* ---- the local kernel (kernel.c) ---- */

/* A segment that passed prerouting, for a socket of this host. */
void fz_kernel_receive(const struct fz_seg *s);
/* A socket of flow N connects, sends, retransmits. */
void fz_kernel_connect(unsigned n, uint32_t isn, uint8_t optbits);
void fz_kernel_send(unsigned n, unsigned len, bool fin);
void fz_kernel_retransmit(unsigned n);
/* A socket established before rackd knew it (adoption's case). */
void fz_kernel_established(unsigned n, uint32_t isn, uint32_t risn,
			   bool active);
void fz_net_reset(void);

/* Build a TCP segment (real inject_build); returns its length or 0. */
struct inject_segment;
size_t fz_build(const struct inject_segment *seg, uint8_t *out, size_t size);
/* libsodium's randomness from fz_rand() (before sodium_init()). */
void fz_rng_install(void);

/* ---- the remote hosts (peer.c) ---- */

/* What a rackd with host keys says in its SYN or SYN-ACK (option.h),
 * and hears in the other's: the nonces and host pairs. */
struct fz_offer {
	bool made;		/* nonce and host pair chosen (sent) */
	bool short_form;	/* ours: the flag alone (no room: TCP-MD5) */
	bool heard_long;	/* the other's speaks host keys (long form,
				 * or the short one with the flag) */
	uint8_t nonce_local[EDP_NONCE_LEN], nonce_remote[EDP_NONCE_LEN];
	uint32_t hp_sent, hp_heard;
};

/* A Noise XX handshake under way (rackd's hostauth.c): the peer's
 * message being put together from its fragments, our last one. */
struct fz_hs {
	bool on, done;
	struct noise_hs noise;
	uint8_t in[EDP_HS_MAX_FRAGS * EDP_HS_FRAG];
	uint8_t in_msg, in_len, in_have;
	uint8_t out[EDP_HS_MAX_FRAGS * EDP_HS_FRAG];
	uint8_t out_msg, out_len;
	uint8_t expect;		/* the message it waits for: 1 to 3 */
};

/* How a peer's connection was keyed, as rackd's key_source. */
enum fz_key_source { FZ_KEY_NONE, FZ_KEY_ANONYMOUS, FZ_KEY_EXCHANGE,
		     FZ_KEY_DERIVED };

/* A remote host's view of flow N: its kernel socket and its rackd. */
struct fz_peer {
	bool racks;		/* runs rackd */
	bool silent;		/* its rackd answers nothing (hung) */
	struct endpoint wire;	/* its address and port now */
	struct endpoint ours;	/* where it sends to: our end as it knows it */
	/* its kernel's socket (a classic EDP probe's: DSCP LE) */
	bool sock, established, active, probe;
	uint32_t isn, risn, snd_nxt, rcv_nxt;
	/* its rackd's view of the connection */
	bool syn_offered;	/* its own SYN carried racks' option */
	bool offered;		/* both SYN and SYN-ACK carried racks */
	bool setup, client, have_ours, keyed, connected, wait_done;
	bool adopting;
	/* A rackd with host keys (peer_setup.c), else one before them: the
	 * short option and the anonymous exchange only. */
	bool hostkeys;
	struct fz_offer offer;
	struct fz_hs hs;
	enum fz_key_source source;
	uint32_t hp_id;		/* the host pair its key came from */
	/* Its set-up's retransmission (as rackd's setup_retry()): when,
	 * the interval, how many so far. */
	uint64_t retry_at, retry_ms;
	unsigned retries;
	struct edp_keypair kp;
	struct edp_transcript t;
	uint8_t key[EDP_SECRET_LEN];
	uint64_t conn_id;
	uint32_t hb_out, hb_in, hb_acked;
	bool away;		/* told that our end is moving */
	/* Our reconnection it answered: where from, the challenge; the
	 * challenges of earlier claims (a late answer may confirm one). */
	bool claim;
	struct endpoint claim_from, claim_to;
	uint8_t challenge[EDP_CHALLENGE_LEN];
	uint8_t old_challenges[4][EDP_CHALLENGE_LEN];
	unsigned nold;
	bool tainted;		/* raw segments touched it: keys may differ */
};
extern struct fz_peer fz_peers[FZ_FLOWS];
/* rackd's messages the peers could not verify (set-up raced by stale
 * messages, or raw segments), across inputs. */
extern uint64_t fz_peer_unverified;
/* rackd's confirmations of an earlier claim's challenge, sent late from
 * where the connection is now (refused by the peer, MAC right). */
extern uint64_t fz_peer_stale_confirms;

/*
 * The remote hosts' rackd (peer_setup.c): one host key for all of them
 * (one machine, several addresses), fixed per input, replaced on demand;
 * the host pairs it made with our rackd, newest first (as many as rackd
 * keeps per peer), offered as client once a set-up keyed from them
 * completed (confirmed, as rackd's host_pairs_confirm()); and its trust,
 * accept-new (any host key: the model never refuses one) or anonymous
 * (it offers no host pair, and keys with KEY).
 */
#define FZ_MODEL_PAIRS 3
struct fz_model_pair {
	uint32_t id;
	bool confirmed;
	uint8_t secret[EDP_HOSTPAIR_SECRET_LEN];
	uint8_t peer_pk[EDP_KEY_LEN];	/* our rackd's host key */
};
struct fz_model {
	bool hostkeys;		/* peers start as rackds with host keys */
	bool anonymous;		/* their trust is anonymous */
	uint32_t seed;
	unsigned generation;	/* of the host key */
	uint8_t sk[EDP_KEY_LEN], pk[EDP_KEY_LEN];
	struct fz_model_pair pairs[FZ_MODEL_PAIRS];
	unsigned npairs;
};
extern struct fz_model fz_model;
/* Across inputs: the model's host handshakes finished, its connections
 * keyed from a host pair, anonymously, its handshakes that failed (a
 * fragment of another, damaged or forged). */
extern uint64_t fz_model_exchanges, fz_model_derived, fz_model_anonymous,
	fz_model_hs_failed;

/* Before fz_peer_reset(): the remote hosts' rackd for this input. */
void fz_model_reset(bool hostkeys, bool anonymous, uint32_t seed);
/* Its host gets a new host key: its host pairs go (rackd still has
 * them, for a key it no longer holds). Or it loses its host pairs only
 * (its file gone, or our host key removed from its trust). */
void fz_model_new_key(void);
void fz_model_forget_pairs(void);
/* The host pair both ends hold (what a finished handshake leaves):
 * SECRET given, our rackd's host key RACKD_PK; its id. Not confirmed
 * yet: a connection keyed from it has to complete first. */
uint32_t fz_model_add_pair(const uint8_t *secret, const uint8_t *rackd_pk);

/* peer.c and peer_setup.c between them. */
void fz_peer_clear(struct fz_peer *p);
void fz_peer_send_msg(const struct fz_peer *p, const struct edp_msg *m);
/* A message of rackd's that P verified (OK) or not, named WHAT. */
void fz_peer_verified(const struct fz_peer *p, bool ok, const char *what);
/* P's racks option of TYPE (SYN, SYNACK) into M: the long form for a
 * rackd with host keys, nonce and host pair chosen at the first; the
 * short one with the host-keys flag when SHORT_FORM (no room). */
void fz_peer_offer(struct fz_peer *p, uint8_t type, bool short_form,
		   struct edp_msg *m);
/* rackd's SYN or SYN-ACK option M: its nonce and host pair, the first
 * copy's. */
void fz_peer_heard(struct fz_peer *p, const struct edp_msg *m);
/* Set-up begins (CLIENT: P sends first), after the handshake or an
 * agreed adoption; a set-up message of rackd's for P. */
void fz_peer_setup_start(struct fz_peer *p, bool client);
void fz_peer_setup_message(struct fz_peer *p, const struct edp_msg *m);
/* The input makes P say it again: WHAT 1 its first message (KEY, or
 * its last host handshake message), 2 CONFIRM, 3 DONE. */
void fz_peer_setup_again(struct fz_peer *p, int what);
/* The peers' retransmission timers: the next due (UINT64_MAX: none),
 * and those due now run (fake.c's fz_advance()). */
uint64_t fz_peer_next_due(void);
void fz_peer_run_due(void);

/* A segment from this host reaches the remote hosts. */
void fz_peer_receive(const uint8_t *pkt, size_t len);
/* The remote app of flow N connects (with racks' option if its host
 * runs rackd, a probe's DSCP with PROBE). OPTBITS: 1 the usual options
 * first, 0x20 no racks option, 0x40 the short form with the host-keys
 * flag (no room for more). */
void fz_peer_connect(unsigned n, uint32_t isn, uint8_t optbits, bool probe);
/* Its kernel retransmits its SYN (same ISN, without racks' option: its
 * rackd offers in the first SYN only). */
void fz_peer_retransmit_syn(unsigned n);
void fz_peer_send(unsigned n, unsigned len, bool fin);
/* Its rackd says something of its own accord (peer.c's table). */
void fz_peer_message(unsigned n, uint8_t what, uint8_t arg);
/* Its host moves to remote address AI, port PI (and says so). */
void fz_peer_move(unsigned n, int ai, int pi, bool reconnect);
void fz_peer_forget(unsigned n);
/* Numbered message M of TYPE from P's rackd, MAC and all; the options
 * of a reconnection SYN of TYPE (rcsyn.h's layout). */
struct edp_msg;
void fz_peer_numbered(const struct fz_peer *p, uint8_t type, uint32_t counter,
		      struct edp_msg *m);
size_t fz_rcsyn_options(uint8_t type, uint32_t tsecr, uint8_t *o);
/* A segment of flow N crafted from the input, valid or not (raw.c). */
void fz_peer_raw(unsigned n, struct fz_input *in);
void fz_peer_reset(void);

/* ---- the invariants (check.c) ---- */

void fz_check(struct rackd *d);
void fz_check_input_done(void);
/* The configuration changed or connections were restored: those there
 * now may be more than max_connections says. */
void fz_check_bound_changed(struct rackd *d);
/* Counted across inputs: the states rackd's connections reached. */
void fz_check_stats_print(void);

#endif
