// SPDX-License-Identifier: GPL-2.0-only
/*
 * The subcommands about one process tree (dump, restore, move, run) and
 * the steps the job layer runs on the nodes (probe, unlock, abort).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "agent.h"
#include "cleanup.h"
#include "cli.h"
#include "dump.h"
#include "enlist.h"
#include "move.h"
#include "probe.h"
#include "relayfile.h"
#include "restore.h"
#include "util.h"
#include "wrapper.h"

#define DEFAULT_TIMEOUT 30.0

/* "A,B,C" of process ids: a malloc'ed array (*V, *N); false if bad. */
static bool pid_list(const char *s, pid_t **v, size_t *n)
{
	char *copy = xstrdup(s), *save = NULL;
	bool ok = true;

	free(*v);
	*v = NULL;
	*n = 0;
	for (char *p = strtok_r(copy, ",", &save); p && ok;
	     p = strtok_r(NULL, ",", &save)) {
		long pid;

		ok = util_parse_long(p, 2, 0x7fffffff, &pid);
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		(*v)[(*n)++] = (pid_t)pid;
	}
	free(copy);
	return ok && *n;
}

/* dump's options and arguments, also move's (with --to). */
static int parse_dump(int argc, char **argv, const char *cmd,
		      struct move_opts *m, pid_t **with)
{
	static const struct option longopts[] = {
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "allow-unmanaged", no_argument, NULL, OPT_ALLOW_UNMANAGED },
		{ "relay-addr", required_argument, NULL, OPT_RELAY_ADDR },
		{ "with", required_argument, NULL, OPT_WITH },
		{ "to", required_argument, NULL, OPT_TO },
		{ "to-socket", required_argument, NULL, OPT_TO_SOCKET },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	bool move = strcmp(cmd, "move") == 0;
	struct dump_opts *o = &m->dump;
	long pid;
	int c, r;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
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
				return cli_usage_error(cmd, "--relay-addr needs "
						       "an address, not '%s'",
						       optarg);
			o->relay_addr = optarg;
			break;
		}
		case OPT_WITH:
			if (move || !pid_list(optarg, with, &o->nwith))
				return cli_usage_error(cmd, "--with needs process "
						       "ids (dump), not '%s'",
						       optarg);
			o->with = *with;
			break;
		case OPT_TO:
		case OPT_TO_SOCKET:
			if (!move)
				return cli_usage_error(cmd, "%s", "--to and "
						       "--to-socket are options "
						       "of move");
			*(c == OPT_TO ? &m->to : &m->to_sock) = optarg;
			break;
		default:
			return cli_bad_option(cmd, c, argv);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error(cmd, "usage: rackckpt %s [options] PID "
				       "DIR", cmd);
	if (move && !m->to)
		return cli_usage_error(cmd, "%s", "move needs --to CMD");
	if (!util_parse_long(argv[optind], 1, 0x7fffffff, &pid))
		return cli_usage_error(cmd, "PID must be a process id, not '%s'",
				       argv[optind]);
	o->pid = (pid_t)pid;
	o->dir = argv[optind + 1];
	o->sock = cli_sock;
	return 0;
}

int cli_dump(int argc, char **argv)
{
	struct move_opts m = { 0 };
	pid_t *with = NULL;
	int ret = parse_dump(argc, argv, "dump", &m, &with);

	ret = ret ? ret : dump_main(&m.dump);
	free(with);
	return ret;
}

int cli_move(int argc, char **argv)
{
	struct move_opts m = { 0 };
	pid_t *with = NULL;
	int ret = parse_dump(argc, argv, "move", &m, &with);

	ret = ret ? ret : move_main(&m);
	free(with);
	return ret;
}

int cli_restore(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "wait", no_argument, NULL, OPT_WAIT },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	struct restore_opts o = { .timeout = DEFAULT_TIMEOUT };
	int c, r;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
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
		case OPT_TIMEOUT:
			if (!cli_seconds(optarg, &o.timeout))
				return cli_usage_error("restore", "--timeout "
						       "needs seconds (up to "
						       "86400), not '%s'", optarg);
			break;
		default:
			return cli_bad_option("restore", c, argv);
		}
	}
	if (argc - optind < 1)
		return cli_usage_error("restore", "%s", "usage: rackckpt restore "
				       "[options] DIR...");
	if (o.wait && argc - optind > 1)
		return cli_usage_error("restore", "%s", "--wait takes one DIR");
	o.dirs = (const char *const *)argv + optind;
	o.ndirs = (size_t)(argc - optind);
	o.sock = cli_sock;
	return restore_main(&o);
}

/* Every PMIX_SERVER_URI* variable of the environment: where an Open MPI
 * rank finds its orted's PMIx server (2, 21, 3, 4, 41 in Open MPI 4.1). */
static void openmpi_names(const char **lo, size_t *n)
{
	extern char **environ;

	for (char **e = environ; *e && *n < AGENT_MAX_NAMES; e++) {
		size_t len = strcspn(*e, "=");

		if (strncmp(*e, "PMIX_SERVER_URI", 15) == 0 && (*e)[len])
			lo[(*n)++] = xasprintf("%.*s", (int)len, *e);
	}
}

int cli_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "openmpi", no_argument, NULL, OPT_OPENMPI },
		{ "relay-fd", required_argument, NULL, OPT_RELAY_FD },
		{ "relay-env", required_argument, NULL, OPT_RELAY_ENV },
		{ "relay-loopback-env", required_argument, NULL,
		  OPT_RELAY_LOOPBACK_ENV },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	static const struct wrapper_hooks job = {
		.started = enlist_started, .ended = enlist_ended,
	};
	int extra[RELAY_MAX_FDS];
	const char *lo[AGENT_MAX_NAMES];
	size_t nextra = 0, nlo = 0;
	bool openmpi = false;
	int c, r;

	/* '+': the command's own options are not ours. */
	while ((c = getopt_long(argc, argv, "+:S:vh", longopts, NULL)) != -1) {
		long fd;
		const char *v;

		r = cli_common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_OPENMPI:
			openmpi = true;
			break;
		case OPT_RELAY_FD:
			if (!util_parse_long(optarg, 0, 1 << 20, &fd))
				return cli_usage_error("run", "--relay-fd needs "
						       "a descriptor number, "
						       "not '%s'", optarg);
			goto add;
		case OPT_RELAY_ENV:
			v = getenv(optarg);
			/* A launcher that did not set it has no such channel
			 * (e.g. MPICH's PMI_FD with -pmi-port). */
			if (!v)
				continue;
			if (!util_parse_long(v, 0, 1 << 20, &fd))
				return cli_usage_error("run", "--relay-env: $%s "
						       "is not a descriptor "
						       "number", optarg);
add:
			if (nextra == RELAY_MAX_FDS)
				return cli_usage_error("run", "%s", "too many "
						       "descriptors to relay");
			extra[nextra++] = (int)fd;
			break;
		case OPT_RELAY_LOOPBACK_ENV:
			if (!*optarg || strchr(optarg, '='))
				return cli_usage_error("run", "--relay-loopback-"
						       "env needs a variable "
						       "name, not '%s'", optarg);
			if (nlo == AGENT_MAX_NAMES)
				return cli_usage_error("run", "%s", "too many "
						       "variables to relay");
			lo[nlo++] = optarg;
			break;
		default:
			return cli_bad_option("run", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("run", "%s", "usage: rackckpt run "
				       "[options] -- CMD [ARGS]");
	if (openmpi)
		openmpi_names(lo, &nlo);
	/* An Open MPI rank of `rackckpt mpirun` enlists with its job. */
	wrapper_run(extra, nextra, lo, nlo, openmpi ? &job : NULL,
		    argv + optind);
}

int cli_probe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "trees", required_argument, NULL, OPT_TREES },
		{ "pids", required_argument, NULL, OPT_PIDS },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	struct probe_opts o = { .sock = cli_sock };
	pid_t *trees = NULL;
	struct probe_pid *pids = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_CRIU:
			o.criu = optarg;
			break;
		case OPT_TREES:
			if (!pid_list(optarg, &trees, &o.ntrees))
				return cli_usage_error("probe", "--trees needs "
						       "process ids, not '%s'",
						       optarg);
			o.trees = trees;
			break;
		case OPT_PIDS: {
			char *copy = xstrdup(optarg), *save = NULL;
			bool ok = true;

			o.npids = 0;
			for (char *p = strtok_r(copy, ",", &save); p && ok;
			     p = strtok_r(NULL, ",", &save)) {
				unsigned long long start;
				int pid, at = 0;

				ok = sscanf(p, "%d:%llu%n", &pid, &start, &at) == 2 &&
				     !p[at] && pid > 1;
				pids = xrealloc(pids, (o.npids + 1) * sizeof(*pids));
				if (ok)
					pids[o.npids++] = (struct probe_pid){
						pid, start };
			}
			free(copy);
			if (!ok)
				return cli_usage_error("probe", "--pids needs "
						       "PID:START,..., not '%s'",
						       optarg);
			o.pids = pids;
			break;
		}
		default:
			return cli_bad_option("probe", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("probe", "%s", "usage: rackckpt probe "
				       "[--trees PID,...] [--pids PID:START,...]");
	r = probe_main(&o);
	free(trees);
	free(pids);
	return r;
}

static int dirs_cmd(int argc, char **argv, const char *cmd,
		    int (*fn)(const struct cleanup_opts *))
{
	static const struct option longopts[] = { CLI_COMMON_LONGOPTS, { 0 } };
	struct cleanup_opts o = { .sock = cli_sock };
	int c, r;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
		if (r < 0)
			return 0;
		if (r == 0)
			return cli_bad_option(cmd, c, argv);
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "usage: rackckpt %s DIR...", cmd);
	o.sock = cli_sock;
	o.dirs = (const char *const *)argv + optind;
	o.ndirs = (size_t)(argc - optind);
	return fn(&o);
}

int cli_unlock(int argc, char **argv)
{
	return dirs_cmd(argc, argv, "unlock", cleanup_unlock_main);
}

int cli_abort(int argc, char **argv)
{
	return dirs_cmd(argc, argv, "abort", cleanup_abort_main);
}
