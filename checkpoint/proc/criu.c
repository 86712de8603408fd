// SPDX-License-Identifier: GPL-2.0-only
#include "criu.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define BUILD_HINT "build it with packaging/build-criu.sh (CRIU 4.2.1 into " \
		   "build/criu) or name one with --criu PATH"

/* Run PATH --version and read "Version: X.Y[.Z]". */
static int query_version(const char *path, char *version, size_t len)
{
	int p[2], status;
	char buf[512];
	size_t got = 0;
	pid_t pid;
	char *v;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(p[1], 1);
		dup2(null, 2);
		execl(path, path, "--version", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], buf + got, sizeof(buf) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf) - 1)
			break;
	}
	close(p[0]);
	buf[got] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	v = strstr(buf, "Version: ");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !v)
		return -ENOEXEC;
	v += strlen("Version: ");
	snprintf(version, len, "%.*s", (int)strcspn(v, "\n \t"), v);
	return 0;
}

static int check_one(const char *path, struct criu *c, char *err,
		     size_t errlen)
{
	int major = 0, minor = 0, ret;

	if (access(path, X_OK) < 0) {
		ret = -errno;
		snprintf(err, errlen, "CRIU not found at %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	ret = query_version(path, c->version, sizeof(c->version));
	if (ret) {
		snprintf(err, errlen, "%s does not run as CRIU (criu --version "
			 "failed)", path);
		return ret;
	}
	if (sscanf(c->version, "%d.%d", &major, &minor) != 2 ||
	    major < CRIU_MIN_MAJOR ||
	    (major == CRIU_MIN_MAJOR && minor < CRIU_MIN_MINOR)) {
		snprintf(err, errlen, "%s is CRIU %s; rackckpt needs %d.%d or "
			 "later", path, c->version, CRIU_MIN_MAJOR,
			 CRIU_MIN_MINOR);
		return -ENOEXEC;
	}
	c->path = xstrdup(path);
	return 0;
}

int criu_find(const char *explicit, struct criu *c, char *err, size_t errlen)
{
	static const char *const fixed[] = {
		"/usr/lib/racks/criu/sbin/criu",
		"/usr/local/lib/racks/criu/sbin/criu",
	};
	const char *env = getenv("RACKS_CRIU");
	char self[PATH_MAX], cand[PATH_MAX + 32], why[512] = "";
	ssize_t n;
	int ret;

	memset(c, 0, sizeof(*c));
	/* A path the user named is the only one tried. */
	if (explicit || (env && *env)) {
		ret = check_one(explicit ? explicit : env, c, why, sizeof(why));
		if (ret)
			snprintf(err, errlen, "%s%s; %s", why,
				 explicit ? "" : " (from $RACKS_CRIU)",
				 BUILD_HINT);
		return ret;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		snprintf(cand, sizeof(cand), "%s/criu/sbin/criu", dirname(self));
		if (access(cand, F_OK) == 0) {
			ret = check_one(cand, c, why, sizeof(why));
			if (ret)
				snprintf(err, errlen, "%s; %s", why, BUILD_HINT);
			return ret;
		}
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (access(fixed[i], F_OK) < 0)
			continue;
		ret = check_one(fixed[i], c, why, sizeof(why));
		if (ret)
			snprintf(err, errlen, "%s; %s", why, BUILD_HINT);
		return ret;
	}
	snprintf(err, errlen, "CRIU %d.%d or later not found (looked in "
		 "$RACKS_CRIU, %s, %s, %s); %s", CRIU_MIN_MAJOR, CRIU_MIN_MINOR,
		 n > 0 ? cand : "the rackckpt binary's criu/sbin/criu",
		 fixed[0], fixed[1], BUILD_HINT);
	return -ENOENT;
}

void criu_free(struct criu *c)
{
	free(c->path);
	c->path = NULL;
}

int criu_run(const struct criu *c, char **argv, const char *log,
	     const int *keep, size_t nkeep, int *status)
{
	int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	pid_t pid;

	if (out < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int ret = -errno;

		close(out);
		return ret;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(out, 2) < 0)
			_exit(127);
		for (size_t i = 0; i < nkeep; i++) {
			int fl = fcntl(keep[i], F_GETFD);

			if (fl < 0 || fcntl(keep[i], F_SETFD, fl & ~FD_CLOEXEC))
				_exit(127);
		}
		/* Default signal dispositions for CRIU, whatever ours are. */
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		argv[0] = c->path;
		execv(c->path, argv);
		_exit(127);
	}
	close(out);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int criu_args(char **argv, const char *action, char *images, char *log)
{
	int n = 0;

	argv[n++] = "criu";
	argv[n++] = (char *)action;
	argv[n++] = "-D";
	argv[n++] = images;
	argv[n++] = "-o";
	argv[n++] = log;
	argv[n++] = "-v4";
	/* Established connections are the point: TCP repair. */
	argv[n++] = "--tcp-established";
	return n;
}

const char *criu_status_str(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended with status %#x", status);
	return buf;
}
