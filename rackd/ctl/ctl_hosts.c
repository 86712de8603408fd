// SPDX-License-Identifier: GPL-2.0-only
#include "ctl_hosts.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "hostid.h"
#include "knownhosts_file.h"
#include "rackd.h"

static void put_time(FILE *out, const char *key, int64_t t)
{
	time_t tt = (time_t)t;
	char when[32];
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm)) {
		proto_put(out, key, "never");
		return;
	}
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	proto_put(out, key, "%s", when);
}

static void put_host(FILE *out, const struct known_host *h)
{
	char fp[EDP_HOST_FP_STRLEN], key[EDP_HOST_KEY_STRLEN];
	char addrs[KNOWN_HOST_ADDRS * (ADDR_STRLEN + 1)] = "";

	edp_host_fingerprint(h->pk, fp);
	edp_host_key_format(h->pk, key);
	proto_put(out, "fingerprint", "%s", fp);
	proto_put(out, "key", "%s", key);
	proto_put(out, "state", "%s", h->pinned ? "pinned" : "known");
	proto_put(out, "name", "%s", h->name);
	put_time(out, "first_seen", h->first_seen);
	put_time(out, "last_seen", h->last_seen);
	for (size_t i = 0; i < h->naddrs; i++) {
		char a[ADDR_STRLEN];

		if (i)
			strcat(addrs, ",");
		strcat(addrs, addr_format(&h->last_addrs[i], a, sizeof(a)));
	}
	proto_put(out, "addresses", "%s", addrs);
}

int cmd_host(struct rackd *d, const struct proto_msg *req, FILE *out,
	     char *err, size_t errlen)
{
	char fp[EDP_HOST_FP_STRLEN], key[EDP_HOST_KEY_STRLEN];

	(void)req, (void)err, (void)errlen;
	edp_host_fingerprint(d->hostkey.pk, fp);
	edp_host_key_format(d->hostkey.pk, key);
	proto_put(out, "fingerprint", "%s", fp);
	proto_put(out, "public_key", "%s", key);
	proto_put(out, "key_file", "%s", d->hostkey_ephemeral ? "in memory"
		  : d->hostkey_path);
	proto_put(out, "known_hosts", "%zu", known_hosts_count(d->known_hosts));
	proto_put(out, "known_hosts_file", "%s", d->known_hosts_path ?
		  d->known_hosts_path : "in memory");
	proto_put(out, "trust", "%s", trust_policy_name(d->cfg->trust));
	return 0;
}

int cmd_hosts(struct rackd *d, const struct proto_msg *req, FILE *out,
	      char *err, size_t errlen)
{
	(void)req, (void)err, (void)errlen;
	for (const struct known_host *h = known_hosts_next(d->known_hosts,
							   NULL);
	     h; h = known_hosts_next(d->known_hosts, h)) {
		proto_put(out, "record", "host");
		put_host(out, h);
	}
	return 0;
}

/* The known host that REQ's "host" names by key or fingerprint. */
static int find_host(struct rackd *d, const struct proto_msg *req,
		     const struct known_host **out, char *err, size_t errlen)
{
	const char *s = proto_get(req, "host");
	uint8_t pk[EDP_HOST_KEY_LEN];

	*out = NULL;
	if (!s || !*s) {
		snprintf(err, errlen, "missing host: give its key (%s...) or "
			 "its fingerprint (%s...)", EDP_HOST_KEY_PREFIX,
			 EDP_HOST_FP_PREFIX);
		return -EINVAL;
	}
	if (!strncmp(s, EDP_HOST_KEY_PREFIX, strlen(EDP_HOST_KEY_PREFIX))) {
		if (edp_host_key_parse(s, pk)) {
			snprintf(err, errlen, "bad host key '%.80s' (want %s "
				 "and 44 base64 characters)", s,
				 EDP_HOST_KEY_PREFIX);
			return -EINVAL;
		}
		*out = known_hosts_by_key(d->known_hosts, pk);
	} else if (!strncmp(s, EDP_HOST_FP_PREFIX,
			    strlen(EDP_HOST_FP_PREFIX))) {
		char fp[EDP_HOST_FP_STRLEN];

		if (!edp_host_fp_valid(s)) {
			snprintf(err, errlen, "bad fingerprint '%.80s' (want "
				 "%s and 43 base64 characters)", s,
				 EDP_HOST_FP_PREFIX);
			return -EINVAL;
		}
		for (const struct known_host *h =
			     known_hosts_next(d->known_hosts, NULL);
		     h && !*out; h = known_hosts_next(d->known_hosts, h)) {
			edp_host_fingerprint(h->pk, fp);
			if (!strcmp(fp, s))
				*out = h;
		}
	} else {
		snprintf(err, errlen, "'%.80s' is neither a host key (%s...) "
			 "nor a fingerprint (%s...)", s, EDP_HOST_KEY_PREFIX,
			 EDP_HOST_FP_PREFIX);
		return -EINVAL;
	}
	if (!*out) {
		snprintf(err, errlen, "no known host has the %s %.80s",
			 *s == 'S' ? "fingerprint" : "key", s);
		return -ENOENT;
	}
	return 0;
}

/* The table changed: the file follows before the reply. */
static int save(struct rackd *d, char *err, size_t errlen)
{
	int ret = known_hosts_file_write(d);

	if (ret)
		snprintf(err, errlen, "changed, but the known hosts file %s "
			 "could not be saved: %s", d->known_hosts_path,
			 strerror(-ret));
	return ret;
}

static int parse_bool(const struct proto_msg *req, const char *key,
		      bool *out, char *err, size_t errlen)
{
	const char *v = proto_get(req, key);

	if (!v || (strcmp(v, "true") && strcmp(v, "false"))) {
		snprintf(err, errlen, "%s must be true or false", key);
		return -EINVAL;
	}
	*out = !strcmp(v, "true");
	return 0;
}

int cmd_hosts_add(struct rackd *d, const struct proto_msg *req, FILE *out,
		  char *err, size_t errlen)
{
	const char *key = proto_get(req, "key"), *name = proto_get(req, "name");
	uint8_t pk[EDP_HOST_KEY_LEN];
	const struct known_host *h;
	bool pin = false, added;
	int ret;

	if (!key || edp_host_key_parse(key, pk)) {
		snprintf(err, errlen, "bad host key '%.80s' (want %s and 44 "
			 "base64 characters)", key ? key : "",
			 EDP_HOST_KEY_PREFIX);
		return -EINVAL;
	}
	if (name && !known_hosts_name_valid(name)) {
		snprintf(err, errlen, "bad name '%.80s' (up to %d printable "
			 "characters, no blanks)", name,
			 KNOWN_HOST_NAME_MAX - 1);
		return -EINVAL;
	}
	if (proto_get(req, "pin") && parse_bool(req, "pin", &pin, err, errlen))
		return -EINVAL;
	ret = known_hosts_add(d->known_hosts, pk, name, pin);
	added = ret == 0;
	if (ret == -EEXIST) {
		/* Known already: named and pinned as asked, never unpinned. */
		ret = name ? known_hosts_set_name(d->known_hosts, pk, name) : 0;
		if (!ret && pin)
			ret = known_hosts_pin(d->known_hosts, pk, true);
	}
	if (ret == -ENOSPC)
		snprintf(err, errlen, "no room: all %zu known hosts are pinned",
			 known_hosts_max(d->known_hosts));
	else if (ret)
		snprintf(err, errlen, "%s", strerror(-ret));
	if (ret)
		return ret;
	ret = save(d, err, errlen);
	if (ret)
		return ret;
	h = known_hosts_by_key(d->known_hosts, pk);
	proto_put(out, "added", "%s", added ? "true" : "false");
	put_host(out, h);
	return 0;
}

int cmd_hosts_remove(struct rackd *d, const struct proto_msg *req, FILE *out,
		     char *err, size_t errlen)
{
	uint8_t pk[EDP_HOST_KEY_LEN];
	char fp[EDP_HOST_FP_STRLEN];
	const struct known_host *h;
	int ret = find_host(d, req, &h, err, errlen);

	if (ret)
		return ret;
	memcpy(pk, h->pk, sizeof(pk));
	edp_host_fingerprint(pk, fp);
	known_hosts_remove(d->known_hosts, pk);
	ret = save(d, err, errlen);
	if (ret)
		return ret;
	proto_put(out, "removed", "%s", fp);
	return 0;
}

int cmd_hosts_pin(struct rackd *d, const struct proto_msg *req, FILE *out,
		  char *err, size_t errlen)
{
	const struct known_host *h;
	bool pinned;
	int ret = find_host(d, req, &h, err, errlen);

	if (ret || (ret = parse_bool(req, "pinned", &pinned, err, errlen)))
		return ret;
	known_hosts_pin(d->known_hosts, h->pk, pinned);
	ret = save(d, err, errlen);
	if (ret)
		return ret;
	put_host(out, h);
	return 0;
}
