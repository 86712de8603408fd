/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small helpers every rackckpt module uses: messages on stderr prefixed
 * with the program's name, allocation that cannot fail silently, whole-
 * file writes, clocks.
 */
#ifndef RACKCKPT_UTIL_H
#define RACKCKPT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define RACKCKPT_VERSION "0.1.0"

/* Exit codes: 1 = refused or failed, 2 = bad usage. */
#define EXIT_REFUSED 1
#define EXIT_USAGE 2

void util_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void util_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only with -v. */
void util_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void util_fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
extern bool util_verbose;

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Write LEN bytes of DATA to PATH with MODE: created as PATH.tmp with
 * O_EXCL, synced, renamed over PATH, directory synced. 0 or -errno.
 */
int util_write_file(const char *path, const char *data, size_t len,
		    unsigned mode);
/* Read a whole (small) file; NUL-terminated; NULL with errno set. */
char *util_read_file(const char *path, size_t *len);
/* Last N lines of the file at PATH to stderr, indented. */
void util_print_tail(const char *path, int n);

/* Block the signals a wrapper passes on to its child (TERM, INT, HUP,
 * QUIT) and SIGCHLD, and return a signalfd reading them, or -errno. */
int util_forward_signalfd(void);

/* In a forked child: exec CMD with no signal blocked and SIGPIPE's
 * default action, as a freshly started program has them; exit 127 with a
 * message if it cannot be run. */
void util_exec(char **cmd) __attribute__((noreturn));

/* Exit as STATUS (a wait status) says: the same code, or the same signal
 * (without a core dump), so that a launcher sees what ended the child. */
void util_exit_like(int status) __attribute__((noreturn));

/* A TCP socket listening on every address (dual stack; IPv4 only
 * without IPv6), non-blocking, at an ephemeral port (*PORT); or -errno. */
int util_listen_any(int *port);

double util_mono(void);			/* seconds, CLOCK_MONOTONIC */
struct timespec util_realtime(void);	/* CLOCK_REALTIME */

bool util_is_uint(const char *s);
/* Parse a decimal in [min, max]; false if S is not one. */
bool util_parse_long(const char *s, long min, long max, long *out);

#endif
