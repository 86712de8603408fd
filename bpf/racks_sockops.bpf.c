// SPDX-License-Identifier: GPL-2.0-only
/*
 * racks' option written and read by the kernel (issue 23): a sock_ops
 * program attached to a cgroup v2 directory. For the sockets of one
 * network namespace (netns_cookie, set by the loader), it offers racks in
 * SYNs, answers an offer in SYN-ACKs, with the bytes edp_option_build()
 * writes, and reports each connection once it is established, racks or
 * plain, through the ring buffer "events". Then it clears its callback
 * flags: data segments never run it.
 *
 *   active (connect)                         passive (listen)
 *   TCP_CONNECT_CB: sk storage, WRITE flag   TCP_LISTEN_CB: WRITE flag
 *   HDR_OPT_LEN_CB (SYN): reserve 20
 *   WRITE_HDR_OPT_CB (SYN): nonce, offer
 *                                            HDR_OPT_LEN_CB (SYN-ACK):
 *                                              reserve if the SYN offered
 *                                            WRITE_HDR_OPT_CB (SYN-ACK):
 *                                              the SYN's option, echo,
 *                                              nonce -> map "pending"
 *   ACTIVE_ESTABLISHED_CB: the SYN-ACK's     PASSIVE_ESTABLISHED_CB:
 *     option -> record; flags cleared          "pending" -> record;
 *                                              flags cleared
 *
 * Facts of the API this rests on (bpf/README.md has more):
 * - The SYN-ACK is written for a request socket with the listener's
 *   programs and flags: no sk storage and no bpf_setsockopt there, so
 *   what the passive side must remember until the third ACK (its nonce,
 *   the peer's option) goes to an LRU hash keyed by the 4-tuple. The
 *   SYN's option is read while the SYN-ACK is written
 *   (BPF_LOAD_HDR_OPT_TCP_SYN): in syncookie mode the only moment the SYN
 *   exists.
 * - PARSE_HDR_OPT_CB never runs in SYN_SENT, SYN_RECV or LISTEN
 *   (tcp_input.c, bpf_skops_parse_hdr): the SYN-ACK's option is read in
 *   ACTIVE_ESTABLISHED_CB, whose skb is the SYN-ACK. So the program does
 *   not ask for the parse callbacks at all.
 * - HDR_OPT_LEN_CB also runs without a packet, for tcp_current_mss():
 *   answered with the largest option, so an MSS is never too large for a
 *   segment that carries it.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "racks_sockops.h"

#define AF_INET 2
#define AF_INET6 10
#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10
#define ENOENT 2
#define ENOMSG 42
/* The callbacks this program asks for, and clears when established.
 * Bits of other programs on the same cgroup stay as they are. */
#define OUR_CB_FLAGS BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG

/* The namespace whose sockets are ours (SO_NETNS_COOKIE of a socket made
 * in it): the test-bed's namespaces, and a host's containers, share one
 * cgroup tree, so the cgroup alone does not say whose a socket is. */
const volatile __u64 netns_cookie = 0;
/* The flags byte of our offers; rackd may change it at any time (the
 * skeleton maps .data). */
__u8 offer_flags = RACKS_BPF_HOSTKEYS;
/* Nonzero while rackd reads the ring in rounds (a timer 1 ms apart,
 * rackd/optpath.c): a record then wakes nobody (BPF_RB_NO_WAKEUP), the
 * next round takes it. Waking rackd for each record of a burst costs
 * the connections' own CPU time on a small machine (bpf/README.md). */
__u32 reader_busy = 0;

/* Peer address -> the host pair a SYN to it names (absent: 0). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct racks_bpf_addr);
	__type(value, __u32);
} offer_ids SEC(".maps");

/* Host pairs this host has: a SYN-ACK echoes the SYN's if it is here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} known_ids SEC(".maps");

/* The active side's offer, from connect() to ESTABLISHED: made for
 * the first SYN only (retransmissions go out plain). */
struct active_state {
	__u8 nonce[RACKS_BPF_NONCE_LEN];
	__u32 hp_sent;
	__u8 made;		/* nonce and host pair chosen */
	__u8 local_long;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct active_state);
} active SEC(".maps");

/* The passive side's answer, from its SYN-ACK to the third ACK. */
struct pending_key {
	__u32 family;
	__u16 local_port, remote_port;
	__u32 local_addr[4], remote_addr[4];
};

struct pending {
	__u32 remote_isn;	/* of the SYN answered: tells a new one */
	__u32 hp_sent, hp_peer;
	__u8 nonce_local[RACKS_BPF_NONCE_LEN];
	__u8 nonce_peer[RACKS_BPF_NONCE_LEN];
	__u8 peer_flags, peer_long, local_long;
};

/* LRU: a SYN-ACK whose ACK never comes (a scan, a flood in syncookie
 * mode) leaves an entry behind that only eviction removes. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pending_key);
	__type(value, struct pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);	/* the loader may resize it */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RACKS_BPF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &what);

	if (v)
		(*v)++;
}

/* The socket's addresses and ports; IPv4-mapped IPv6 as IPv4, as the
 * queue path sees those connections' packets. */
static __always_inline void tuple(const struct bpf_sock_ops *skops,
				  struct pending_key *k)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->local_port = (__u16)skops->local_port;
	k->remote_port = (__u16)(bpf_ntohl(skops->remote_port) & 0xffff);
	if (skops->family == AF_INET) {
		k->family = AF_INET;
		k->local_addr[0] = skops->local_ip4;
		k->remote_addr[0] = skops->remote_ip4;
		return;
	}
	k->remote_addr[0] = skops->remote_ip6[0];
	k->remote_addr[1] = skops->remote_ip6[1];
	k->remote_addr[2] = skops->remote_ip6[2];
	k->remote_addr[3] = skops->remote_ip6[3];
	k->local_addr[0] = skops->local_ip6[0];
	k->local_addr[1] = skops->local_ip6[1];
	k->local_addr[2] = skops->local_ip6[2];
	k->local_addr[3] = skops->local_ip6[3];
	if (k->remote_addr[0] == 0 && k->remote_addr[1] == 0 &&
	    k->remote_addr[2] == bpf_htonl(0xffff)) {
		k->family = AF_INET;
		k->local_addr[0] = k->local_addr[3];
		k->remote_addr[0] = k->remote_addr[3];
		k->local_addr[1] = k->local_addr[2] = k->local_addr[3] = 0;
		k->remote_addr[1] = k->remote_addr[2] = k->remote_addr[3] = 0;
		return;
	}
	k->family = AF_INET6;
}

/* A connection inside the host (to 127/8, ::1 or to its own address,
 * which the kernel routes over lo): the queue path's rules skip
 * loopback, and so does this. */
static __always_inline bool local_conn(const struct pending_key *k)
{
	if (k->family == AF_INET)
		return (bpf_ntohl(k->remote_addr[0]) >> 24) == 127 ||
		       k->remote_addr[0] == k->local_addr[0];
	if (k->remote_addr[0] == 0 && k->remote_addr[1] == 0 &&
	    k->remote_addr[2] == 0 && k->remote_addr[3] == bpf_htonl(1))
		return true;
	return k->remote_addr[0] == k->local_addr[0] &&
	       k->remote_addr[1] == k->local_addr[1] &&
	       k->remote_addr[2] == k->local_addr[2] &&
	       k->remote_addr[3] == k->local_addr[3];
}

static __always_inline void nonce_new(__u8 *nonce)
{
	/* Not a cryptographic generator (bpf/README.md): the nonces are
	 * public and need only never repeat between connections. */
	__u32 a = bpf_get_prandom_u32(), b = bpf_get_prandom_u32();

	__builtin_memcpy(nonce, &a, 4);
	__builtin_memcpy(nonce + 4, &b, 4);
}

/*
 * The peer's racks option of TYPE, from the packet (ACTIVE_ESTABLISHED:
 * the SYN-ACK) or from the SYN (FLAGS BPF_LOAD_HDR_OPT_TCP_SYN, while
 * the SYN-ACK is written). Returns its length (long or short form), 0
 * when there is none or it is malformed (counted: edp_option_parse()
 * would refuse it too), -ENOENT when the SYN is not at hand (a
 * retransmitted SYN-ACK).
 */
static __always_inline int peer_option(struct bpf_sock_ops *skops,
				       struct racks_bpf_opt *o, __u8 type,
				       __u64 flags)
{
	int len;

	__builtin_memset(o, 0, sizeof(*o));
	o->kind = RACKS_BPF_OPT_KIND;
	o->len = 4;		/* search by kind and the 16-bit ExID */
	o->exid[0] = RACKS_BPF_EXID >> 8;
	o->exid[1] = RACKS_BPF_EXID & 0xff;
	len = bpf_load_hdr_opt(skops, o, sizeof(*o), flags);
	if (len == -ENOENT)
		return -ENOENT;
	if (len == -ENOMSG)
		return 0;
	if ((len != RACKS_BPF_LONG_LEN && len != RACKS_BPF_SHORT_LEN) ||
	    o->ver_type != (RACKS_BPF_VERSION << 4 | type)) {
		count(RACKS_BPF_CNT_PARSE_BAD);
		return 0;
	}
	count(RACKS_BPF_CNT_PARSED);
	return len;
}

static __always_inline __u32 get_be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static __always_inline void put_be32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* Our option of TYPE into the reserved room (the context does not say
 * how much that is: bpf_store_hdr_opt() refuses what does not fit): the
 * long form where it fits, else the short one, flags alone, as the queue
 * path does when a TCP-MD5 signature leaves 8 bytes. Returns the form
 * written (its length) or 0. */
static __always_inline int store_offer(struct bpf_sock_ops *skops, __u8 type,
				       __u32 hp_id, const __u8 *nonce)
{
	struct racks_bpf_opt o = {
		.kind = RACKS_BPF_OPT_KIND,
		.len = RACKS_BPF_LONG_LEN,
		.exid = { RACKS_BPF_EXID >> 8, RACKS_BPF_EXID & 0xff },
		.ver_type = RACKS_BPF_VERSION << 4 | type,
		.flags = offer_flags,
	};

	put_be32(o.hp_id, hp_id);
	__builtin_memcpy(o.nonce, nonce, RACKS_BPF_NONCE_LEN);
	if (bpf_store_hdr_opt(skops, &o, RACKS_BPF_LONG_LEN, 0)) {
		o.len = RACKS_BPF_SHORT_LEN;
		if (bpf_store_hdr_opt(skops, &o, RACKS_BPF_SHORT_LEN, 0))
			return 0;
	}
	count(type == RACKS_BPF_SYN ? RACKS_BPF_CNT_WRITTEN_SYN :
				      RACKS_BPF_CNT_WRITTEN_SYNACK);
	return o.len;
}

/* Room for the long form, else the short one. */
static __always_inline void reserve_offer(struct bpf_sock_ops *skops)
{
	if (bpf_reserve_hdr_opt(skops, RACKS_BPF_LONG_SIZE, 0) &&
	    bpf_reserve_hdr_opt(skops, RACKS_BPF_SHORT_SIZE, 0))
		count(RACKS_BPF_CNT_NO_ROOM);
}

static __always_inline void clear_ours(struct bpf_sock_ops *skops)
{
	bpf_sock_ops_cb_flags_set(skops,
				  skops->bpf_sock_ops_cb_flags & ~OUR_CB_FLAGS);
}

/* --- active side ------------------------------------------------------- */

static __always_inline void on_connect(struct bpf_sock_ops *skops,
				       const struct pending_key *k)
{
	struct bpf_sock *sk = skops->sk;

	(void)k;
	if (!sk)
		return;
	if (!bpf_sk_storage_get(&active, sk, NULL,
				BPF_SK_STORAGE_GET_F_CREATE)) {
		count(RACKS_BPF_CNT_NO_STATE);
		return;
	}
	bpf_sock_ops_cb_flags_set(skops,
				  skops->bpf_sock_ops_cb_flags | OUR_CB_FLAGS);
}

static __always_inline void write_syn(struct bpf_sock_ops *skops,
				      const struct pending_key *k)
{
	struct racks_bpf_addr peer = { .family = k->family };
	struct bpf_sock *sk = skops->sk;
	struct active_state *st;
	__u32 *id;

	/* One load of skops->sk, tested and used: the verifier tracks the
	 * NULL check on that register only. */
	if (!sk)
		return;
	st = bpf_sk_storage_get(&active, sk, NULL, 0);
	if (!st)
		return;
	/* Only the first SYN offers racks, as on the queue path: if a
	 * middlebox drops SYNs with unknown options, the kernel's
	 * retransmission goes out plain and the connection still opens
	 * (and is adopted later). */
	if (st->made)
		return;
	__builtin_memcpy(peer.addr, k->remote_addr, sizeof(peer.addr));
	id = bpf_map_lookup_elem(&offer_ids, &peer);
	st->hp_sent = id ? *id : 0;
	nonce_new(st->nonce);
	st->made = 1;
	st->local_long = store_offer(skops, RACKS_BPF_SYN, st->hp_sent,
				     st->nonce) == RACKS_BPF_LONG_LEN;
	if (!st->local_long) {
		/* The short form names no host pair and has no nonce. */
		st->hp_sent = 0;
		__builtin_memset(st->nonce, 0, RACKS_BPF_NONCE_LEN);
	}
}

/* Room in the first SYN only: a retransmission goes out plain. */
static __always_inline void syn_len(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct active_state *st;

	if (!sk)
		return;
	st = bpf_sk_storage_get(&active, sk, NULL, 0);
	if (st && !st->made)
		reserve_offer(skops);
}

/* --- passive side ------------------------------------------------------ */

/*
 * The SYN-ACK of a request socket. Its header is built (seq, ack_seq):
 * ack_seq - 1 is the SYN's sequence number, which tells a retransmitted
 * SYN-ACK of the same SYN (same answer) from one to a new SYN of the same
 * 4-tuple (new nonce).
 */
static __always_inline void write_synack(struct bpf_sock_ops *skops,
					 const struct pending_key *k)
{
	struct tcphdr *th = skops->skb_data;
	struct racks_bpf_opt o;
	struct pending *p, fresh = {};
	__u32 remote_isn;
	int len;
	__u8 *known;

	if ((void *)(th + 1) > skops->skb_data_end)
		return;
	remote_isn = bpf_ntohl(th->ack_seq) - 1;
	p = bpf_map_lookup_elem(&pending, k);
	if (!p || p->remote_isn != remote_isn) {
		len = peer_option(skops, &o, RACKS_BPF_SYN,
				  BPF_LOAD_HDR_OPT_TCP_SYN);
		if (len <= 0)
			return;	/* the room reserved stays NOPs */
		fresh.remote_isn = remote_isn;
		fresh.peer_flags = o.flags;
		if (len == RACKS_BPF_LONG_LEN) {
			fresh.peer_long = 1;
			fresh.hp_peer = get_be32(o.hp_id);
			__builtin_memcpy(fresh.nonce_peer, o.nonce,
					 RACKS_BPF_NONCE_LEN);
		}
		/* Echo the SYN's host pair when this host has it too
		 * (setup.h); rackd's "known_ids" says which it has. */
		if (fresh.hp_peer) {
			known = bpf_map_lookup_elem(&known_ids, &fresh.hp_peer);
			if (known && *known)
				fresh.hp_sent = fresh.hp_peer;
		}
		nonce_new(fresh.nonce_local);
		if (bpf_map_update_elem(&pending, k, &fresh, BPF_ANY)) {
			count(RACKS_BPF_CNT_NO_STATE);
			return;
		}
		p = bpf_map_lookup_elem(&pending, k);
		if (!p)
			return;
	}
	p->local_long = store_offer(skops, RACKS_BPF_SYNACK, p->hp_sent,
				    p->nonce_local) == RACKS_BPF_LONG_LEN;
	if (!p->local_long) {
		p->hp_sent = 0;
		__builtin_memset(p->nonce_local, 0, RACKS_BPF_NONCE_LEN);
	}
}

static __always_inline void synack_len(struct bpf_sock_ops *skops,
				       const struct pending_key *k)
{
	struct racks_bpf_opt o;
	int len = peer_option(skops, &o, RACKS_BPF_SYN,
			      BPF_LOAD_HDR_OPT_TCP_SYN);

	/* A retransmitted SYN-ACK has no SYN at hand: it answers as the
	 * first did, which left its trace in "pending". */
	if (len > 0 || (len == -ENOENT && bpf_map_lookup_elem(&pending, k)))
		reserve_offer(skops);
}

/* --- established: one record ------------------------------------------- */

/*
 * The ISNs: both ESTABLISHED callbacks run before any data moves. The
 * active one runs in tcp_finish_connect() on the SYN-ACK, after rcv_nxt
 * was set to its sequence number + 1 and before the third ACK or any data
 * is sent: snd_nxt = ISN + 1 (the SYN's one unit). The passive one runs
 * in tcp_rcv_state_process() on the third ACK before its data, if any, is
 * queued: rcv_nxt = the SYN's sequence number + 1 and snd_nxt = our ISN
 * + 1 (the SYN-ACK's unit), in syncookie mode too. Not with TCP Fast
 * Open data in the SYN (snd_nxt is then beyond it): bpf/README.md.
 */
static __always_inline void push(struct bpf_sock_ops *skops,
				 const struct pending_key *k, __u8 side,
				 const struct pending *p)
{
	struct racks_bpf_event *ev;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count(RACKS_BPF_CNT_RINGBUF_FULL);
		return;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->side = side;
	ev->family = k->family;
	ev->local_port = k->local_port;
	ev->remote_port = k->remote_port;
	__builtin_memcpy(ev->local_addr, k->local_addr, sizeof(ev->local_addr));
	__builtin_memcpy(ev->remote_addr, k->remote_addr,
			 sizeof(ev->remote_addr));
	ev->local_isn = skops->snd_nxt - 1;
	/* Before ESTABLISHED nothing but the SYN can have been resent. */
	ev->syn_retrans = side == RACKS_BPF_ACTIVE && skops->total_retrans;
	ev->remote_isn = skops->rcv_nxt - 1;
	if (p) {
		ev->kind = RACKS_BPF_RACKS;
		ev->peer_flags = p->peer_flags;
		ev->peer_long = p->peer_long;
		ev->local_long = p->local_long;
		ev->hp_sent = p->hp_sent;
		ev->hp_peer = p->hp_peer;
		__builtin_memcpy(ev->nonce_local, p->nonce_local,
				 RACKS_BPF_NONCE_LEN);
		__builtin_memcpy(ev->nonce_peer, p->nonce_peer,
				 RACKS_BPF_NONCE_LEN);
	}
	if (reader_busy) {
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
		count(RACKS_BPF_CNT_QUIET);
	} else if (!p && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) <
		   bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 8) {
		/* A plain peer's connection: only adoption will come of it,
		 * which can wait for rackd's next reading (any wake-up, a
		 * query, the sweep), rather than take the CPU from the
		 * connection now. A ring an eighth full wakes it. */
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
		count(RACKS_BPF_CNT_LAZY);
	} else {
		/* Adaptive: wakes the reader if it had read everything. */
		bpf_ringbuf_submit(ev, 0);
	}
	count(p ? RACKS_BPF_CNT_EVENTS_RACKS : RACKS_BPF_CNT_EVENTS_PLAIN);
}

static __always_inline void active_established(struct bpf_sock_ops *skops,
					       const struct pending_key *k)
{
	struct bpf_sock *sk = skops->sk;
	struct active_state *st = NULL;
	struct racks_bpf_opt o;
	struct pending p = {};
	int len = 0;

	if (sk)
		st = bpf_sk_storage_get(&active, sk, NULL, 0);
	/* The SYN-ACK answers an offer only if we made one. */
	if (st && st->made)
		len = peer_option(skops, &o, RACKS_BPF_SYNACK, 0);
	if (len > 0) {
		p.peer_flags = o.flags;
		p.local_long = st->local_long;
		p.hp_sent = st->hp_sent;
		__builtin_memcpy(p.nonce_local, st->nonce, RACKS_BPF_NONCE_LEN);
		if (len == RACKS_BPF_LONG_LEN) {
			p.peer_long = 1;
			p.hp_peer = get_be32(o.hp_id);
			__builtin_memcpy(p.nonce_peer, o.nonce,
					 RACKS_BPF_NONCE_LEN);
		}
	}
	push(skops, k, RACKS_BPF_ACTIVE, len > 0 ? &p : NULL);
	if (st && sk)
		bpf_sk_storage_delete(&active, sk);
	clear_ours(skops);
}

static __always_inline void passive_established(struct bpf_sock_ops *skops,
						const struct pending_key *k)
{
	struct pending *p = bpf_map_lookup_elem(&pending, k);
	struct pending copy;

	/* An entry of an older SYN of this 4-tuple answers another
	 * connection: this one was plain (or its entry was evicted). */
	if (p && p->remote_isn == skops->rcv_nxt - 1) {
		copy = *p;
		push(skops, k, RACKS_BPF_PASSIVE, &copy);
	} else {
		/* A plain client of ours: rackd has nothing to do with it
		 * (the queue path never sees its SYN either); adoption, if
		 * its client's rackd asks, finds the socket by itself. */
		count(RACKS_BPF_CNT_PASSIVE_PLAIN);
	}
	if (p)
		bpf_map_delete_elem(&pending, k);
	clear_ours(skops);
}

SEC("sockops")
int racks_sockops(struct bpf_sock_ops *skops)
{
	__u32 op = skops->op;
	struct pending_key k;
	bool synack;

	switch (op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		break;
	default:
		return 1;
	}
	if (bpf_get_netns_cookie(skops) != netns_cookie) {
		count(RACKS_BPF_CNT_FOREIGN);
		return 1;
	}
	if (op == BPF_SOCK_OPS_TCP_LISTEN_CB) {
		/* Which requests get an answer is decided per SYN. */
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
					  OUR_CB_FLAGS);
		return 1;
	}
	if (op == BPF_SOCK_OPS_HDR_OPT_LEN_CB &&
	    skops->args[0] == BPF_WRITE_HDR_TCP_CURRENT_MSS) {
		/* tcp_current_mss(), no packet: the largest we write. */
		bpf_reserve_hdr_opt(skops, RACKS_BPF_LONG_SIZE, 0);
		return 1;
	}
	tuple(skops, &k);
	if (local_conn(&k)) {
		if (op != BPF_SOCK_OPS_HDR_OPT_LEN_CB &&
		    op != BPF_SOCK_OPS_WRITE_HDR_OPT_CB)
			count(RACKS_BPF_CNT_LOCAL);
		return 1;
	}
	synack = (skops->skb_tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) ==
		 (TCPHDR_SYN | TCPHDR_ACK);
	switch (op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		on_connect(skops, &k);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		if (synack)
			synack_len(skops, &k);
		else if (skops->skb_tcp_flags & TCPHDR_SYN)
			syn_len(skops);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		if (synack)
			write_synack(skops, &k);
		else if (skops->skb_tcp_flags & TCPHDR_SYN)
			write_syn(skops, &k);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		active_established(skops, &k);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		passive_established(skops, &k);
		break;
	}
	return 1;
}

char _license[] SEC("license") = "GPL";
