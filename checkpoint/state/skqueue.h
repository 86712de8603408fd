/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The bytes a dumped unix socket still had to read, from CRIU's images.
 *
 * A relayed descriptor is an external unix socket to CRIU: at the dump it
 * saves the socket's receive queue (sk-queues.img), but at the restore the
 * socket is one we hand in (--inherit-fd) and CRIU, which refills a queue
 * only by writing from the peer it restores, leaves it empty. Those bytes
 * (the wrapper had written them, the child had not read them yet) are
 * read back here, so that the bridge can write them first.
 *
 * CRIU's image files: two 32-bit magics, then entries, each a 32-bit
 * length and a protobuf message of that length; a packet entry of
 * sk-queues.img is followed by its data. files.img holds one file_entry
 * per file, a unix socket's with its unix_sk_entry (id and inode).
 */
#ifndef RACKCKPT_SKQUEUE_H
#define RACKCKPT_SKQUEUE_H

#include <stddef.h>

/*
 * The bytes queued at the dump on the unix socket of inode INO, from the
 * images in IMAGES (a directory): *data (malloc'ed, NULL if none) and
 * *len. 0, or -errno with ERR said (an image that does not parse).
 */
int skqueue_read(const char *images, unsigned long ino, char **data,
		 size_t *len, char *err, size_t errlen);

/* The same from the two files' contents (for tests): FILES is files.img,
 * QUEUES sk-queues.img or NULL. */
int skqueue_parse(const unsigned char *files, size_t files_len,
		  const unsigned char *queues, size_t queues_len,
		  unsigned long ino, char **data, size_t *len, char *err,
		  size_t errlen);

#endif
