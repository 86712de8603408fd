/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Writing a file whole, so that a crash at any point leaves either the
 * old file or the new one, complete: write PATH.tmp, fsync it, rename it
 * over PATH, fsync the directory (so that the rename itself survives).
 * rackd's state, known-hosts and host-pairs files and rackckpt's
 * checkpoint files are all written this way.
 */
#ifndef RACKS_SYNCDIR_H
#define RACKS_SYNCDIR_H

#include <stdio.h>
#include <sys/types.h>

/* fsync the directory holding PATH; 0 or -errno. */
int sync_parent_dir(const char *path);

/* Writes a file's content to F; 0 or -errno (a stdio error is found by
 * file_replace's own fflush as well). */
typedef int (*file_writer_fn)(FILE *f, void *arg);

/*
 * PATH replaced by what FILL puts in a new file of MODE (forced, umask
 * or not). A leftover PATH.tmp is removed first and the new one created
 * with O_EXCL | O_NOFOLLOW: a symlink planted there is never followed.
 * 0, or -errno with PATH untouched and PATH.tmp gone.
 */
int file_replace(const char *path, mode_t mode, file_writer_fn fill,
		 void *arg);

#endif
