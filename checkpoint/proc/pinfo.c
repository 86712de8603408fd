// SPDX-License-Identifier: GPL-2.0-only
#include "pinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int pinfo_read(pid_t pid, struct pinfo *p)
{
	char path[64], *text, *open, *close;
	unsigned long long start;
	long long rss_pages;
	int ppid, sid, tty, n;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = util_read_file(path, NULL);
	if (!text)
		return -ESRCH;
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt
	 * cminflt majflt cmajflt utime stime cutime cstime priority nice
	 * num_threads itrealvalue starttime vsize rss": comm may hold
	 * anything, so fields count from its last ')'. */
	open = strchr(text, '(');
	close = strrchr(text, ')');
	n = close ? sscanf(close + 1, " %c %d %*d %d %d %*d %*u %*u %*u %*u "
			   "%*u %*u %*u %*d %*d %*d %*d %*d %*d %llu %*u %lld",
			   &p->state, &ppid, &sid, &tty, &start, &rss_pages) : 0;
	if (n != 6 || !open) {
		free(text);
		return -ESRCH;
	}
	snprintf(p->comm, sizeof(p->comm), "%.*s", (int)(close - open + 1), open);
	p->ppid = ppid;
	p->sid = sid;
	p->tty = tty;
	p->start = start;
	p->rss_kb = rss_pages > 0 ?
		    (uint64_t)rss_pages * (uint64_t)(sysconf(_SC_PAGESIZE) / 1024) : 0;
	free(text);
	return 0;
}

bool pinfo_same_ns(pid_t pid, const char *ns)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	if (stat(path, &a) < 0)
		return true;	/* no such namespace kind here: nothing differs */
	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	return stat(path, &b) < 0 || (a.st_ino == b.st_ino && a.st_dev == b.st_dev);
}

static void add(pid_t **v, size_t *n, pid_t pid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i] == pid)
			return;
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = pid;
}

/* Children of every thread of PID (a thread may fork too). */
static void add_children(pid_t **v, size_t *n, pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;		/* it just exited */
	while ((de = readdir(d))) {
		char cpath[320], *list, *p, *end;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children",
			 (int)pid, de->d_name);
		list = util_read_file(cpath, NULL);
		for (p = list; p && *p; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (c > 0)
				add(v, n, (pid_t)c);
		}
		free(list);
	}
	closedir(d);
}

pid_t *pinfo_tree(pid_t pid, size_t *n)
{
	pid_t *v = NULL;
	char path[64];

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (access(path, F_OK) < 0)
		return NULL;
	add(&v, n, pid);
	/* The list grows while it is walked: breadth first. */
	for (size_t i = 0; i < *n; i++)
		add_children(&v, n, v[i]);
	return v;
}
