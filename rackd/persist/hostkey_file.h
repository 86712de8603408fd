/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host key's file (the pair itself: rackd/core/hostkey.h). By default
 * it is "hostkey" beside the state file, /var/lib/racks/hostkey; rackd -k
 * names another. Text, two lines:
 *
 *	public racks-x25519:<base64 of the public key, padded>
 *	secret <base64 of the secret key, padded>
 *
 * mode 0600, owned by the user rackd runs as (root). Like sshd with its
 * host keys, rackd refuses a key file that others may read or that
 * another user owns, and one that does not parse (or whose public key is
 * not its secret key's): it is never replaced, the error names the file
 * and the reason. A new file is written whole under a temporary name and
 * linked to PATH, which never overwrites: when two creators race, the
 * first link wins and the other reads that key.
 *
 * Functions return 0 or -errno, with a one-line message naming the file
 * in ERR on failure: -EINVAL for a file that does not parse, -EPERM for
 * one with a looser mode than 0600 or another owner, -ENOENT when there
 * is none to load, any other -errno when the file could not be read or
 * written (its directory missing, read-only...).
 */
#ifndef RACKS_HOSTKEY_FILE_H
#define RACKS_HOSTKEY_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "hostkey.h"

#define HOSTKEY_FILE_NAME "hostkey"	/* in the state file's directory */
#define HOSTKEY_OLD_SUFFIX ".old"

/* Read the key at PATH into OUT. */
int hostkey_load(const char *path, struct hostkey *out, char *err,
		 size_t errlen);
/* Read the key at PATH, or make one there if there is none (*CREATED
 * then set). A file that exists is never replaced. */
int hostkey_load_or_create(const char *path, struct hostkey *out,
			   bool *created, char *err, size_t errlen);
/*
 * Replace the key at PATH by a new one; the current one is kept as
 * PATH.old (replacing an earlier PATH.old), since it is with the old
 * secret that rackd proves a rotation to peers that know the old key.
 * PATH holds a complete key at every moment, the old or the new one.
 * OLD and NEW (either may be NULL) receive both pairs. -ENOENT when
 * there is no key at PATH to rotate.
 */
int hostkey_rotate(const char *path, struct hostkey *old,
		   struct hostkey *new, char *err, size_t errlen);

#endif
