// SPDX-License-Identifier: GPL-2.0-only
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syncdir.h"

bool util_verbose;

static void vsay(const char *fmt, va_list ap)
{
	fputs("rackckpt: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void util_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void util_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void util_debug(const char *fmt, ...)
{
	va_list ap;

	if (!util_verbose)
		return;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void util_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	exit(EXIT_REFUSED);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		util_fatal("out of memory");
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		util_fatal("out of memory");
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		util_fatal("out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		util_fatal("out of memory");
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		util_fatal("out of memory");
	return p;
}

struct buffer {
	const char *data;
	size_t len;
};

static int write_buffer(FILE *f, void *arg)
{
	const struct buffer *b = arg;

	return fwrite(b->data, 1, b->len, f) == b->len ? 0 : -EIO;
}

int util_write_file(const char *path, const char *data, size_t len,
		    unsigned mode)
{
	struct buffer b = { data, len };

	return file_replace(path, mode, write_buffer, &b);
}

char *util_read_file(const char *path, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	buf = xmalloc(cap);
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap)
			buf = xrealloc(buf, cap *= 2);
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

void util_print_tail(const char *path, int n)
{
	size_t len;
	char *buf = util_read_file(path, &len);
	const char *p;
	int lines = 0;

	if (!buf) {
		util_err("(no log at %s: %s)", path, strerror(errno));
		return;
	}
	p = buf + len;
	if (p > buf && p[-1] == '\n')
		p--;
	while (p > buf && lines < n) {
		p--;
		if (*p == '\n')
			lines++;
	}
	if (*p == '\n')
		p++;
	fprintf(stderr, "--- last lines of %s ---\n", path);
	for (const char *l = p; *l;) {
		const char *nl = strchr(l, '\n');
		int ll = nl ? (int)(nl - l) : (int)strlen(l);

		fprintf(stderr, "    %.*s\n", ll, l);
		l += ll + (nl ? 1 : 0);
	}
	free(buf);
}

int util_listen_any(int *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, off = 0;

	/* One dual-stack socket on every address; IPv4 only without v6. */
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
				   sizeof(off)) < 0 ||
			bind(fd, (struct sockaddr *)&a6, sizeof(a6)) < 0)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a4, sizeof(a4)) < 0)
			return -errno;
	}
	if (listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	*port = ntohs(ss.ss_family == AF_INET6 ?
		      ((struct sockaddr_in6 *)&ss)->sin6_port :
		      ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

double util_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct timespec util_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

bool util_is_uint(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

bool util_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!*s || strlen(s) > 18)
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

void util_exit_like(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit none = { 0, 0 };
		sigset_t set;

		/* The same signal, so that a launcher sees what killed the
		 * child; never a core of the wrapper. */
		setrlimit(RLIMIT_CORE, &none);
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

void util_exec(char **cmd)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	execvp(cmd[0], cmd);
	fprintf(stderr, "rackckpt: cannot run %s: %s\n", cmd[0],
		strerror(errno));
	_exit(127);
}

int util_forward_signalfd(void)
{
	sigset_t sigs;
	int fd;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	fd = signalfd(-1, &sigs, SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
