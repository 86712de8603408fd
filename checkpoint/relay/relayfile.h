/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What `rackckpt run` tells `rackckpt dump` about the wrapped child, in
 * RELAY_DIR/CHILDPID (mode 0600, directory 0700; RELAY_DIR is
 * /run/racks/relay or $RACKS_RELAY_DIR):
 *
 *	racks-relay 1
 *	wrapper=PID		who relays for the child on this host: the
 *				wrapper, or the keeper of a restore
 *	addr=ADDRESS		where the wrapper is, when it is on another
 *				host (written by a keeper); absent: here
 *	port=PORT		the wrapper's TCP port, on all addresses
 *	token=HEX		128 random bits; a connection must name them
 *	relay=FD socket		one line per relayed descriptor of the child
 *
 * Dump creates CHILDPID.moving before CRIU runs; renames it to
 * CHILDPID.moved when the dump succeeded, removes it when it failed. The
 * child's relayer on this host (the wrapper, or a keeper after an earlier
 * move) takes the child's death for a migration only then.
 *
 * A connection to the wrapper starts with one line:
 *	racks-relay 1 TOKEN fd=FD	carry the child's descriptor FD
 *	racks-relay 1 TOKEN exit=CODE	the child exited with CODE
 *	racks-relay 1 TOKEN signal=N	the child was killed by signal N
 *	racks-relay 1 TOKEN eof=FD	the child ended its writing on FD
 *					(a half-close, or its exit): pass
 *					the end of FD's connection on
 * answered "ok\n" (then bytes of FD flow both ways) or "error TEXT\n".
 * The wrapper passes on the end of a loopback channel's connection from
 * another host only after eof=FD: any other end means that host dumped
 * the child again (or is gone), and the next restore connects anew.
 */
#ifndef RACKCKPT_RELAYFILE_H
#define RACKCKPT_RELAYFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RELAY_DIR_DEFAULT "/run/racks/relay"
#define RELAY_MAX_FDS 16
#define RELAY_TOKEN_HEX 33	/* 32 hex digits and the NUL */
#define RELAY_HELLO_MAX 160

struct relay_fd {
	int fd;			/* the descriptor number in the child */
	unsigned long ino;	/* the child's socket inode (at dump) */
};

struct relay_info {
	pid_t wrapper;		/* the relayer on this host */
	char addr[64];		/* the wrapper's address, or "": here */
	int port;
	char token[RELAY_TOKEN_HEX];
	struct relay_fd fds[RELAY_MAX_FDS];
	size_t nfds;
};

const char *relayfile_dir(void);
/* RELAY_DIR/PID plus SUFFIX ("" / ".moving" / ".moved"); free() it. */
char *relayfile_path(pid_t child, const char *suffix);
int relayfile_write(pid_t child, const struct relay_info *ri);
/* Remove CHILD's relay file if OWNER wrote it (another relayer may have
 * replaced it since, where hosts share RELAY_DIR), and its markers. */
void relayfile_remove(pid_t child, pid_t owner);
/* Whether RELAY_DIR/CHILD plus SUFFIX exists (".moving", ".moved"). */
bool relayfile_exists(pid_t child, const char *suffix);
/* A dump of CHILD is under way or done (.moving or .moved). */
bool relayfile_moving(pid_t child);
/* 0, -ENOENT if the child has no relay file, or -errno (ERR). */
int relayfile_read(pid_t child, struct relay_info *ri, char *err,
		   size_t errlen);

/* Send the hello line WHAT ("fd=1", "exit=0") on FD, wait for the answer
 * (at most TIMEOUT_MS). 0, or -errno with ERR. */
int relayfile_hello(int fd, const char *token, const char *what,
		    int timeout_ms, char *err, size_t errlen);

#endif
