// SPDX-License-Identifier: GPL-2.0-only
/*
 * The known-hosts file (format in knownhosts_file.h).
 */
#include "knownhosts_file.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostid.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "syncdir.h"

/* The longest line rackd writes is some 330 bytes. */
#define KH_MAX_LINE 1024
#define KH_HEADER "# racks known hosts, see rackd(8): KEY pinned|known " \
		  "FIRST_SEEN LAST_SEEN ADDRESSES [NAME]\n"

/* ---- reading ---- */

static bool parse_time(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* "ADDR,ADDR..." or "-" into H; false with WHY set. */
static bool parse_addrs(char *s, struct known_host *h, char *why, size_t wl)
{
	char *save = NULL;

	h->naddrs = 0;
	if (!strcmp(s, "-"))
		return true;
	for (char *tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		struct prefix p;

		if (h->naddrs == KNOWN_HOST_ADDRS) {
			snprintf(why, wl, "more than %d addresses",
				 KNOWN_HOST_ADDRS);
			return false;
		}
		if (prefix_parse(tok, &p) || strchr(tok, '/')) {
			snprintf(why, wl, "bad address '%.60s'", tok);
			return false;
		}
		h->last_addrs[h->naddrs++] = p.addr;
	}
	if (!h->naddrs) {
		snprintf(why, wl, "no address ('-' for none)");
		return false;
	}
	return true;
}

/* One host's LINE (modified) into H; false with WHY set. */
static bool parse_line(char *line, struct known_host *h, char *why,
		       size_t wl)
{
	enum { F_KEY, F_STATE, F_FIRST, F_LAST, F_ADDRS, F_NAME, F_MAX };
	char *f[F_MAX + 1] = { 0 }, *save = NULL;
	int n = 0;

	for (char *tok = strtok_r(line, " \t", &save); tok && n <= F_MAX;
	     tok = strtok_r(NULL, " \t", &save))
		f[n++] = tok;
	*h = (struct known_host){ 0 };
	if (n < F_NAME || n > F_MAX) {
		snprintf(why, wl, n > F_MAX ? "too many fields (a name has no "
			 "blanks)" : "want KEY pinned|known FIRST_SEEN "
			 "LAST_SEEN ADDRESSES [NAME]");
		return false;
	}
	if (edp_host_key_parse(f[F_KEY], h->pk)) {
		snprintf(why, wl, "bad key (want %s and 44 base64 characters)",
			 EDP_HOST_KEY_PREFIX);
		return false;
	}
	if (strcmp(f[F_STATE], "pinned") && strcmp(f[F_STATE], "known")) {
		snprintf(why, wl, "'%.20s' is neither pinned nor known",
			 f[F_STATE]);
		return false;
	}
	h->pinned = !strcmp(f[F_STATE], "pinned");
	if (!parse_time(f[F_FIRST], &h->first_seen) ||
	    !parse_time(f[F_LAST], &h->last_seen) ||
	    h->first_seen > h->last_seen) {
		snprintf(why, wl, "bad FIRST_SEEN or LAST_SEEN (unix seconds, "
			 "the first not after the last)");
		return false;
	}
	if (!parse_addrs(f[F_ADDRS], h, why, wl))
		return false;
	if (f[F_NAME] && (!known_hosts_name_valid(f[F_NAME]) ||
			  strlen(f[F_NAME]) >= sizeof(h->name))) {
		snprintf(why, wl, "bad name (up to %d printable characters)",
			 KNOWN_HOST_NAME_MAX - 1);
		return false;
	}
	if (f[F_NAME])
		strcpy(h->name, f[F_NAME]);
	return true;
}

static void restore_error(int ret, char *why, size_t wl)
{
	switch (ret) {
	case -EEXIST:
		snprintf(why, wl, "key listed twice");
		break;
	case -EADDRINUSE:
		snprintf(why, wl, "an address listed for another host too");
		break;
	case -ENOSPC:
		snprintf(why, wl, "more hosts than rackd keeps");
		break;
	default:
		snprintf(why, wl, "an address listed twice");
	}
}

int known_hosts_file_load(struct known_hosts *kh, const char *path,
			  bool *missing, char *err, size_t errlen)
{
	char line[KH_MAX_LINE + 2], why[128];
	unsigned lineno = 0;
	int ret = 0;
	FILE *f;

	*missing = false;
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		if (ret == -ENOENT) {
			*missing = true;
			return 0;
		}
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		struct known_host h;
		char *p = line;

		lineno++;
		if (!len || line[len - 1] != '\n') {
			snprintf(why, sizeof(why), len > KH_MAX_LINE ?
				 "line too long" : "no newline (truncated)");
			ret = -EINVAL;
			break;
		}
		line[--len] = '\0';
		p += strspn(p, " \t");
		if (!*p || *p == '#')
			continue;
		if (!parse_line(p, &h, why, sizeof(why))) {
			ret = -EINVAL;
		} else {
			ret = known_hosts_restore(kh, &h);
			if (ret)
				restore_error(ret, why, sizeof(why));
		}
	}
	if (ret) {
		snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
		ret = -EINVAL;
	} else if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		ret = -EIO;
	}
	fclose(f);
	return ret;
}

/* ---- writing ---- */

static void write_host(FILE *f, const struct known_host *h)
{
	char key[EDP_HOST_KEY_STRLEN], a[ADDR_STRLEN];

	edp_host_key_format(h->pk, key);
	fprintf(f, "%s %s %" PRId64 " %" PRId64 " ", key,
		h->pinned ? "pinned" : "known", h->first_seen, h->last_seen);
	for (size_t i = 0; i < h->naddrs; i++)
		fprintf(f, "%s%s", i ? "," : "",
			addr_format(&h->last_addrs[i], a, sizeof(a)));
	fprintf(f, "%s%s%s\n", h->naddrs ? "" : "-", *h->name ? " " : "",
		h->name);
}

static int write_hosts(FILE *f, void *arg)
{
	const struct known_hosts *kh = arg;

	fputs(KH_HEADER, f);
	for (const struct known_host *h = known_hosts_next(kh, NULL); h;
	     h = known_hosts_next(kh, h))
		write_host(f, h);
	return 0;
}

int known_hosts_file_save(const struct known_hosts *kh, const char *path)
{
	return file_replace(path, 0600, write_hosts, (void *)kh);
}

/* ---- rackd's file ---- */

static void on_write_timer(struct timer *t, void *arg)
{
	(void)t;
	known_hosts_file_write(arg);
}

/* The table changed: written at once, or a second after the last write
 * when what changed is only a host seen. */
static void on_change(void *arg, bool seen)
{
	struct rackd *d = arg;
	struct known_hosts_file *kf = d->hosts_file;
	uint64_t now = loop_now(), next, delay = 0;

	if (!kf->path || timer_pending(&kf->write_timer))
		return;
	next = kf->last_write + KNOWN_HOSTS_WRITE_INTERVAL_MS;
	if (seen && kf->writes + kf->write_errors && now < next)
		delay = next - now;
	loop_timer_arm(d->loop, &kf->write_timer, delay);
}

void known_hosts_file_init(struct rackd *d, const char *path)
{
	struct known_hosts_file *kf = d->hosts_file;

	*kf = (struct known_hosts_file){ .path = path };
	timer_init(&kf->write_timer, on_write_timer, d);
	known_hosts_set_notify(d->known_hosts, on_change, d);
}

int known_hosts_file_write(struct rackd *d)
{
	struct known_hosts_file *kf = d->hosts_file;
	int ret;

	if (!kf->path)
		return 0;
	loop_timer_cancel(d->loop, &kf->write_timer);
	kf->last_write = loop_now();
	ret = known_hosts_file_save(d->known_hosts, kf->path);
	if (ret) {
		kf->write_errors++;
		if (!kf->write_failing)
			log_warnx("known hosts file %s could not be saved (%s): "
				  "a restarted rackd would not know the hosts "
				  "met since", kf->path, strerror(-ret));
		kf->write_failing = true;
		return ret;
	}
	if (kf->write_failing)
		log_info("known hosts file %s saved again", kf->path);
	kf->write_failing = false;
	kf->writes++;
	log_debug("known hosts file %s: %zu host(s)", kf->path,
		  known_hosts_count(d->known_hosts));
	return 0;
}

void known_hosts_file_free(struct rackd *d)
{
	struct known_hosts_file *kf = d->hosts_file;

	if (timer_pending(&kf->write_timer))
		known_hosts_file_write(d);
	loop_timer_cancel(d->loop, &kf->write_timer);
	if (d->known_hosts)
		known_hosts_set_notify(d->known_hosts, NULL, NULL);
}
