/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the sock_ops program (racks_sockops.bpf.c) and its loader
 * (rackd/io/bpfopt.c) share: racks' option as the program writes it, the
 * maps' keys, the ring buffer's record and the counters. Included by BPF
 * code after vmlinux.h (which has the __u types) and by user space, where
 * <linux/types.h> has them. The program cannot include edp/option.h
 * (libc's stdint.h clashes with vmlinux.h): bpfopt.c asserts at compile
 * time that the values below are option.h's.
 */
#ifndef RACKS_BPF_SOCKOPS_H
#define RACKS_BPF_SOCKOPS_H

#include <linux/types.h>

#define RACKS_BPF_OPT_KIND 254		/* EDP_OPT_KIND */
#define RACKS_BPF_EXID 0x7261		/* EDP_EXID */
#define RACKS_BPF_VERSION 1		/* EDP_VERSION */
#define RACKS_BPF_SYN 1			/* EDP_SYN */
#define RACKS_BPF_SYNACK 2		/* EDP_SYNACK */
#define RACKS_BPF_NONCE_LEN 8		/* EDP_NONCE_LEN */
/* The long form: header (5), flags, host pair, nonce; the short form
 * (a TCP-MD5 signature leaves 8 bytes): header and flags. */
#define RACKS_BPF_LONG_LEN 18
#define RACKS_BPF_SHORT_LEN 6
/* What each takes on the wire, NOP-padded (EDP_OFFER_SIZE). */
#define RACKS_BPF_LONG_SIZE 20
#define RACKS_BPF_SHORT_SIZE 8
#define RACKS_BPF_HOSTKEYS 0x01		/* EDP_OFFER_HOSTKEYS */

/* racks' SYN / SYN-ACK option, byte for byte as edp_option_build()
 * writes it (without its padding, which the kernel adds). */
struct racks_bpf_opt {
	__u8 kind;
	__u8 len;
	__u8 exid[2];		/* big-endian */
	__u8 ver_type;		/* version << 4 | type */
	__u8 flags;
	__u8 hp_id[4];		/* big-endian; absent in the short form */
	__u8 nonce[RACKS_BPF_NONCE_LEN];
};

/* A peer address, the key of the offer map: as common/addr.h's struct
 * addr lays it out (IPv4 in the first four bytes), family apart.
 * IPv4-mapped IPv6 peers are looked up as IPv4. */
struct racks_bpf_addr {
	__u32 family;		/* AF_INET or AF_INET6 */
	__u32 addr[4];		/* network byte order */
};

enum racks_bpf_kind {
	RACKS_BPF_PLAIN = 0,	/* the peer sent no (valid) racks option */
	RACKS_BPF_RACKS = 1,	/* both ends offered racks */
};

enum racks_bpf_side {
	RACKS_BPF_ACTIVE = 0,	/* this host sent the SYN */
	RACKS_BPF_PASSIVE = 1,	/* this host answered it */
};

/* One record per connection of the namespace, pushed to the ring buffer
 * when it is established. Addresses as struct racks_bpf_addr's; ports
 * and sequence numbers in host byte order. */
struct racks_bpf_event {
	__u8 kind;		/* enum racks_bpf_kind */
	__u8 side;		/* enum racks_bpf_side */
	__u8 peer_flags;	/* the peer option's flags byte */
	__u8 peer_long;		/* the peer's option had host pair, nonce */
	__u8 local_long;	/* ours had (not when it needed the short form) */
	__u8 syn_retrans;	/* active: our SYN was retransmitted (so the
				 * SYN-ACK may answer a plain copy) */
	__u8 pad[2];
	__u32 family;
	__u16 local_port, remote_port;
	__u32 local_addr[4], remote_addr[4];
	__u32 local_isn, remote_isn;
	__u32 hp_sent;		/* the host pair our option named (0: none) */
	__u32 hp_peer;		/* the one the peer's named */
	__u8 nonce_local[RACKS_BPF_NONCE_LEN];
	__u8 nonce_peer[RACKS_BPF_NONCE_LEN];
};

/* Per-CPU counters (map "counters"), summed by the loader. */
enum racks_bpf_counter {
	RACKS_BPF_CNT_WRITTEN_SYN,	/* options written in SYNs */
	RACKS_BPF_CNT_WRITTEN_SYNACK,	/* ... in SYN-ACKs */
	RACKS_BPF_CNT_PARSED,		/* peer options read and accepted */
	RACKS_BPF_CNT_PARSE_BAD,	/* racks' ExID, but malformed */
	RACKS_BPF_CNT_EVENTS_RACKS,	/* records pushed: racks */
	RACKS_BPF_CNT_EVENTS_PLAIN,	/* records pushed: plain */
	RACKS_BPF_CNT_RINGBUF_FULL,	/* records lost: ring buffer full */
	RACKS_BPF_CNT_FOREIGN,		/* calls for another namespace */
	RACKS_BPF_CNT_LOCAL,		/* loopback connections left alone */
	RACKS_BPF_CNT_NO_ROOM,		/* SYN or SYN-ACK without option room */
	RACKS_BPF_CNT_NO_STATE,		/* sk storage / pending map refused */
	RACKS_BPF_CNT_QUIET,		/* records pushed without a wake-up */
	RACKS_BPF_CNT_PASSIVE_PLAIN,	/* plain clients of ours: no record */
	RACKS_BPF_CNT_LAZY,		/* plain records left for rackd's
					 * next reading (no wake-up) */
	RACKS_BPF_CNT_MAX
};

#endif
