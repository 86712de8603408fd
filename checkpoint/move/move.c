// SPDX-License-Identifier: GPL-2.0-only
/*
 * The common case in one step: `--to CMD` is a command prefix that runs a
 * command on the destination ("ssh hostC", "nsenter --net=/run/netns/C"),
 * and DIR a path both hosts see. The destination's rackd is asked first,
 * so that a host without one refuses the move before anything changed.
 */
#include "move.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* Run "TO WORDS" through sh; the wait status. */
static int on_destination(const char *to, const char *words, bool quiet)
{
	char *line = xasprintf("%s %s%s", to, words, quiet ? " >/dev/null 2>&1" : "");
	int status;
	pid_t pid = fork();

	if (pid < 0)
		util_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	free(line);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* DIR goes through a shell, perhaps two (ssh): plain characters only. */
static bool shell_safe(const char *s)
{
	return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			       "0123456789/._-+:@,") == strlen(s);
}

int move_main(const struct move_opts *o)
{
	char *sock = o->to_sock ? xasprintf("-S %s ", o->to_sock) : xstrdup("");
	char *words;
	int status, ret;

	if (!shell_safe(o->dump.dir) || (o->to_sock && !shell_safe(o->to_sock))) {
		util_err("migrate: paths may only hold letters, digits and "
			 "/._-+:@, (they go through the destination's shell)");
		free(sock);
		return EXIT_USAGE;
	}
	words = xasprintf("rackctl %sstatus", sock);
	status = on_destination(o->to, words, true);
	free(words);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		util_err("the destination has no rackd answering ('%s rackctl "
			 "%sstatus' failed): migrate refused; nothing changed",
			 o->to, sock);
		free(sock);
		return EXIT_REFUSED;
	}
	ret = dump_main(&o->dump);
	if (ret) {
		free(sock);
		return ret;
	}
	fflush(stdout);
	words = xasprintf("rackckpt %srestore %s", sock, o->dump.dir);
	status = on_destination(o->to, words, false);
	free(words);
	free(sock);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	util_err("restore on the destination failed; the checkpoint stays in "
		 "%s (the connections are held by their peers until "
		 "max_suspend): retry with '%s rackckpt restore %s'",
		 o->dump.dir, o->to, o->dump.dir);
	return EXIT_REFUSED;
}
