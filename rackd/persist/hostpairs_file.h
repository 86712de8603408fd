/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host pairs' file (hostpairs.h), beside the state file and written
 * with it: a restarted rackd derives keys with the hosts it met before,
 * without a new handshake. Root only (mode 0600): it holds secrets. The
 * host key they were made with, then one line per host pair:
 *
 *   self HEX64
 *   pair id=HEX8 peer=HEX64 secret=HEX64 created=UNIX conns=N retired=0|1
 *        [addr=ADDR]
 */
#ifndef RACKS_HOSTPAIRS_FILE_H
#define RACKS_HOSTPAIRS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "hostpairs.h"

/* DIR_OF's directory + "/hostpairs" into OUT; -ENAMETOOLONG. */
int hostpairs_file_path(const char *dir_of, char *out, size_t size);
/* Write HP, made with our host key SELF, to PATH atomically (temporary
 * file, fsync, rename). */
int hostpairs_file_save(const char *path, struct host_pairs *hp,
			const uint8_t self[32]);
/* Read PATH into HP (empty if it does not exist). A malformed file is
 * refused whole with PATH:LINE: why in ERR, HP left empty: -EINVAL.
 * Host pairs made with another host key than SELF (it was rotated or
 * replaced) are not taken: -ESTALE, HP empty. */
int hostpairs_file_load(const char *path, struct host_pairs *hp,
			const uint8_t self[32], char *err, size_t errlen);

#endif
