// SPDX-License-Identifier: GPL-2.0-only
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define ERR_KEEP 8192

/* 'WORD', with ' as '\'' : one word for the node's shell. */
static void quote(FILE *f, const char *word)
{
	fputc('\'', f);
	for (const char *p = word; *p; p++)
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	fputc('\'', f);
}

static char **command(const char *rsh, const char *node, char *const *words)
{
	char *copy = xstrdup(rsh), *save = NULL, *line, **argv = NULL;
	size_t n = 0, len;
	FILE *f = open_memstream(&line, &len);

	if (!f)
		util_fatal("out of memory");
	for (char *w = strtok_r(copy, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		argv = xrealloc(argv, (n + 4) * sizeof(*argv));
		argv[n++] = xstrdup(w);
	}
	free(copy);
	for (size_t i = 0; words[i]; i++) {
		if (i)
			fputc(' ', f);
		quote(f, words[i]);
	}
	if (fclose(f))
		util_fatal("out of memory");
	argv = xrealloc(argv, (n + 3) * sizeof(*argv));
	argv[n++] = xstrdup(node);
	argv[n++] = line;
	argv[n] = NULL;
	return argv;
}

static void append(char **buf, size_t *len, const char *data, size_t n,
		   size_t keep)
{
	*buf = xrealloc(*buf, *len + n + 1);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
	if (keep && *len > keep) {
		memmove(*buf, *buf + *len - keep, keep + 1);
		*len = keep;
	}
}

/* Whole lines of OUT from *DONE on, to ON_LINE. */
static void lines(char *out, size_t len, size_t *done, remote_line_fn on_line,
		  void *arg)
{
	char *nl;

	while (*done < len && (nl = memchr(out + *done, '\n', len - *done))) {
		*nl = '\0';
		if (on_line)
			on_line(out + *done, arg);
		*nl = '\n';
		*done = (size_t)(nl - out) + 1;
	}
}

int remote_run(const char *rsh, const char *node, char *const *words,
	       double timeout, remote_line_fn on_line, void *arg,
	       struct remote_result *res)
{
	char **argv = command(rsh, node, words);
	double deadline = util_mono() + timeout;
	size_t olen = 0, elen = 0, done = 0;
	int po[2], pe[2], ret = 0;
	bool oeof = false, eeof = false;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	res->out = xstrdup("");
	res->err = xstrdup("");
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
		goto out;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		/* Its own process group: a timeout kills all of it. */
		setpgid(0, 0);
		dup2(null, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		util_exec(argv);
	}
	close(po[1]);
	close(pe[1]);
	while (!oeof || !eeof) {
		struct pollfd fds[2] = {
			{ .fd = oeof ? -1 : po[0], .events = POLLIN },
			{ .fd = eeof ? -1 : pe[0], .events = POLLIN },
		};
		double left = deadline - util_mono();
		char buf[4096];

		if (left <= 0) {
			res->timed_out = true;
			kill(-pid, SIGKILL);
			break;
		}
		if (poll(fds, 2, (int)(left * 1000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!fds[i].revents)
				continue;
			n = read(fds[i].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				*(i ? &eeof : &oeof) = true;
				continue;
			}
			if (i) {
				append(&res->err, &elen, buf, (size_t)n, ERR_KEEP);
			} else {
				append(&res->out, &olen, buf, (size_t)n, 0);
				lines(res->out, olen, &done, on_line, arg);
			}
		}
	}
	close(po[0]);
	close(pe[0]);
	while (waitpid(pid, &res->status, 0) < 0)
		if (errno != EINTR) {
			res->status = -1;
			break;
		}
	/* A last line without its newline. */
	if (done < olen && on_line)
		on_line(res->out + done, arg);
out:
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
	return ret;
}

void remote_result_free(struct remote_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}

bool remote_ok(const struct remote_result *res)
{
	return !res->timed_out && res->status >= 0 && WIFEXITED(res->status) &&
	       WEXITSTATUS(res->status) == 0;
}

const char *remote_status_str(const struct remote_result *res, char *buf,
			      size_t len)
{
	if (res->timed_out)
		snprintf(buf, len, "timed out");
	else if (res->status < 0)
		snprintf(buf, len, "lost");
	else if (WIFSIGNALED(res->status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(res->status));
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(res->status));
	return buf;
}
