/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The known hosts: the static keys of peer rackds (edp/hostid.h) this
 * host has met or been told of, and whether it trusts them. An in-memory
 * table and its pure logic; its file is rackd/persist/knownhosts_file.h's.
 *
 * Rules:
 *  - Trust is granted only by key, never by an address. An address is
 *    used only to notice that a peer known there now shows another key.
 *  - accept-new: a known key is KNOWN. An unknown key at an address where
 *    another known key was last seen is a MISMATCH: the known host is
 *    never silently replaced, nor trust downgraded to "new". An unknown
 *    key anywhere else is NEW; the caller then records it with
 *    known_hosts_seen() (trust on first use).
 *  - pinned: only a pinned entry is KNOWN; anything else is NOT_PINNED.
 *  - anonymous: always KNOWN (the caller keys the connection without host
 *    keys).
 *  - The table is bounded: at its maximum, a new key that
 *    known_hosts_seen() or known_hosts_add() records takes the place of
 *    the unpinned entry least recently seen (one never seen first; of
 *    equals, the oldest entry). Pinned entries are never evicted; with
 *    every entry pinned the new key is refused (-ENOSPC).
 *  - Each address is in the last_addrs of one entry at most: recording a
 *    key at an address takes the address from whichever entry had it.
 *
 * Pointers to entries stay valid until the next call that changes the
 * table (seen, add, remove, pin, set_name, restore, free).
 */
#ifndef RACKS_KNOWNHOSTS_H
#define RACKS_KNOWNHOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "config.h"

#define KNOWN_HOST_KEY_LEN 32
#define KNOWN_HOST_NAME_MAX 64		/* with the NUL */
#define KNOWN_HOST_ADDRS 4
/* rackd's table (daemon.c). */
#define KNOWN_HOSTS_DEFAULT_MAX 65536

struct known_host {
	uint8_t pk[KNOWN_HOST_KEY_LEN];
	char name[KNOWN_HOST_NAME_MAX];	/* "" when it has none */
	bool pinned;
	int64_t first_seen, last_seen;	/* unix seconds; 0: never seen */
	struct addr last_addrs[KNOWN_HOST_ADDRS];	/* latest first */
	size_t naddrs;
};

enum trust_verdict {
	TRUST_KNOWN,		/* trusted: go on */
	TRUST_NEW,		/* accept-new, a new key: record it */
	TRUST_MISMATCH,		/* another key was last seen there */
	TRUST_NOT_PINNED,	/* pinned policy, a key not pinned */
};

struct known_hosts;

struct known_hosts *known_hosts_new(size_t max_entries);
void known_hosts_free(struct known_hosts *kh);

/* FN(ARG, SEEN) after every change of the table but restore's: SEEN true
 * for known_hosts_seen() (frequent: the file may wait), false for the
 * others. One notifier; NULL removes it. */
void known_hosts_set_notify(struct known_hosts *kh,
			    void (*fn)(void *arg, bool seen), void *arg);

size_t known_hosts_count(const struct known_hosts *kh);
size_t known_hosts_max(const struct known_hosts *kh);
/* Every entry, oldest first: from known_hosts_next(KH, NULL) until NULL. */
const struct known_host *known_hosts_next(const struct known_hosts *kh,
					  const struct known_host *prev);
const struct known_host *known_hosts_by_key(const struct known_hosts *kh,
					    const uint8_t pk[32]);
/* The host last seen at ADDR, if any. */
const struct known_host *known_hosts_by_addr(const struct known_hosts *kh,
					     const struct addr *addr);

/*
 * May PK, met at ADDR (NULL: no address), be trusted under POLICY? When
 * the verdict is not KNOWN and another known host was last seen at ADDR,
 * *OTHER (if OTHER is not NULL) is that host, else NULL; for MISMATCH it
 * is always set. Pure: changes nothing.
 */
enum trust_verdict known_hosts_judge(const struct known_hosts *kh,
				     enum trust_policy policy,
				     const uint8_t pk[32],
				     const struct addr *addr,
				     const struct known_host **other);
/*
 * Record PK seen at ADDR (NULL: no address) at NOW (unix seconds): a new
 * entry for an unknown key (call it after a NEW verdict only), its
 * last_seen (and a first_seen not set yet) NOW, ADDR first of its
 * last_addrs and removed from any other entry's. 0, or -ENOSPC.
 */
int known_hosts_seen(struct known_hosts *kh, const uint8_t pk[32],
		     const struct addr *addr, int64_t now);
/* A new entry, never seen yet, with NAME (NULL or "": none). 0, -EEXIST
 * (the key is known: nothing changed), -EINVAL (a bad name), -ENOSPC. */
int known_hosts_add(struct known_hosts *kh, const uint8_t pk[32],
		    const char *name, bool pinned);
/* 0, or -ENOENT for a key not known. */
int known_hosts_remove(struct known_hosts *kh, const uint8_t pk[32]);
int known_hosts_pin(struct known_hosts *kh, const uint8_t pk[32],
		    bool pinned);
/* 0, -ENOENT, -EINVAL (a bad name). */
int known_hosts_set_name(struct known_hosts *kh, const uint8_t pk[32],
			 const char *name);
/*
 * Put H back as it was saved (the file's loader): -EEXIST (its key is
 * listed already), -EADDRINUSE (one of its addresses is another entry's),
 * -EINVAL (a bad name, more than KNOWN_HOST_ADDRS addresses or one twice),
 * -ENOSPC (the table is full: nothing is evicted). No notification.
 */
int known_hosts_restore(struct known_hosts *kh, const struct known_host *h);

/* A name may be empty, or up to KNOWN_HOST_NAME_MAX - 1 printable ASCII
 * characters but blanks. */
bool known_hosts_name_valid(const char *name);
/* "KNOWN", "NEW", "MISMATCH" or "NOT_PINNED". */
const char *trust_verdict_name(enum trust_verdict v);

#endif
