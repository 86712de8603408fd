/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * racks' option in the kernel: loads the sock_ops program of bpf/
 * (racks_sockops.bpf.c), attaches it to a cgroup v2 directory for the
 * sockets of one network namespace, and hands what it reports to the
 * caller. The program writes racks' SYN / SYN-ACK option (edp/option.h),
 * reads the peer's, and pushes one record per established connection of
 * the namespace (racks or plain) to a ring buffer that the caller drains
 * from its event loop (bpfopt_fd(), bpfopt_drain()).
 *
 * The attachment is a BPF link (multi-attach: several rackds, one per
 * namespace, on one cgroup): it goes when bpfopt_free() closes it, or
 * when the process dies, and the kernel's sockets go back to plain TCP.
 * Right after it, listeners that were already listening get the
 * program's flag too (struct bpfopt_listeners).
 *
 * Where the program cannot be used, bpfopt_probe() and bpfopt_open() say
 * why in one line for the log and `rackctl status` (no cgroup v2, no
 * privilege, the verifier's refusal, a kernel without BTF or too old),
 * and nothing stays attached.
 */
#ifndef RACKS_BPFOPT_H
#define RACKS_BPFOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "option.h"
#include "racks_sockops.h"

struct bpfopt;

struct bpfopt_params {
	/* A cgroup v2 directory; NULL: the cgroup2 mount's root (the
	 * first in /proc/self/mounts). */
	const char *cgroup;
	/* The namespace whose sockets are handled; 0: the caller's. */
	uint64_t netns_cookie;
	/* The ring buffer's size, a power of two of at least a page; 0:
	 * 1 MiB (about 13,000 records). */
	uint32_t ringbuf_bytes;
};

/* One connection of the namespace, established. */
struct bpfopt_record {
	bool racks;		/* the peer's racks option was seen */
	bool active;		/* this host sent the SYN */
	bool peer_long;		/* the peer's option named host pair, nonce */
	bool local_long;	/* ours did */
	bool syn_retrans;	/* active: our SYN was sent again (only the
				 * first offers racks) */
	uint8_t peer_flags;
	struct endpoint local, remote;
	uint32_t local_isn, remote_isn;
	uint32_t hp_sent;	/* the host pair our option named, 0: none */
	uint32_t hp_peer;	/* the one the peer's named */
	uint8_t nonce_local[EDP_NONCE_LEN];
	uint8_t nonce_peer[EDP_NONCE_LEN];
};

/* The listeners of the namespace that were listening before the program
 * was attached (bpfopt_open() gives them its flag: an iterator over the
 * namespace's TCP sockets, bpf/racks_listeners.bpf.c). */
struct bpfopt_listeners {
	bool ran;		/* the iterator went over every socket */
	unsigned flagged;	/* listeners that got the flag */
	unsigned had;		/* listeners that had it (made since) */
	unsigned failed;	/* listeners that refused it */
	char why[160];		/* why not, or what failed ("": nothing) */
};

typedef void (*bpfopt_record_fn)(void *arg, const struct bpfopt_record *r);

struct bpfopt_counters {
	uint64_t v[RACKS_BPF_CNT_MAX];	/* enum racks_bpf_counter */
};

/* Can the BPF path be used with CGROUP (NULL: the cgroup2 mount)? It
 * loads the program (the verifier's answer) and checks the directory,
 * attaching nothing. 0, or -errno with the reason in WHY. */
int bpfopt_probe(const char *cgroup, char *why, size_t whylen);

/* Load and attach; 0 and *OUT, or -errno (*OUT NULL) with the reason in
 * WHY. */
int bpfopt_open(const struct bpfopt_params *p, struct bpfopt **out,
		char *why, size_t whylen);
/* Detach and free; NULL is fine. */
void bpfopt_free(struct bpfopt *b);

/* A descriptor that becomes readable when records wait (an epoll fd:
 * register it in the caller's epoll for EPOLLIN, level-triggered). */
int bpfopt_fd(const struct bpfopt *b);
/* Hand at most MAX waiting records to FN, oldest first. Returns how many
 * it handed (fewer than MAX: none wait now), or -errno. */
int bpfopt_drain(struct bpfopt *b, unsigned max, bpfopt_record_fn fn,
		 void *arg);

/* The host pair a SYN to PEER names (0 removes it). 0 or -errno. */
int bpfopt_offer_set(struct bpfopt *b, const struct addr *peer,
		     uint32_t hp_id);
/* Whether this host has host pair HP_ID (a SYN-ACK echoes those it has).
 * 0 or -errno. */
int bpfopt_known_set(struct bpfopt *b, uint32_t hp_id, bool known);
/* Whether the caller reads the ring on a timer now (BUSY): records then
 * wake nobody (BPF_RB_NO_WAKEUP); else a record wakes bpfopt_fd() when
 * the ring was read empty. A record whose program read BUSY just before
 * it was cleared may still come without a wake-up: read the ring once
 * more a little after clearing it before relying on bpfopt_fd(). */
void bpfopt_reader_busy(struct bpfopt *b, bool busy);
/* The flags byte of our offers (EDP_OFFER_HOSTKEYS). */
void bpfopt_flags_set(struct bpfopt *b, uint8_t flags);

/* The program's counters, summed over CPUs. 0 or -errno. */
int bpfopt_counters(const struct bpfopt *b, struct bpfopt_counters *out);
/* A counter's name ("written_syn", ...), for status and logs. */
const char *bpfopt_counter_name(unsigned i);
/* What bpfopt_open() did to the older listeners. */
const struct bpfopt_listeners *bpfopt_listeners(const struct bpfopt *b);
/* The cgroup directory and namespace cookie it is attached for. */
const char *bpfopt_cgroup(const struct bpfopt *b);
uint64_t bpfopt_netns_cookie(const struct bpfopt *b);

/* The cookie of the caller's network namespace (SO_NETNS_COOKIE of a
 * socket made in it); 0 or -errno. */
int bpfopt_own_netns_cookie(uint64_t *cookie);

#endif
