// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd: keeps the TCP connections of unmodified applications alive.
 *
 * Start-up order: parse and check the configuration, open the privileged
 * resources (NFQUEUE, rtnetlink, control socket), install the ruleset
 * (the queue is bound first so no diverted packet finds it missing),
 * then enter the event loop. Shutdown removes the table and the socket.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <sodium.h>
#include <unistd.h>

#include "caps.h"
#include "channel.h"
#include "ctl.h"
#include "hold.h"
#include "inject.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "migrate.h"
#include "notify.h"
#include "offerset.h"
#include "queue.h"
#include "rackd.h"
#include "reconnect.h"
#include "rtnl.h"
#include "ruleset.h"
#include "setup.h"
#include "splice.h"
#include "state.h"
#include "track.h"

struct options {
	bool foreground;
	bool check_only;
	bool debug;
	const char *config_path;
	const char *sock_path;
	const char *state_path;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rackd [-fndV] [-c FILE] [-S PATH] [-s PATH]\n"
		"  -f       stay in the foreground, log to stderr\n"
		"  -c FILE  configuration (default " CONFIG_DEFAULT_PATH ")\n"
		"  -S PATH  control socket (default " RACKD_DEFAULT_SOCKET ")\n"
		"  -s PATH  state file (default " STATE_DEFAULT_PATH "),\n"
		"           none: no state kept across restarts\n"
		"  -n       check the configuration, print it and exit\n"
		"  -d       debug logging\n"
		"  -V       print the version and exit\n");
}

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;

	o->config_path = CONFIG_DEFAULT_PATH;
	o->sock_path = RACKD_DEFAULT_SOCKET;
	o->state_path = STATE_DEFAULT_PATH;
	opterr = 0;
	while ((c = getopt(argc, argv, ":fc:S:s:ndVh")) != -1) {
		switch (c) {
		case 'f':
			o->foreground = true;
			break;
		case 'c':
			o->config_path = optarg;
			break;
		case 'S':
			o->sock_path = optarg;
			break;
		case 's':
			o->state_path = strcmp(optarg, "none") ? optarg : NULL;
			break;
		case 'n':
			o->check_only = true;
			break;
		case 'd':
			o->debug = true;
			break;
		case 'V':
			printf("rackd %s\n", RACKD_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			fprintf(stderr, "rackd: option -%c needs an argument\n",
				optopt);
			exit(EXIT_USAGE);
		default:
			fprintf(stderr, "rackd: unknown option -%c (see rackd -h)\n",
				optopt);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rackd: unexpected argument '%s'\n",
			argv[optind]);
		exit(EXIT_USAGE);
	}
}

static struct config *load_config_or_exit(const char *path)
{
	struct config *cfg;
	char err[512];
	bool missing;

	if (config_load(path, &cfg, &missing, err, sizeof(err))) {
		fprintf(stderr, "rackd: %s\n", err);
		exit(EXIT_USAGE);
	}
	if (missing)
		log_info("%s not found: using built-in defaults", path);
	return cfg;
}

/* A new table starts with empty sets and maps: the held flows and the
 * splices of running connections go back in, in the same transaction. */
static char *state_script(struct rackd *d, const struct config *cfg)
{
	char *buf = NULL;
	size_t len = 0, n = 0;
	struct conn **held = xcalloc(d->conns.count + 1, sizeof(*held));
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	for (struct conn *c = d->conns.head; c; c = c->next)
		if (c->hold)
			held[n++] = c;
	if (n || d->splice->mapped)
		ruleset_chains_write(f, cfg, d->splice->mapped > 0, n > 0);
	ruleset_held_write(f, held, (unsigned)n, true);
	splice_write_state(d, f);
	free(held);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	return buf;
}

/* "auto" was resolved at start; a reload does not probe the kernel again. */
static enum queue_mode reload_mode(const struct rackd *d,
				   const struct config *cfg)
{
	if (cfg->queue_mode != QUEUE_MODE_AUTO)
		return cfg->queue_mode;
	return d->queue_mode;
}

/* The line `systemctl status` shows. */
static const char *status_line(const struct rackd *d, char *buf, size_t len)
{
	snprintf(buf, len, "queue %u (%s), connections: %zu", d->cfg->queue_num,
		 config_queue_mode_name(d->queue_mode), d->conns.count);
	return buf;
}

static int reload(struct rackd *d, char *err, size_t errlen)
{
	struct config *cfg;
	enum queue_mode used;
	bool missing, replaced;
	char *state;
	int ret;

	ret = config_load(d->config_path, &cfg, &missing, err, errlen);
	if (ret) {
		log_warnx("reload refused, keeping the running configuration: %s",
			  err);
		return ret;
	}
	if (cfg->queue_num != d->cfg->queue_num ||
	    cfg->queue_maxlen != d->cfg->queue_maxlen) {
		snprintf(err, errlen, "changing queue or queue_maxlen needs a "
			 "restart");
		log_warnx("reload refused: %s", err);
		config_free(cfg);
		return -EINVAL;
	}
	state = state_script(d, cfg);
	ret = ruleset_install(cfg, reload_mode(d, cfg), state, &used,
			      &replaced, err, errlen);
	if (ret) {
		char again[256];

		config_free(cfg);
		free(state);
		/* The failed transaction may have replaced the table: put the
		 * running configuration's ruleset back. */
		state = state_script(d, d->cfg);
		if (ruleset_install(d->cfg, reload_mode(d, d->cfg), state,
				    &used, &replaced, again, sizeof(again)))
			log_warnx("reload failed (%s) and the running ruleset "
				  "could not be restored: %s", err, again);
		else
			log_warnx("reload refused, running ruleset kept: %s",
				  err);
		free(state);
		return ret;
	}
	free(state);
	config_free(d->cfg);
	d->cfg = cfg;
	d->queue_mode = used;
	inject_set_mark(d->inject, cfg->mark);
	log_set_debug(cfg->debug || d->debug_option);
	log_info("configuration reloaded from %s%s", d->config_path,
		 missing ? " (missing: built-in defaults)" : "");
	return 0;
}

/* The service manager sees every reload begin and end, refused or not. */
static int rackd_reload(struct rackd *d, char *err, size_t errlen)
{
	char status[128];
	int ret;

	notify_reloading();
	ret = reload(d, err, errlen);
	notify_ready(status_line(d, status, sizeof(status)));
	return ret;
}

static void on_signal(void *arg, uint32_t events)
{
	struct rackd *d = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		char err[256];

		switch (si.ssi_signo) {
		case SIGHUP:
			rackd_reload(d, err, sizeof(err));
			break;
		case SIGTERM:
		case SIGINT:
			log_info("signal %d: shutting down", si.ssi_signo);
			loop_stop(d->loop);
			break;
		}
	}
}

static void on_queue(void *arg, uint32_t events)
{
	struct rackd *d = arg;

	(void)events;
	queue_process(d->queue);
}

static void on_rtnl(void *arg, uint32_t events)
{
	struct rackd *d = arg;

	(void)events;
	rtnl_process(d->rtnl);
}

static void on_link(void *arg, const struct rtnl_link_event *ev)
{
	struct rackd *d = arg;

	d->stats.link_events++;
	live_link_event(d, ev);
	log_debug("link %s (%u): %s, carrier %s", ev->name, ev->ifindex,
		  ev->removed ? "removed" : ev->up ? "up" : "down",
		  ev->carrier ? "on" : "off");
}

static void on_addr(void *arg, const struct rtnl_addr_event *ev)
{
	struct rackd *d = arg;
	char buf[PREFIX_STRLEN];

	d->stats.addr_events++;
	live_addr_event(d, ev);
	log_debug("address %s %s on ifindex %u",
		  prefix_format(&ev->prefix, buf, sizeof(buf)),
		  ev->removed ? "removed" : "added", ev->ifindex);
}

static void on_sweep(struct timer *t, void *arg)
{
	struct rackd *d = arg;
	char status[128];

	track_sweep(d);
	notify_status(status_line(d, status, sizeof(status)));
	loop_timer_arm(d->loop, t, d->cfg->sweep_interval_ms);
}

static int open_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/*
 * Fork before any descriptor exists: epoll and signalfd registrations
 * belong to the process that made them, so a daemon forked later would
 * never hear its signals. The parent waits until the child reports a
 * complete start-up (or dies), so start-up errors still reach the caller
 * on stderr and as the child's exit code. Returns the pipe to report on.
 */
static int detach_begin(void)
{
	int pfd[2], status;
	pid_t pid;
	ssize_t n;
	char ok;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		fatal(1, "pipe");
	pid = fork();
	if (pid < 0)
		fatal(1, "fork");
	if (pid == 0) {
		close(pfd[0]);
		if (setsid() < 0)
			fatal(1, "setsid");
		return pfd[1];
	}
	close(pfd[1]);
	do
		n = read(pfd[0], &ok, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	if (waitpid(pid, &status, 0) < 0)
		_exit(1);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* Start-up succeeded: release the terminal and the waiting parent. */
static void detach_finish(int report_fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (chdir("/") < 0)
		log_warn("chdir /");
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	if (write(report_fd, "", 1) != 1)
		log_warn("reporting start-up to the parent");
	close(report_fd);
}

/*
 * Who hears what happens to a connection, in this order: the event
 * stream sees it first, the state file decides whether the connection
 * was in it before anyone lets go of it, and its keys go last.
 */
static void subscribe(struct rackd *d)
{
	static const struct {
		uint32_t mask;
		event_fn fn;
	} subs[] = {
		{ STATE_EVENTS, state_event },
		{ LIVE_EVENTS, live_event },
		{ RECONNECT_EVENTS, reconnect_event },
		{ SPLICE_EVENTS, splice_event },
		{ SETUP_EVENTS, setup_event },
	};

	if (event_subscribe(&d->events, EVENT_ALL, ctl_event, d->ctl))
		fatalx(1, "too many event subscribers");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (event_subscribe(&d->events, subs[i].mask, subs[i].fn, d))
			fatalx(1, "too many event subscribers");
}

/* What liveness's path news does (liveness.h). */
static const struct live_ops path_ops = {
	.path_down = hold_begin,
	.path_up = hold_end,
	.parked_tick = migrate_tick,
	.reconnect = reconnect_send,
	.moving = reconnect_begin,
	.held_again = hold_restore,
	.unhold = hold_free,
};

/* Which module handles which of racks' message types (channel.h). */
static void handle_messages(struct rackd *d)
{
	static struct channel channel;
	int (*const handlers[])(struct rackd *) = {
		setup_handle_messages,
		live_handle_messages,
		reconnect_handle_messages,
		migrate_handle_messages,
	};

	d->channel = &channel;
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i](d))
			fatalx(1, "message handlers: a type handled twice");
}

static void start(struct rackd *d)
{
	struct rtnl_handlers rh = { on_link, on_addr, d };
	char err[512], *state;
	bool replaced;
	int ret;

	d->loop = loop_new();
	conn_table_init(&d->conns);
	d->sigfd = open_signals();
	if (d->sigfd < 0)
		fatal(1, "signalfd");
	loop_add(d->loop, d->sigfd, EPOLLIN, on_signal, d);

	ret = ctl_open(&d->ctl, d, d->sock_path);
	if (ret == -EADDRINUSE)
		fatalx(1, "another rackd is already running on %s",
		       d->sock_path);
	if (ret)
		fatalx(1, "control socket %s: %s", d->sock_path,
		       strerror(-ret));
	subscribe(d);

	ret = queue_open(&d->queue, d->cfg->queue_num, d->cfg->queue_maxlen,
			 track_packet, d);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "binding NFQUEUE %u: %s%s", d->cfg->queue_num,
		       strerror(-ret),
		       ret == -EBUSY ? " (another program owns this queue)" : "");
	}
	loop_add(d->loop, queue_fd(d->queue), EPOLLIN, on_queue, d);

	ret = inject_open(&d->inject, d->cfg->mark);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "raw sockets: %s", strerror(-ret));
	}
	ret = offerset_open(&d->offers);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "nftables netlink socket: %s", strerror(-ret));
	}
	edp_announce_new(d->announcement);
	keypool_init(&d->keys, d->loop);
	reconnect_init(d);
	handle_messages(d);
	live_set_ops(d, &path_ops);

	ret = rtnl_open(&d->rtnl, &rh);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "rtnetlink: %s", strerror(-ret));
	}
	loop_add(d->loop, rtnl_fd(d->rtnl), EPOLLIN, on_rtnl, d);
	/* Which link each local address is on: carrier loss suspends. */
	if (rtnl_dump_addresses(d->rtnl))
		log_warn("rtnetlink: dumping addresses");

	/* Connections of a previous rackd: their splices and holds go into
	 * the new table's first transaction, which also replaces the old
	 * table that kept rewriting and holding them meanwhile. */
	state_init(d, d->state->path);
	state_load(d);
	state = d->conns.count ? state_script(d, d->cfg) : NULL;
	ret = ruleset_install(d->cfg, d->cfg->queue_mode, state, &d->queue_mode,
			      &replaced, err, sizeof(err));
	free(state);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(ret == -ENOTSUP ? EXIT_KERNEL : 1, "ruleset: %s", err);
	}
	d->table_installed = true;
	if (replaced)
		log_info("replaced a stale table inet %s from an earlier run",
			 RULESET_TABLE);
	log_info("rackd %s: table inet %s installed, queue %u (%s), "
		 "control socket %s", RACKD_VERSION, RULESET_TABLE,
		 d->cfg->queue_num, config_queue_mode_name(d->queue_mode),
		 d->sock_path);

	timer_init(&d->sweep_timer, on_sweep, d);
	loop_timer_arm(d->loop, &d->sweep_timer, d->cfg->sweep_interval_ms);
	d->started = time(NULL);
	d->started_mono = loop_now();
}

/*
 * Spliced and held connections need the table while no rackd runs: their
 * segments are rewritten and held there (the queue is bypassed). So with
 * such connections written to the state file, the table stays for the
 * next rackd, which takes it over; otherwise it goes.
 */
static bool hand_over(struct rackd *d)
{
	if (!d->state->path || state_write(d))
		return false;
	if (!d->splice->mapped && !d->held)
		return false;
	log_info("table inet %s left in place for %u spliced and %u held "
		 "connection(s): the next rackd takes them over from %s",
		 RULESET_TABLE, d->splice->mapped, d->held, d->state->path);
	return true;
}

static void stop(struct rackd *d)
{
	char err[256];
	bool handed_over;

	notify_stopping();
	handed_over = hand_over(d);
	if (d->table_installed && !handed_over &&
	    ruleset_remove(err, sizeof(err)))
		log_warnx("removing table inet %s: %s", RULESET_TABLE, err);
	ctl_close(d->ctl);
	rtnl_close(d->rtnl);
	queue_close(d->queue);
	loop_timer_cancel(d->loop, &d->sweep_timer);
	for (struct conn *c = d->conns.head; c; c = c->next) {
		/* The table is gone already: no set to update. */
		free(c->hold);
		c->hold = NULL;
		live_detach(d, c);
		/* Keys live only in memory, and are wiped before it is freed. */
		setup_free(d, c);
		loop_timer_cancel(d->loop, &c->expiry);
	}
	conn_table_free(&d->conns, NULL);
	inject_close(d->inject);
	offerset_close(d->offers);
	keypool_wipe(&d->keys);
	live_free(d);
	reconnect_free(d);
	/* Kept addresses go with the table, or stay with it. */
	if (handed_over)
		local_leave(d->local);
	else
		local_free(d->local);
	state_free(d);
	close(d->sigfd);
	loop_free(d->loop);
	config_free(d->cfg);
	log_info("stopped");
}

/* The engine's and the state file's own state, which struct rackd points
 * at: one instance, like struct rackd itself. */
static void provide_state(struct rackd *d)
{
	static struct live_state live;
	static struct reconnect_state reconnect;
	static struct splice_stats splice;
	static struct local_state local;
	static struct state_file state;
	static struct migrate_stats migrate;

	d->live = &live;
	d->reconnect = &reconnect;
	d->splice = &splice;
	d->local = &local;
	d->state = &state;
	d->migrate = &migrate;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct rackd d = { 0 };
	struct notify_watchdog *wd;
	char status[128];
	int ret;

	parse_options(argc, argv, &o);
	/* stderr until start-up is done, so its failures reach the caller. */
	log_init("rackd", true, o.debug);
	d.cfg = load_config_or_exit(o.config_path);
	if (d.cfg->debug)
		log_set_debug(true);
	if (o.check_only) {
		config_dump(d.cfg, stdout);
		config_free(d.cfg);
		return 0;
	}
	if (geteuid() != 0)
		fatalx(1, "must run as root (needs CAP_NET_ADMIN and CAP_NET_RAW)");
	if (sodium_init() < 0)
		fatalx(1, "libsodium initialisation failed");
	provide_state(&d);
	d.reload = rackd_reload;
	d.config_path = o.config_path;
	d.debug_option = o.debug;
	d.sock_path = o.sock_path;
	d.state->path = o.state_path;
	int report_fd = o.foreground ? -1 : detach_begin();

	start(&d);
	ret = caps_drop();
	if (ret) {
		stop(&d);
		fatalx(1, "dropping capabilities: %s", strerror(-ret));
	}
	log_info("capabilities dropped but CAP_NET_ADMIN and CAP_NET_RAW");
	if (report_fd >= 0) {
		log_init("rackd", false, log_debug_enabled());
		detach_finish(report_fd);
	}
	/* Ruleset and queue are up: a service manager may count on us. */
	notify_ready(status_line(&d, status, sizeof(status)));
	wd = notify_watchdog_new(d.loop, queue_fd(d.queue));
	ret = loop_run(d.loop);
	if (ret)
		log_warnx("event loop: %s", strerror(-ret));
	notify_watchdog_free(wd);
	stop(&d);
	return ret ? 1 : 0;
}
