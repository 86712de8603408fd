// SPDX-License-Identifier: GPL-2.0-only
/*
 * The subcommands about MPI jobs: mpirun, jobs, migrate, evacuate. The
 * work is in ../job/; here are their options and their output, for
 * people (progress as it happens, then one line per rank) or, with
 * --json, one JSON document on stdout for a scheduler (progress then
 * goes to stderr).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "jobclient.h"
#include "jobdir.h"
#include "launch.h"
#include "mover.h"
#include "util.h"

#define DEFAULT_STEP_TIMEOUT 120.0
#define MAX_TARGETS 64
#define MAX_RANKS 1024

int cli_mpirun(int argc, char **argv)
{
	struct launch_opts o = { 0 };
	int i = 1;

	/* mpirun's own options follow ours; any other option is its. */
	for (; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cli_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--ckpt-dir") || !strcmp(a, "--mpirun")) {
			if (i + 1 >= argc)
				return cli_usage_error("mpirun", "option %s needs "
						       "an argument", a);
			*(!strcmp(a, "--mpirun") ? &o.mpirun : &o.ckpt_dir) =
				argv[++i];
		} else if (!strncmp(a, "--ckpt-dir=", 11)) {
			o.ckpt_dir = a + 11;
		} else if (!strncmp(a, "--mpirun=", 9)) {
			o.mpirun = a + 9;
		} else {
			break;
		}
	}
	if (i >= argc)
		return cli_usage_error("mpirun", "%s", "usage: rackckpt mpirun "
				       "[--ckpt-dir DIR] [--mpirun PATH] "
				       "MPIRUN-ARGS... (e.g. -np 4 ./program)");
	if ((o.ckpt_dir && !*o.ckpt_dir) || (o.mpirun && !*o.mpirun))
		return cli_usage_error("mpirun", "%s", "--ckpt-dir and --mpirun "
				       "need a value");
	o.args = argv + i;
	return launch_main(&o);
}

/* --- jobs ------------------------------------------------------------- */

static void rank_json(FILE *f, const struct job_rank *k)
{
	fprintf(f, "{\"rank\":%d,\"node\":", k->rank);
	cli_json_string(f, k->node);
	fprintf(f, ",\"address\":");
	cli_json_string(f, k->addr);
	fprintf(f, ",\"origin\":");
	cli_json_string(f, k->origin);
	fprintf(f, ",\"pid\":%d,\"state\":\"%s\",\"moves\":%u,"
		"\"downtime_s\":%.3f", (int)k->root,
		jobinfo_state_name(k->state), k->moves, k->downtime);
	if (k->state == RANK_ENDED)
		fprintf(f, ",\"status\":%d", k->status);
	fprintf(f, "}");
}

static void job_json(FILE *f, const struct job_info *j)
{
	fprintf(f, "{\"job\":%d,\"state\":\"%s\",\"mpirun_pid\":%d,"
		"\"started\":%.3f,\"np\":%d,\"command\":", j->id,
		j->ended ? "ended" : "running", (int)j->mpirun, j->started, j->np);
	cli_json_string(f, j->command);
	fprintf(f, ",\"ckpt_dir\":");
	cli_json_string(f, j->ckpt_dir);
	fprintf(f, ",\"nodes\":[");
	for (size_t i = 0; i < j->nnodes; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		cli_json_string(f, j->nodes[i].name);
		fprintf(f, ",\"slots\":%d}", j->nodes[i].slots);
	}
	fprintf(f, "],\"ranks\":[");
	for (size_t i = 0; i < j->nranks; i++) {
		fprintf(f, "%s", i ? "," : "");
		rank_json(f, &j->ranks[i]);
	}
	fprintf(f, "]}");
}

static void job_text(const struct job_info *j)
{
	time_t t = (time_t)j->started;
	char when[32];

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("job %d: %s since %s, %zu of %d rank(s) started, mpirun pid %d\n"
	       "  %s\n", j->id, j->ended ? "ended" : "running", when,
	       j->nranks, j->np ? j->np : (int)j->nranks, (int)j->mpirun,
	       j->command);
	if (!j->nranks)
		return;
	printf("  %4s  %-20s %-20s %8s  %-8s %5s\n", "rank", "node", "address",
	       "pid", "state", "moves");
	for (size_t i = 0; i < j->nranks; i++) {
		const struct job_rank *k = &j->ranks[i];

		printf("  %4d  %-20s %-20s %8d  %-8s %5u", k->rank, k->node,
		       k->addr, (int)k->root, jobinfo_state_name(k->state),
		       k->moves);
		if (k->moves)
			printf("  (from %s; last downtime %.3f s)", k->origin,
			       k->downtime);
		printf("\n");
	}
}

static bool parse_job(const char *s, int *id)
{
	long v;

	if (!util_parse_long(s, 1, JOBDIR_MAX_ID, &v))
		return false;
	*id = (int)v;
	return true;
}

int cli_jobs(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	bool json = false;
	int *ids = NULL, one, c, r, failed = 0;
	size_t n = 0, shown = 0;

	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
		if (r < 0)
			return 0;
		if (r > 0)
			continue;
		if (c != OPT_JSON)
			return cli_bad_option("jobs", c, argv);
		json = true;
	}
	if (argc - optind > 1 ||
	    (argc - optind == 1 && !parse_job(argv[optind], &one)))
		return cli_usage_error("jobs", "%s", "usage: rackckpt jobs "
				       "[--json] [JOB]");
	if (argc - optind == 1) {
		ids = xmalloc(sizeof(*ids));
		ids[n++] = one;
	} else if ((r = jobdir_list(&ids, &n))) {
		util_err("cannot read %s: %s", jobdir_path(), strerror(-r));
		return EXIT_REFUSED;
	}
	if (json)
		printf("{\"jobs\":[");
	else if (!n)
		printf("no jobs (rackckpt mpirun starts them)\n");
	for (size_t i = 0; i < n; i++) {
		struct job_info j;
		char err[512];

		if (jobclient_get(ids[i], &j, err, sizeof(err))) {
			util_err("%s", err);
			failed++;
			continue;
		}
		if (json) {
			printf("%s", shown++ ? "," : "");
			job_json(stdout, &j);
		} else {
			job_text(&j);
		}
		jobinfo_free(&j);
	}
	if (json)
		printf("]}\n");
	free(ids);
	return failed ? EXIT_REFUSED : 0;
}

/* --- migrate, evacuate -------------------------------------------------- */

struct out {
	bool json;
};

static void progress(const char *line, void *arg)
{
	struct out *o = arg;
	FILE *f = o->json ? stderr : stdout;

	fprintf(f, "%s\n", line);
	fflush(f);
}

static void result_json(FILE *f, const struct mover_result *r)
{
	fprintf(f, "{\"rank\":%d,\"from\":", r->rank);
	cli_json_string(f, r->from);
	fprintf(f, ",\"to\":");
	cli_json_string(f, r->to);
	fprintf(f, ",\"node\":");
	cli_json_string(f, r->node);
	fprintf(f, ",\"moved\":%s,\"stopped\":%s,\"connections\":%zu,"
		"\"dump_s\":%.3f,\"restore_s\":%.3f,\"downtime_s\":%.3f,"
		"\"error\":", r->ok ? "true" : "false",
		r->stopped ? "true" : "false", r->conns, r->dump_s,
		r->restore_s, r->downtime_s);
	if (r->ok)
		fprintf(f, "null");
	else
		cli_json_string(f, r->error);
	fprintf(f, "}");
}

static void report_json(FILE *f, const struct mover_report *rep, int ret,
			const char *err)
{
	fprintf(f, "{\"job\":%d,\"ok\":%s,\"error\":", rep->job,
		ret ? "false" : "true");
	if (err && *err)
		cli_json_string(f, err);
	else
		fprintf(f, "null");
	fprintf(f, ",\"ranks\":[");
	for (size_t i = 0; i < rep->n; i++) {
		fprintf(f, "%s", i ? "," : "");
		result_json(f, &rep->r[i]);
	}
	fprintf(f, "]}");
}

static void report_text(const struct mover_report *rep, const char *err)
{
	if (err && *err) {
		printf("job %d: refused: %s; nothing changed\n", rep->job, err);
		return;
	}
	for (size_t i = 0; i < rep->n; i++) {
		const struct mover_result *r = &rep->r[i];

		if (r->ok)
			printf("job %d rank %d: moved %s -> %s, downtime %.3f s "
			       "(dump %.3f s, restore %.3f s, %zu connection(s))\n",
			       rep->job, r->rank, r->from, r->node, r->downtime_s,
			       r->dump_s, r->restore_s, r->conns);
		else if (r->stopped)
			printf("job %d rank %d: STOPPED: %s\n", rep->job, r->rank,
			       r->error);
		else
			printf("job %d rank %d: runs on %s: %s\n", rep->job,
			       r->rank, r->node, r->error);
	}
	fflush(stdout);
}

/* Ranks of other jobs than SKIP on each of TO: slots they take. */
static void busy_nodes(int skip, char *const *to, size_t nto, size_t *busy)
{
	int *ids = NULL;
	size_t n = 0;

	memset(busy, 0, nto * sizeof(*busy));
	if (jobdir_list(&ids, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		struct job_info j;
		char err[256];

		if (ids[i] == skip || jobclient_get(ids[i], &j, err, sizeof(err)))
			continue;
		for (size_t t = 0; t < nto; t++) {
			size_t len = strcspn(to[t], ":");
			char name[JOB_NAME];

			snprintf(name, sizeof(name), "%.*s", (int)len, to[t]);
			busy[t] += jobinfo_ranks_on(&j, name);
		}
		jobinfo_free(&j);
	}
	free(ids);
}

/* Options migrate and evacuate share; the positional arguments left in
 * ARGV from optind. */
struct move_args {
	bool json, keep;
	double timeout;
	int job;			/* evacuate: --job, or 0 */
	char *to[MAX_TARGETS];
	size_t nto;
};

static int add_targets(struct move_args *a, const char *list, const char *cmd)
{
	char *copy = xstrdup(list), *save = NULL;

	for (char *p = strtok_r(copy, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		if (a->nto == MAX_TARGETS) {
			free(copy);
			return cli_usage_error(cmd, "%s", "too many destinations");
		}
		a->to[a->nto++] = xstrdup(p);
	}
	free(copy);
	return 0;
}

static int parse_move(int argc, char **argv, const char *cmd,
		      struct move_args *a)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "to", required_argument, NULL, OPT_TO },
		{ "job", required_argument, NULL, OPT_JOB },
		CLI_COMMON_LONGOPTS, { 0 }
	};
	int c, r;

	a->timeout = DEFAULT_STEP_TIMEOUT;
	while ((c = getopt_long(argc, argv, ":S:vh", longopts, NULL)) != -1) {
		r = cli_common_opt(c);
		if (r < 0)
			exit(0);
		if (r > 0)
			continue;
		switch (c) {
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_KEEP:
			a->keep = true;
			break;
		case OPT_TIMEOUT:
			if (!cli_seconds(optarg, &a->timeout))
				return cli_usage_error(cmd, "--timeout needs "
						       "seconds (up to 86400), "
						       "not '%s'", optarg);
			break;
		case OPT_TO:
			if ((r = add_targets(a, optarg, cmd)))
				return r;
			break;
		case OPT_JOB:
			if (strcmp(cmd, "evacuate") ||
			    !parse_job(optarg, &a->job))
				return cli_usage_error(cmd, "--job needs a job "
						       "number (evacuate), not "
						       "'%s'", optarg);
			break;
		default:
			return cli_bad_option(cmd, c, argv);
		}
	}
	return 0;
}

static void free_move(struct move_args *a)
{
	for (size_t i = 0; i < a->nto; i++)
		free(a->to[i]);
}

int cli_migrate(int argc, char **argv)
{
	struct move_args a = { 0 };
	struct out out;
	struct mover_ops ops = { progress, &out };
	struct mover_opts o = { 0 };
	struct mover_report rep;
	int ranks[MAX_RANKS], ret;
	size_t busy[MAX_TARGETS], n = 0;
	char err[1024] = "", *copy, *save = NULL;

	ret = parse_move(argc, argv, "migrate", &a);
	if (ret)
		goto out;
	if (argc - optind != 2 || !a.nto) {
		ret = cli_usage_error("migrate", "%s", "usage: rackckpt migrate "
				      "[--json] JOB RANK[,RANK...] --to NODE");
		goto out;
	}
	if (a.nto > 1) {
		ret = cli_usage_error("migrate", "%s", "migrate takes one "
				      "destination (evacuate takes several)");
		goto out;
	}
	if (!parse_job(argv[optind], &o.job)) {
		ret = cli_usage_error("migrate", "JOB must be a job number, "
				      "not '%s'", argv[optind]);
		goto out;
	}
	copy = xstrdup(argv[optind + 1]);
	for (char *p = strtok_r(copy, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		long v;

		if (n == MAX_RANKS || !util_parse_long(p, 0, 1 << 20, &v)) {
			free(copy);
			ret = cli_usage_error("migrate", "RANK must be rank "
					      "numbers (3, or 2,3), not '%s'",
					      argv[optind + 1]);
			goto out;
		}
		ranks[n++] = (int)v;
	}
	free(copy);
	out.json = a.json;
	busy_nodes(o.job, a.to, a.nto, busy);
	o.ranks = ranks;
	o.nranks = n;
	o.to = a.to;
	o.nto = a.nto;
	o.busy = busy;
	o.keep = a.keep;
	o.timeout = a.timeout;
	ret = mover_run(&o, &ops, &rep, err, sizeof(err));
	if (a.json) {
		report_json(stdout, &rep, ret, err);
		printf("\n");
	} else {
		report_text(&rep, err);
	}
	mover_report_free(&rep);
	ret = ret ? EXIT_REFUSED : 0;
out:
	free_move(&a);
	return ret;
}

int cli_evacuate(int argc, char **argv)
{
	struct move_args a = { 0 };
	struct out out;
	struct mover_ops ops = { progress, &out };
	size_t busy[MAX_TARGETS], n = 0, shown = 0;
	int *ids = NULL, ret, failed = 0;
	const char *node;

	ret = parse_move(argc, argv, "evacuate", &a);
	/* evacuate NODE --to C D: the names after NODE are destinations. */
	for (int i = optind + 1; !ret && i < argc; i++)
		ret = add_targets(&a, argv[i], "evacuate");
	if (ret)
		goto out;
	if (argc - optind < 1 || !a.nto) {
		ret = cli_usage_error("evacuate", "%s", "usage: rackckpt evacuate "
				      "[--json] NODE --to NODE...");
		goto out;
	}
	node = argv[optind];
	out.json = a.json;
	if (a.job) {
		ids = xmalloc(sizeof(*ids));
		ids[n++] = a.job;
	} else if ((ret = jobdir_list(&ids, &n))) {
		util_err("cannot read %s: %s", jobdir_path(), strerror(-ret));
		ret = EXIT_REFUSED;
		goto out;
	}
	if (a.json)
		printf("{\"node\":");
	if (a.json) {
		cli_json_string(stdout, node);
		printf(",\"jobs\":[");
	}
	for (size_t i = 0; i < n; i++) {
		struct mover_opts o = {
			.job = ids[i], .from = node, .to = a.to, .nto = a.nto,
			.busy = busy, .keep = a.keep, .timeout = a.timeout,
		};
		struct mover_report rep;
		char err[1024] = "";
		int r;

		busy_nodes(ids[i], a.to, a.nto, busy);
		r = mover_run(&o, &ops, &rep, err, sizeof(err));
		failed += r != 0;
		if (a.json) {
			printf("%s", shown++ ? "," : "");
			report_json(stdout, &rep, r, err);
		} else {
			report_text(&rep, err);
		}
		mover_report_free(&rep);
	}
	if (a.json)
		printf("],\"ok\":%s}\n", failed ? "false" : "true");
	else if (!n)
		printf("no jobs (rackckpt mpirun starts them): nothing to move\n");
	ret = failed ? EXIT_REFUSED : 0;
out:
	free(ids);
	free_move(&a);
	return ret;
}
