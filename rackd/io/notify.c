// SPDX-License-Identifier: GPL-2.0-only
#include "notify.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"

#define NOTIFY_MAX 512		/* longer than any message rackd sends */
/* Watchdog looks missed in a row before the log says the queue is stuck:
 * one is normal when a packet arrives just before the check. */
#define WATCHDOG_WARN_MISSES 2

struct notify_watchdog {
	struct timer timer;
	struct loop *loop;
	int fd;
	uint64_t period_ms;	/* half of WATCHDOG_USEC */
	uint64_t served;	/* dispatches of fd at the last kick */
	unsigned misses;	/* looks in a row that found fd stuck */
};

static int notify_sendbuf(const char *msg, size_t len)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t salen;
	size_t n;
	int fd, ret = 0;

	if (!name || !*name)
		return 0;
	n = strlen(name);
	if ((name[0] != '/' && name[0] != '@') || n >= sizeof(sun.sun_path))
		return -EINVAL;
	memcpy(sun.sun_path, name, n);
	/* An abstract name starts with NUL and its length is not padded;
	 * a path counts its terminating NUL, as systemd does. */
	if (name[0] == '@')
		sun.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
			    (name[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Never block the event loop on a busy manager: a lost WATCHDOG=1
	 * is covered by the next one. */
	if (sendto(fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL,
		   (struct sockaddr *)&sun, salen) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int notify_send(const char *fmt, ...)
{
	char msg[NOTIFY_MAX];
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EMSGSIZE;
	ret = notify_sendbuf(msg, (size_t)n);
	if (ret)
		log_debug("service manager notification: %s", strerror(-ret));
	return ret;
}

void notify_ready(const char *status)
{
	notify_send("READY=1\nSTATUS=%s", status);
}

void notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	notify_send("RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
		    (uint64_t)ts.tv_sec * 1000000 +
		    (uint64_t)ts.tv_nsec / 1000);
}

void notify_stopping(void)
{
	notify_send("STOPPING=1");
}

void notify_status(const char *status)
{
	notify_send("STATUS=%s", status);
}

/* Digits only, as systemd's safe_atou64: no sign, blank or suffix. */
static int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int notify_watchdog_enabled(uint64_t *usec)
{
	const char *s = getenv("WATCHDOG_USEC"), *p;
	uint64_t u, pid;

	if (!s)
		return 0;
	/* 0 and "infinity" (UINT64_MAX) are not intervals. */
	if (parse_u64(s, &u) || u == 0 || u == UINT64_MAX)
		return -EINVAL;
	p = getenv("WATCHDOG_PID");
	if (p) {
		if (parse_u64(p, &pid) || pid == 0 || pid > INT32_MAX)
			return -EINVAL;
		/* Meant for another process, e.g. our parent before a fork. */
		if (pid != (uint64_t)getpid())
			return 0;
	}
	*usec = u;
	return 1;
}

static bool fd_waiting(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

static void watchdog_tick(struct timer *t, void *arg)
{
	struct notify_watchdog *w = arg;
	uint64_t served = loop_dispatches(w->loop, w->fd);

	if (served != w->served || !fd_waiting(w->fd)) {
		if (w->misses >= WATCHDOG_WARN_MISSES)
			log_info("queue served again: watchdog kicked");
		w->served = served;
		w->misses = 0;
		notify_send("WATCHDOG=1");
		loop_timer_arm(w->loop, t, w->period_ms);
		return;
	}
	/* Packets wait and the loop has not read the queue since the last
	 * kick. They may have just arrived: look again soon. A queue that
	 * stays unread lets the watchdog expire. */
	if (++w->misses == WATCHDOG_WARN_MISSES)
		log_warnx("queue not read although packets wait: "
			  "watchdog not kicked");
	loop_timer_arm(w->loop, t, w->period_ms / 8 + 1);
}

struct notify_watchdog *notify_watchdog_new(struct loop *loop, int queue_fd)
{
	struct notify_watchdog *w;
	uint64_t usec;
	int ret = notify_watchdog_enabled(&usec);

	if (ret < 0)
		log_warnx("malformed WATCHDOG_USEC or WATCHDOG_PID: "
			  "no watchdog");
	if (ret <= 0)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->loop = loop;
	w->fd = queue_fd;
	w->period_ms = usec / 2000 ? usec / 2000 : 1;
	w->served = loop_dispatches(loop, queue_fd);
	timer_init(&w->timer, watchdog_tick, w);
	notify_send("WATCHDOG=1");
	loop_timer_arm(loop, &w->timer, w->period_ms);
	log_info("watchdog: %" PRIu64 " ms, kicked every %" PRIu64 " ms while "
		 "the queue is served", usec / 1000, w->period_ms);
	return w;
}

void notify_watchdog_free(struct notify_watchdog *w)
{
	if (!w)
		return;
	loop_timer_cancel(w->loop, &w->timer);
	free(w);
}
