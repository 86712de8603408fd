// SPDX-License-Identifier: GPL-2.0-only
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define CONFIG_MAX_LIST 1024	/* ports or prefixes in one configuration */
/* Long enough for the longest list config_dump() writes on one line:
 * CONFIG_MAX_LIST port ranges "65535-65535, ". */
#define CONFIG_MAX_LINE 16384

typedef int (*config_setter)(struct config *cfg, char *value, char *why,
			     size_t whylen);

/* A key is set by its setter, or, for a duration (set == NULL), stored in
 * milliseconds at offset ms_off of struct config, at least min_ms. */
struct config_key {
	const char *name;
	config_setter set;
	size_t ms_off;
	uint64_t min_ms;
};

static int set_error(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_error(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;

	/* Decimal or 0x-hex; a leading zero does not mean octal here. */
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	if (base == 16 && !isxdigit((unsigned char)s[2]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int config_parse_duration(const char *s, uint64_t *ms)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "", 1000 }, { "m", 60000 },
		{ "h", 3600000 }, { "d", 86400000 },
	};
	char *end;
	double v;

	/* Plain decimals only: strtod would also take "1e3" or "0x10". */
	if (!isdigit((unsigned char)s[0]) ||
	    strspn(s, "0123456789.") != strcspn(s, "mshd"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		double total = v * (double)units[i].ms;

		if (total > 365.0 * 86400000.0)
			return -ERANGE;
		*ms = (uint64_t)(total + 0.5);
		return 0;
	}
	return -EINVAL;
}

static int set_queue(struct config *cfg, char *v, char *why, size_t wl)
{
	uint64_t n;

	/* Its messages take the next one (config_strict_queue()). */
	if (parse_u64(v, 0, 65534, &n))
		return set_error(why, wl, "queue must be a number from 0 to 65534");
	cfg->queue_num = (uint16_t)n;
	return 0;
}

static int set_queue_mode(struct config *cfg, char *v, char *why, size_t wl)
{
	for (int m = QUEUE_MODE_AUTO; m <= QUEUE_MODE_XT; m++) {
		if (strcmp(v, config_queue_mode_name(m)) == 0) {
			cfg->queue_mode = m;
			return 0;
		}
	}
	return set_error(why, wl, "queue_mode must be auto, native or xt");
}

static int set_kernel_option(struct config *cfg, char *v, char *why,
			     size_t wl)
{
	for (int k = KERNEL_OPTION_AUTO; k <= KERNEL_OPTION_QUEUE; k++) {
		if (strcmp(v, config_kernel_option_name(k)) == 0) {
			cfg->kernel_option = k;
			return 0;
		}
	}
	return set_error(why, wl, "kernel_option must be auto, bpf or queue");
}

static int set_bpf_cgroup(struct config *cfg, char *v, char *why, size_t wl)
{
	if (v[0] != '/' || strlen(v) >= sizeof(cfg->bpf_cgroup))
		return set_error(why, wl, "bpf_cgroup must be an absolute path "
				 "shorter than %zu bytes", sizeof(cfg->bpf_cgroup));
	snprintf(cfg->bpf_cgroup, sizeof(cfg->bpf_cgroup), "%s", v);
	return 0;
}

static int set_queue_maxlen(struct config *cfg, char *v, char *why, size_t wl)
{
	uint64_t n;

	if (parse_u64(v, 16, 1048576, &n))
		return set_error(why, wl,
				 "queue_maxlen must be a number from 16 to 1048576");
	cfg->queue_maxlen = (uint32_t)n;
	return 0;
}

static int set_mark(struct config *cfg, char *v, char *why, size_t wl)
{
	uint64_t n;

	/* The next one is rackd's too (config_unspliced_mark()). */
	if (parse_u64(v, 1, UINT32_MAX - 1, &n))
		return set_error(why, wl,
				 "mark must be a nonzero 32-bit number below "
				 "0xffffffff (e.g. 0x7261636b)");
	cfg->mark = (uint32_t)n;
	return 0;
}

static int set_max_connections(struct config *cfg, char *v, char *why,
			       size_t wl)
{
	uint64_t n;

	if (parse_u64(v, 1, 10000000, &n))
		return set_error(why, wl,
				 "max_connections must be a number from 1 to 10000000");
	cfg->max_connections = (uint32_t)n;
	return 0;
}

static int set_count(uint32_t *dst, const char *key, char *v, uint64_t min,
		     uint64_t max, char *why, size_t wl)
{
	uint64_t n;

	if (parse_u64(v, min, max, &n))
		return set_error(why, wl, "%s must be a number from %" PRIu64
				 " to %" PRIu64, key, min, max);
	*dst = (uint32_t)n;
	return 0;
}

static int set_max_half_open(struct config *cfg, char *v, char *why,
			     size_t wl)
{
	return set_count(&cfg->max_half_open, "max_half_open", v, 16,
			 10000000, why, wl);
}

static int set_per_prefix(struct config *cfg, char *v, char *why, size_t wl)
{
	return set_count(&cfg->max_half_open_per_prefix,
			 "max_half_open_per_prefix", v, 1, 10000000, why, wl);
}

static int set_reconnect_rate(struct config *cfg, char *v, char *why,
			      size_t wl)
{
	return set_count(&cfg->reconnect_rate, "reconnect_rate", v, 5,
			 1000000, why, wl);
}

static int set_duration(uint64_t *dst, const char *key, char *v, uint64_t min,
			char *why, size_t wl)
{
	uint64_t ms;
	int err = config_parse_duration(v, &ms);

	if (err == -ERANGE)
		return set_error(why, wl, "%s must be at most 365d", key);
	if (err)
		return set_error(why, wl,
				 "%s must be a duration such as 500ms, 30s, 5m, 2h or 3d",
				 key);
	if (ms < min)
		return set_error(why, wl, "%s must be at least %" PRIu64 "ms",
				 key, min);
	*dst = ms;
	return 0;
}

static int set_yes_no(bool *out, const char *key, const char *v, char *why,
		      size_t wl)
{
	if (strcmp(v, "yes") == 0)
		*out = true;
	else if (strcmp(v, "no") == 0)
		*out = false;
	else
		return set_error(why, wl, "%s must be yes or no", key);
	return 0;
}

static int set_answer_probes(struct config *cfg, char *v, char *why,
			     size_t wl)
{
	return set_yes_no(&cfg->answer_probes, "answer_probes", v, why, wl);
}

static int set_reopen(struct config *cfg, char *v, char *why, size_t wl)
{
	return set_yes_no(&cfg->reopen, "reopen", v, why, wl);
}


static int set_log_level(struct config *cfg, char *v, char *why, size_t wl)
{
	if (strcmp(v, "info") == 0)
		cfg->debug = false;
	else if (strcmp(v, "debug") == 0)
		cfg->debug = true;
	else
		return set_error(why, wl, "log_level must be info or debug");
	return 0;
}

/* Split a list on commas and blanks; calls fn for every item. */
static int for_each_item(char *list, int (*fn)(struct config *, const char *,
					       char *, size_t),
			 struct config *cfg, char *why, size_t wl)
{
	char *save = NULL;
	int n = 0;

	for (char *tok = strtok_r(list, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save), n++) {
		int err = fn(cfg, tok, why, wl);

		if (err)
			return err;
	}
	if (n == 0)
		return set_error(why, wl, "empty list");
	return 0;
}

static int add_port(struct config *cfg, const char *tok, char *why, size_t wl)
{
	char first[16], *dash;
	uint64_t lo, hi;

	if (strcmp(tok, "all") == 0) {
		cfg->all_ports = true;
		return 0;
	}
	if (strlen(tok) >= sizeof(first))
		return set_error(why, wl, "bad port '%s'", tok);
	strcpy(first, tok);
	dash = strchr(first, '-');
	if (dash)
		*dash = '\0';
	if (parse_u64(first, 1, 65535, &lo) ||
	    (dash && parse_u64(dash + 1, 1, 65535, &hi)))
		return set_error(why, wl,
				 "bad port '%s' (want 1-65535 or a range such as 5000-5999)",
				 tok);
	if (!dash)
		hi = lo;
	if (hi < lo)
		return set_error(why, wl, "port range '%s' is reversed", tok);
	if (cfg->nports >= CONFIG_MAX_LIST)
		return set_error(why, wl, "more than %d port entries",
				 CONFIG_MAX_LIST);
	struct port_range *p = realloc(cfg->ports,
				       (cfg->nports + 1) * sizeof(*p));
	if (!p)
		fatalx(EXIT_NOMEM, "out of memory");
	p[cfg->nports++] = (struct port_range){ (uint16_t)lo, (uint16_t)hi };
	cfg->ports = p;
	return 0;
}

static int set_ports(struct config *cfg, char *v, char *why, size_t wl)
{
	/* Each "ports" line replaces the previous one. */
	free(cfg->ports);
	cfg->ports = NULL;
	cfg->nports = 0;
	cfg->all_ports = false;
	int err = for_each_item(v, add_port, cfg, why, wl);

	if (err)
		return err;
	if (cfg->all_ports && cfg->nports)
		return set_error(why, wl, "'all' cannot be combined with ports");
	return 0;
}

/* A remote address or prefix of a list (exclude, trust_*). */
static int parse_remote(const char *tok, struct prefix *p, char *why,
			size_t wl)
{
	if (prefix_parse(tok, p))
		return set_error(why, wl,
				 "bad address or prefix '%s' (host bits must be zero)",
				 tok);
	if (p->addr.family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&p->addr.v6))
		return set_error(why, wl,
				 "'%s' is IPv4-mapped: write the IPv4 prefix", tok);
	return 0;
}

static int add_exclude(struct config *cfg, const char *tok, char *why,
		       size_t wl)
{
	struct prefix p;

	if (parse_remote(tok, &p, why, wl))
		return -EINVAL;
	if (cfg->nexclude >= CONFIG_MAX_LIST)
		return set_error(why, wl, "more than %d exclude entries",
				 CONFIG_MAX_LIST);
	struct prefix *x = realloc(cfg->exclude,
				   (cfg->nexclude + 1) * sizeof(*x));
	if (!x)
		fatalx(EXIT_NOMEM, "out of memory");
	x[cfg->nexclude++] = p;
	cfg->exclude = x;
	return 0;
}

static int set_exclude(struct config *cfg, char *v, char *why, size_t wl)
{
	/* "exclude" lines accumulate, so long lists can be split. */
	return for_each_item(v, add_exclude, cfg, why, wl);
}

/* The keys of the per-prefix lists, by policy. */
static const char *const trust_keys[TRUST_POLICIES] = {
	"trust_accept_new", "trust_pinned", "trust_anonymous",
};

const char *trust_policy_name(enum trust_policy policy)
{
	static const char *const names[TRUST_POLICIES] = {
		"accept-new", "pinned", "anonymous",
	};

	return policy < TRUST_POLICIES ? names[policy] : "?";
}

static int set_trust(struct config *cfg, char *v, char *why, size_t wl)
{
	for (int p = 0; p < TRUST_POLICIES; p++) {
		if (strcmp(v, trust_policy_name(p)) == 0) {
			cfg->trust = p;
			return 0;
		}
	}
	return set_error(why, wl, "trust must be accept-new, pinned or "
			 "anonymous");
}

static int add_trust(struct config *cfg, const char *tok,
		     enum trust_policy policy, char *why, size_t wl)
{
	struct prefix p;

	if (parse_remote(tok, &p, why, wl))
		return -EINVAL;
	for (size_t i = 0; i < cfg->ntrust; i++) {
		const struct prefix *q = &cfg->trust_prefixes[i].prefix;

		if (q->len == p.len && addr_equal(&q->addr, &p.addr))
			return set_error(why, wl, "%s is given a trust policy "
					 "already (%s)", tok, trust_policy_name(
					 cfg->trust_prefixes[i].policy));
	}
	if (cfg->ntrust >= CONFIG_MAX_LIST)
		return set_error(why, wl, "more than %d trust prefixes",
				 CONFIG_MAX_LIST);
	cfg->trust_prefixes = xreallocarray(cfg->trust_prefixes,
					    cfg->ntrust + 1,
					    sizeof(*cfg->trust_prefixes));
	cfg->trust_prefixes[cfg->ntrust++] = (struct trust_prefix){
		.prefix = p, .policy = policy,
	};
	return 0;
}

/* trust_accept_new, trust_pinned, trust_anonymous: lists that accumulate,
 * as exclude does. */
#define TRUST_LIST(key, policy)                                          \
	static int add_##key(struct config *cfg, const char *tok,        \
			     char *why, size_t wl)                       \
	{                                                                \
		return add_trust(cfg, tok, policy, why, wl);             \
	}                                                                \
	static int set_##key(struct config *cfg, char *v, char *why,     \
			     size_t wl)                                  \
	{                                                                \
		return for_each_item(v, add_##key, cfg, why, wl);        \
	}
TRUST_LIST(trust_accept_new, TRUST_ACCEPT_NEW)
TRUST_LIST(trust_pinned, TRUST_PINNED)
TRUST_LIST(trust_anonymous, TRUST_ANONYMOUS)

enum trust_policy config_trust_for(const struct config *cfg,
				   const struct addr *peer)
{
	const struct trust_prefix *best = NULL;

	for (size_t i = 0; i < cfg->ntrust; i++) {
		const struct trust_prefix *t = &cfg->trust_prefixes[i];

		if (prefix_contains(&t->prefix, peer) &&
		    (!best || t->prefix.len > best->prefix.len))
			best = t;
	}
	return best ? best->policy : cfg->trust;
}

static int set_hostpair_max_connections(struct config *cfg, char *v,
					char *why, size_t wl)
{
	return set_count(&cfg->hostpair_max_connections,
			 "hostpair_max_connections", v, 1, 100000000, why, wl);
}

#define DURATION_KEY(key, min) \
	{ .name = #key, .ms_off = offsetof(struct config, key##_ms), \
	  .min_ms = min }

static const struct config_key config_keys[] = {
	{ .name = "queue", .set = set_queue },
	{ .name = "queue_mode", .set = set_queue_mode },
	{ .name = "queue_maxlen", .set = set_queue_maxlen },
	{ .name = "mark", .set = set_mark },
	{ .name = "ports", .set = set_ports },
	{ .name = "exclude", .set = set_exclude },
	DURATION_KEY(syn_timeout, 1000),
	DURATION_KEY(setup_timeout, 500),
	{ .name = "answer_probes", .set = set_answer_probes },
	DURATION_KEY(suspend_after, 500),
	DURATION_KEY(retry_interval, 100),
	DURATION_KEY(retry_backoff_after, 1000),
	DURATION_KEY(retry_interval_max, 100),
	{ .name = "reopen", .set = set_reopen },
	DURATION_KEY(max_suspend, 1000),
	DURATION_KEY(sweep_interval, 100),
	{ .name = "max_connections", .set = set_max_connections },
	{ .name = "max_half_open", .set = set_max_half_open },
	{ .name = "reconnect_rate", .set = set_reconnect_rate },
	{ .name = "max_half_open_per_prefix", .set = set_per_prefix },
	{ .name = "log_level", .set = set_log_level },
	{ .name = "trust", .set = set_trust },
	{ .name = "trust_accept_new", .set = set_trust_accept_new },
	{ .name = "trust_pinned", .set = set_trust_pinned },
	{ .name = "trust_anonymous", .set = set_trust_anonymous },
	DURATION_KEY(hostpair_lifetime, 60000),
	{ .name = "hostpair_max_connections", .set = set_hostpair_max_connections },
	{ .name = "kernel_option", .set = set_kernel_option },
	{ .name = "bpf_cgroup", .set = set_bpf_cgroup },
};

const char *config_queue_mode_name(enum queue_mode mode)
{
	static const char *const names[] = { "auto", "native", "xt" };

	return names[mode];
}

const char *config_kernel_option_name(enum kernel_option k)
{
	static const char *const names[] = { "auto", "bpf", "queue" };

	return names[k];
}

struct config *config_defaults(void)
{
	struct config *cfg = xcalloc(1, sizeof(*cfg));

	cfg->queue_num = 4207;
	cfg->queue_mode = QUEUE_MODE_AUTO;
	cfg->queue_maxlen = 4096;
	cfg->mark = 0x7261636b;		/* "rack" */
	cfg->all_ports = true;
	cfg->syn_timeout_ms = 30000;
	cfg->setup_timeout_ms = 5000;
	cfg->answer_probes = true;
	cfg->suspend_after_ms = 5000;
	cfg->retry_interval_ms = 1000;
	cfg->retry_backoff_after_ms = 300000;
	cfg->retry_interval_max_ms = 30000;
	cfg->reopen = true;
	cfg->max_suspend_ms = 3ULL * 86400000;
	cfg->sweep_interval_ms = 10000;
	cfg->max_connections = 1000000;
	cfg->max_half_open = 16384;
	cfg->max_half_open_per_prefix = 4096;
	cfg->reconnect_rate = 4000;
	cfg->trust = TRUST_ACCEPT_NEW;
	cfg->hostpair_lifetime_ms = 86400000;
	cfg->hostpair_max_connections = 100000;
	/* The BPF path is opt-in until issue 23 is done. */
	cfg->kernel_option = KERNEL_OPTION_QUEUE;
	return cfg;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	free(cfg->ports);
	free(cfg->exclude);
	free(cfg->trust_prefixes);
	free(cfg);
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int config_line(struct config *cfg, char *line, char *why, size_t wl)
{
	char *hash = strchr(line, '#');
	char *eq, *key, *value;

	if (hash)
		*hash = '\0';
	line = trim(line);
	if (*line == '\0')
		return 0;
	eq = strchr(line, '=');
	if (!eq)
		return set_error(why, wl, "expected 'key = value', got '%s'",
				 line);
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]);
	     i++) {
		if (strcmp(key, config_keys[i].name) != 0)
			continue;
		if (*value == '\0')
			return set_error(why, wl, "%s has no value", key);
		if (config_keys[i].set)
			return config_keys[i].set(cfg, value, why, wl);
		return set_duration((uint64_t *)((char *)cfg +
						 config_keys[i].ms_off),
				    key, value, config_keys[i].min_ms, why, wl);
	}
	return set_error(why, wl, "unknown key '%s'", key);
}

int config_load(const char *path, struct config **out, bool *missing,
		char *err, size_t errlen)
{
	struct config *cfg = config_defaults();
	char line[CONFIG_MAX_LINE + 2], why[256];
	unsigned lineno = 0;
	FILE *f;
	int ret = 0;

	*out = NULL;
	*missing = false;
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT) {
			*missing = true;
			*out = cfg;
			return 0;
		}
		int eno = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(eno));
		config_free(cfg);
		return -eno;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		size_t len = strlen(line);

		if (len > CONFIG_MAX_LINE && line[len - 1] != '\n') {
			snprintf(err, errlen, "%s:%u: line longer than %d bytes",
				 path, lineno, CONFIG_MAX_LINE);
			ret = -EINVAL;
			break;
		}
		if (config_line(cfg, line, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			ret = -EINVAL;
			break;
		}
	}
	if (!ret && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		ret = -EIO;
	}
	/* Backing off never makes tries more frequent. */
	if (!ret && cfg->retry_interval_max_ms < cfg->retry_interval_ms) {
		snprintf(err, errlen, "%s: retry_interval_max (%" PRIu64
			 "ms) is shorter than retry_interval (%" PRIu64 "ms)",
			 path, cfg->retry_interval_max_ms,
			 cfg->retry_interval_ms);
		ret = -EINVAL;
	}
	fclose(f);
	if (ret) {
		config_free(cfg);
		return ret;
	}
	*out = cfg;
	return 0;
}

static void dump_duration(FILE *f, const char *key, uint64_t ms)
{
	/* The largest unit that states the value exactly. */
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = { { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 },
		      { "s", 1000 } };

	for (size_t i = 0; ms && i < sizeof(units) / sizeof(units[0]); i++) {
		if (ms % units[i].ms == 0) {
			fprintf(f, "%s = %" PRIu64 "%s\n", key, ms / units[i].ms,
				units[i].unit);
			return;
		}
	}
	fprintf(f, "%s = %" PRIu64 "ms\n", key, ms);
}

void config_dump(const struct config *cfg, FILE *f)
{
	fprintf(f, "queue = %u\n", cfg->queue_num);
	fprintf(f, "queue_mode = %s\n", config_queue_mode_name(cfg->queue_mode));
	fprintf(f, "queue_maxlen = %u\n", cfg->queue_maxlen);
	fprintf(f, "mark = 0x%08x\n", cfg->mark);
	fprintf(f, "ports = ");
	if (cfg->all_ports)
		fprintf(f, "all");
	for (size_t i = 0; i < cfg->nports; i++) {
		const struct port_range *p = &cfg->ports[i];

		fprintf(f, i ? ", %u" : "%u", p->first);
		if (p->last != p->first)
			fprintf(f, "-%u", p->last);
	}
	fprintf(f, "\n");
	for (size_t i = 0; i < cfg->nexclude; i++) {
		char buf[PREFIX_STRLEN];

		fprintf(f, "exclude = %s\n",
			prefix_format(&cfg->exclude[i], buf, sizeof(buf)));
	}
	dump_duration(f, "syn_timeout", cfg->syn_timeout_ms);
	dump_duration(f, "setup_timeout", cfg->setup_timeout_ms);
	fprintf(f, "answer_probes = %s\n", cfg->answer_probes ? "yes" : "no");
	dump_duration(f, "suspend_after", cfg->suspend_after_ms);
	dump_duration(f, "retry_interval", cfg->retry_interval_ms);
	dump_duration(f, "retry_backoff_after", cfg->retry_backoff_after_ms);
	dump_duration(f, "retry_interval_max", cfg->retry_interval_max_ms);
	fprintf(f, "reopen = %s\n", cfg->reopen ? "yes" : "no");
	dump_duration(f, "max_suspend", cfg->max_suspend_ms);
	dump_duration(f, "sweep_interval", cfg->sweep_interval_ms);
	fprintf(f, "max_connections = %u\n", cfg->max_connections);
	fprintf(f, "max_half_open = %u\n", cfg->max_half_open);
	fprintf(f, "max_half_open_per_prefix = %u\n",
		cfg->max_half_open_per_prefix);
	fprintf(f, "reconnect_rate = %u\n", cfg->reconnect_rate);
	fprintf(f, "log_level = %s\n", cfg->debug ? "debug" : "info");
	fprintf(f, "trust = %s\n", trust_policy_name(cfg->trust));
	for (size_t i = 0; i < cfg->ntrust; i++) {
		const struct trust_prefix *t = &cfg->trust_prefixes[i];
		char buf[PREFIX_STRLEN];

		fprintf(f, "%s = %s\n", trust_keys[t->policy],
			prefix_format(&t->prefix, buf, sizeof(buf)));
	}
	dump_duration(f, "hostpair_lifetime", cfg->hostpair_lifetime_ms);
	fprintf(f, "hostpair_max_connections = %u\n",
		cfg->hostpair_max_connections);
	fprintf(f, "kernel_option = %s\n",
		config_kernel_option_name(cfg->kernel_option));
	if (cfg->bpf_cgroup[0])
		fprintf(f, "bpf_cgroup = %s\n", cfg->bpf_cgroup);
}
