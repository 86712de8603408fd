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
#include <libgen.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adopt.h"
#include "caps.h"
#include "channel.h"
#include "ctl.h"
#include "daemon.h"
#include "hold.h"
#include "hostid.h"
#include "hostkey_file.h"
#include "knownhosts_file.h"
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

/* What the command line asks of rackd besides running. */
enum key_action { KEY_NONE, KEY_INIT, KEY_ROTATE };

struct options {
	bool foreground;
	bool check_only;
	bool debug;
	enum key_action key_action;
	const char *config_path;
	const char *sock_path;
	const char *state_path;
	const char *hostkey_path;	/* -k: NULL, beside the state file */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rackd [-dfhnV] [-c FILE] [-S PATH] [-s PATH] [-k PATH]\n"
		"       rackd --init-host-key | --rotate-host-key [-s PATH] [-k PATH]\n"
		"  -f, --foreground     stay in the foreground, log to stderr\n"
		"  -c, --config FILE    configuration (default " CONFIG_DEFAULT_PATH ")\n"
		"  -S, --socket PATH    control socket (default " RACKD_DEFAULT_SOCKET ")\n"
		"  -s, --state PATH     state file (default " STATE_DEFAULT_PATH "),\n"
		"                       none: no state kept across restarts; the host\n"
		"                       key and known_hosts files go beside it\n"
		"  -k, --host-key PATH  host key file (default: " HOSTKEY_FILE_NAME
		" beside the state file)\n"
		"  -n, --check          check the configuration, print it and exit\n"
		"  -d, --debug          debug logging\n"
		"  --init-host-key      make the host key if there is none, print its\n"
		"                       fingerprint and exit\n"
		"  --rotate-host-key    replace the host key (the old one kept as\n"
		"                       PATH.old), print both fingerprints and exit\n"
		"  -V, --version        print the version and exit\n"
		"  -h, --help           this text\n");
}

/* A getopt_long() error, C ':' or '?', about the option as it was given:
 * "-c" or "--config" (optind is past a long option, or a missing
 * argument's option; optopt is 0 for an unknown long option). */
static noreturn void option_error(char **argv, int c)
{
	const char *arg = argv[optind - 1];
	bool is_long = !strncmp(arg, "--", 2);
	char name[64];

	if (is_long)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="),
			 arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (c == ':')
		fprintf(stderr, "rackd: option %s needs an argument\n", name);
	else if (is_long && optopt)
		fprintf(stderr, "rackd: option %s takes no argument\n", name);
	else
		fprintf(stderr, "rackd: unknown option %s (see rackd -h)\n",
			name);
	exit(EXIT_USAGE);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 'S' },
		{ "state", required_argument, NULL, 's' },
		{ "host-key", required_argument, NULL, 'k' },
		{ "check", no_argument, NULL, 'n' },
		{ "debug", no_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "init-host-key", no_argument, NULL, 'I' },
		{ "rotate-host-key", no_argument, NULL, 'R' },
		{ 0 }
	};
	int c;

	o->config_path = CONFIG_DEFAULT_PATH;
	o->sock_path = RACKD_DEFAULT_SOCKET;
	o->state_path = STATE_DEFAULT_PATH;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fc:S:s:k:ndVh", longopts,
				NULL)) != -1) {
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
		case 'k':
			o->hostkey_path = optarg;
			break;
		case 'n':
			o->check_only = true;
			break;
		case 'd':
			o->debug = true;
			break;
		case 'I':
		case 'R':
			if (o->key_action) {
				fprintf(stderr, "rackd: --init-host-key and "
					"--rotate-host-key exclude each other\n");
				exit(EXIT_USAGE);
			}
			o->key_action = c == 'I' ? KEY_INIT : KEY_ROTATE;
			break;
		case 'V':
			printf("rackd %s\n", RACKD_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			option_error(argv, c);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rackd: unexpected argument '%s'\n",
			argv[optind]);
		exit(EXIT_USAGE);
	}
	if (o->key_action && o->check_only) {
		fprintf(stderr, "rackd: -n does not go with --init-host-key or "
			"--rotate-host-key\n");
		exit(EXIT_USAGE);
	}
}

/* NAME in the directory of PATH, allocated. */
static char *beside(const char *path, const char *name)
{
	char *copy = xstrdup(path), *out;

	if (asprintf(&out, "%s/%s", dirname(copy), name) < 0)
		fatalx(EXIT_NOMEM, "out of memory");
	free(copy);
	return out;
}

/* The host key's file: -k, else beside the state file, else none. */
static char *hostkey_path(const struct options *o)
{
	if (o->hostkey_path)
		return xstrdup(o->hostkey_path);
	return o->state_path ? beside(o->state_path, HOSTKEY_FILE_NAME) : NULL;
}

static void print_key(const char *what, const struct hostkey *k)
{
	char fp[EDP_HOST_FP_STRLEN], pub[EDP_HOST_KEY_STRLEN];

	edp_host_fingerprint(k->pk, fp);
	edp_host_key_format(k->pk, pub);
	printf("%sfingerprint %s\n%spublic %s\n", what, fp, what, pub);
}

/* --init-host-key and --rotate-host-key: the key file alone, no daemon. */
static int host_key_command(const struct options *o)
{
	char *path = hostkey_path(o), err[512];
	struct hostkey old, new;
	bool created;
	int ret;

	if (!path) {
		fprintf(stderr, "rackd: -s none keeps no host key file: name "
			"one with -k PATH\n");
		return EXIT_USAGE;
	}
	if (sodium_init() < 0)
		fatalx(1, "libsodium initialisation failed");
	if (o->key_action == KEY_INIT) {
		ret = hostkey_load_or_create(path, &new, &created, err,
					     sizeof(err));
		if (!ret) {
			printf("host key %s: %s\n", path, created ? "created"
			       : "exists, left as it is");
			print_key("", &new);
		}
	} else {
		ret = hostkey_rotate(path, &old, &new, err, sizeof(err));
		if (!ret) {
			char oldfp[EDP_HOST_FP_STRLEN], pub[EDP_HOST_KEY_STRLEN];

			edp_host_fingerprint(old.pk, oldfp);
			edp_host_key_format(new.pk, pub);
			printf("host key %s: rotated, the old key kept in "
			       "%s" HOSTKEY_OLD_SUFFIX "\n", path, path);
			print_key("old ", &old);
			print_key("new ", &new);
			printf("restart rackd to use it: peers then see the new "
			       "key; one that knows %s accepts it, proven by "
			       "the old key; one that pins keys must pin the "
			       "new one (rackctl hosts add %s NAME --pin)\n",
			       oldfp, pub);
		}
	}
	hostkey_wipe(&old);
	hostkey_wipe(&new);
	if (ret)
		fprintf(stderr, "rackd: %s\n", err);
	free(path);
	return ret ? 1 : 0;
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
	.carriers_gone = daemon_sweep_soon,
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
	static struct known_hosts_file hosts_file;

	d->live = &live;
	d->reconnect = &reconnect;
	d->splice = &splice;
	d->local = &local;
	d->state = &state;
	d->migrate = &migrate;
	d->adopt = &adopt;
	d->rstguard = &rstguard;
	d->hosts_file = &hosts_file;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct rackd d = { 0 };
	struct notify_watchdog *wd;
	char status[128], *key_path, *hosts_path;
	int ret;

	parse_options(argc, argv, &o);
	if (o.key_action)
		return host_key_command(&o);
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
	d.hostkey_path = key_path = hostkey_path(&o);
	d.known_hosts_path = hosts_path = o.state_path ?
		beside(o.state_path, KNOWN_HOSTS_FILE_NAME) : NULL;
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
	free(key_path);
	free(hosts_path);
	return ret ? 1 : 0;
}
