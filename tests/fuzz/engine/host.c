// SPDX-License-Identifier: GPL-2.0-only
/*
 * The rest of the host, for the stateful fuzzer (engine.h): reports and
 * traces, randomness, the service manager, capabilities and signals
 * (daemon.c's, through wrap_daemon.c), the control socket's event
 * stream (counted: the states reached) and rackd's logging and
 * allocation (log.h). A fatal error aborts, so libFuzzer keeps the input.
 */
#include <fcntl.h>
#include <sanitizer/asan_interface.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "ctl.h"
#include "engine.h"
#include "log.h"
#include "notify.h"
#include "wrap.h"

bool fz_tracing;
uint64_t fz_events[EVENT_MAX], fz_events_total[EVENT_MAX];

/* ---- reports ---- */

void fz_violation(const char *file, int line, const char *cond,
		  const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\n==fuzz_engine: invariant violated at %s:%d: %s\n  ",
		file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/*
 * Known bugs, named in RACKS_FUZZ_KNOWN (comma-separated; see
 * tests/fuzz/BUGS.md): their checks step aside, so that a long
 * run finds the others. Never set by make check.
 */
bool fz_known(const char *id)
{
	static const char *list;
	static bool read;
	const char *p;
	size_t n = strlen(id);

	if (!read) {
		list = getenv("RACKS_FUZZ_KNOWN");
		read = true;
	}
	for (p = list; p && (p = strstr(p, id)); p += n)
		if ((p == list || p[-1] == ',') && (!p[n] || p[n] == ','))
			return true;
	return false;
}

void fz_trace(const char *fmt, ...)
{
	va_list ap;

	if (!fz_tracing)
		return;
	fprintf(stderr, "[%8llu] ", (unsigned long long)fz_now);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- randomness: xorshift, libsodium's too ---- */

static uint64_t rng;

void fz_rng_seed(uint64_t seed)
{
	rng = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
}

uint32_t fz_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static const char *rng_name(void)
{
	return "fuzz_engine";
}

static void rng_buf(void *const buf, const size_t size)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)fz_rand();
}

/* Installed before sodium_init() (fuzz_engine.c): keys, hash keys and
 * announcements then depend on the input alone. */
void fz_rng_install(void)
{
	static randombytes_implementation impl = {
		.implementation_name = rng_name,
		.random = fz_rand,
		.buf = rng_buf,
	};

	randombytes_set_implementation(&impl);
}

/* ---- the service manager, capabilities, signals ---- */

int notify_send(const char *fmt, ...)
{
	(void)fmt;
	return 0;
}

void notify_ready(const char *status)
{
	(void)status;
}

void notify_reloading(void)
{
}

void notify_stopping(void)
{
}

void notify_status(const char *status)
{
	(void)status;
}

int notify_watchdog_enabled(uint64_t *usec)
{
	(void)usec;
	return 0;
}

struct notify_watchdog *notify_watchdog_new(struct loop *loop, int queue_fd)
{
	(void)loop, (void)queue_fd;
	return NULL;
}

void notify_watchdog_free(struct notify_watchdog *w)
{
	(void)w;
}

int caps_drop(void)
{
	return 0;
}

int fz_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	(void)how, (void)set, (void)old;
	return 0;
}

/* A descriptor for daemon_stop() to close. */
int fz_signalfd(int fd, const sigset_t *mask, int flags)
{
	(void)fd, (void)mask, (void)flags;
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* ---- the control socket: its event stream is counted ---- */

static uint8_t the_ctl;

int ctl_open(struct ctl **out, struct rackd *d, const char *path)
{
	(void)d, (void)path;
	*out = (struct ctl *)&the_ctl;
	return 0;
}

void ctl_close(struct ctl *ctl)
{
	(void)ctl;
}

void ctl_event(void *arg, enum event_type type, struct conn *c,
	       const char *reason)
{
	(void)arg;
	FZ_CHECK((unsigned)type < EVENT_MAX, "event %d", type);
	FZ_CHECK(!__asan_address_is_poisoned(c), "event %d for a freed "
		 "connection", type);
	fz_events[type]++;
	fz_events_total[type]++;
	fz_trace("event %s conn %llu%s%s", event_name(type) ?
		 event_name(type) : "internal", (unsigned long long)c->id,
		 reason ? ": " : "", reason ? reason : "");
}

/* ---- logging: quiet unless RACKS_FUZZ_LOG is set ---- */

void log_init(const char *ident, bool foreground, bool debug)
{
	(void)ident, (void)foreground, (void)debug;
}

void log_set_debug(bool debug)
{
	(void)debug;
}

bool log_debug_enabled(void)
{
	return fz_tracing;
}

#define LOG_BODY(prefix)                                  \
	do {                                              \
		va_list ap;                               \
		if (!fz_tracing)                          \
			break;                            \
		fprintf(stderr, "[%8llu] rackd %s", (unsigned long long)fz_now, \
			prefix);                          \
		va_start(ap, fmt);                        \
		vfprintf(stderr, fmt, ap);                \
		va_end(ap);                               \
		fputc('\n', stderr);                      \
	} while (0)

void log_warn(const char *fmt, ...)
{
	LOG_BODY("warning: ");
}

void log_warnx(const char *fmt, ...)
{
	LOG_BODY("warning: ");
}

void log_info(const char *fmt, ...)
{
	LOG_BODY("");
}

void log_debug(const char *fmt, ...)
{
	LOG_BODY("debug: ");
}

/* rackd exits on these: the input that gets there is kept. */
void fatal(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "==fuzz_engine: rackd fatal (exit %d): ", code);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void fatalx(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "==fuzz_engine: rackd fatal (exit %d): ", code);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		fatalx(EXIT_NOMEM, "out of memory");
	return p;
}

void *xreallocarray(void *ptr, size_t n, size_t size)
{
	void *p = reallocarray(ptr, n, size);

	if (!p)
		fatalx(EXIT_NOMEM, "out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		fatalx(EXIT_NOMEM, "out of memory");
	return p;
}
