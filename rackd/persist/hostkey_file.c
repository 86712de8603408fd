// SPDX-License-Identifier: GPL-2.0-only
/*
 * The host key's file (format and rules in hostkey_file.h).
 */
#include "hostkey_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostid.h"
#include "syncdir.h"

/* Two lines of some 70 bytes: anything much longer is not a key file. */
#define HOSTKEY_MAX_BYTES 1024
#define B64_LEN sodium_base64_ENCODED_LEN(HOSTKEY_LEN, \
					  sodium_base64_VARIANT_ORIGINAL)

/* The file's text for K into BUF (of HOSTKEY_MAX_BYTES); its length. */
static size_t format_key(const struct hostkey *k, char *buf)
{
	char pub[EDP_HOST_KEY_STRLEN], sec[B64_LEN];
	int n;

	edp_host_key_format(k->pk, pub);
	sodium_bin2base64(sec, sizeof(sec), k->sk, sizeof(k->sk),
			  sodium_base64_VARIANT_ORIGINAL);
	n = snprintf(buf, HOSTKEY_MAX_BYTES, "public %s\nsecret %s\n", pub,
		     sec);
	sodium_memzero(sec, sizeof(sec));
	return (size_t)n;
}

/* BUF (NUL-terminated, modified) as a key file; false with WHY set. */
static bool parse_key(char *buf, struct hostkey *k, char *why, size_t wl)
{
	char *line2, *end;
	size_t got = 0;

	line2 = strchr(buf, '\n');
	if (strncmp(buf, "public ", 7) || !line2) {
		snprintf(why, wl, "line 1 is not 'public %s...'",
			 EDP_HOST_KEY_PREFIX);
		return false;
	}
	*line2++ = '\0';
	if (edp_host_key_parse(buf + 7, k->pk)) {
		snprintf(why, wl, "line 1: bad public key (want %s and 44 "
			 "base64 characters)", EDP_HOST_KEY_PREFIX);
		return false;
	}
	end = strchr(line2, '\n');
	if (strncmp(line2, "secret ", 7) || !end) {
		snprintf(why, wl, "line 2 is not 'secret BASE64'");
		return false;
	}
	*end = '\0';
	if (strlen(line2 + 7) != B64_LEN - 1 ||
	    sodium_base642bin(k->sk, sizeof(k->sk), line2 + 7, B64_LEN - 1,
			      NULL, &got, NULL,
			      sodium_base64_VARIANT_ORIGINAL) ||
	    got != sizeof(k->sk)) {
		snprintf(why, wl, "line 2: bad secret key (want 44 base64 "
			 "characters)");
		return false;
	}
	if (end[1]) {
		snprintf(why, wl, "text after line 2");
		return false;
	}
	if (!hostkey_matches(k)) {
		snprintf(why, wl, "the public key is not the secret key's");
		return false;
	}
	return true;
}

int hostkey_load(const char *path, struct hostkey *out, char *err,
		 size_t errlen)
{
	char buf[HOSTKEY_MAX_BYTES + 1], why[128];
	struct stat st;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "host key %s: %s%s", path, strerror(-ret),
			 ret == -ELOOP ? " (a symbolic link is refused)" : "");
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "host key %s: %s", path, strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "host key %s is not a regular file", path);
		ret = -EINVAL;
		goto out;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "host key %s is owned by uid %u, not by "
			 "uid %u (rackd's): refused", path, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		ret = -EPERM;
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "host key %s has mode %04o: others may "
			 "read it, refused (chmod 600 %s)", path,
			 (unsigned)(st.st_mode & 07777), path);
		ret = -EPERM;
		goto out;
	}
	do
		n = read(fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		ret = -errno;
		snprintf(err, errlen, "host key %s: %s", path, strerror(-ret));
		goto out;
	}
	buf[n] = '\0';
	if ((size_t)n > HOSTKEY_MAX_BYTES)
		snprintf(why, sizeof(why), "longer than %d bytes",
			 HOSTKEY_MAX_BYTES);
	else if (strlen(buf) != (size_t)n)
		snprintf(why, sizeof(why), "a NUL byte in it");
	if ((size_t)n > HOSTKEY_MAX_BYTES || strlen(buf) != (size_t)n ||
	    !parse_key(buf, out, why, sizeof(why))) {
		snprintf(err, errlen, "host key %s is malformed: %s (refused, "
			 "not replaced)", path, why);
		hostkey_wipe(out);
		ret = -EINVAL;
	}
out:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return ret;
}

/* K written whole, synced, to a new file PATH.tmp.XXXXXX (mode 0600),
 * whose name goes to TMP. */
static int write_tmp(const char *path, const struct hostkey *k, char *tmp,
		     size_t tmplen)
{
	char buf[HOSTKEY_MAX_BYTES];
	size_t len, off = 0;
	int fd, ret = 0;

	if ((size_t)snprintf(tmp, tmplen, "%s.tmp.XXXXXX", path) >= tmplen)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = format_key(k, buf);
	if (fchmod(fd, 0600) < 0)
		ret = -errno;
	while (!ret && off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	sodium_memzero(buf, sizeof(buf));
	if (ret)
		unlink(tmp);
	return ret;
}

/* A new key at PATH, unless one appeared meanwhile: -EEXIST then. */
static int create(const char *path, struct hostkey *k, char *err,
		  size_t errlen)
{
	char tmp[PATH_MAX];
	int ret;

	hostkey_generate(k);
	ret = write_tmp(path, k, tmp, sizeof(tmp));
	if (ret == 0) {
		/* link(), unlike rename(), never replaces PATH. */
		if (link(tmp, path) < 0)
			ret = -errno;
		unlink(tmp);
	}
	if (ret == 0)
		ret = sync_parent_dir(path);
	if (ret && ret != -EEXIST)
		snprintf(err, errlen, "host key %s cannot be created: %s", path,
			 strerror(-ret));
	if (ret)
		hostkey_wipe(k);
	return ret;
}

int hostkey_load_or_create(const char *path, struct hostkey *out,
			   bool *created, char *err, size_t errlen)
{
	int ret = hostkey_load(path, out, err, errlen);

	*created = false;
	if (ret != -ENOENT)
		return ret;
	ret = create(path, out, err, errlen);
	if (ret == -EEXIST)	/* another creator won: its key it is */
		return hostkey_load(path, out, err, errlen);
	*created = ret == 0;
	return ret;
}

int hostkey_rotate(const char *path, struct hostkey *old, struct hostkey *new,
		   char *err, size_t errlen)
{
	char tmp_old[PATH_MAX], tmp_new[PATH_MAX], old_path[PATH_MAX];
	struct hostkey o, n;
	int ret = hostkey_load(path, &o, err, errlen);

	if (ret == -ENOENT)
		snprintf(err, errlen, "no host key %s to rotate (rackd "
			 "--init-host-key makes one)", path);
	if (ret)
		return ret;
	if ((size_t)snprintf(old_path, sizeof(old_path), "%s" HOSTKEY_OLD_SUFFIX,
			     path) >= sizeof(old_path)) {
		ret = -ENAMETOOLONG;
		goto fail;
	}
	hostkey_generate(&n);
	/* Both files complete before either rename: PATH always holds a
	 * key, and PATH.old the current one before PATH changes. */
	ret = write_tmp(old_path, &o, tmp_old, sizeof(tmp_old));
	if (ret)
		goto fail;
	ret = write_tmp(path, &n, tmp_new, sizeof(tmp_new));
	if (ret) {
		unlink(tmp_old);
		goto fail;
	}
	if (rename(tmp_old, old_path) < 0 || rename(tmp_new, path) < 0) {
		ret = -errno;
		unlink(tmp_old);
		unlink(tmp_new);
		goto fail;
	}
	ret = sync_parent_dir(path);
	if (ret)
		goto fail;
	if (old)
		*old = o;
	if (new)
		*new = n;
	hostkey_wipe(&o);
	hostkey_wipe(&n);
	return 0;
fail:
	snprintf(err, errlen, "host key %s cannot be rotated: %s", path,
		 strerror(-ret));
	hostkey_wipe(&o);
	hostkey_wipe(&n);
	return ret;
}
