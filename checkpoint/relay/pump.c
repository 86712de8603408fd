// SPDX-License-Identifier: GPL-2.0-only
#include "pump.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

/* At most this much per write: after POLLOUT, a pipe or socket takes at
 * least a page without blocking, even when the descriptor is blocking. */
#define PUMP_CHUNK 4096

void pump_init(struct pump *p, int src, int dst, bool shut_on_eof)
{
	p->src = src;
	p->dst = dst;
	p->off = p->len = 0;
	p->src_eof = false;
	p->shut_on_eof = shut_on_eof;
	p->shut_done = false;
	p->dst_broken = false;
	p->paused = false;
	p->rd_idx = p->wr_idx = -1;
	p->bytes = 0;
}

void pump_poll_add(struct pump *p, struct pollfd *fds, size_t cap, size_t *n)
{
	p->rd_idx = p->wr_idx = -1;
	if (p->src >= 0 && !p->src_eof && p->len < PUMP_BUF && *n < cap) {
		fds[*n] = (struct pollfd){ .fd = p->src, .events = POLLIN };
		p->rd_idx = (int)(*n)++;
	}
	if (p->dst >= 0 && !p->paused && p->len > p->off && *n < cap) {
		fds[*n] = (struct pollfd){ .fd = p->dst, .events = POLLOUT };
		p->wr_idx = (int)(*n)++;
	}
}

static void do_read(struct pump *p)
{
	ssize_t n;

	if (p->off == p->len)
		p->off = p->len = 0;
	n = read(p->src, p->buf + p->len, PUMP_BUF - p->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* An error (a reset connection) ends the stream like EOF. */
		p->src_eof = true;
		return;
	}
	p->len += (size_t)n;
	p->bytes += (unsigned long long)n;
	if (p->dst_broken)
		p->off = p->len = 0;
}

static void do_write(struct pump *p)
{
	size_t want = p->len - p->off;
	ssize_t n;

	if (want > PUMP_CHUNK)
		want = PUMP_CHUNK;
	n = write(p->dst, p->buf + p->off, want);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) {
		/* The reader is gone: what it would have read is lost
		 * anyway; keep draining SRC so that its writer never
		 * blocks on us. */
		util_debug("relay: writing to descriptor %d failed (%s); "
			   "dropping what it should have had", p->dst,
			   strerror(errno));
		p->dst_broken = true;
		p->off = p->len = 0;
		return;
	}
	p->off += (size_t)n;
	if (p->off == p->len)
		p->off = p->len = 0;
}

void pump_run(struct pump *p, const struct pollfd *fds)
{
	/* An end detached since poll() (the child died) is left alone, and
	 * so is one paused since. */
	if (p->wr_idx >= 0 && !p->paused && p->dst == fds[p->wr_idx].fd &&
	    fds[p->wr_idx].revents & (POLLOUT | POLLERR | POLLHUP))
		do_write(p);
	if (p->rd_idx >= 0 && p->src == fds[p->rd_idx].fd &&
	    fds[p->rd_idx].revents & (POLLIN | POLLERR | POLLHUP))
		do_read(p);
	if (p->src_eof && p->len == p->off && p->shut_on_eof && !p->shut_done &&
	    p->dst >= 0) {
		shutdown(p->dst, SHUT_WR);	/* ENOTSOCK for a pipe: fine */
		p->shut_done = true;
	}
}

bool pump_done(const struct pump *p)
{
	return p->src_eof && (p->len == p->off || p->dst_broken);
}

void pump_set_src(struct pump *p, int src)
{
	p->src = src;
	p->src_eof = src < 0 ? p->src_eof : false;
}

void pump_set_dst(struct pump *p, int dst)
{
	p->dst = dst;
	p->dst_broken = false;
	p->shut_done = false;
	/* A stream that already ended ends on the new DST too. */
	if (dst >= 0 && p->src_eof && p->len == p->off && p->shut_on_eof) {
		shutdown(dst, SHUT_WR);
		p->shut_done = true;
	}
}
