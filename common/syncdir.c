// SPDX-License-Identifier: GPL-2.0-only
#include "syncdir.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int sync_parent_dir(const char *path)
{
	char copy[PATH_MAX];
	int fd, ret = 0;

	if ((size_t)snprintf(copy, sizeof(copy), "%s", path) >= sizeof(copy))
		return -ENAMETOOLONG;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int file_replace(const char *path, mode_t mode, file_writer_fn fill,
		 void *arg)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, ret;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0 || !(f = fdopen(fd, "w"))) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	ret = fill(f, arg);
	if (fflush(f) == EOF || fsync(fileno(f)) < 0)
		ret = ret ? ret : -errno;
	if (fclose(f) == EOF && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	return sync_parent_dir(path);
}
