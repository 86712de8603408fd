/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One direction of a relayed byte stream: what is read from SRC is written
 * to DST, through a buffer that survives a change of either end (the
 * wrapper swaps the child's local socket for a TCP connection from the
 * destination host when the child moves). Reads and writes happen only
 * after poll() said they would not block, so SRC and DST may be blocking
 * descriptors shared with other processes (a launcher's pipe), whose file
 * status flags are never changed.
 */
#ifndef RACKCKPT_PUMP_H
#define RACKCKPT_PUMP_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#define PUMP_BUF 65536

struct pump {
	int src, dst;		/* -1: that end is not attached now */
	char buf[PUMP_BUF];
	size_t off, len;	/* pending bytes: buf[off, len) */
	bool src_eof;		/* SRC ended (read 0, or an error) */
	bool shut_on_eof;	/* then shutdown(DST, SHUT_WR) once flushed */
	bool shut_done;
	bool dst_broken;	/* DST refused bytes: further ones are dropped */
	bool paused;		/* DST is not written to for now: bytes wait */
	int rd_idx, wr_idx;	/* positions in the poll array, or -1 */
	unsigned long long bytes;
};

void pump_init(struct pump *p, int src, int dst, bool shut_on_eof);
/* Append P's interests to FDS (of capacity CAP, count *N). */
void pump_poll_add(struct pump *p, struct pollfd *fds, size_t cap, size_t *n);
/* Act on poll's answer. */
void pump_run(struct pump *p, const struct pollfd *fds);
/* SRC has ended and every byte read was written (or could not be). */
bool pump_done(const struct pump *p);
/* Attach a new SRC or DST (the old one is not closed here). */
void pump_set_src(struct pump *p, int src);
void pump_set_dst(struct pump *p, int dst);

#endif
