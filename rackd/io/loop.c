// SPDX-License-Identifier: GPL-2.0-only
#include "loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LOOP_MAX_EVENTS 64

struct loop_source {
	int fd;
	loop_fn fn;
	void *arg;
	uint64_t dispatches;	/* times fn ran: progress seen by the watchdog */
	bool dead;		/* removed; freed after the current batch */
	struct loop_source *next_dead;
};

struct loop {
	int epfd;
	int timerfd;
	bool running;
	uint64_t armed_for;	/* deadline the timerfd is set to */
	struct timer_heap timers;
	struct loop_source **sources;	/* indexed by fd */
	size_t nsources;
	struct loop_source *dead;
};

uint64_t loop_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void loop_timerfd_ready(void *arg, uint32_t events)
{
	struct loop *loop = arg;
	uint64_t expirations;

	(void)events;
	/* Reading resets the fd; the deadlines themselves live in the heap. */
	if (read(loop->timerfd, &expirations, sizeof(expirations)) < 0 &&
	    errno != EAGAIN)
		log_warn("timerfd read");
	loop->armed_for = TIMER_NEVER;
}

struct loop *loop_new(void)
{
	struct loop *loop = xcalloc(1, sizeof(*loop));

	timer_heap_init(&loop->timers);
	loop->armed_for = TIMER_NEVER;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0)
		fatal(1, "epoll_create1");
	loop->timerfd = timerfd_create(CLOCK_MONOTONIC,
				       TFD_NONBLOCK | TFD_CLOEXEC);
	if (loop->timerfd < 0)
		fatal(1, "timerfd_create");
	if (loop_add(loop, loop->timerfd, EPOLLIN, loop_timerfd_ready, loop))
		fatal(1, "epoll_ctl timerfd");
	return loop;
}

static void loop_reap(struct loop *loop)
{
	while (loop->dead) {
		struct loop_source *s = loop->dead;

		loop->dead = s->next_dead;
		free(s);
	}
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	for (size_t i = 0; i < loop->nsources; i++)
		free(loop->sources[i]);
	loop_reap(loop);
	free(loop->sources);
	timer_heap_free(&loop->timers);
	close(loop->timerfd);
	close(loop->epfd);
	free(loop);
}

int loop_add(struct loop *loop, int fd, uint32_t events, loop_fn fn,
	     void *arg)
{
	struct epoll_event ev = { .events = events };
	struct loop_source *s;

	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= loop->nsources) {
		size_t n = (size_t)fd + 16;
		struct loop_source **v = realloc(loop->sources, n * sizeof(*v));

		if (!v)
			fatalx(EXIT_NOMEM, "out of memory");
		for (size_t i = loop->nsources; i < n; i++)
			v[i] = NULL;
		loop->sources = v;
		loop->nsources = n;
	}
	if (loop->sources[fd])
		return -EEXIST;
	s = xcalloc(1, sizeof(*s));
	s->fd = fd;
	s->fn = fn;
	s->arg = arg;
	ev.data.ptr = s;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		free(s);
		return err;
	}
	loop->sources[fd] = s;
	return 0;
}

int loop_mod(struct loop *loop, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	if (fd < 0 || (size_t)fd >= loop->nsources || !loop->sources[fd])
		return -ENOENT;
	ev.data.ptr = loop->sources[fd];
	return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct loop *loop, int fd)
{
	struct loop_source *s;

	if (fd < 0 || (size_t)fd >= loop->nsources || !loop->sources[fd])
		return;
	s = loop->sources[fd];
	loop->sources[fd] = NULL;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	s->dead = true;
	s->next_dead = loop->dead;
	loop->dead = s;
}

uint64_t loop_dispatches(const struct loop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->nsources || !loop->sources[fd])
		return 0;
	return loop->sources[fd]->dispatches;
}

void loop_timer_arm(struct loop *loop, struct timer *t, uint64_t delay_ms)
{
	timer_heap_arm(&loop->timers, t, loop_now() + delay_ms);
}

void loop_timer_cancel(struct loop *loop, struct timer *t)
{
	timer_heap_cancel(&loop->timers, t);
}

/* Point the timerfd at the earliest deadline if it changed. */
static void loop_rearm_timerfd(struct loop *loop)
{
	uint64_t next = timer_heap_next(&loop->timers);
	struct itimerspec its = { 0 };

	if (next == loop->armed_for)
		return;
	if (next != TIMER_NEVER) {
		/* 0 would disarm: an overdue deadline fires at 1 ns. */
		its.it_value.tv_sec = (time_t)(next / 1000);
		its.it_value.tv_nsec = (long)(next % 1000) * 1000000;
		if (next == 0)
			its.it_value.tv_nsec = 1;
	}
	if (timerfd_settime(loop->timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		log_warn("timerfd_settime");
	loop->armed_for = next;
}

int loop_run(struct loop *loop)
{
	struct epoll_event events[LOOP_MAX_EVENTS];

	loop->running = true;
	while (loop->running) {
		timer_heap_run(&loop->timers, loop_now());
		if (!loop->running)
			break;
		loop_rearm_timerfd(loop);

		int n = epoll_wait(loop->epfd, events, LOOP_MAX_EVENTS, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			struct loop_source *s = events[i].data.ptr;

			if (!s->dead) {
				s->dispatches++;
				s->fn(s->arg, events[i].events);
			}
		}
		loop_reap(loop);
	}
	return 0;
}

void loop_stop(struct loop *loop)
{
	loop->running = false;
}
