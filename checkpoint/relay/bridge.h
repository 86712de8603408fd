/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The destination's half of the relay: for each descriptor the wrapper
 * relays, a TCP connection to the wrapper (token and descriptor number in
 * its first line) and a local socketpair whose one end CRIU gives the
 * restored child in place of its old socket (--inherit-fd); the other end
 * is pumped to the TCP connection. CRIU's --inherit-fd cannot take the TCP
 * socket itself: a pipe is reopened through /proc (impossible for a
 * socket), and a TCP connection in the child would be one more network
 * connection to carry on its next move.
 */
#ifndef RACKCKPT_BRIDGE_H
#define RACKCKPT_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "image.h"
#include "pump.h"
#include "relayfile.h"

struct bridge_chan {
	int fd;			/* descriptor number in the child */
	unsigned long ino;	/* its socket's inode at dump (CRIU's name) */
	int tcp;		/* to the wrapper */
	int local;		/* our end of the socketpair */
	int child_end;		/* the child's end, until CRIU has it */
	char *inherit;		/* "fd[N]:socket:[INO]" */
	bool eof_sent;		/* the child's end of writing is handled */
	size_t refilled;	/* bytes written back from the dump's queue */
	struct pump up;		/* child -> wrapper */
	struct pump down;	/* wrapper -> child */
};

struct bridge {
	char addr[64];
	int port;
	char token[RELAY_TOKEN_HEX];
	struct bridge_chan c[RELAY_MAX_FDS];
	size_t n;
};

/* Whether INFO names a wrapper; *b filled from it (no connection yet). */
int bridge_from_info(struct bridge *b, const struct image_kv *info,
		     char *err, size_t errlen);
/* Connect each channel to the wrapper and make its socketpair. */
int bridge_connect(struct bridge *b, char *err, size_t errlen);
/*
 * Write back into each socketpair, before anything the wrapper sends, the
 * bytes the child's socket had not read at the dump (skqueue.h: CRIU
 * saves them but cannot refill a socket we hand in). IMAGES: the dump's
 * CRIU images. Call after bridge_connect(), before CRIU restores.
 */
int bridge_refill(struct bridge *b, const char *images, char *err,
		  size_t errlen);
/* Close the child's ends (CRIU has its copies). */
void bridge_close_child_ends(struct bridge *b);
/* Write the relay file of ROOT, restored here, for its next dump: the
 * wrapper's address, port and token, and the relayed descriptors. */
int bridge_publish(const struct bridge *b, pid_t root);
/*
 * Relay until ROOT (a child of ours) has ended and its last bytes are
 * through, then tell the wrapper how it ended; returns ROOT's wait
 * status. An end of the child's writing on a descriptor is announced to
 * the wrapper (eof=FD) before it is passed on. A ROOT dumped again here
 * (the dump's .moving/.moved markers) ends quietly instead: *MOVED is
 * set, the connections are closed without a word, and the next restore
 * reconnects.
 */
int bridge_keep(struct bridge *b, pid_t root, bool *moved);
void bridge_free(struct bridge *b);

#endif
