// SPDX-License-Identifier: GPL-2.0-only
#include "jobdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

const char *jobdir_path(void)
{
	const char *d = getenv("RACKS_JOBS_DIR");

	return d && *d ? d : JOBDIR_DEFAULT;
}

char *jobdir_file(int id, const char *suffix)
{
	return xasprintf("%s/%d%s", jobdir_path(), id, suffix);
}

/* mkdir -p, the last component 0700: sockets in it are root's. */
static int make_dir(const char *dir)
{
	char *copy = xstrdup(dir);
	int ret = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			ret = -errno;
		*p = '/';
	}
	if (!ret && mkdir(copy, 0700) < 0 && errno != EEXIST)
		ret = -errno;
	free(copy);
	return ret;
}

/* Lock ID's file: the fd while we hold it, -EWOULDBLOCK if a running
 * controller does, -errno. */
static int lock_id(int id, bool create)
{
	char *path = jobdir_file(id, ".lock");
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);

	free(path);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

int jobdir_take(int *id, int *lock_fd)
{
	int ret = make_dir(jobdir_path());

	if (ret)
		return ret;
	for (int n = 1; n <= JOBDIR_MAX_ID; n++) {
		int fd = lock_id(n, true);
		char *sock;

		if (fd == -EWOULDBLOCK)
			continue;
		if (fd < 0)
			return fd;
		sock = jobdir_file(n, ".sock");
		unlink(sock);		/* a dead controller's */
		free(sock);
		*id = n;
		*lock_fd = fd;
		return 0;
	}
	return -ENOSPC;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int jobdir_list(int **ids, size_t *n)
{
	DIR *d = opendir(jobdir_path());
	struct dirent *e;

	*ids = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		char *end;
		long id = strtol(e->d_name, &end, 10);
		int fd;

		if (end == e->d_name || strcmp(end, ".sock") || id < 1 ||
		    id > JOBDIR_MAX_ID)
			continue;
		/* Free: its controller is gone. */
		fd = lock_id((int)id, false);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		*ids = xrealloc(*ids, (*n + 1) * sizeof(**ids));
		(*ids)[(*n)++] = (int)id;
	}
	closedir(d);
	qsort(*ids, *n, sizeof(**ids), cmp_int);
	return 0;
}
