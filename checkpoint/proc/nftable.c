// SPDX-License-Identifier: GPL-2.0-only
#include "nftable.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* Run nft with ARGV, INPUT on its stdin (or /dev/null); its stderr in
 * ERR. nft's exit status, or -errno if it could not be run. */
static int run_nft(char **argv, const char *input, char *err, size_t errlen)
{
	int in[2], out[2], status;
	size_t got = 0, left = input ? strlen(input) : 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		util_exec(argv);
	}
	close(in[0]);
	close(out[1]);
	/* Scripts are small (a pipe's buffer holds them): written whole
	 * before nft's answer is read. */
	while (left) {
		ssize_t n = write(in[1], input, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		input += n;
		left -= (size_t)n;
	}
	close(in[1]);
	for (;;) {
		char buf[256];
		ssize_t n = read(out[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n && errlen && got < errlen - 1; i++)
			err[got++] = buf[i] == '\n' ? ' ' : buf[i];
	}
	if (errlen)
		err[got] = '\0';
	close(out[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int nftable_delete(const char *spec, char *err, size_t errlen)
{
	char *copy = xstrdup(spec), *family = copy, *name = strchr(copy, ' ');
	char *argv[] = { "nft", "delete", "table", family, name, NULL };
	int ret;

	if (!name) {
		snprintf(err, errlen, "bad table '%s'", spec);
		free(copy);
		return -EINVAL;
	}
	*name++ = '\0';
	argv[4] = name;
	ret = run_nft(argv, NULL, err, errlen);
	free(copy);
	if (ret == 0)
		return 0;
	if (ret > 0 && strstr(err, "No such file or directory"))
		return -ENOENT;
	return ret < 0 ? ret : -EIO;
}

int nftable_load(const char *text, char *err, size_t errlen)
{
	char *argv[] = { "nft", "-f", "-", NULL };
	int ret = run_nft(argv, text, err, errlen);

	return ret == 0 ? 0 : ret < 0 ? ret : -EIO;
}
