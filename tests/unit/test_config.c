// SPDX-License-Identifier: GPL-2.0-only
/*
 * config_load() on temporary files: defaults, every key, durations, each
 * error with its "PATH:LINE: " prefix, list semantics and the
 * config_dump() round trip.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "unit.h"

static char tmp_path[64];

static void tmp_create(void)
{
	int fd;

	snprintf(tmp_path, sizeof(tmp_path), "/tmp/racks-unit-XXXXXX");
	fd = mkstemp(tmp_path);
	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	close(fd);
}

/* Load TEXT from a fresh temporary file (its name stays in tmp_path). */
static int load(const char *text, struct config **cfg, char *err,
		size_t errlen)
{
	bool missing = true;
	FILE *f;
	int ret;

	tmp_create();
	f = fopen(tmp_path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(tmp_path);
		exit(2);
	}
	err[0] = '\0';
	ret = config_load(tmp_path, cfg, &missing, err, errlen);
	CHECK(!missing);
	unlink(tmp_path);
	return ret;
}

/* Load TEXT, which must be valid; NULL (and a failed check) otherwise. */
static struct config *load_ok(const char *text)
{
	struct config *cfg;
	char err[512];

	if (!CHECK_EQ_INT(load(text, &cfg, err, sizeof(err)), 0)) {
		fprintf(stderr, "  error: %s\n", err);
		return NULL;
	}
	CHECK(cfg != NULL);
	return cfg;
}

/* TEXT must fail on LINE with a message containing NEEDLE. */
static void check_error_line(const char *text, unsigned line,
			     const char *needle)
{
	struct config *cfg = (struct config *)1;
	char err[512], want[128];

	CHECK_EQ_INT(load(text, &cfg, err, sizeof(err)), -EINVAL);
	if (!CHECK(cfg == NULL) && cfg != (struct config *)1)
		config_free(cfg);
	snprintf(want, sizeof(want), "%s:%u: ", tmp_path, line);
	if (!CHECK(strncmp(err, want, strlen(want)) == 0) ||
	    !CHECK(strstr(err + strlen(want), needle) != NULL))
		fprintf(stderr, "  input \"%s\"\n  error \"%s\"\n  wanted \"%s%s\"\n",
			text, err, want, needle);
}

static void check_error(const char *text, const char *needle)
{
	check_error_line(text, 1, needle);
}

static void check_prefix(const struct prefix *p, const char *text)
{
	char buf[PREFIX_STRLEN];

	CHECK_EQ_STR(prefix_format(p, buf, sizeof(buf)), text);
}

static void check_config_equal(const struct config *a, const struct config *b)
{
	CHECK_EQ_INT(a->queue_num, b->queue_num);
	CHECK_EQ_INT(a->queue_mode, b->queue_mode);
	CHECK_EQ_INT(a->queue_maxlen, b->queue_maxlen);
	CHECK_EQ_INT(a->mark, b->mark);
	CHECK_EQ_INT(a->all_ports, b->all_ports);
	CHECK_EQ_INT(a->syn_timeout_ms, b->syn_timeout_ms);
	CHECK_EQ_INT(a->sweep_interval_ms, b->sweep_interval_ms);
	CHECK_EQ_INT(a->retry_interval_ms, b->retry_interval_ms);
	CHECK_EQ_INT(a->max_connections, b->max_connections);
	CHECK_EQ_INT(a->max_half_open, b->max_half_open);
	CHECK_EQ_INT(a->max_half_open_per_prefix, b->max_half_open_per_prefix);
	CHECK_EQ_INT(a->reconnect_rate, b->reconnect_rate);
	CHECK_EQ_INT(a->debug, b->debug);
	if (CHECK_EQ_INT(a->nports, b->nports))
		for (size_t i = 0; i < a->nports; i++) {
			CHECK_EQ_INT(a->ports[i].first, b->ports[i].first);
			CHECK_EQ_INT(a->ports[i].last, b->ports[i].last);
		}
	if (CHECK_EQ_INT(a->nexclude, b->nexclude))
		for (size_t i = 0; i < a->nexclude; i++) {
			const struct prefix *p = &a->exclude[i];
			const struct prefix *q = &b->exclude[i];

			CHECK_EQ_INT(p->len, q->len);
			CHECK(addr_equal(&p->addr, &q->addr));
		}
	CHECK_EQ_INT(a->trust, b->trust);
	CHECK_EQ_INT(a->hostpair_lifetime_ms, b->hostpair_lifetime_ms);
	CHECK_EQ_INT(a->hostpair_max_connections, b->hostpair_max_connections);
	if (CHECK_EQ_INT(a->ntrust, b->ntrust))
		for (size_t i = 0; i < a->ntrust; i++) {
			const struct trust_prefix *p = &a->trust_prefixes[i];
			const struct trust_prefix *q = &b->trust_prefixes[i];

			CHECK_EQ_INT(p->policy, q->policy);
			CHECK_EQ_INT(p->prefix.len, q->prefix.len);
			CHECK(addr_equal(&p->prefix.addr, &q->prefix.addr));
		}
}

/* ---- tests --------------------------------------------------------- */

TEST(missing_file_defaults)
{
	struct config *cfg = NULL, *def = config_defaults();
	bool missing = false;
	char err[256] = "";

	CHECK_EQ_INT(config_load("/nonexistent/racks/racks.conf", &cfg,
				 &missing, err, sizeof(err)), 0);
	CHECK(missing);
	if (CHECK(cfg != NULL))
		check_config_equal(cfg, def);
	CHECK_EQ_INT(def->queue_num, 4207);
	CHECK_EQ_INT(def->queue_mode, QUEUE_MODE_AUTO);
	CHECK_EQ_INT(def->queue_maxlen, 4096);
	CHECK_EQ_INT(def->mark, 0x7261636b);
	CHECK(def->all_ports);
	CHECK_EQ_INT(def->nports, 0);
	CHECK_EQ_INT(def->nexclude, 0);
	CHECK_EQ_INT(def->syn_timeout_ms, 30000);
	CHECK_EQ_INT(def->sweep_interval_ms, 10000);
	CHECK_EQ_INT(def->retry_interval_ms, 1000);
	CHECK_EQ_INT(def->max_connections, 1000000);
	CHECK_EQ_INT(def->max_half_open, 16384);
	CHECK_EQ_INT(def->max_half_open_per_prefix, 4096);
	CHECK_EQ_INT(def->reconnect_rate, 4000);
	CHECK_EQ_INT(def->trust, TRUST_ACCEPT_NEW);
	CHECK_EQ_INT(def->ntrust, 0);
	CHECK_EQ_INT(def->hostpair_lifetime_ms, 86400000);
	CHECK_EQ_INT(def->hostpair_max_connections, 100000);
	CHECK(!def->debug);
	config_free(cfg);

	/* An empty file is not "missing" but gives the same values. */
	cfg = load_ok("");
	if (cfg)
		check_config_equal(cfg, def);
	config_free(cfg);
	config_free(def);
	config_free(NULL);
}

TEST(unreadable_path)
{
	struct config *cfg = (struct config *)1;
	bool missing = true;
	char err[256] = "";

	/* A directory opens but cannot be read. */
	CHECK(config_load("/", &cfg, &missing, err, sizeof(err)) < 0);
	CHECK(cfg == NULL);
	CHECK(!missing);
	CHECK(strncmp(err, "/: ", 3) == 0);
}

TEST(every_key)
{
	struct config *cfg = load_ok(
		"queue = 17\n"
		"queue_mode = xt\n"
		"queue_maxlen = 16\n"
		"mark = 0x1\n"
		"ports = 22, 80,443\t5000-5999\n"
		"exclude = 10.0.0.0/8, fd00::/8\n"
		"exclude = 192.0.2.1\n"
		"syn_timeout = 45s\n"
		"sweep_interval = 250ms\n"
		"retry_interval = 300ms\n"
		"retry_backoff_after = 1h\n"
		"retry_interval_max = 2m\n"
		"reopen = no\n"
		"max_connections = 10000000\n"
		"max_half_open = 100\n"
		"max_half_open_per_prefix = 10\n"
		"reconnect_rate = 50\n"
		"log_level = debug\n");

	if (!cfg)
		return;
	CHECK_EQ_INT(cfg->queue_num, 17);
	CHECK_EQ_INT(cfg->queue_mode, QUEUE_MODE_XT);
	CHECK_EQ_INT(cfg->queue_maxlen, 16);
	CHECK_EQ_INT(cfg->mark, 1);
	CHECK(!cfg->all_ports);
	if (CHECK_EQ_INT(cfg->nports, 4)) {
		CHECK_EQ_INT(cfg->ports[0].first, 22);
		CHECK_EQ_INT(cfg->ports[0].last, 22);
		CHECK_EQ_INT(cfg->ports[1].first, 80);
		CHECK_EQ_INT(cfg->ports[2].first, 443);
		CHECK_EQ_INT(cfg->ports[2].last, 443);
		CHECK_EQ_INT(cfg->ports[3].first, 5000);
		CHECK_EQ_INT(cfg->ports[3].last, 5999);
	}
	if (CHECK_EQ_INT(cfg->nexclude, 3)) {
		check_prefix(&cfg->exclude[0], "10.0.0.0/8");
		check_prefix(&cfg->exclude[1], "fd00::/8");
		check_prefix(&cfg->exclude[2], "192.0.2.1/32");
		CHECK_EQ_INT(cfg->exclude[1].addr.family, AF_INET6);
	}
	CHECK_EQ_INT(cfg->syn_timeout_ms, 45000);
	CHECK_EQ_INT(cfg->sweep_interval_ms, 250);
	CHECK_EQ_INT(cfg->retry_interval_ms, 300);
	CHECK_EQ_INT(cfg->retry_backoff_after_ms, 3600000);
	CHECK_EQ_INT(cfg->retry_interval_max_ms, 120000);
	CHECK(!cfg->reopen);
	CHECK_EQ_INT(cfg->max_connections, 10000000);
	CHECK_EQ_INT(cfg->max_half_open, 100);
	CHECK_EQ_INT(cfg->max_half_open_per_prefix, 10);
	CHECK_EQ_INT(cfg->reconnect_rate, 50);
	CHECK(cfg->debug);
	config_free(cfg);
}

TEST(limits_and_alternatives)
{
	struct config *cfg = load_ok(
		"queue = 0\nqueue_mode = native\nqueue_maxlen = 1048576\n"
		"mark = 0xfffffffe\nports = 1, 65535, 1-65535\n"
		"max_connections = 1\nlog_level = info\n"
		"syn_timeout = 1000ms\nsweep_interval = 100ms\n");

	if (cfg) {
		CHECK_EQ_INT(cfg->queue_num, 0);
		CHECK_EQ_INT(cfg->queue_mode, QUEUE_MODE_NATIVE);
		CHECK_EQ_INT(cfg->queue_maxlen, 1048576);
		CHECK_EQ_INT(cfg->mark, 0xfffffffe);
		CHECK_EQ_INT(config_unspliced_mark(cfg), 0xffffffff);
		CHECK_EQ_INT(cfg->nports, 3);
		CHECK_EQ_INT(cfg->max_connections, 1);
		CHECK(!cfg->debug);
		CHECK_EQ_INT(cfg->syn_timeout_ms, 1000);
		CHECK_EQ_INT(cfg->sweep_interval_ms, 100);
	}
	config_free(cfg);

	cfg = load_ok("queue = 65534\nqueue_mode = auto\nmark = 1234\n"
		      "ports = all\nkernel_option = bpf\n"
		      "bpf_cgroup = /sys/fs/cgroup/unified/racks\n");
	if (cfg) {
		CHECK_EQ_INT(cfg->queue_num, 65534);
		CHECK_EQ_INT(config_strict_queue(cfg), 65535);
		CHECK_EQ_INT(cfg->queue_mode, QUEUE_MODE_AUTO);
		CHECK_EQ_INT(cfg->kernel_option, KERNEL_OPTION_BPF);
		CHECK_EQ_STR(cfg->bpf_cgroup, "/sys/fs/cgroup/unified/racks");
		CHECK_EQ_INT(cfg->mark, 1234);
		CHECK(cfg->all_ports);
		CHECK_EQ_INT(cfg->nports, 0);
	}
	config_free(cfg);

	/* Numbers are decimal or 0x hexadecimal, never octal (racks.conf(5)). */
	cfg = load_ok("queue = 010\nqueue_maxlen = 0x100\nports = 0X50, 08\n");
	if (cfg) {
		CHECK_EQ_INT(cfg->queue_num, 10);
		CHECK_EQ_INT(cfg->queue_maxlen, 256);
		CHECK_EQ_INT(cfg->ports[0].first, 80);
		CHECK_EQ_INT(cfg->ports[1].first, 8);
	}
	config_free(cfg);
	CHECK_EQ_STR(config_queue_mode_name(QUEUE_MODE_AUTO), "auto");
	CHECK_EQ_STR(config_queue_mode_name(QUEUE_MODE_NATIVE), "native");
	CHECK_EQ_STR(config_queue_mode_name(QUEUE_MODE_XT), "xt");
}

TEST(durations)
{
	static const struct {
		const char *text;
		uint64_t ms;
	} good[] = {
		{ "500ms", 500 }, { "5s", 5000 }, { "2m", 120000 },
		{ "1h", 3600000 }, { "3d", 259200000 }, { "7", 7000 },
		{ "1.5s", 1500 }, { "0", 0 }, { "0.25", 250 },
		{ "1.0004s", 1000 }, { "2.5m", 150000 }, { "365d", 31536000000 },
	};
	static const char *const bad[] = {
		"", "s", "ms", "5x", "5 s", "-1s", " 5s", "5S", "5sec",
		"1e999s", "366d", ".5s", "nan", "inf", "1e3", "1e3s", "0x10",
		"0x10s", "1..5s", "5sm",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t ms = 12345;

		if (!CHECK_EQ_INT(config_parse_duration(good[i].text, &ms), 0))
			fprintf(stderr, "  \"%s\"\n", good[i].text);
		CHECK_EQ_INT(ms, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t ms = 12345;

		if (!CHECK(config_parse_duration(bad[i], &ms) < 0))
			fprintf(stderr, "  \"%s\" accepted\n", bad[i]);
		CHECK_EQ_INT(ms, 12345);
	}
	CHECK_EQ_INT(config_parse_duration("366d", &(uint64_t){ 0 }), -ERANGE);

	/* Through the file, including each key's minimum. */
	struct config *cfg = load_ok("syn_timeout = 2m\nsweep_interval = 7\n");

	if (cfg) {
		CHECK_EQ_INT(cfg->syn_timeout_ms, 120000);
		CHECK_EQ_INT(cfg->sweep_interval_ms, 7000);
	}
	config_free(cfg);
	check_error("syn_timeout = 999ms\n", "at least 1000ms");
	check_error("sweep_interval = 99ms\n", "at least 100ms");
	check_error("retry_interval = 50ms\n", "at least 100ms");
	check_error("syn_timeout = soon\n", "syn_timeout must be a duration");
	check_error("sweep_interval = 400d\n", "sweep_interval must be at most 365d");
	check_error("syn_timeout = 1e3\n", "syn_timeout must be a duration");
}

TEST(errors_with_line_numbers)
{
	check_error_line("queue = 1\nbogus = 2\n", 2, "unknown key 'bogus'");
	check_error_line("\n\n# x = y\nqueue 5\n", 4, "expected 'key = value'");
	check_error_line("# empty\nqueue =   \n", 2, "queue has no value");
	check_error_line("ports = 80\nports = 6000-5000\n", 2,
			 "port range '6000-5000' is reversed");
	check_error_line("queue=1\nqueue=2\nqueue=3\nports = all, 80\n", 4,
			 "'all' cannot be combined");
	check_error_line("\n\n\n\n\nexclude = 10.0.0.0/8\nexclude = 10.0.0/8x\n",
			 7, "bad address or prefix '10.0.0/8x'");
	check_error_line("log_level = info\nlog_level = warn\n", 2,
			 "log_level must be info or debug");
	/* Lines after the first error are never read. */
	check_error_line("queue_mode = nft\nbogus\n", 1,
			 "queue_mode must be auto, native or xt");
	check_error_line("= 5\n", 1, "unknown key ''");
}

TEST(bad_values)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{ "queue = 12a", "queue must be a number from 0 to 65534" },
		{ "queue = -1", "queue must be" },
		{ "queue = 0x", "queue must be" },
		{ "queue = 0xg", "queue must be" },
		{ "queue = 0x-1", "queue must be" },
		{ "queue = 1.0", "queue must be" },
		{ "queue = 65536", "queue must be" },
		{ "queue = 65535", "queue must be" },
		{ "queue = 99999999999999999999999", "queue must be" },
		{ "queue_maxlen = 15", "queue_maxlen must be" },
		{ "queue_maxlen = 1048577", "queue_maxlen must be" },
		{ "mark = 0", "mark must be a nonzero" },
		{ "mark = 0x100000000", "mark must be a nonzero" },
		{ "mark = 0xffffffff", "mark must be a nonzero" },
		{ "max_connections = 0", "max_connections must be" },
		{ "max_connections = 10000001", "max_connections must be" },
		{ "max_half_open = 15", "max_half_open must be a number from 16" },
		{ "max_half_open = 10000001", "max_half_open must be" },
		{ "reconnect_rate = 4", "reconnect_rate must be a number from 5" },
		{ "reconnect_rate = 1000001", "reconnect_rate must be" },
		{ "max_half_open_per_prefix = 0",
		  "max_half_open_per_prefix must be a number from 1" },
		{ "ports = 0", "bad port '0'" },
		{ "ports = 65536", "bad port '65536'" },
		{ "ports = 5000-", "bad port '5000-'" },
		{ "ports = -5000", "bad port '-5000'" },
		{ "ports = http", "bad port 'http'" },
		{ "ports = 1-2-3", "bad port '1-2-3'" },
		{ "ports = 12345678901234567", "bad port" },
		{ "ports = 80 all", "'all' cannot be combined" },
		{ "ports = , ,", "empty list" },
		{ "exclude = 300.0.0.0/8", "bad address or prefix" },
		{ "exclude = fd00::/129", "bad address or prefix" },
		{ "exclude = 10.0.0.0/", "bad address or prefix" },
		{ "exclude = 10.1.2.3/8", "host bits must be zero" },
		{ "exclude = fd00::1/64", "host bits must be zero" },
		{ "exclude = 10.0.0.0/8, 10.1.0.0/8", "'10.1.0.0/8'" },
		{ "exclude = ::ffff:10.0.0.0/104", "IPv4-mapped" },
		{ "exclude = ::ffff:192.0.2.1", "IPv4-mapped" },
		{ "queue_mode = AUTO", "queue_mode must be" },
		{ "kernel_option = ebpf", "kernel_option must be auto, bpf or queue" },
		{ "bpf_cgroup = sys/fs/cgroup", "bpf_cgroup must be an absolute path" },
		{ "log_level = DEBUG", "log_level must be" },
		{ "reopen = true", "reopen must be yes or no" },
		{ "retry_backoff_after = 999ms",
		  "retry_backoff_after must be at least 1000ms" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_error(cases[i].text, cases[i].needle);
}

/* A check across keys names both, with the file but no line. */
TEST(backoff_never_shortens_the_wait)
{
	struct config *cfg = (struct config *)1;
	char err[512];

	CHECK_EQ_INT(load("retry_interval = 5s\nretry_interval_max = 2s\n",
			  &cfg, err, sizeof(err)), -EINVAL);
	CHECK(cfg == NULL);
	CHECK(strstr(err, "retry_interval_max (2000ms) is shorter than "
			  "retry_interval (5000ms)") != NULL);
	cfg = load_ok("retry_interval = 5s\nretry_interval_max = 5s\n");
	if (cfg)
		config_free(cfg);
}

TEST(long_line)
{
	char text[17000];

	memset(text, ' ', sizeof(text));
	memcpy(text + 4000, "queue = 1\n", 10);
	text[4010] = '\0';
	struct config *cfg = load_ok(text);	/* 4009 bytes + newline */

	if (cfg)
		CHECK_EQ_INT(cfg->queue_num, 1);
	config_free(cfg);

	memset(text, ' ', sizeof(text));
	memcpy(text, "queue = 1\n", 10);
	memcpy(text + 16900, "queue = 2\n", 10);
	text[16910] = '\0';
	check_error_line(text, 2, "line longer than 16384 bytes");
}

TEST(comments_and_blank_lines)
{
	struct config *cfg = load_ok(
		"# racks.conf\n"
		"\n"
		"   \t  \n"
		"queue = 9   # trailing comment\n"
		"  ports=1-2#no space\n"
		"#exclude = 10.0.0.0/8\n"
		"mark = 77\r\n"
		"\tlog_level\t=\tdebug\t\n"
		"max_connections = 5");		/* no final newline */

	if (!cfg)
		return;
	CHECK_EQ_INT(cfg->queue_num, 9);
	CHECK_EQ_INT(cfg->nports, 1);
	CHECK_EQ_INT(cfg->ports[0].first, 1);
	CHECK_EQ_INT(cfg->ports[0].last, 2);
	CHECK_EQ_INT(cfg->nexclude, 0);
	CHECK_EQ_INT(cfg->mark, 77);
	CHECK(cfg->debug);
	CHECK_EQ_INT(cfg->max_connections, 5);
	config_free(cfg);
}

TEST(exclude_accumulates_ports_replace)
{
	struct config *cfg = load_ok(
		"ports = 1\nexclude = 10.0.0.0/8\nports = 2, 3\n"
		"exclude = 11.0.0.0/8 fd00::/16\n");

	if (cfg) {
		CHECK(!cfg->all_ports);
		if (CHECK_EQ_INT(cfg->nports, 2)) {
			CHECK_EQ_INT(cfg->ports[0].first, 2);
			CHECK_EQ_INT(cfg->ports[1].first, 3);
		}
		if (CHECK_EQ_INT(cfg->nexclude, 3)) {
			check_prefix(&cfg->exclude[0], "10.0.0.0/8");
			check_prefix(&cfg->exclude[1], "11.0.0.0/8");
			check_prefix(&cfg->exclude[2], "fd00::/16");
		}
	}
	config_free(cfg);

	cfg = load_ok("ports = 80\nports = all\n");
	if (cfg) {
		CHECK(cfg->all_ports);
		CHECK_EQ_INT(cfg->nports, 0);
	}
	config_free(cfg);

	cfg = load_ok("ports = all\nports = 443\n");
	if (cfg) {
		CHECK(!cfg->all_ports);
		CHECK_EQ_INT(cfg->nports, 1);
	}
	config_free(cfg);
}

/* config_dump's output loads back into an equal configuration. */
static void check_round_trip(const struct config *cfg)
{
	struct config *back = NULL;
	bool missing;
	char err[512] = "";
	FILE *f;

	tmp_create();
	f = fopen(tmp_path, "w");
	if (!CHECK(f != NULL))
		return;
	config_dump(cfg, f);
	fclose(f);
	if (CHECK_EQ_INT(config_load(tmp_path, &back, &missing, err,
				     sizeof(err)), 0))
		check_config_equal(cfg, back);
	else
		fprintf(stderr, "  reload failed: %s\n", err);
	unlink(tmp_path);
	config_free(back);
}

/* The longest lists allowed, written densely, still dump to lines that
 * load again (the dump adds a blank after every comma). */
TEST(dump_round_trip_longest_lists)
{
	static char text[20000];
	size_t off = (size_t)snprintf(text, sizeof(text), "ports = ");

	for (unsigned i = 0; i < 1024; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%u-%u",
					i ? "," : "", 60000 + i, 65535);
	snprintf(text + off, sizeof(text) - off, "\n");
	struct config *cfg = load_ok(text);

	if (CHECK(cfg != NULL)) {
		CHECK_EQ_INT(cfg->nports, 1024);
		check_round_trip(cfg);
	}
	config_free(cfg);
}

TEST(dump_round_trip)
{
	static const char *const texts[] = {
		"",
		"queue = 17\nqueue_mode = xt\nqueue_maxlen = 16\n"
		"mark = 0xdeadbeef\nports = 22, 80, 5000-5999\n"
		"exclude = 10.0.0.0/8\nexclude = fd00::/8, 192.0.2.1\n"
		"exclude = 2001:db8:1:2:3:4:5:6\n"
		"syn_timeout = 1.5s\nsweep_interval = 100ms\n"
		"max_connections = 3\nlog_level = debug\n",
		"ports = 1-65535\nsyn_timeout = 365d\nsweep_interval = 2.001m\n",
		"queue_mode = native\nports = all\nexclude = 0.0.0.0/0, ::/0\n",
		"trust = pinned\ntrust_anonymous = 10.1.0.0/16, fd00::/8\n"
		"trust_accept_new = 10.1.2.0/24\ntrust_pinned = 0.0.0.0/0\n"
		"hostpair_lifetime = 90m\nhostpair_max_connections = 7\n",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct config *cfg = load_ok(texts[i]);

		if (cfg)
			check_round_trip(cfg);
		config_free(cfg);
	}

	/* The dump itself, for a small configuration. */
	struct config *cfg = load_ok("ports = 80, 8000-8080\nexclude = fd00::/8\n"
				     "syn_timeout = 1500ms\n");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (cfg && f) {
		config_dump(cfg, f);
		fclose(f);
		CHECK_EQ_STR(text,
			     "queue = 4207\nqueue_mode = auto\nqueue_maxlen = 4096\n"
			     "mark = 0x7261636b\nports = 80, 8000-8080\n"
			     "exclude = fd00::/8\nsyn_timeout = 1500ms\n"
			     "setup_timeout = 5s\nanswer_probes = yes\n"
			     "suspend_after = 5s\nretry_interval = 1s\n"
		  "retry_backoff_after = 5m\nretry_interval_max = 30s\n"
		  "reopen = yes\nmax_suspend = 3d\n"
			     "sweep_interval = 10s\nmax_connections = 1000000\n"
			     "max_half_open = 16384\nmax_half_open_per_prefix = 4096\n"
			     "reconnect_rate = 4000\n"
			     "log_level = info\ntrust = accept-new\n"
			     "hostpair_lifetime = 1d\n"
			     "hostpair_max_connections = 100000\n"
			     "kernel_option = queue\n");
	}
	free(text);
	config_free(cfg);
}

/* The peer's policy: the longest trust_* prefix that holds it, else
 * trust; each list accumulates over lines, as exclude does. */
TEST(trust_longest_prefix_wins)
{
	struct config *cfg = load_ok(
		"trust = pinned\n"
		"trust_anonymous = 10.0.0.0/8\n"
		"trust_accept_new = 10.1.0.0/16, fd00::/8\n"
		"trust_pinned = 10.1.2.0/24\n"
		"trust_anonymous = 10.1.2.3, fd00:1::/32\n"
		"trust_accept_new = 0.0.0.0/0\n");
	static const struct {
		const char *peer;
		enum trust_policy want;
	} cases[] = {
		{ "10.9.9.9", TRUST_ANONYMOUS },	/* /8 */
		{ "10.1.9.9", TRUST_ACCEPT_NEW },	/* /16 */
		{ "10.1.2.9", TRUST_PINNED },		/* /24 */
		{ "10.1.2.3", TRUST_ANONYMOUS },	/* /32 */
		{ "192.0.2.1", TRUST_ACCEPT_NEW },	/* /0 */
		{ "fd00::1", TRUST_ACCEPT_NEW },	/* /8 */
		{ "fd00:1::1", TRUST_ANONYMOUS },	/* /32 */
		{ "2001:db8::1", TRUST_PINNED },	/* trust */
	};

	if (!cfg)
		return;
	CHECK_EQ_INT(cfg->trust, TRUST_PINNED);
	CHECK_EQ_INT(cfg->ntrust, 7);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct addr a = unit_addr(cases[i].peer);

		if (!CHECK_EQ_STR(trust_policy_name(config_trust_for(cfg, &a)),
				  trust_policy_name(cases[i].want)))
			fprintf(stderr, "  peer %s\n", cases[i].peer);
	}
	config_free(cfg);
}

TEST(trust_defaults_and_names)
{
	struct config *cfg = load_ok("trust = anonymous\n");
	struct addr a = unit_addr("192.0.2.1");

	CHECK_EQ_STR(trust_policy_name(TRUST_ACCEPT_NEW), "accept-new");
	CHECK_EQ_STR(trust_policy_name(TRUST_PINNED), "pinned");
	CHECK_EQ_STR(trust_policy_name(TRUST_ANONYMOUS), "anonymous");
	if (cfg)
		CHECK_EQ_INT(config_trust_for(cfg, &a), TRUST_ANONYMOUS);
	config_free(cfg);
	cfg = config_defaults();
	CHECK_EQ_INT(config_trust_for(cfg, &a), TRUST_ACCEPT_NEW);
	config_free(cfg);
	cfg = load_ok("hostpair_lifetime = 2h\nhostpair_max_connections = 1\n");
	if (cfg) {
		CHECK_EQ_INT(cfg->hostpair_lifetime_ms, 7200000);
		CHECK_EQ_INT(cfg->hostpair_max_connections, 1);
	}
	config_free(cfg);
}

TEST(trust_errors)
{
	check_error("trust = tofu\n",
		    "trust must be accept-new, pinned or anonymous");
	check_error("trust = \n", "trust has no value");
	check_error("trust_pinned = 10.0.0.1/8\n", "host bits must be zero");
	check_error("trust_anonymous = nowhere\n", "bad address or prefix");
	check_error("trust_accept_new = ::ffff:10.0.0.0/104\n", "IPv4-mapped");
	check_error_line("trust_pinned = 10.0.0.0/8\n"
			 "trust_anonymous = 10.0.0.0/8\n", 2,
			 "10.0.0.0/8 is given a trust policy already (pinned)");
	check_error("trust_pinned = ,\n", "empty list");
	check_error("hostpair_lifetime = 30s\n",
		    "hostpair_lifetime must be at least 60000ms");
	check_error("hostpair_max_connections = 0\n",
		    "hostpair_max_connections must be a number from 1 to");
}

static const struct unit_test tests[] = {
	UNIT(missing_file_defaults),
	UNIT(unreadable_path),
	UNIT(every_key),
	UNIT(limits_and_alternatives),
	UNIT(durations),
	UNIT(errors_with_line_numbers),
	UNIT(bad_values),
	UNIT(backoff_never_shortens_the_wait),
	UNIT(long_line),
	UNIT(comments_and_blank_lines),
	UNIT(exclude_accumulates_ports_replace),
	UNIT(dump_round_trip),
	UNIT(dump_round_trip_longest_lists),
	UNIT(trust_longest_prefix_wins),
	UNIT(trust_defaults_and_names),
	UNIT(trust_errors),
};

UNIT_MAIN("config", tests)
