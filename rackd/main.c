// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd: keeps the TCP connections of unmodified applications alive.
 *
 * main() parses and checks the configuration, wires the layers together
 * (who hears which event, who handles which message type, what a path's
 * news does: see README "Architecture"), starts the daemon (daemon.c),
 * drops capabilities and enters the event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adopt.h"
#include "caps.h"
#include "channel.h"
#include "ctl.h"
#include "daemon.h"
#include "hold.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "migrate.h"
#include "notify.h"
#include "queue.h"
#include "rackd.h"
#include "reconnect.h"
#include "rstguard.h"
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
static void stream_event(void *arg, enum event_type type, struct conn *c,
			 const char *reason)
{
	struct rackd *d = arg;

	/* The control socket opens in daemon_start(), after the wiring. */
	ctl_event(d->ctl, type, c, reason);
}

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
		{ ADOPT_EVENTS, adopt_event },
		{ SETUP_EVENTS, setup_event },
		{ RSTGUARD_EVENTS, rstguard_event },
	};

	if (event_subscribe(&d->events, EVENT_ALL, stream_event, d))
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
	.reopen = reconnect_reopen,
	.held_again = hold_restore,
	.unhold = hold_free,
};

/* What adoption needs of the tracker (adopt.h). */
static const struct adopt_ops adopt_ops = {
	.new_conn = track_restore,
	.make_room = track_make_room,
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
		adopt_handle_messages,
	};

	d->channel = &channel;
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i](d))
			fatalx(1, "message handlers: a type handled twice");
}

static void wire(struct rackd *d)
{
	handle_messages(d);
	live_set_ops(d, &path_ops);
	adopt_set_ops(d, &adopt_ops);
	subscribe(d);
	d->reload = daemon_reload;
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
	static struct adopt_state adopt;
	static struct rstguard_state rstguard;

	d->live = &live;
	d->reconnect = &reconnect;
	d->splice = &splice;
	d->local = &local;
	d->state = &state;
	d->migrate = &migrate;
	d->adopt = &adopt;
	d->rstguard = &rstguard;
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
	d.config_path = o.config_path;
	d.debug_option = o.debug;
	d.sock_path = o.sock_path;
	d.state->path = o.state_path;
	int report_fd = o.foreground ? -1 : detach_begin();

	wire(&d);
	daemon_start(&d);
	ret = caps_drop();
	if (ret) {
		daemon_stop(&d);
		fatalx(1, "dropping capabilities: %s", strerror(-ret));
	}
	log_info("capabilities dropped but CAP_NET_ADMIN and CAP_NET_RAW");
	if (report_fd >= 0) {
		log_init("rackd", false, log_debug_enabled());
		detach_finish(report_fd);
	}
	/* Ruleset and queue are up: a service manager may count on us. */
	notify_ready(daemon_status(&d, status, sizeof(status)));
	wd = notify_watchdog_new(d.loop, queue_fd(d.queue));
	ret = loop_run(d.loop);
	if (ret)
		log_warnx("event loop: %s", strerror(-ret));
	notify_watchdog_free(wd);
	daemon_stop(&d);
	return ret ? 1 : 0;
}
