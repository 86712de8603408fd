// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackckpt: move a running process with its TCP connections to another
 * host, with CRIU for the process and rackd for the connections. One
 * function per subcommand, dispatched from a table; the work is in
 * dump.c, restore.c and relay.c.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "dump.h"
#include "managed.h"
#include "move.h"
#include "relayfile.h"
#include "restore.h"
#include "wrapper.h"
#include "util.h"

#define DEFAULT_TIMEOUT 30.0

struct subcommand {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

static const char *sock_path = DEFAULT_SOCKET;

static int run_help(int argc, char **argv);

/* Options every subcommand takes besides its own. */
#define COMMON_LONGOPTS                                          \
	{ "socket", required_argument, NULL, 'S' },              \
	{ "verbose", no_argument, NULL, 'v' },                   \
	{ "help", no_argument, NULL, 'h' }

enum { OPT_CRIU = 256, OPT_ALLOW_UNMANAGED, OPT_RELAY_ADDR, OPT_WAIT,
       OPT_TIMEOUT, OPT_RELAY_FD, OPT_RELAY_ENV, OPT_RELAY_LOOPBACK_ENV,
       OPT_TO, OPT_TO_SOCKET };

/* FMT has one %s, for WHAT. */
static int usage_error(const char *cmd, const char *fmt, const char *what)
{
	fprintf(stderr, "rackckpt: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, " (see rackckpt %s --help)\n", cmd);
	return EXIT_USAGE;
}

/* 1 if C is a common option (now handled), 0 if not, -1 for --help
 * (printed: the caller exits 0). */
static int common_opt(int c)
{
	switch (c) {
	case 'S':
		sock_path = optarg;
		return 1;
	case 'v':
		util_verbose = true;
		return 1;
	case 'h':
		run_help(0, NULL);
		return -1;
	default:
		return 0;
	}
}

static int bad_option(const char *cmd, int c, char **argv)
{
	if (c == ':')
		return usage_error(cmd, "option %s needs an argument",
				   argv[optind - 1]);
	return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

/* dump's options and arguments, also migrate's (with --to). */
static int parse_dump(int argc, char **argv, const char *cmd,
		      struct move_opts *m)
{
	static const struct option longopts[] = {
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "allow-unmanaged", no_argument, NULL, OPT_ALLOW_UNMANAGED },
		{ "relay-addr", required_argument, NULL, OPT_RELAY_ADDR },
		{ "to", required_argument, NULL, OPT_TO },
		{ "to-socket", required_argument, NULL, OPT_TO_SOCKET },
		COMMON_LONGOPTS, { 0 }
	};
	bool migrate = strcmp(cmd, "migrate") == 0;
	struct dump_opts *o = &m->dump;
	long pid;
	int c, r;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = common_opt(c);
		if (r < 0)
			exit(0);
		if (r > 0)
			continue;
		switch (c) {
		case OPT_CRIU:
			o->criu = optarg;
			break;
		case OPT_ALLOW_UNMANAGED:
			o->allow_unmanaged = true;
			break;
		case OPT_RELAY_ADDR: {
			struct endpoint e;
			bool has_port;

			if (endpoint_parse(optarg, &e, &has_port) || has_port)
				return usage_error(cmd, "--relay-addr needs "
						   "an address, not '%s'", optarg);
			o->relay_addr = optarg;
			break;
		}
		case OPT_TO:
		case OPT_TO_SOCKET:
			if (!migrate)
				return usage_error(cmd, "%s", "--to and "
						   "--to-socket are options of "
						   "migrate");
			*(c == OPT_TO ? &m->to : &m->to_sock) = optarg;
			break;
		default:
			return bad_option(cmd, c, argv);
		}
	}
	if (argc - optind != 2)
		return usage_error(cmd, "usage: rackckpt %s [options] PID DIR",
				   cmd);
	if (migrate && !m->to)
		return usage_error(cmd, "%s", "migrate needs --to CMD");
	if (!util_parse_long(argv[optind], 1, 0x7fffffff, &pid))
		return usage_error(cmd, "PID must be a process id, not '%s'",
				   argv[optind]);
	o->pid = (pid_t)pid;
	o->dir = argv[optind + 1];
	o->sock = sock_path;
	return 0;
}

static int run_dump(int argc, char **argv)
{
	struct move_opts m = { 0 };
	int ret = parse_dump(argc, argv, "dump", &m);

	return ret ? ret : dump_main(&m.dump);
}

static int run_migrate(int argc, char **argv)
{
	struct move_opts m = { 0 };
	int ret = parse_dump(argc, argv, "migrate", &m);

	return ret ? ret : move_main(&m);
}

static int run_restore(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "wait", no_argument, NULL, OPT_WAIT },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		COMMON_LONGOPTS, { 0 }
	};
	struct restore_opts o = { .timeout = DEFAULT_TIMEOUT };
	int c, r;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_CRIU:
			o.criu = optarg;
			break;
		case OPT_WAIT:
			o.wait = true;
			break;
		case OPT_TIMEOUT: {
			char *end;

			o.timeout = strtod(optarg, &end);
			if (*end || end == optarg || !(o.timeout > 0) ||
			    o.timeout > 86400)
				return usage_error("restore", "--timeout needs "
						   "seconds (up to 86400), not "
						   "'%s'", optarg);
			break;
		}
		default:
			return bad_option("restore", c, argv);
		}
	}
	if (argc - optind != 1)
		return usage_error("restore", "%s", "usage: rackckpt restore "
				   "[options] DIR");
	o.dir = argv[optind];
	o.sock = sock_path;
	return restore_main(&o);
}

static int run_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "relay-fd", required_argument, NULL, OPT_RELAY_FD },
		{ "relay-env", required_argument, NULL, OPT_RELAY_ENV },
		{ "relay-loopback-env", required_argument, NULL,
		  OPT_RELAY_LOOPBACK_ENV },
		COMMON_LONGOPTS, { 0 }
	};
	int extra[RELAY_MAX_FDS];
	const char *lo[AGENT_MAX_NAMES];
	size_t nextra = 0, nlo = 0;
	int c, r;

	/* '+': the command's own options are not ours. */
	while ((c = getopt_long(argc, argv, "+:S:vh", longopts, NULL)) != -1) {
		long fd;
		const char *v;

		r = common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_RELAY_FD:
			if (!util_parse_long(optarg, 0, 1 << 20, &fd))
				return usage_error("run", "--relay-fd needs a "
						   "descriptor number, not '%s'",
						   optarg);
			goto add;
		case OPT_RELAY_ENV:
			v = getenv(optarg);
			/* A launcher that did not set it has no such channel
			 * (e.g. MPICH's PMI_FD with -pmi-port). */
			if (!v)
				continue;
			if (!util_parse_long(v, 0, 1 << 20, &fd))
				return usage_error("run", "--relay-env: $%s is "
						   "not a descriptor number", optarg);
add:
			if (nextra == RELAY_MAX_FDS)
				return usage_error("run", "%s", "too many "
						   "descriptors to relay");
			extra[nextra++] = (int)fd;
			break;
		case OPT_RELAY_LOOPBACK_ENV:
			if (!*optarg || strchr(optarg, '='))
				return usage_error("run", "--relay-loopback-env "
						   "needs a variable name, not "
						   "'%s'", optarg);
			if (nlo == AGENT_MAX_NAMES)
				return usage_error("run", "%s", "too many "
						   "variables to relay");
			lo[nlo++] = optarg;
			break;
		default:
			return bad_option("run", c, argv);
		}
	}
	if (optind >= argc)
		return usage_error("run", "%s", "usage: rackckpt run [options] "
				   "-- CMD [ARGS]");
	wrapper_run(extra, nextra, lo, nlo, argv + optind);
}

static const struct subcommand subcommands[] = {
	{ "dump", "[--criu PATH] [--allow-unmanaged] [--relay-addr ADDR] PID DIR",
	  "checkpoint PID's process tree into DIR and hand its racks\n"
	  "          connections over; the process ends", run_dump },
	{ "restore", "[--criu PATH] [--wait] [--timeout SECONDS] DIR",
	  "restore the process in DIR on this host; its connections\n"
	  "          reconnect from here", run_restore },
	{ "run", "[--relay-fd N]... [--relay-env NAME]...\n"
	  "          [--relay-loopback-env NAME]... -- CMD [ARGS]",
	  "run CMD under a wrapper that keeps its stdin, stdout,\n"
	  "          stderr (and the named descriptors and loopback\n"
	  "          connections) open while it moves",
	  run_run },
	{ "migrate", "--to CMD [--to-socket PATH] [dump's options] PID DIR",
	  "dump, then 'CMD rackckpt restore DIR' on the destination,\n"
	  "          after checking that 'CMD rackctl status' answers",
	  run_migrate },
	{ "help", "", "this text", run_help },
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: rackckpt [-S PATH] [-v] COMMAND [ARGS]\n\n"
		   "options:\n"
		   "  -S, --socket PATH      rackd's control socket (default "
		   DEFAULT_SOCKET ")\n"
		   "  -v, --verbose          say more\n"
		   "  -h, --help             this text\n"
		   "  -V, --version          print the version\n"
		   "      --criu PATH        CRIU to run (dump, restore)\n"
		   "      --allow-unmanaged  dump even with connections racks "
		   "does not manage\n"
		   "                         (they are lost)\n"
		   "      --relay-addr ADDR  where the destination reaches the "
		   "wrapper (dump)\n"
		   "      --wait             stay until the restored process "
		   "ends; exit as it did\n"
		   "      --timeout SECONDS  for the connections to be "
		   "connected again (restore,\n"
		   "                         default 30)\n"
		   "      --to CMD           command prefix that runs a command "
		   "on the destination\n"
		   "                         (migrate; e.g. 'ssh host')\n"
		   "      --to-socket PATH   the destination rackd's control "
		   "socket (migrate)\n"
		   "      --relay-fd N       relay descriptor N too (run)\n"
		   "      --relay-env NAME   relay the descriptor named by "
		   "$NAME too (run)\n"
		   "      --relay-loopback-env NAME\n"
		   "                         relay the connection CMD makes to "
		   "the loopback\n"
		   "                         address in $NAME too (run)\n\n"
		   "commands:\n");
	for (size_t i = 0; i < NSUBCOMMANDS; i++)
		fprintf(f, "  %-7s %s\n          %s\n", subcommands[i].name,
			subcommands[i].args, subcommands[i].help);
	fprintf(f, "\nA process to be moved must have no controlling terminal: "
		   "start it with setsid,\nits stdio to files, or under "
		   "'rackckpt run'.\n");
}

static int run_help(int argc, char **argv)
{
	(void)argc, (void)argv;
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "version", no_argument, NULL, 'V' },
		COMMON_LONGOPTS, { 0 }
	};
	const char *name;
	int c, r;

	opterr = 0;
	/* Relayed peers may go away: a write then fails, it never kills. */
	signal(SIGPIPE, SIG_IGN);
	/* '+': global options stop at the command. */
	while ((c = getopt_long(argc, argv, "+:S:vhV", longopts, NULL)) != -1) {
		r = common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		if (c == 'V') {
			printf("rackckpt %s\n", RACKCKPT_VERSION);
			return 0;
		}
		return bad_option("help", c, argv);
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[optind];
	for (size_t i = 0; i < NSUBCOMMANDS; i++) {
		if (strcmp(subcommands[i].name, name) != 0)
			continue;
		/* The subcommand parses from its own name on. */
		argc -= optind;
		argv += optind;
		optind = 0;
		return subcommands[i].run(argc, argv);
	}
	fprintf(stderr, "rackckpt: unknown command '%s' (see rackckpt help)\n",
		name);
	return EXIT_USAGE;
}
