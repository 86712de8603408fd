// SPDX-License-Identifier: GPL-2.0-only
#include "wrapper.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "pump.h"
#include "relayfile.h"
#include "util.h"

#define MAX_PENDING 16
/* A connection that has not said who it is by then is dropped. */
#define HELLO_TIMEOUT 5.0
/* After the child's end is known: how long to wait for its last bytes. */
#define DRAIN_MS 10000

enum wrapper_state {
	W_RUNNING,	/* the child runs here */
	W_MOVING,	/* it died while a dump was under way: wait for the verdict */
	W_MOVED,	/* it runs elsewhere: relay for its restore */
	W_FINISHING,	/* its end is known: last bytes, then exit */
};

struct relayed {
	int fd;			/* number in the child */
	int orig;		/* the wrapper's original descriptor */
	int local;		/* wrapper's end of the child's socketpair */
	int remote;		/* connection from the child's new host */
	bool to_child, from_child;
	/* The child's host said that REMOTE's end is the child's (a
	 * half-close, its exit): passed on. Any other end of REMOTE (that
	 * host dumped the child again, or died) is not: REMOTE is let go
	 * and the next restore's connection takes over. */
	bool eof_told;
	/* A loopback channel of the agent: ORIG is a connection to its
	 * real server, opened when the first bytes come from the agent. */
	const struct agent_chan *lo;
	struct pump in;		/* orig -> child */
	struct pump out;	/* child -> orig */
};

struct pending {
	int fd;
	char buf[RELAY_HELLO_MAX];
	size_t len;
	double since;
};

struct wrapper {
	enum wrapper_state state;
	pid_t child;
	int pidfd, lfd, sigfd;
	struct relay_info info;
	struct agent_env agent;
	struct relayed r[RELAY_MAX_FDS];
	size_t n;
	struct pending pend[MAX_PENDING];
	size_t npend;
	int status;		/* the child's wait status, once known */
	const struct wrapper_hooks *hooks;
	double finish_deadline;
};

/* In the child: each relayed socket onto its number, every other
 * inherited descriptor closed (CRIU would have to dump it). */
static void child_fds(struct wrapper *w, const int *child_end)
{
	int high[RELAY_MAX_FDS];
	int maxfd = 2;

	/* First out of the way of every target number, then onto them. */
	for (size_t i = 0; i < w->n; i++) {
		high[i] = fcntl(child_end[i], F_DUPFD_CLOEXEC, 1024);
		if (high[i] < 0)
			_exit(127);
	}
	for (size_t i = 0; i < w->n; i++) {
		if (dup2(high[i], w->r[i].fd) < 0)
			_exit(127);
		if (w->r[i].fd > maxfd)
			maxfd = w->r[i].fd;
	}
	for (int fd = 3; fd <= maxfd; fd++) {
		bool keep = false;

		for (size_t i = 0; i < w->n; i++)
			keep |= w->r[i].fd == fd;
		if (!keep)
			close(fd);
	}
	syscall(SYS_close_range, (unsigned)maxfd + 1, ~0U, 0);
}

static void start_child(struct wrapper *w, char **cmd)
{
	int child_end[RELAY_MAX_FDS];

	for (size_t i = 0; i < w->n; i++) {
		int sp[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
			util_fatal("socketpair: %s", strerror(errno));
		w->r[i].local = sp[0];
		child_end[i] = sp[1];
		fcntl(sp[0], F_SETFL, O_NONBLOCK);
	}
	w->child = fork();
	if (w->child < 0)
		util_fatal("fork: %s", strerror(errno));
	if (w->child == 0) {
		/* Its own session: no controlling terminal, which CRIU
		 * could not take to another host. */
		setsid();
		child_fds(w, child_end);
		if (w->agent.n)
			agent_run(&w->agent, cmd);
		util_exec(cmd);
	}
	for (size_t i = 0; i < w->n; i++)
		close(child_end[i]);
	w->pidfd = (int)syscall(SYS_pidfd_open, w->child, 0);
	if (w->pidfd < 0)
		util_fatal("pidfd_open: %s", strerror(errno));
}

static void answer(int fd, const char *text)
{
	ssize_t n = send(fd, text, strlen(text), MSG_NOSIGNAL);

	(void)n;	/* a client that went away learns nothing more */
}

/* Let go of R's connection to the child's former host. */
static void leave(struct relayed *r)
{
	if (r->out.src == r->remote) {
		pump_set_src(&r->out, -1);
		r->out.src_eof = false;
	}
	if (r->in.dst == r->remote)
		pump_set_dst(&r->in, -1);
	close(r->remote);
	r->remote = -1;
	r->eof_told = false;
}

static void attach_remote(struct wrapper *w, struct relayed *r, int fd)
{
	if (r->remote >= 0)
		leave(r);	/* a newer restore replaces it */
	r->remote = fd;
	if (r->to_child)
		pump_set_dst(&r->in, fd);
	/* The dead child's last bytes come first: step() switches to the
	 * remote end once its socket is read to the end. */
	if (r->from_child && (r->local < 0 || r->out.src != r->local))
		pump_set_src(&r->out, fd);
	util_debug("relaying descriptor %d of child %d from its new host",
		   r->fd, (int)w->child);
}

/* One complete hello line from a connection: 0 if it became a relay. */
static int hello(struct wrapper *w, struct pending *p)
{
	char token[RELAY_TOKEN_HEX], what[32];
	int v;

	p->buf[p->len - 1] = '\0';
	if (sscanf(p->buf, "racks-relay 1 %32s %31s", token, what) != 2 ||
	    strlen(token) != RELAY_TOKEN_HEX - 1 ||
	    sodium_memcmp(token, w->info.token, RELAY_TOKEN_HEX - 1) != 0) {
		answer(p->fd, "error bad hello or token\n");
		return -EPERM;
	}
	if (w->state == W_RUNNING) {
		answer(p->fd, "error the child still runs here\n");
		return -EBUSY;
	}
	if (sscanf(what, "fd=%d", &v) == 1) {
		for (size_t i = 0; i < w->n; i++) {
			if (w->r[i].fd != v)
				continue;
			answer(p->fd, "ok\n");
			attach_remote(w, &w->r[i], p->fd);
			return 0;
		}
		answer(p->fd, "error no such relayed descriptor\n");
		return -ENOENT;
	}
	if (sscanf(what, "eof=%d", &v) == 1) {
		for (size_t i = 0; i < w->n; i++) {
			if (w->r[i].fd != v || w->r[i].remote < 0)
				continue;
			/* Its end, when it comes, is the child's own. */
			w->r[i].eof_told = true;
			answer(p->fd, "ok\n");
			close(p->fd);
			return 0;
		}
		answer(p->fd, "error no such relayed descriptor\n");
		return -ENOENT;
	}
	if (sscanf(what, "exit=%d", &v) == 1 && v >= 0 && v < 256)
		w->status = v << 8;
	else if (sscanf(what, "signal=%d", &v) == 1 && v > 0 && v < 65)
		w->status = v;
	else {
		answer(p->fd, "error unknown request\n");
		return -EINVAL;
	}
	answer(p->fd, "ok\n");
	close(p->fd);
	w->state = W_FINISHING;
	w->finish_deadline = util_mono() + DRAIN_MS / 1000.0;
	return 0;
}

static void read_pending(struct wrapper *w, size_t i)
{
	struct pending *p = &w->pend[i];
	ssize_t n = recv(p->fd, p->buf + p->len, 1, 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && p->buf[p->len++] != '\n' && p->len < sizeof(p->buf))
		return;		/* more of the line to come */
	if (n > 0 && p->buf[p->len - 1] == '\n' && hello(w, p) == 0) {
		w->pend[i] = w->pend[--w->npend];	/* handed over */
		return;
	}
	close(p->fd);		/* gone, refused or too long */
	w->pend[i] = w->pend[--w->npend];
}

static void accept_one(struct wrapper *w)
{
	int fd = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (w->npend == MAX_PENDING) {
		close(fd);
		return;
	}
	w->pend[w->npend++] = (struct pending){ .fd = fd,
						 .since = util_mono() };
}

static void child_ended(struct wrapper *w, int status)
{
	w->status = status;
	close(w->pidfd);
	w->pidfd = -1;
	/* Nothing goes to the dead child's sockets any more; what it wrote
	 * is still read from them to the end. */
	for (size_t i = 0; i < w->n; i++)
		if (w->r[i].to_child)
			pump_set_dst(&w->r[i].in, -1);
	if (relayfile_moving(w->child)) {
		w->state = W_MOVING;
		return;
	}
	w->state = W_FINISHING;
	w->finish_deadline = util_mono() + DRAIN_MS / 1000.0;
}

/*
 * Reap the child and whatever of its tree was orphaned on the way (the
 * wrapper is their subreaper): a dumped tree's pids are free at once for
 * a restore on a host of the same pid namespace.
 */
static void reap(struct wrapper *w)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == w->child && w->pidfd >= 0)
			child_ended(w, st);
}

static void check_moving(struct wrapper *w)
{
	if (relayfile_exists(w->child, ".moved")) {
		char *p = relayfile_path(w->child, ".moved");

		w->state = W_MOVED;
		/* Consumed: where hosts share RELAY_DIR, a later relayer of
		 * the same pid must not take it for a dump of its own. */
		unlink(p);
		free(p);
		util_debug("child %d moved; relaying for it", (int)w->child);
	} else if (!relayfile_exists(w->child, ".moving")) {
		/* The dump failed after the child died: a real death. */
		w->state = W_FINISHING;
		w->finish_deadline = util_mono() + DRAIN_MS / 1000.0;
	}
}

/* The child's end, for whoever ran the wrapper. */
static void ended(const struct wrapper *w, int status)
{
	if (w->hooks && w->hooks->ended)
		w->hooks->ended(status, w->hooks->arg);
}

static void on_signal(struct wrapper *w)
{
	struct signalfd_siginfo si;

	if (read(w->sigfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGCHLD) {
		reap(w);
		return;
	}
	if (w->state == W_RUNNING) {
		kill(w->child, (int)si.ssi_signo);	/* the child decides */
		return;
	}
	/* The child is elsewhere: the wrapper ends as told. */
	relayfile_remove(w->child, getpid());
	ended(w, (int)si.ssi_signo);
	util_exit_like((int)si.ssi_signo);
}

/*
 * The agent's end of a loopback channel ended: that is the command's
 * half-close, to pass on to the server, unless the tree was killed by a
 * dump (it goes on elsewhere and reconnects through the bridge).
 */
static void loopback_before(struct wrapper *w, struct relayed *r,
			    const struct pollfd *fds)
{
	if (r->out.src == r->remote && r->remote >= 0)
		r->out.shut_on_eof = r->eof_told;
	else if (r->out.rd_idx >= 0 && fds[r->out.rd_idx].revents)
		r->out.shut_on_eof = w->state == W_RUNNING &&
				     !relayfile_moving(w->child);
}

/* The first bytes for a loopback channel's server: connect to it. */
static void loopback_dial(struct relayed *r)
{
	int fd = agent_dial(r->lo);

	if (fd < 0) {
		/* Its bytes are dropped, and the command sees the end. */
		util_err("cannot connect to %s port %d for the child: %s",
			 r->lo->addr, r->lo->port, strerror(-fd));
		r->out.dst_broken = true;
		r->out.off = r->out.len = 0;
		r->in.src_eof = true;
		return;
	}
	r->orig = fd;
	pump_set_dst(&r->out, fd);
	pump_set_src(&r->in, fd);
	util_debug("descriptor %d: connected to %s port %d", r->fd,
		   r->lo->addr, r->lo->port);
}

/* Every byte from the child (here or elsewhere) has reached its target. */
static bool outputs_done(const struct wrapper *w)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct relayed *r = &w->r[i];

		if (r->from_child && r->out.src >= 0 && !pump_done(&r->out))
			return false;
	}
	return true;
}

/*
 * While a dump of the child is under way (its .moving marker), nothing
 * more is written into the child's sockets: CRIU may have saved their
 * queues already (they are written back at the restore, skqueue.h), and
 * bytes written after that, or into a socket the dump has just closed,
 * would be lost. They wait in the pump for the child's next host; if the
 * dump fails, the marker goes and the child gets them here.
 */
static void pause_for_dump(struct wrapper *w)
{
	bool pending = false, moving;

	for (size_t i = 0; i < w->n; i++) {
		const struct relayed *r = &w->r[i];

		if (r->to_child && r->local >= 0 && r->in.dst == r->local &&
		    r->in.len > r->in.off)
			pending = true;
	}
	moving = pending && w->state == W_RUNNING && relayfile_moving(w->child);
	for (size_t i = 0; i < w->n; i++) {
		struct relayed *r = &w->r[i];

		r->in.paused = moving && r->in.dst == r->local;
	}
}

static void step(struct wrapper *w)
{
	struct pollfd fds[4 * RELAY_MAX_FDS + MAX_PENDING + 8];
	size_t n = 0, base_p;
	int timeout = w->state == W_RUNNING || w->state == W_MOVED ? -1 : 100;

	if (w->npend && timeout < 0)
		timeout = 1000;		/* to drop silent connections */

	fds[n++] = (struct pollfd){ .fd = w->sigfd, .events = POLLIN };
	fds[n++] = (struct pollfd){ .fd = w->pidfd, .events = POLLIN };
	fds[n++] = (struct pollfd){ .fd = w->lfd, .events = POLLIN };
	base_p = n;
	pause_for_dump(w);
	for (size_t i = 0; i < w->npend; i++)
		fds[n++] = (struct pollfd){ .fd = w->pend[i].fd, .events = POLLIN };
	for (size_t i = 0; i < w->n; i++) {
		pump_poll_add(&w->r[i].in, fds, sizeof(fds) / sizeof(fds[0]), &n);
		pump_poll_add(&w->r[i].out, fds, sizeof(fds) / sizeof(fds[0]), &n);
	}
	if (poll(fds, n, timeout) < 0) {
		if (errno == EINTR)
			return;
		util_fatal("poll: %s", strerror(errno));
	}
	if (fds[1].revents & POLLIN)
		reap(w);
	/* Again now: a dump that began while poll() waited has killed the
	 * child, which is what woke it (its socket hung up or has room):
	 * nothing may be written there, nor dropped for having failed. */
	pause_for_dump(w);
	for (size_t i = 0; i < w->n; i++) {
		struct relayed *r = &w->r[i];

		if (r->lo)
			loopback_before(w, r, fds);
		pump_run(&r->in, fds);
		pump_run(&r->out, fds);
		if (r->lo && r->orig < 0 && r->out.len > r->out.off)
			loopback_dial(r);
		/* The child's host is no longer there for it. */
		if (r->remote >= 0 && r->out.src == r->remote &&
		    r->out.src_eof && !(r->lo && r->eof_told))
			leave(r);
		/* The dead child's socket is read to its end, then let go. */
		if (r->local >= 0 && r->out.src == r->local &&
		    r->out.src_eof && w->state != W_RUNNING) {
			close(r->local);
			r->local = -1;
			pump_set_src(&r->out, r->remote);
		}
		if (!r->from_child && r->local >= 0 && w->state != W_RUNNING) {
			close(r->local);
			r->local = -1;
		}
	}
	for (size_t i = w->npend; i-- > 0;) {
		if (fds[base_p + i].revents)
			read_pending(w, i);
		else if (util_mono() - w->pend[i].since > HELLO_TIMEOUT) {
			close(w->pend[i].fd);
			w->pend[i] = w->pend[--w->npend];
		}
	}
	if (fds[2].revents & POLLIN)
		accept_one(w);
	if (fds[0].revents & POLLIN)
		on_signal(w);
	if (w->state == W_MOVING)
		check_moving(w);
}

/* The descriptors to relay: 0, 1, 2 if open, and EXTRA. */
static void pick_fds(struct wrapper *w, const int *extra, size_t nextra)
{
	int want[RELAY_MAX_FDS + 3];
	size_t nwant = 0;

	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			want[nwant++] = fd;
	for (size_t i = 0; i < nextra; i++) {
		bool dup = false;

		if (fcntl(extra[i], F_GETFD) < 0)
			util_fatal("descriptor %d to relay is not open",
				   extra[i]);
		for (size_t j = 0; j < nwant; j++)
			dup |= want[j] == extra[i];
		if (!dup && nwant < RELAY_MAX_FDS)
			want[nwant++] = extra[i];
		else if (!dup)
			util_fatal("at most %d descriptors can be relayed",
				   RELAY_MAX_FDS);
	}
	for (size_t i = 0; i < nwant; i++) {
		struct relayed *r = &w->r[w->n++];
		int acc = fcntl(want[i], F_GETFL) & O_ACCMODE;

		r->fd = want[i];
		/* The wrapper's copy, out of the way of the child's numbers. */
		r->orig = fcntl(want[i], F_DUPFD_CLOEXEC, 3);
		if (r->orig < 0)
			util_fatal("dup: %s", strerror(errno));
		r->remote = -1;
		/* stdin only to the child, stdout and stderr only from it:
		 * reading a terminal given as stdout would steal its input. */
		r->to_child = r->fd == 0 ? acc != O_WRONLY :
			      r->fd > 2 && acc != O_WRONLY;
		r->from_child = r->fd == 0 ? false : acc != O_RDONLY;
		w->info.fds[w->info.nfds++].fd = r->fd;
	}
}

/* One relayed descriptor per loopback channel, numbered after the others
 * in the agent; its original is connected later (loopback_dial). */
static void pick_loopback(struct wrapper *w, const char *const *names,
			  size_t nnames)
{
	char err[256];
	int next = 3;

	for (size_t i = 0; i < nnames; i++)
		w->agent.names[w->agent.nnames++] = names[i];
	if (agent_scan(&w->agent, err, sizeof(err)) < 0)
		util_fatal("%s", err);
	for (size_t i = 0; i < w->n; i++)
		if (w->r[i].fd >= next)
			next = w->r[i].fd + 1;
	for (size_t i = 0; i < w->agent.n; i++) {
		struct relayed *r;

		if (w->n == RELAY_MAX_FDS)
			util_fatal("at most %d descriptors can be relayed",
				   RELAY_MAX_FDS);
		r = &w->r[w->n++];
		w->agent.c[i].fd = next++;
		r->fd = w->agent.c[i].fd;
		r->orig = r->remote = -1;
		r->to_child = r->from_child = true;
		r->lo = &w->agent.c[i];
		w->info.fds[w->info.nfds++].fd = r->fd;
		util_debug("relaying %s port %d as descriptor %d of the agent",
			   r->lo->addr, r->lo->port, r->fd);
	}
}

void wrapper_run(const int *extra, size_t nextra, const char *const *lo_names,
		 size_t nlo, const struct wrapper_hooks *hooks, char **cmd)
{
	static struct wrapper w;
	unsigned char token[16];
	int ret;

	if (sodium_init() < 0)
		util_fatal("libsodium failed to initialise");
	signal(SIGPIPE, SIG_IGN);
	pick_fds(&w, extra, nextra);
	pick_loopback(&w, lo_names, nlo);
	/* Orphans of the child's tree (a dumped one) are reaped here. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	w.lfd = util_listen_any(&w.info.port);
	if (w.lfd < 0)
		util_fatal("cannot listen on a TCP port: %s", strerror(-w.lfd));
	randombytes_buf(token, sizeof(token));
	sodium_bin2hex(w.info.token, sizeof(w.info.token), token, sizeof(token));
	w.info.wrapper = getpid();
	w.sigfd = util_forward_signalfd();
	if (w.sigfd < 0)
		util_fatal("signalfd: %s", strerror(-w.sigfd));
	w.hooks = hooks;
	start_child(&w, cmd);
	if (hooks && hooks->started)
		hooks->started(w.child, hooks->arg);
	for (size_t i = 0; i < w.n; i++) {
		struct relayed *r = &w.r[i];

		pump_init(&r->in, r->to_child ? r->orig : -1,
			  r->to_child ? r->local : -1, true);
		pump_init(&r->out, r->from_child ? r->local : -1,
			  r->from_child ? r->orig : -1, false);
	}
	ret = relayfile_write(w.child, &w.info);
	if (ret < 0)
		util_err("cannot write the relay file in %s: %s (the child "
			 "cannot move)", relayfile_dir(), strerror(-ret));
	while (w.state != W_FINISHING ||
	       (!outputs_done(&w) && util_mono() < w.finish_deadline))
		step(&w);
	relayfile_remove(w.child, getpid());
	ended(&w, w.status);
	util_exit_like(w.status);
}
