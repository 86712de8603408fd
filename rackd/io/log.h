/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Logging: stderr in the foreground, syslog (journald) otherwise.
 * log_warn() appends strerror(errno); log_warnx() does not.
 */
#ifndef RACKS_LOG_H
#define RACKS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdnoreturn.h>

/* Exit codes shared by rackd's failure paths. */
enum {
	EXIT_USAGE = 2,		/* bad option or configuration */
	EXIT_NOMEM = 3,		/* out of memory */
	EXIT_KERNEL = 4,	/* kernel lacks a required feature */
};

void log_init(const char *ident, bool foreground, bool debug);
void log_set_debug(bool debug);
bool log_debug_enabled(void);

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
noreturn void fatal(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
noreturn void fatalx(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Allocation helpers: running out of memory in the daemon is fatal. */
void *xcalloc(size_t n, size_t size);
void *xreallocarray(void *ptr, size_t n, size_t size);
char *xstrdup(const char *s);

#endif
