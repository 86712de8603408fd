/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCP sockets of a process tree (a process and its descendants), as
 * the kernel shows them in /proc: which socket inodes the tree's file
 * descriptors hold, matched against the tcp and tcp6 tables of the tree's
 * network namespace. Also finds the inode behind any descriptor, which
 * CRIU's options name.
 */
#ifndef RACKCKPT_PROCSOCK_H
#define RACKCKPT_PROCSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "addr.h"

enum procsock_kind {
	PROCSOCK_LISTEN,	/* listening: CRIU restores it, bound again */
	PROCSOCK_PAIR,		/* connected to another socket of the tree */
	PROCSOCK_NETWORK,	/* connected to something outside the tree */
	PROCSOCK_IDLE,		/* neither bound to a peer nor listening */
};

struct procsock {
	struct endpoint local, remote;	/* v4-mapped IPv6 shown as IPv4 */
	uint8_t tcp_state;		/* TCP_ESTABLISHED, ... (netinet/tcp.h) */
	unsigned long ino;
	pid_t pid;			/* one process holding it, and its fd */
	int fd;
	enum procsock_kind kind;
};

struct procsock_set {
	pid_t *pids;			/* the tree: root first */
	size_t npids;
	struct procsock *socks;
	size_t n;
};

/* Fill SET with ROOT's tree and its TCP sockets. 0 or -errno (ERR). */
int procsock_scan(pid_t root, struct procsock_set *set, char *err,
		  size_t errlen);
void procsock_set_free(struct procsock_set *set);
const char *procsock_state_name(uint8_t tcp_state);

/* Whether some TCP socket of our network namespace (a connection, not
 * a listener or one in TIME-WAIT) has E as its local endpoint. */
bool procsock_local_exists(const struct endpoint *e);

/* The inode of what PID's descriptor FD refers to ("socket:[N]",
 * "pipe:[N]"): its KIND ("socket", "pipe", "other") and INO. 0 or -errno. */
int procsock_fd_inode(pid_t pid, int fd, char *kind, size_t kindlen,
		      unsigned long *ino);

#endif
