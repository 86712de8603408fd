/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rackckpt's command line: one function per subcommand (cli_proc.c for
 * one process tree and the nodes' steps, cli_job.c for MPI jobs),
 * dispatched from main.c's table. Each parses its own options with
 * getopt_long (the common ones through cli_common_opt()) and calls the
 * layer below; output for people, or JSON with --json.
 */
#ifndef RACKCKPT_CLI_H
#define RACKCKPT_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* rackd's control socket: -S, else $RACKS_SOCKET, else the default. */
extern const char *cli_sock;

/* Options every subcommand takes besides its own. */
#define CLI_COMMON_LONGOPTS                                      \
	{ "socket", required_argument, NULL, 'S' },              \
	{ "verbose", no_argument, NULL, 'v' },                   \
	{ "help", no_argument, NULL, 'h' }

enum { OPT_CRIU = 256, OPT_ALLOW_UNMANAGED, OPT_RELAY_ADDR, OPT_WAIT,
       OPT_TIMEOUT, OPT_RELAY_FD, OPT_RELAY_ENV, OPT_RELAY_LOOPBACK_ENV,
       OPT_TO, OPT_TO_SOCKET, OPT_WITH, OPT_TREES, OPT_PIDS, OPT_OPENMPI,
       OPT_JSON, OPT_KEEP, OPT_JOB, OPT_CKPT_DIR, OPT_MPIRUN };

/* "rackckpt: FMT (see rackckpt CMD --help)"; FMT has one %s, for WHAT.
 * Returns the exit code of bad usage. */
int cli_usage_error(const char *cmd, const char *fmt, const char *what);
/* 1 if C is a common option (now handled), 0 if not, -1 for --help
 * (printed: the caller exits 0). */
int cli_common_opt(int c);
int cli_bad_option(const char *cmd, int c, char **argv);
/* --timeout's value, in (0, 86400]; false if it is not one. */
bool cli_seconds(const char *s, double *out);
void cli_usage(FILE *f);

/* JSON: a string with its quotes and escapes. */
void cli_json_string(FILE *f, const char *s);

int cli_dump(int argc, char **argv);
int cli_restore(int argc, char **argv);
int cli_move(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_probe(int argc, char **argv);
int cli_unlock(int argc, char **argv);
int cli_abort(int argc, char **argv);

int cli_mpirun(int argc, char **argv);
int cli_jobs(int argc, char **argv);
int cli_migrate(int argc, char **argv);
int cli_evacuate(int argc, char **argv);

#endif
