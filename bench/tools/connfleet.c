// SPDX-License-Identifier: GPL-2.0-only
/*
 * connfleet: thousands of idle TCP connections in one process, each one
 * checked end to end on command. For tests/test_load.py and the bench's
 * "moved at once" rows.
 *
 * Usage:
 *   connfleet serve PORT
 *	Dual-stack echo server on [::]:PORT (backlog 4096), one epoll loop;
 *	prints READY once listening. Every byte a connection sends comes
 *	back. On a line "status" on stdin it prints one JSON line:
 *	{"accepted": n, "open": n, "reset": n, "closed": n, "error": n}
 *	(connections that ended with a RST, an EOF, another error).
 *   connfleet connect HOST PORT N [--window W] [--pace MS] [--timeout S]
 *	Opens N connections to HOST:PORT (a numeric IPv4 or IPv6 address),
 *	at most W (default 256) connect()s in flight at a time and, with
 *	--pace, one connect() started every MS milliseconds, and prints
 *	{"connected": n, "failed": f, "seconds": t, "errors": {...}} once
 *	each one is connected or has failed (S, default 120, bounds it all).
 *	Then it keeps them open, idle, and watches them: a connection that
 *	is reset, closed or fails while idle is recorded with the time it
 *	happened (the first and last reset are reported). Commands, one per line on stdin:
 *	  echo [SECONDS]  every open connection sends a token of its own
 *	      (TOKEN_LEN bytes: round, index, local port, a random nonce) and
 *	      reads it back within SECONDS (default 30); one JSON line:
 *	      {"round", "sent", "ok", "reset", "closed", "timeout", "bad",
 *	       "error", "seconds", "reset_ports": [...], "timeout_ports",
 *	       "closed_ports", "bad_ports", "error_ports",
 *	       "reset_first", "reset_last"}
 *	      where a connection that died before the round counts under what
 *	      killed it, timeout means no (complete) echo in time, bad a wrong
 *	      echo, and reset_first/last the wall-clock times (Unix seconds)
 *	      of the first and last reset seen (null if none).
 *	  status  {"open", "reset", "closed", "error", "stray_bytes",
 *	      "reset_first", "reset_last", "reset_ports"} without sending
 *	      anything; stray_bytes counts late echoes of rounds that timed
 *	      out, read and dropped while idle.
 *	  ports   {"open": n, "ports": [...]} the local ports of the open
 *	      connections.
 *	EOF on stdin closes every connection and exits 0.
 *
 * Both ends raise RLIMIT_NOFILE for themselves (root may raise the hard
 * limit too) so that N + a few descriptors fit.
 * Errors are reported on stderr with exit status 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME "connfleet"
#include "tool.h"

#define BACKLOG 4096
#define MAX_CONNS 200000ul
#define MAX_EVENTS 512
#define TOKEN_LEN 48
#define SERVE_BUF 256		/* pending echo bytes per server socket */

enum cstate { C_CONNECTING, C_OPEN, C_FAILED, C_RESET, C_CLOSED, C_ERROR };
enum outcome { O_OK, O_RESET, O_CLOSED, O_TIMEOUT, O_BAD, O_ERROR, O_MAX };
static const char *const outcome_name[O_MAX] = {
	"ok", "reset", "closed", "timeout", "bad", "error"
};

struct conn {
	int fd;
	uint16_t port;
	uint8_t state;		/* enum cstate */
	uint8_t outcome;	/* of the current round */
	uint8_t sent, got;	/* token bytes sent / received this round */
	uint8_t done;
	char token[TOKEN_LEN];
	char echo[TOKEN_LEN];
	double died;		/* wall-clock time it was reset/closed */
};

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono(void)
{
	return now_ns() / 1e9;
}

static void raise_nofile(unsigned long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit: %s", strerror(errno));
	if (rl.rlim_max < need) {
		struct rlimit more = { need, need };

		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("setrlimit: %s", strerror(errno));
	if (rl.rlim_cur < need)
		die("need %lu file descriptors, RLIMIT_NOFILE allows %lu", need,
		    (unsigned long)rl.rlim_cur);
}

static void ep_ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (epoll_ctl(ep, op, fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
}

/* Commands arrive as lines on stdin, read with read(2) (epoll sees
 * what stdio would hide in its buffer). */
struct lines {
	char buf[1024];
	size_t len;
	int eof;
};

static struct lines input;

/* Read what stdin has now; 0, or -1 at EOF. */
static int lines_fill(struct lines *l)
{
	ssize_t n;

	if (l->len == sizeof(l->buf))
		l->len = 0;		/* a line that long is garbage */
	n = read(0, l->buf + l->len, sizeof(l->buf) - l->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		l->eof = 1;
		return -1;
	}
	l->len += (size_t)n;
	return 0;
}

/* The next complete line (without its newline) into OUT; 0 if none. */
static int lines_next(struct lines *l, char *out, size_t size)
{
	char *nl = memchr(l->buf, '\n', l->len);
	size_t k;

	if (!nl)
		return 0;
	k = (size_t)(nl - l->buf);
	snprintf(out, size, "%.*s", (int)k, l->buf);
	memmove(l->buf, nl + 1, l->len - k - 1);
	l->len -= k + 1;
	return 1;
}

/* ---- server ---- */

struct peer {
	int fd;
	uint16_t len;
	char buf[SERVE_BUF];
};

struct server {
	int ep, lfd;
	unsigned long accepted, open, reset, closed, error;
};

static void peer_end(struct server *s, struct peer *p, int err)
{
	if (err == ECONNRESET || err == EPIPE)
		s->reset++;
	else if (err)
		s->error++;
	else
		s->closed++;
	s->open--;
	close(p->fd);
	free(p);
}

static void sent(struct peer *p, ssize_t n)
{
	memmove(p->buf, p->buf + n, p->len - (size_t)n);
	p->len = (uint16_t)(p->len - n);
}

/* Read what fits, write it back; what the socket does not take waits. */
static void peer_serve(struct server *s, struct peer *p, uint32_t events)
{
	ssize_t n;

	if (p->len) {
		n = send(p->fd, p->buf, p->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN)
			goto end;
		if (n > 0)
			sent(p, n);
	}
	if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) &&
	    p->len == 0) {
		n = recv(p->fd, p->buf, sizeof(p->buf), MSG_DONTWAIT);
		if (n == 0) {
			errno = 0;
			goto end;
		}
		if (n < 0 && errno != EAGAIN)
			goto end;
		if (n > 0) {
			p->len = (uint16_t)n;
			n = send(p->fd, p->buf, p->len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN)
				goto end;
			if (n > 0)
				sent(p, n);
		}
	}
	ep_ctl(s->ep, EPOLL_CTL_MOD, p->fd,
	       p->len ? EPOLLOUT : EPOLLIN | EPOLLRDHUP,
	       (uint64_t)(uintptr_t)p);
	return;
end:
	peer_end(s, p, errno);
}

static void server_accept(struct server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct peer *p;

		if (fd < 0) {
			if (errno == EAGAIN || accept_transient(errno))
				return;
			die("accept: %s", strerror(errno));
		}
		p = calloc(1, sizeof(*p));
		if (!p)
			die("out of memory");
		p->fd = fd;
		s->accepted++;
		s->open++;
		ep_ctl(s->ep, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP,
		       (uint64_t)(uintptr_t)p);
	}
}

static int server_stdin(struct server *s)
{
	char line[128];
	int eof = lines_fill(&input);

	while (lines_next(&input, line, sizeof(line))) {
		if (strcmp(line, "status") != 0)
			continue;
		printf("{\"accepted\": %lu, \"open\": %lu, \"reset\": %lu, "
		       "\"closed\": %lu, \"error\": %lu}\n", s->accepted,
		       s->open, s->reset, s->closed, s->error);
		fflush(stdout);
	}
	return eof;
}

static int serve(unsigned long port)
{
	struct server s = { 0 };
	struct epoll_event evs[MAX_EVENTS];
	int watch_stdin = 1;

	raise_nofile(0);		/* as many as allowed */
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	if (s.ep < 0)
		die("epoll_create1: %s", strerror(errno));
	s.lfd = listen_any(port, SOCK_NONBLOCK, BACKLOG);
	ep_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, EPOLLIN, 0);
	if (epoll_ctl(s.ep, EPOLL_CTL_ADD, 0,
		      &(struct epoll_event){ .events = EPOLLIN,
					     .data.u64 = 1 }) < 0)
		watch_stdin = 0;	/* /dev/null or a file: no commands */
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(s.ep, evs, MAX_EVENTS, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;

			if (d == 0) {
				server_accept(&s);
			} else if (d == 1) {
				if (server_stdin(&s) < 0 && watch_stdin) {
					epoll_ctl(s.ep, EPOLL_CTL_DEL, 0, NULL);
					watch_stdin = 0;
				}
			} else {
				peer_serve(&s, (struct peer *)(uintptr_t)d,
					   evs[i].events);
			}
		}
	}
}

/* ---- client ---- */

struct fleet {
	int ep;
	struct conn *c;
	unsigned long n, open, round;
	unsigned long stray;	/* late echo bytes read while idle */
	double reset_first, reset_last;
};

#define STDIN_TAG UINT64_MAX

static void conn_died(struct fleet *f, struct conn *c, int err)
{
	c->died = wall();
	if (err == ECONNRESET || err == EPIPE) {
		c->state = C_RESET;
		if (!f->reset_first)
			f->reset_first = c->died;
		f->reset_last = c->died;
	} else {
		c->state = err ? C_ERROR : C_CLOSED;
	}
	f->open--;
	epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
}

static int parse_target(const char *host, unsigned long port,
			struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof(*s4);
		return AF_INET;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
		return AF_INET6;
	}
	die("invalid address '%s' (numeric IPv4 or IPv6)", host);
}

static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET ?
		     ((struct sockaddr_in *)&ss)->sin_port :
		     ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* errno names for the few connect() failures worth telling apart. */
static const char *errname(int err)
{
	switch (err) {
	case ECONNREFUSED: return "ECONNREFUSED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECONNRESET: return "ECONNRESET";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENETUNREACH: return "ENETUNREACH";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case 0: return "unfinished";
	}
	return "other";
}

static void connect_all(struct fleet *f, const char *host, unsigned long port,
			unsigned long window, double pace, double timeout)
{
	struct sockaddr_storage ss;
	struct epoll_event evs[MAX_EVENTS];
	socklen_t sslen;
	int family = parse_target(host, port, &ss, &sslen);
	unsigned long next = 0, pending = 0, failed = 0;
	unsigned long counts[8] = { 0 };
	const int codes[8] = { ECONNREFUSED, ETIMEDOUT, ECONNRESET,
			       EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL, 0, -1 };
	double t0 = mono();

	while ((next < f->n || pending) && mono() - t0 < timeout) {
		while (next < f->n && pending < window &&
		       mono() - t0 >= next * pace) {
			struct conn *c = &f->c[next];
			int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK |
					SOCK_CLOEXEC, 0);

			if (fd < 0)
				die("socket: %s", strerror(errno));
			c->fd = fd;
			c->state = C_CONNECTING;
			if (connect(fd, (struct sockaddr *)&ss, sslen) < 0 &&
			    errno != EINPROGRESS)
				die("connect: %s", strerror(errno));
			ep_ctl(f->ep, EPOLL_CTL_ADD, fd, EPOLLOUT, next);
			next++;
			pending++;
		}
		int n = epoll_wait(f->ep, evs, MAX_EVENTS, pace > 0 ? 1 : 100);

		for (int i = 0; i < n; i++) {
			struct conn *c = &f->c[evs[i].data.u64];
			int err = 0;
			socklen_t elen = sizeof(err);

			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen);
			pending--;
			if (err) {
				unsigned k = 0;

				while (k < 7 && codes[k] != err)
					k++;
				counts[k]++;
				failed++;
				c->state = C_FAILED;
				epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
				c->fd = -1;
				continue;
			}
			c->state = C_OPEN;
			c->port = local_port(c->fd);
			f->open++;
			ep_ctl(f->ep, EPOLL_CTL_MOD, c->fd,
			       EPOLLIN | EPOLLRDHUP, evs[i].data.u64);
		}
	}
	/* What never finished counts as failed, unfinished. */
	for (unsigned long i = 0; i < f->n; i++) {
		struct conn *c = &f->c[i];

		if (i >= next || c->state == C_CONNECTING) {
			if (c->fd >= 0 && i < next) {
				epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
			}
			c->fd = -1;
			c->state = C_FAILED;
			counts[6]++;
			failed++;
		}
	}
	printf("{\"connected\": %lu, \"failed\": %lu, \"seconds\": %.3f, "
	       "\"errors\": {", f->open, failed, mono() - t0);
	for (unsigned k = 0, first = 1; k < 8; k++) {
		if (!counts[k])
			continue;
		printf("%s\"%s\": %lu", first ? "" : ", ",
		       k == 7 ? "other" : errname(codes[k]), counts[k]);
		first = 0;
	}
	printf("}}\n");
	fflush(stdout);
}

/* Something happened on an idle connection: it was reset or closed, or
 * a late echo of a round that timed out arrived (read and forgotten). */
static void idle_event(struct fleet *f, struct conn *c)
{
	char buf[256];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) {
		f->stray += n > 0 ? (unsigned long)n : 0;
		return;
	}
	conn_died(f, c, n < 0 ? errno : 0);
}

static void print_ports(struct fleet *f, const char *key, int want_state,
			int want_outcome)
{
	int first = 1;

	printf(", \"%s\": [", key);
	for (unsigned long i = 0; i < f->n; i++) {
		struct conn *c = &f->c[i];

		if (c->state == C_FAILED)
			continue;
		if ((want_state >= 0 && c->state != want_state) ||
		    (want_outcome >= 0 && c->outcome != want_outcome))
			continue;
		printf("%s%u", first ? "" : ", ", c->port);
		first = 0;
	}
	printf("]");
}

static void print_time(const char *key, double t)
{
	if (t)
		printf(", \"%s\": %.6f", key, t);
	else
		printf(", \"%s\": null", key);
}

static void status(struct fleet *f)
{
	unsigned long k[C_ERROR + 1] = { 0 };

	for (unsigned long i = 0; i < f->n; i++)
		k[f->c[i].state]++;
	printf("{\"open\": %lu, \"reset\": %lu, \"closed\": %lu, "
	       "\"error\": %lu, \"stray_bytes\": %lu", k[C_OPEN], k[C_RESET],
	       k[C_CLOSED], k[C_ERROR], f->stray);
	print_time("reset_first", f->reset_first);
	print_time("reset_last", f->reset_last);
	print_ports(f, "reset_ports", C_RESET, -1);
	printf("}\n");
	fflush(stdout);
}

static void make_token(struct fleet *f, unsigned long i, struct conn *c)
{
	uint64_t nonce = 0;
	char tmp[96];
	int len;

	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		die("getrandom: %s", strerror(errno));
	len = snprintf(tmp, sizeof(tmp), "r%u i%lu p%u n%016llx",
		       (unsigned)(f->round % 1000000), i % 10000000, c->port,
		       (unsigned long long)nonce);
	memset(c->token, '.', TOKEN_LEN);
	memcpy(c->token, tmp, len < TOKEN_LEN - 1 ? (size_t)len :
	       TOKEN_LEN - 1);
	c->token[TOKEN_LEN - 1] = '\n';
}

static void round_end(struct conn *c, enum outcome o)
{
	c->outcome = (uint8_t)o;
	c->done = 1;
}

static void echo_io(struct fleet *f, struct conn *c, uint32_t events)
{
	ssize_t n;

	if (c->sent < TOKEN_LEN) {
		n = send(c->fd, c->token + c->sent, TOKEN_LEN - c->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			conn_died(f, c, errno);
			round_end(c, c->state == C_RESET ? O_RESET : O_ERROR);
			return;
		}
		if (n > 0)
			c->sent = (uint8_t)(c->sent + n);
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		goto rearm;
	n = recv(c->fd, c->echo + c->got, TOKEN_LEN - c->got, MSG_DONTWAIT);
	if (n < 0 && errno == EAGAIN)
		goto rearm;
	if (n <= 0) {
		conn_died(f, c, n < 0 ? errno : 0);
		round_end(c, c->state == C_RESET ? O_RESET :
			  c->state == C_CLOSED ? O_CLOSED : O_ERROR);
		return;
	}
	c->got = (uint8_t)(c->got + n);
	if (c->got == TOKEN_LEN) {
		round_end(c, memcmp(c->echo, c->token, TOKEN_LEN) ? O_BAD :
			  O_OK);
		return;
	}
rearm:
	ep_ctl(f->ep, EPOLL_CTL_MOD, c->fd, EPOLLIN | EPOLLRDHUP |
	       (c->sent < TOKEN_LEN ? EPOLLOUT : 0), (uint64_t)(c - f->c));
}

static void echo_round(struct fleet *f, double timeout)
{
	struct epoll_event evs[MAX_EVENTS];
	unsigned long left = 0, sent = 0, k[O_MAX] = { 0 };
	double t0 = mono();

	f->round++;
	/* The next command waits for this round's report. */
	epoll_ctl(f->ep, EPOLL_CTL_DEL, 0, NULL);
	for (unsigned long i = 0; i < f->n; i++) {
		struct conn *c = &f->c[i];

		c->sent = c->got = c->done = 0;
		switch (c->state) {
		case C_FAILED:
			c->done = 1;
			continue;
		case C_RESET:
			round_end(c, O_RESET);
			continue;
		case C_CLOSED:
			round_end(c, O_CLOSED);
			continue;
		case C_ERROR:
			round_end(c, O_ERROR);
			continue;
		}
		make_token(f, i, c);
		sent++;
		echo_io(f, c, 0);
		if (!c->done)
			left++;
	}
	while (left && mono() - t0 < timeout) {
		int n = epoll_wait(f->ep, evs, MAX_EVENTS, 100);

		for (int i = 0; i < n; i++) {
			struct conn *c = &f->c[evs[i].data.u64];

			if (c->done)
				continue;
			echo_io(f, c, evs[i].events);
			if (c->done)
				left--;
		}
	}
	for (unsigned long i = 0; i < f->n; i++) {
		struct conn *c = &f->c[i];

		if (c->state == C_FAILED)
			continue;
		if (!c->done)
			round_end(c, O_TIMEOUT);
		k[c->outcome]++;
		/* Back to watching: readable means reset or closed. */
		if (c->state == C_OPEN)
			ep_ctl(f->ep, EPOLL_CTL_MOD, c->fd,
			       EPOLLIN | EPOLLRDHUP, i);
	}
	printf("{\"round\": %lu, \"sent\": %lu", f->round, sent);
	for (int o = 0; o < O_MAX; o++)
		printf(", \"%s\": %lu", outcome_name[o], k[o]);
	printf(", \"seconds\": %.3f", mono() - t0);
	for (int o = O_RESET; o < O_MAX; o++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_ports", outcome_name[o]);
		print_ports(f, key, -1, o);
	}
	print_time("reset_first", f->reset_first);
	print_time("reset_last", f->reset_last);
	printf("}\n");
	fflush(stdout);
	ep_ctl(f->ep, EPOLL_CTL_ADD, 0, EPOLLIN, STDIN_TAG);
}

static int client_command(struct fleet *f, const char *line)
{
	double secs = 30;

	if (strncmp(line, "echo", 4) == 0) {
		if (line[4] == ' ')
			secs = atof(line + 5);
		echo_round(f, secs > 0 ? secs : 30);
	} else if (strncmp(line, "status", 6) == 0) {
		status(f);
	} else if (strncmp(line, "ports", 5) == 0) {
		printf("{\"open\": %lu", f->open);
		print_ports(f, "ports", C_OPEN, -1);
		printf("}\n");
		fflush(stdout);
	} else if (strncmp(line, "quit", 4) == 0) {
		return -1;
	} else {
		warnx("unknown command: %s", line);
	}
	return 0;
}

static int connect_fleet(const char *host, unsigned long port,
			 unsigned long n, unsigned long window, double pace,
			 double timeout)
{
	struct fleet f = { .n = n };
	struct epoll_event evs[MAX_EVENTS];

	raise_nofile(n + 64);
	f.c = calloc(n, sizeof(*f.c));
	if (!f.c)
		die("out of memory");
	for (unsigned long i = 0; i < n; i++)
		f.c[i].fd = -1;
	f.ep = epoll_create1(EPOLL_CLOEXEC);
	if (f.ep < 0)
		die("epoll_create1: %s", strerror(errno));
	connect_all(&f, host, port, window, pace, timeout);
	ep_ctl(f.ep, EPOLL_CTL_ADD, 0, EPOLLIN, STDIN_TAG);
	for (;;) {
		int k = epoll_wait(f.ep, evs, MAX_EVENTS, -1);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < k; i++) {
			if (evs[i].data.u64 == STDIN_TAG) {
				char line[128];
				int eof = lines_fill(&input);

				while (lines_next(&input, line, sizeof(line)))
					if (client_command(&f, line) < 0)
						return 0;
				if (eof)
					return 0;	/* exit closes all */
				continue;
			}
			struct conn *c = &f.c[evs[i].data.u64];

			if (c->state == C_OPEN)
				idle_event(&f, c);
		}
	}
}

static void usage(void) __attribute__((noreturn));

static void usage(void)
{
	fputs("usage: connfleet serve PORT\n"
	      "       connfleet connect HOST PORT N [--window W] [--pace MS] "
	      "[--timeout S]\n", stderr);
	exit(1);
}

int main(int argc, char **argv)
{
	unsigned long window = 256;
	double timeout = 120, pace = 0;

	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(parse_num(argv[2], "port", 1, 65535));
	if (argc < 5 || strcmp(argv[1], "connect") != 0)
		usage();
	for (int i = 5; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--window") == 0)
			window = parse_num(argv[++i], "window", 1, MAX_CONNS);
		else if (strcmp(argv[i], "--pace") == 0)
			pace = (double)parse_num(argv[++i], "pace", 0,
						 3600000) / 1000;
		else if (strcmp(argv[i], "--timeout") == 0)
			timeout = (double)parse_num(argv[++i], "timeout", 1,
						    86400);
		else
			usage();
	}
	return connect_fleet(argv[2], parse_num(argv[3], "port", 1, 65535),
			     parse_num(argv[4], "count", 1, MAX_CONNS), window,
			     pace, timeout);
}
