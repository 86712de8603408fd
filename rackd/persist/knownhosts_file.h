/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The known-hosts file (the table: rackd/core/knownhosts.h): "known_hosts"
 * beside the state file, /var/lib/racks/known_hosts; with -s none the
 * table lives in memory only. Text, one host a line:
 *
 *	racks-x25519:<base64> pinned|known FIRST_SEEN LAST_SEEN ADDRS [NAME]
 *
 * FIRST_SEEN and LAST_SEEN in unix seconds (0: never seen), ADDRS the
 * addresses it was last seen at, latest first, separated by commas ("-"
 * for none), NAME without blanks, absent when it has none. Blank lines
 * and lines starting with '#' are ignored. A line that does not parse
 * stops rackd's start with "PATH:LINE: reason": a host is never dropped
 * silently.
 *
 * Written whole to PATH.tmp (mode 0600), synced, renamed over PATH, then
 * the directory synced, as the state file is: at once after a change by
 * the control socket, at most once a second for what the engine records
 * (known_hosts_seen()), and at shutdown if a write is pending.
 */
#ifndef RACKS_KNOWNHOSTS_FILE_H
#define RACKS_KNOWNHOSTS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "knownhosts.h"
#include "timer.h"

#define KNOWN_HOSTS_FILE_NAME "known_hosts"	/* in the state's directory */
/* Writes for what the engine records, at most one in this time. */
#define KNOWN_HOSTS_WRITE_INTERVAL_MS 1000

struct known_hosts_file {
	const char *path;	/* NULL: in memory only */
	struct timer write_timer;
	uint64_t last_write;	/* monotonic ms of the last try */
	bool write_failing;	/* the last write failed (logged once) */
	uint64_t writes, write_errors;
};

struct rackd;

/* Add PATH's hosts to KH. A missing file is no error (*MISSING set).
 * -EINVAL with "PATH:LINE: reason" in ERR for a line that does not parse,
 * other -errno (ERR set) when the file cannot be read. */
int known_hosts_file_load(struct known_hosts *kh, const char *path,
			  bool *missing, char *err, size_t errlen);
/* Write KH to PATH (through PATH.tmp); 0 or -errno. */
int known_hosts_file_save(const struct known_hosts *kh, const char *path);

/* rackd's file: PATH (NULL: none) for d->known_hosts, whose changes it
 * now hears. Loads nothing. */
void known_hosts_file_init(struct rackd *d, const char *path);
/* Write now (a failure is logged once per run of failures); 0 or -errno. */
int known_hosts_file_write(struct rackd *d);
/* Write what is pending, stop hearing the table. */
void known_hosts_file_free(struct rackd *d);

#endif
