/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The last step of writing a file whole (write PATH.tmp, fsync, rename):
 * syncing the directory, so that the rename itself survives a crash.
 * rackd's state file and rackckpt's checkpoint files both end with it.
 */
#ifndef RACKS_SYNCDIR_H
#define RACKS_SYNCDIR_H

/* fsync the directory holding PATH; 0 or -errno. */
int sync_parent_dir(const char *path);

#endif
