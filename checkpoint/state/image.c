// SPDX-License-Identifier: GPL-2.0-only
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void image_kv_add(struct image_kv *kv, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *v;

	va_start(ap, fmt);
	if (vasprintf(&v, fmt, ap) < 0)
		util_fatal("out of memory");
	va_end(ap);
	/* One line per pair: a newline in a value would forge a key. */
	for (char *p = v; *p; p++)
		if (*p == '\n')
			*p = ' ';
	kv->key = xrealloc(kv->key, (kv->n + 1) * sizeof(*kv->key));
	kv->value = xrealloc(kv->value, (kv->n + 1) * sizeof(*kv->value));
	kv->key[kv->n] = xstrdup(key);
	kv->value[kv->n++] = v;
}

const char *image_kv_next(const struct image_kv *kv, const char *key,
			  size_t *pos)
{
	for (; *pos < kv->n; (*pos)++)
		if (strcmp(kv->key[*pos], key) == 0)
			return kv->value[(*pos)++];
	return NULL;
}

const char *image_kv_get(const struct image_kv *kv, const char *key)
{
	size_t pos = 0;

	return image_kv_next(kv, key, &pos);
}

void image_kv_free(struct image_kv *kv)
{
	for (size_t i = 0; i < kv->n; i++) {
		free(kv->key[i]);
		free(kv->value[i]);
	}
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

char *image_path(const char *dir, const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

int image_info_write(const char *dir, const struct image_kv *kv)
{
	char *path = image_path(dir, IMAGE_INFO), *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	int ret;

	if (!f)
		util_fatal("out of memory");
	for (size_t i = 0; i < kv->n; i++)
		fprintf(f, "%s=%s\n", kv->key[i], kv->value[i]);
	if (fclose(f))
		util_fatal("out of memory");
	ret = util_write_file(path, text, len, 0600);
	free(text);
	free(path);
	return ret;
}

int image_info_read(const char *dir, struct image_kv *kv, char *err,
		    size_t errlen)
{
	char *path = image_path(dir, IMAGE_INFO);
	char *text = util_read_file(path, NULL), *line, *save = NULL;
	int ret = 0;

	memset(kv, 0, sizeof(*kv));
	if (!text) {
		ret = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path,
			 strerror(errno));
		free(path);
		return ret;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq || eq == line) {
			snprintf(err, errlen, "%s: malformed line '%.60s'",
				 path, line);
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		image_kv_add(kv, line, "%s", eq + 1);
	}
	if (!ret && !image_kv_get(kv, "format")) {
		snprintf(err, errlen, "%s is not a rackckpt info file", path);
		ret = -EINVAL;
	}
	if (ret)
		image_kv_free(kv);
	free(text);
	free(path);
	return ret;
}

int image_state_write(const char *dir, char *const *lines, size_t n)
{
	char *path = image_path(dir, IMAGE_STATE), *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	int ret;

	if (!f)
		util_fatal("out of memory");
	fprintf(f, "racks-state 1\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	fprintf(f, "end %zu\n", n);
	if (fclose(f))
		util_fatal("out of memory");
	ret = util_write_file(path, text, len, 0600);
	/* The text holds connection keys. */
	memset(text, 0, len);
	free(text);
	free(path);
	return ret;
}

int image_state_read(const char *dir, char ***lines, size_t *n, char *err,
		     size_t errlen)
{
	char *path = image_path(dir, IMAGE_STATE);
	size_t textlen = 0;
	char *text = util_read_file(path, &textlen), *line, *save = NULL;
	bool header = false, ended = false;
	int ret = 0;

	*lines = NULL;
	*n = 0;
	if (!text) {
		ret = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path,
			 strerror(errno));
		free(path);
		return ret;
	}
	for (line = strtok_r(text, "\n", &save); line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t count;
		char tail;

		if (!header) {
			header = strcmp(line, "racks-state 1") == 0;
			ret = header ? 0 : -EINVAL;
		} else if (ended) {
			ret = -EINVAL;
		} else if (sscanf(line, "end %zu%c", &count, &tail) == 1) {
			ended = true;
			ret = count == *n ? 0 : -EINVAL;
		} else if (strncmp(line, "conn ", 5) == 0) {
			*lines = xrealloc(*lines, (*n + 1) * sizeof(**lines));
			(*lines)[(*n)++] = xstrdup(line);
		} else {
			ret = -EINVAL;
		}
	}
	if (!ret && !ended)
		ret = -EINVAL;
	if (ret) {
		snprintf(err, errlen, "%s is incomplete or not a racks state "
			 "file", path);
		for (size_t i = 0; i < *n; i++)
			free((*lines)[i]);
		free(*lines);
		*lines = NULL;
		*n = 0;
	}
	memset(text, 0, textlen);
	free(text);
	free(path);
	return ret;
}

void image_state_free(char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		memset(lines[i], 0, strlen(lines[i]));	/* keys */
		free(lines[i]);
	}
	free(lines);
}

/* The value of " KEY=" in LINE, up to the next space, into BUF. */
static bool field(const char *line, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = line; (p = strstr(p, key)); p += klen) {
		size_t n;

		if (p != line && p[-1] != ' ')
			continue;
		if (p[klen] != '=')
			continue;
		n = strcspn(p + klen + 1, " ");
		if (n >= len)
			return false;
		memcpy(buf, p + klen + 1, n);
		buf[n] = '\0';
		return true;
	}
	return false;
}

int image_state_endpoints(const char *line, struct endpoint *local,
			  struct endpoint *remote)
{
	char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN];
	bool lp, rp;

	if (!field(line, "local", l, sizeof(l)) ||
	    !field(line, "remote", r, sizeof(r)) ||
	    endpoint_parse(l, local, &lp) || endpoint_parse(r, remote, &rp) ||
	    !lp || !rp)
		return -EINVAL;
	return 0;
}

int image_pids(const char *dir, pid_t **pids, size_t *n)
{
	char *images = image_path(dir, IMAGE_IMAGES);
	DIR *d = opendir(images);
	struct dirent *e;

	free(images);
	*pids = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(e->d_name, "core-", 5))
			continue;
		pid = strtol(e->d_name + 5, &end, 10);
		if (pid <= 0 || strcmp(end, ".img"))
			continue;
		*pids = xrealloc(*pids, (*n + 1) * sizeof(**pids));
		(*pids)[(*n)++] = (pid_t)pid;
	}
	closedir(d);
	return 0;
}

int image_next_along(const struct image_kv *info, size_t *pos,
		     struct endpoint *local, struct endpoint *remote)
{
	const char *v;

	while ((v = image_kv_next(info, "conn", pos))) {
		char l[ENDPOINT_STRLEN], r[ENDPOINT_STRLEN], kind[16];
		bool lp, rp;

		/* ENDPOINT_STRLEN is 54 */
		if (sscanf(v, "%53s %53s %15s", l, r, kind) != 3)
			return -EINVAL;
		if (strcmp(kind, "along"))
			continue;
		if (endpoint_parse(l, local, &lp) ||
		    endpoint_parse(r, remote, &rp))
			return -EINVAL;
		return 1;
	}
	return 0;
}
