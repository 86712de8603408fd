// SPDX-License-Identifier: GPL-2.0-only
#include "agent.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pump.h"
#include "util.h"

/* After CMD ended: how long its last bytes may take to the wrapper. */
#define DRAIN_MS 10000

/* One loopback ADDRESS:PORT in a variable's value: VALUE[port_at,
 * port_end) is the port. */
struct lo_ref {
	int family;
	char addr[INET6_ADDRSTRLEN];
	int port;
	size_t port_at, port_end;
};

static bool addr_char(char c)
{
	return isdigit((unsigned char)c) || c == '.';
}

/* The port that starts at S[*i] (after a ':'), or -1. */
static int parse_port(const char *s, size_t *i)
{
	long v = 0;
	size_t start = *i;

	while (isdigit((unsigned char)s[*i]) && *i - start < 5)
		v = v * 10 + (s[(*i)++] - '0');
	if (*i == start || isdigit((unsigned char)s[*i]) || v < 1 || v > 65535)
		return -1;
	return (int)v;
}

/* The next loopback reference in S from *POS on; false when none. */
static bool next_ref(const char *s, size_t *pos, struct lo_ref *r)
{
	static const char v6[] = "[::1]:";

	for (size_t i = *pos; s[i]; i++) {
		struct in_addr a4;
		size_t j = i, len;

		memset(r, 0, sizeof(*r));
		if (strncmp(s + i, v6, sizeof(v6) - 1) == 0) {
			r->family = AF_INET6;
			strcpy(r->addr, "::1");
			j = i + sizeof(v6) - 1;
		} else if (strncmp(s + i, "127.", 4) == 0 &&
			   (i == 0 || !addr_char(s[i - 1]))) {
			while (addr_char(s[j]))
				j++;
			len = j - i;
			if (s[j] != ':' || len >= sizeof(r->addr))
				continue;
			memcpy(r->addr, s + i, len);
			if (inet_pton(AF_INET, r->addr, &a4) != 1)
				continue;
			r->family = AF_INET;
			j++;
		} else {
			continue;
		}
		r->port_at = j;
		r->port = parse_port(s, &j);
		if (r->port < 0)
			continue;
		r->port_end = j;
		*pos = j;
		return true;
	}
	return false;
}

static struct agent_chan *find_chan(const struct agent_env *e,
				    const struct lo_ref *r)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->c[i].family == r->family && e->c[i].port == r->port &&
		    strcmp(e->c[i].addr, r->addr) == 0)
			return (struct agent_chan *)&e->c[i];
	return NULL;
}

int agent_scan(struct agent_env *e, char *err, size_t errlen)
{
	for (size_t i = 0; i < e->nnames; i++) {
		const char *v = getenv(e->names[i]);
		struct lo_ref r;
		size_t pos = 0;

		/* A launcher that did not set it has no such channel. */
		while (v && next_ref(v, &pos, &r)) {
			struct agent_chan *c;

			if (find_chan(e, &r))
				continue;
			if (e->n == AGENT_MAX_CHANS) {
				snprintf(err, errlen, "more than %d loopback "
					 "addresses to relay", AGENT_MAX_CHANS);
				return -E2BIG;
			}
			c = &e->c[e->n++];
			c->family = r.family;
			memcpy(c->addr, r.addr, sizeof(c->addr));
			c->port = r.port;
			c->fd = -1;
		}
	}
	return 0;
}

static socklen_t chan_sockaddr(const struct agent_chan *c, int port,
			       struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (c->family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, c->addr, &a->sin6_addr);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, c->addr, &a->sin_addr);
	return sizeof(*a);
}

int agent_dial(const struct agent_chan *c)
{
	struct sockaddr_storage ss;
	socklen_t len = chan_sockaddr(c, c->port, &ss);
	int fd = socket(c->family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* Loopback: connected or refused at once. */
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

/* --- the agent itself, in the dumped tree ------------------------------- */

struct achan {
	const struct agent_chan *c;
	int lfd;		/* until the command connected */
	int port;		/* the agent's own */
	int conn;		/* the command's connection */
	struct pump up;		/* conn -> socketpair (the wrapper) */
	struct pump down;	/* socketpair -> conn */
};

static void listen_on(struct achan *a)
{
	struct sockaddr_storage ss;
	socklen_t len = chan_sockaddr(a->c, 0, &ss);

	a->lfd = socket(a->c->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->lfd < 0 || bind(a->lfd, (struct sockaddr *)&ss, len) < 0 ||
	    listen(a->lfd, 4) < 0 ||
	    getsockname(a->lfd, (struct sockaddr *)&ss, &len) < 0)
		util_fatal("agent: cannot listen on %s: %s", a->c->addr,
			   strerror(errno));
	a->port = ntohs(ss.ss_family == AF_INET6 ?
			((struct sockaddr_in6 *)&ss)->sin6_port :
			((struct sockaddr_in *)&ss)->sin_port);
	a->conn = -1;
	pump_init(&a->up, -1, -1, true);
	pump_init(&a->down, -1, -1, true);
}

/* VALUE with every channel's port replaced by the agent's. */
static char *rewrite(const struct agent_env *e, const struct achan *ch,
		     const char *value)
{
	/* A port of at least 1 digit in at least 9 characters becomes at
	 * most 5 digits: never twice as long. */
	char *out = xmalloc(2 * strlen(value) + 1), *o = out;
	size_t pos = 0, from = 0;
	struct lo_ref r;

	while (next_ref(value, &pos, &r)) {
		const struct agent_chan *c = find_chan(e, &r);

		memcpy(o, value + from, r.port_at - from);
		o += r.port_at - from;
		o += sprintf(o, "%d", ch[c - e->c].port);
		from = r.port_end;
	}
	strcpy(o, value + from);
	return out;
}

static pid_t start_command(const struct agent_env *e, struct achan *ch,
			   char **cmd)
{
	char *vals[AGENT_MAX_NAMES] = { 0 };
	pid_t pid;

	for (size_t i = 0; i < e->nnames; i++) {
		const char *v = getenv(e->names[i]);

		if (v)
			vals[i] = rewrite(e, ch, v);
	}
	pid = fork();
	if (pid < 0)
		util_fatal("agent: fork: %s", strerror(errno));
	if (pid == 0) {
		for (size_t i = 0; i < e->nnames; i++)
			if (vals[i])
				setenv(e->names[i], vals[i], 1);
		for (size_t i = 0; i < e->n; i++)
			close(e->c[i].fd);	/* the wrapper's channels */
		util_exec(cmd);
	}
	for (size_t i = 0; i < e->nnames; i++)
		free(vals[i]);
	return pid;
}

static void accept_conn(struct achan *a)
{
	int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	/* One connection per channel: later ones are refused. */
	close(a->lfd);
	a->lfd = -1;
	a->conn = fd;
	pump_init(&a->up, fd, a->c->fd, true);
	pump_init(&a->down, a->c->fd, fd, true);
}

/* Whatever CMD wrote to its connections has reached the wrapper. */
static bool ups_done(const struct achan *ch, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ch[i].conn >= 0 && !pump_done(&ch[i].up))
			return false;
	return true;
}

void agent_run(const struct agent_env *e, char **cmd)
{
	struct achan *ch = xcalloc(e->n, sizeof(*ch));
	double deadline = 0;
	bool ended = false;
	int status = 0, sigfd;
	pid_t child;

	for (size_t i = 0; i < e->n; i++) {
		ch[i].c = &e->c[i];
		listen_on(&ch[i]);
	}
	sigfd = util_forward_signalfd();
	if (sigfd < 0)
		util_fatal("agent: signalfd: %s", strerror(-sigfd));
	child = start_command(e, ch, cmd);
	/* poll() only: CRIU restores this loop as it was. */
	while (!ended || (!ups_done(ch, e->n) && util_mono() < deadline)) {
		struct pollfd fds[5 * AGENT_MAX_CHANS + 1];
		size_t lidx[AGENT_MAX_CHANS], n = 0;
		struct signalfd_siginfo si;
		int st;

		fds[n++] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		for (size_t i = 0; i < e->n; i++) {
			lidx[i] = n;
			fds[n++] = (struct pollfd){ .fd = ch[i].lfd,
						    .events = POLLIN };
			pump_poll_add(&ch[i].up, fds, 5 * AGENT_MAX_CHANS + 1, &n);
			pump_poll_add(&ch[i].down, fds, 5 * AGENT_MAX_CHANS + 1, &n);
		}
		if (poll(fds, n, ended ? 100 : -1) < 0) {
			if (errno != EINTR)	/* e.g. CRIU's freeze */
				util_fatal("agent: poll: %s", strerror(errno));
			continue;
		}
		for (size_t i = 0; i < e->n; i++) {
			pump_run(&ch[i].up, fds);
			pump_run(&ch[i].down, fds);
			if (fds[lidx[i]].revents & POLLIN)
				accept_conn(&ch[i]);
		}
		if (fds[0].revents & POLLIN &&
		    read(sigfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGCHLD && !ended)
			kill(child, (int)si.ssi_signo);	/* CMD decides */
		if (!ended && waitpid(child, &st, WNOHANG) == child) {
			status = st;
			ended = true;
			deadline = util_mono() + DRAIN_MS / 1000.0;
		}
	}
	util_exit_like(status);
}
