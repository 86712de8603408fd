// SPDX-License-Identifier: GPL-2.0-only
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static bool log_to_stderr = true;
static bool log_debug_on;
static const char *log_ident = "racks";

void log_init(const char *ident, bool foreground, bool debug)
{
	log_ident = ident;
	log_to_stderr = foreground;
	log_debug_on = debug;
	if (!foreground)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_debug(bool debug)
{
	log_debug_on = debug;
}

bool log_debug_enabled(void)
{
	return log_debug_on;
}

static void log_emit(int prio, const char *fmt, va_list ap, int err)
{
	char msg[1024];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (err && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(err));

	if (!log_to_stderr) {
		syslog(prio, "%s", msg);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	localtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld %s: %s\n", tm.tm_hour, tm.tm_min,
		tm.tm_sec, ts.tv_nsec / 1000000, log_ident, msg);
}

#define LOG_BODY(prio, err)                \
	do {                               \
		va_list ap;                \
		va_start(ap, fmt);         \
		log_emit(prio, fmt, ap, err); \
		va_end(ap);                \
	} while (0)

void log_warn(const char *fmt, ...)
{
	int err = errno;

	LOG_BODY(LOG_WARNING, err);
}

void log_warnx(const char *fmt, ...)
{
	LOG_BODY(LOG_WARNING, 0);
}

void log_info(const char *fmt, ...)
{
	LOG_BODY(LOG_INFO, 0);
}

void log_debug(const char *fmt, ...)
{
	if (!log_debug_on)
		return;
	LOG_BODY(LOG_DEBUG, 0);
}

void fatal(int code, const char *fmt, ...)
{
	int err = errno;

	LOG_BODY(LOG_ERR, err);
	exit(code);
}

void fatalx(int code, const char *fmt, ...)
{
	LOG_BODY(LOG_ERR, 0);
	exit(code);
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		fatalx(EXIT_NOMEM, "out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xreallocarray(void *ptr, size_t n, size_t size)
{
	void *p = reallocarray(ptr, n, size);

	if (!p)
		fatalx(EXIT_NOMEM, "out of memory (%zu x %zu bytes)", n, size);
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		fatalx(EXIT_NOMEM, "out of memory");
	return p;
}
