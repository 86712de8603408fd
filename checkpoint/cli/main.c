// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackckpt: move running processes with their TCP connections to other
 * hosts, with CRIU for the processes and rackd for the connections; for
 * MPI jobs, by job and rank. One function per subcommand (cli_proc.c,
 * cli_job.c), dispatched from the table below.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "managed.h"
#include "util.h"

struct subcommand {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

const char *cli_sock = DEFAULT_SOCKET;

static int run_help(int argc, char **argv)
{
	(void)argc, (void)argv;
	cli_usage(stdout);
	return 0;
}

static const struct subcommand subcommands[] = {
	{ "mpirun", "[--ckpt-dir DIR] [--mpirun PATH] MPIRUN-ARGS...",
	  "run Open MPI's mpirun with every rank movable; the job gets\n"
	  "           a number", cli_mpirun },
	{ "jobs", "[--json] [JOB]",
	  "list the jobs and their ranks: node, address, pid, state", cli_jobs },
	{ "migrate", "[--json] [--keep] [--timeout SECONDS] JOB RANK[,RANK...]\n"
	  "           --to NODE[:SLOTS]",
	  "move ranks of JOB to NODE; a rank that cannot move runs on\n"
	  "           where it was", cli_migrate },
	{ "evacuate", "[--json] [--keep] [--timeout SECONDS] [--job JOB] NODE\n"
	  "           --to NODE[:SLOTS]...",
	  "move every rank of every job (or of JOB) off NODE", cli_evacuate },
	{ "dump", "[--criu PATH] [--allow-unmanaged] [--relay-addr ADDR]\n"
	  "           [--with PID[,PID...]] PID DIR",
	  "checkpoint PID's process tree into DIR and hand its racks\n"
	  "           connections over; the process ends", cli_dump },
	{ "restore", "[--criu PATH] [--wait] [--timeout SECONDS] DIR...",
	  "restore the process(es) in DIR... on this host, all or none;\n"
	  "           their connections reconnect from here", cli_restore },
	{ "move", "--to CMD [--to-socket PATH] [dump's options] PID DIR",
	  "dump, then 'CMD rackckpt restore DIR' on the destination,\n"
	  "           after checking that 'CMD rackctl status' answers", cli_move },
	{ "run", "[--openmpi] [--relay-fd N]... [--relay-env NAME]...\n"
	  "           [--relay-loopback-env NAME]... -- CMD [ARGS]",
	  "run CMD under a wrapper that keeps its stdin, stdout,\n"
	  "           stderr (and the named descriptors and loopback\n"
	  "           connections) open while it moves", cli_run },
	{ "probe", "[--criu PATH] [--trees PID,...] [--pids PID:START,...]",
	  "what this node says before a move (run by migrate)", cli_probe },
	{ "unlock", "DIR...",
	  "remove CRIU's network lock of these dumps from this host", cli_unlock },
	{ "abort", "DIR...",
	  "undo here a restore of DIR... that was killed before it\n"
	  "           committed", cli_abort },
	{ "help", "", "this text", run_help },
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

void cli_usage(FILE *f)
{
	fprintf(f, "usage: rackckpt [-S PATH] [-v] COMMAND [ARGS]\n\n"
		   "options:\n"
		   "  -S, --socket PATH  rackd's control socket (default "
		   "$RACKS_SOCKET, else\n"
		   "                     " DEFAULT_SOCKET ")\n"
		   "  -v, --verbose      say more\n"
		   "  -h, --help         this text\n"
		   "  -V, --version      print the version\n\n"
		   "commands:\n");
	for (size_t i = 0; i < NSUBCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n           %s\n", subcommands[i].name,
			subcommands[i].args, subcommands[i].help);
	fprintf(f, "\nAn MPI job: 'rackckpt mpirun -np 4 -H a,b ./prog', "
		   "then 'rackckpt jobs',\n'rackckpt migrate 1 3 --to node7', "
		   "'rackckpt evacuate node4 --to node7 node8'.\n"
		   "A single process to be moved must have no controlling "
		   "terminal: start it\nwith setsid, its stdio to files, or "
		   "under 'rackckpt run'.\n");
}

int cli_usage_error(const char *cmd, const char *fmt, const char *what)
{
	fprintf(stderr, "rackckpt: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, " (see rackckpt %s --help)\n", cmd);
	return EXIT_USAGE;
}

int cli_common_opt(int c)
{
	switch (c) {
	case 'S':
		cli_sock = optarg;
		return 1;
	case 'v':
		util_verbose = true;
		return 1;
	case 'h':
		cli_usage(stdout);
		return -1;
	default:
		return 0;
	}
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
	if (c == ':')
		return cli_usage_error(cmd, "option %s needs an argument",
				       argv[optind - 1]);
	return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

bool cli_seconds(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || end == s || !(v > 0) || v > 86400)
		return false;
	*out = v;
	return true;
}

void cli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "version", no_argument, NULL, 'V' },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	const char *name, *env = getenv("RACKS_SOCKET");
	int c, r;

	if (env && *env)
		cli_sock = env;
	opterr = 0;
	/* Relayed peers may go away: a write then fails, it never kills. */
	signal(SIGPIPE, SIG_IGN);
	/* '+': global options stop at the command. */
	while ((c = getopt_long(argc, argv, "+:S:vhV", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		if (c == 'V') {
			printf("rackckpt %s\n", RACKCKPT_VERSION);
			return 0;
		}
		return cli_bad_option("help", c, argv);
	}
	if (optind >= argc) {
		cli_usage(stderr);
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
