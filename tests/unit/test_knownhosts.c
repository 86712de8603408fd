// SPDX-License-Identifier: GPL-2.0-only
/*
 * The known hosts: every verdict of every policy, what known_hosts_seen()
 * records (addresses moving between entries, at most four), eviction
 * (least recently seen unpinned first, pinned never, -ENOSPC when all are
 * pinned), the changes the notifier hears, and the file: a round trip,
 * and each malformed line refused with its line number.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "fake.h"
#include "hostid.h"
#include "knownhosts.h"
#include "knownhosts_file.h"
#include "unit.h"

static unsigned notified[2];	/* by "seen" */

static void on_change(void *arg, bool seen)
{
	(void)arg;
	notified[seen]++;
}

/* A key whose first byte is N. */
static const uint8_t *key(uint8_t n)
{
	static uint8_t k[256][32];

	memset(k[n], 0x5a, 32);
	k[n][0] = n;
	return k[n];
}

static struct known_hosts *table(size_t max)
{
	struct known_hosts *kh;

	if (sodium_init() < 0)
		abort();
	kh = known_hosts_new(max);
	memset(notified, 0, sizeof(notified));
	known_hosts_set_notify(kh, on_change, NULL);
	return kh;
}

static enum trust_verdict judge(struct known_hosts *kh,
				enum trust_policy policy, uint8_t k,
				const char *at, const struct known_host **other)
{
	struct addr a;

	if (at)
		a = unit_addr(at);
	return known_hosts_judge(kh, policy, key(k), at ? &a : NULL, other);
}

static int seen(struct known_hosts *kh, uint8_t k, const char *at,
		int64_t now)
{
	struct addr a;

	if (at)
		a = unit_addr(at);
	return known_hosts_seen(kh, key(k), at ? &a : NULL, now);
}

/* Host K's addresses, latest first, as "a,b". */
static const char *addrs_of(struct known_hosts *kh, uint8_t k)
{
	static char out[256];
	const struct known_host *h = known_hosts_by_key(kh, key(k));

	out[0] = '\0';
	for (size_t i = 0; h && i < h->naddrs; i++) {
		char a[ADDR_STRLEN];

		strcat(out, i ? "," : "");
		strcat(out, addr_format(&h->last_addrs[i], a, sizeof(a)));
	}
	return h ? out : "(unknown)";
}

TEST(accept_new_verdicts)
{
	struct known_hosts *kh = table(16);
	const struct known_host *other = (void *)1;

	/* New anywhere, then known anywhere: trust is by key. */
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 1, "10.0.0.1", &other),
		     TRUST_NEW);
	CHECK(other == NULL);
	CHECK_EQ_INT(seen(kh, 1, "10.0.0.1", 100), 0);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 1, "10.0.0.1", &other),
		     TRUST_KNOWN);
	CHECK(other == NULL);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 1, "192.0.2.9", &other),
		     TRUST_KNOWN);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 1, NULL, &other),
		     TRUST_KNOWN);
	/* Another key where host 1 was last seen: a mismatch, naming it. */
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 2, "10.0.0.1", &other),
		     TRUST_MISMATCH);
	if (CHECK(other != NULL))
		CHECK_EQ_MEM(other->pk, key(1), 32);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 2, "10.0.0.2", &other),
		     TRUST_NEW);
	CHECK(other == NULL);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 2, NULL, NULL), TRUST_NEW);
	/* Host 1 known at an address where host 2 was seen since: still
	 * known (never downgraded by an address). */
	CHECK_EQ_INT(seen(kh, 2, "10.0.0.1", 200), 0);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 1, "10.0.0.1", &other),
		     TRUST_KNOWN);
	CHECK(other == NULL);
	/* Judging changes nothing. */
	CHECK_EQ_INT(known_hosts_count(kh), 2);
	CHECK_EQ_INT(notified[true], 2);
	CHECK_EQ_INT(notified[false], 0);
	known_hosts_free(kh);
}

TEST(pinned_verdicts)
{
	struct known_hosts *kh = table(16);
	const struct known_host *other = (void *)1;

	CHECK_EQ_INT(known_hosts_add(kh, key(1), "one", true), 0);
	CHECK_EQ_INT(seen(kh, 2, "10.0.0.2", 50), 0);
	CHECK_EQ_INT(judge(kh, TRUST_PINNED, 1, "10.0.0.1", &other),
		     TRUST_KNOWN);
	CHECK(other == NULL);
	/* Known but not pinned, unknown: not pinned. */
	CHECK_EQ_INT(judge(kh, TRUST_PINNED, 2, "10.0.0.2", &other),
		     TRUST_NOT_PINNED);
	CHECK(other == NULL);
	CHECK_EQ_INT(judge(kh, TRUST_PINNED, 3, "10.0.0.3", &other),
		     TRUST_NOT_PINNED);
	/* ...naming who was last seen there. */
	CHECK_EQ_INT(judge(kh, TRUST_PINNED, 3, "10.0.0.2", &other),
		     TRUST_NOT_PINNED);
	if (CHECK(other != NULL))
		CHECK_EQ_MEM(other->pk, key(2), 32);
	CHECK_EQ_INT(known_hosts_pin(kh, key(2), true), 0);
	CHECK_EQ_INT(judge(kh, TRUST_PINNED, 2, NULL, NULL), TRUST_KNOWN);
	CHECK_EQ_INT(known_hosts_pin(kh, key(1), false), 0);
	CHECK_EQ_INT(judge(kh, TRUST_PINNED, 1, NULL, NULL), TRUST_NOT_PINNED);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 1, NULL, NULL), TRUST_KNOWN);
	CHECK_EQ_INT(known_hosts_pin(kh, key(9), true), -ENOENT);
	known_hosts_free(kh);
}

TEST(anonymous_verdicts)
{
	struct known_hosts *kh = table(16);
	const struct known_host *other = (void *)1;

	CHECK_EQ_INT(seen(kh, 1, "10.0.0.1", 10), 0);
	CHECK_EQ_INT(judge(kh, TRUST_ANONYMOUS, 1, "10.0.0.1", &other),
		     TRUST_KNOWN);
	CHECK_EQ_INT(judge(kh, TRUST_ANONYMOUS, 2, "10.0.0.1", &other),
		     TRUST_KNOWN);
	CHECK(other == NULL);
	CHECK_EQ_INT(judge(kh, TRUST_ANONYMOUS, 3, NULL, &other), TRUST_KNOWN);
	CHECK_EQ_STR(trust_verdict_name(TRUST_MISMATCH), "MISMATCH");
	CHECK_EQ_STR(trust_verdict_name(TRUST_NOT_PINNED), "NOT_PINNED");
	known_hosts_free(kh);
}

TEST(seen_records_times_and_addresses)
{
	struct known_hosts *kh = table(16);
	const struct known_host *h;

	CHECK_EQ_INT(known_hosts_add(kh, key(1), NULL, false), 0);
	h = known_hosts_by_key(kh, key(1));
	if (CHECK(h != NULL)) {
		CHECK_EQ_INT(h->first_seen, 0);
		CHECK_EQ_INT(h->last_seen, 0);
		CHECK_EQ_STR(h->name, "");
	}
	CHECK_EQ_INT(seen(kh, 1, "10.0.0.1", 100), 0);
	CHECK_EQ_INT(seen(kh, 1, "fd00::1", 150), 0);
	CHECK_EQ_INT(seen(kh, 1, "10.0.0.1", 200), 0);
	h = known_hosts_by_key(kh, key(1));
	CHECK_EQ_INT(h->first_seen, 100);
	CHECK_EQ_INT(h->last_seen, 200);
	CHECK_EQ_STR(addrs_of(kh, 1), "10.0.0.1,fd00::1");
	/* Four at most, the oldest dropped (and forgotten by the index). */
	seen(kh, 1, "10.0.0.2", 201);
	seen(kh, 1, "10.0.0.3", 202);
	seen(kh, 1, "10.0.0.4", 203);
	CHECK_EQ_STR(addrs_of(kh, 1), "10.0.0.4,10.0.0.3,10.0.0.2,10.0.0.1");
	{
		struct addr a = unit_addr("fd00::1");

		CHECK(known_hosts_by_addr(kh, &a) == NULL);
		a = unit_addr("10.0.0.3");
		CHECK(known_hosts_by_addr(kh, &a) == h);
	}
	/* Host 2 seen at one of them takes it: one owner per address. */
	seen(kh, 2, "10.0.0.3", 300);
	CHECK_EQ_STR(addrs_of(kh, 1), "10.0.0.4,10.0.0.2,10.0.0.1");
	CHECK_EQ_STR(addrs_of(kh, 2), "10.0.0.3");
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 3, "10.0.0.4", NULL),
		     TRUST_MISMATCH);
	/* Removed: its addresses are nobody's. */
	CHECK_EQ_INT(known_hosts_remove(kh, key(1)), 0);
	CHECK_EQ_INT(known_hosts_remove(kh, key(1)), -ENOENT);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 3, "10.0.0.4", NULL),
		     TRUST_NEW);
	CHECK_EQ_INT(known_hosts_count(kh), 1);
	known_hosts_free(kh);
}

TEST(add_names_and_changes_heard)
{
	struct known_hosts *kh = table(16);
	char long_name[80];

	memset(long_name, 'n', sizeof(long_name));
	long_name[64] = '\0';
	CHECK_EQ_INT(known_hosts_add(kh, key(1), "web-1.example", false), 0);
	CHECK_EQ_INT(known_hosts_add(kh, key(1), "again", true), -EEXIST);
	CHECK_EQ_INT(known_hosts_add(kh, key(2), "two words", false), -EINVAL);
	CHECK_EQ_INT(known_hosts_add(kh, key(2), "tab\there", false), -EINVAL);
	CHECK_EQ_INT(known_hosts_add(kh, key(2), long_name, false), -EINVAL);
	long_name[63] = '\0';
	CHECK_EQ_INT(known_hosts_add(kh, key(2), long_name, false), 0);
	CHECK_EQ_INT(known_hosts_set_name(kh, key(2), "b"), 0);
	CHECK_EQ_STR(known_hosts_by_key(kh, key(2))->name, "b");
	CHECK_EQ_INT(known_hosts_set_name(kh, key(2), "b c"), -EINVAL);
	CHECK_EQ_INT(known_hosts_set_name(kh, key(3), "c"), -ENOENT);
	CHECK_EQ_STR(known_hosts_by_key(kh, key(1))->name, "web-1.example");
	CHECK(!known_hosts_by_key(kh, key(1))->pinned);
	/* add, add, set_name: heard; refusals and no-ops: not. */
	CHECK_EQ_INT(notified[false], 3);
	CHECK_EQ_INT(known_hosts_pin(kh, key(1), false), 0);
	CHECK_EQ_INT(known_hosts_set_name(kh, key(2), "b"), 0);
	CHECK_EQ_INT(notified[false], 3);
	CHECK_EQ_INT(known_hosts_pin(kh, key(1), true), 0);
	CHECK_EQ_INT(known_hosts_remove(kh, key(2)), 0);
	CHECK_EQ_INT(notified[false], 5);
	CHECK_EQ_INT(notified[true], 0);
	/* Listed oldest first. */
	CHECK_EQ_INT(known_hosts_add(kh, key(7), "", false), 0);
	CHECK_EQ_INT(known_hosts_add(kh, key(4), NULL, false), 0);
	{
		const struct known_host *h = known_hosts_next(kh, NULL);
		static const uint8_t order[] = { 1, 7, 4 };

		for (size_t i = 0; i < 3; i++, h = known_hosts_next(kh, h))
			if (CHECK(h != NULL))
				CHECK_EQ_INT(h->pk[0], order[i]);
		CHECK(h == NULL);
	}
	known_hosts_free(kh);
}

/* Full: the unpinned host least recently seen makes room (one never seen
 * first); pinned hosts never do; with all pinned, -ENOSPC. */
TEST(bounded_eviction)
{
	struct known_hosts *kh = table(4);

	CHECK_EQ_INT(known_hosts_max(kh), 4);
	CHECK_EQ_INT(known_hosts_add(kh, key(1), "pinned-old", true), 0);
	CHECK_EQ_INT(seen(kh, 2, "10.0.0.2", 500), 0);
	CHECK_EQ_INT(seen(kh, 3, "10.0.0.3", 300), 0);
	CHECK_EQ_INT(seen(kh, 4, "10.0.0.4", 400), 0);
	CHECK_EQ_INT(known_hosts_count(kh), 4);
	/* Host 1 was never seen, but it is pinned: host 3 goes. */
	CHECK_EQ_INT(seen(kh, 5, "10.0.0.5", 600), 0);
	CHECK_EQ_INT(known_hosts_count(kh), 4);
	CHECK(known_hosts_by_key(kh, key(3)) == NULL);
	CHECK(known_hosts_by_key(kh, key(1)) != NULL);
	CHECK_EQ_INT(judge(kh, TRUST_ACCEPT_NEW, 9, "10.0.0.3", NULL),
		     TRUST_NEW);
	/* Seen again, host 4 stays; host 2 (500) goes next. */
	CHECK_EQ_INT(seen(kh, 4, "10.0.0.4", 700), 0);
	CHECK_EQ_INT(known_hosts_add(kh, key(6), NULL, false), 0);
	CHECK(known_hosts_by_key(kh, key(2)) == NULL);
	/* Host 6, never seen, is the first to go now. */
	CHECK_EQ_INT(seen(kh, 7, NULL, 800), 0);
	CHECK(known_hosts_by_key(kh, key(6)) == NULL);
	/* Pin them all: no room. */
	for (const struct known_host *h = known_hosts_next(kh, NULL); h;
	     h = known_hosts_next(kh, h))
		known_hosts_pin(kh, h->pk, true);
	CHECK_EQ_INT(seen(kh, 8, "10.0.0.8", 900), -ENOSPC);
	CHECK_EQ_INT(known_hosts_add(kh, key(8), NULL, false), -ENOSPC);
	CHECK_EQ_INT(known_hosts_count(kh), 4);
	CHECK(known_hosts_by_key(kh, key(8)) == NULL);
	/* A known host is still seen, full or not. */
	CHECK_EQ_INT(seen(kh, 4, "10.0.0.8", 1000), 0);
	known_hosts_free(kh);
}

/* Many hosts: the hash tables grow and still find every one. */
TEST(many_hosts)
{
	struct known_hosts *kh = table(2000);
	uint8_t pk[32];
	char at[32];
	int missing = 0;

	for (unsigned i = 0; i < 1500; i++) {
		struct addr a;

		memset(pk, 0, sizeof(pk));
		memcpy(pk, &i, sizeof(i));
		snprintf(at, sizeof(at), "10.%u.%u.1", i >> 8, i & 255);
		a = unit_addr(at);
		if (known_hosts_seen(kh, pk, &a, i + 1))
			missing++;
	}
	CHECK_EQ_INT(missing, 0);
	for (unsigned i = 0; i < 1500; i++) {
		const struct known_host *h;
		struct addr a;

		memset(pk, 0, sizeof(pk));
		memcpy(pk, &i, sizeof(i));
		snprintf(at, sizeof(at), "10.%u.%u.1", i >> 8, i & 255);
		a = unit_addr(at);
		h = known_hosts_by_key(kh, pk);
		if (!h || known_hosts_by_addr(kh, &a) != h)
			missing++;
	}
	CHECK_EQ_INT(missing, 0);
	CHECK_EQ_INT(known_hosts_count(kh), 1500);
	known_hosts_free(kh);
}

/* ---- the file ---- */

static char path[64];

static void write_text(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/racks-known-XXXXXX");
	if (mkstemp(path) < 0)
		abort();
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

TEST(file_round_trip)
{
	struct known_hosts *kh = table(16), *back = table(16);
	const struct known_host *a, *b;
	char err[256] = "";
	bool missing = true;
	size_t n = 0;

	known_hosts_add(kh, key(1), "alpha", true);
	seen(kh, 2, "10.0.0.2", 1700000000);
	seen(kh, 2, "fd00::2", 1700000100);
	known_hosts_set_name(kh, key(2), "b");
	seen(kh, 3, NULL, 1700000200);
	write_text("");
	CHECK_EQ_INT(known_hosts_file_save(kh, path), 0);
	CHECK_EQ_INT(known_hosts_file_load(back, path, &missing, err,
					   sizeof(err)), 0);
	CHECK(!missing);
	CHECK_EQ_INT(known_hosts_count(back), 3);
	for (a = known_hosts_next(kh, NULL), b = known_hosts_next(back, NULL);
	     a && b; a = known_hosts_next(kh, a), b = known_hosts_next(back, b)) {
		CHECK_EQ_MEM(a->pk, b->pk, 32);
		CHECK_EQ_STR(a->name, b->name);
		CHECK_EQ_INT(a->pinned, b->pinned);
		CHECK_EQ_INT(a->first_seen, b->first_seen);
		CHECK_EQ_INT(a->last_seen, b->last_seen);
		if (CHECK_EQ_INT(a->naddrs, b->naddrs))
			for (size_t i = 0; i < a->naddrs; i++)
				CHECK(addr_equal(&a->last_addrs[i],
						 &b->last_addrs[i]));
		n++;
	}
	CHECK_EQ_INT(n, 3);
	/* Addresses are indexed again: host 2 is last seen at both. */
	CHECK_EQ_INT(judge(back, TRUST_ACCEPT_NEW, 9, "fd00::2", NULL),
		     TRUST_MISMATCH);
	/* The lines themselves. */
	{
		FILE *f = fopen(path, "r");
		char line[512], k2[EDP_HOST_KEY_STRLEN], want[512];

		edp_host_key_format(key(2), k2);
		snprintf(want, sizeof(want), "%s known 1700000000 1700000100 "
			 "fd00::2,10.0.0.2 b\n", k2);
		CHECK(f && fgets(line, sizeof(line), f) && line[0] == '#');
		CHECK(f && fgets(line, sizeof(line), f) &&
		      strstr(line, " pinned 0 0 - alpha\n"));
		CHECK(f && fgets(line, sizeof(line), f));
		CHECK_EQ_STR(line, want);
		CHECK(f && fgets(line, sizeof(line), f) &&
		      strstr(line, " known 1700000200 1700000200 -\n"));
		if (f)
			fclose(f);
	}
	unlink(path);
	/* No file: nothing, no error. */
	CHECK_EQ_INT(known_hosts_file_load(back, path, &missing, err,
					   sizeof(err)), 0);
	CHECK(missing);
	known_hosts_free(kh);
	known_hosts_free(back);
}

TEST(file_malformed_lines)
{
	char k1[EDP_HOST_KEY_STRLEN], k2[EDP_HOST_KEY_STRLEN];
	const struct {
		const char *fmt;	/* %1$s, %2$s: two keys */
		unsigned line;
		const char *why;
	} cases[] = {
		{ "%1$s known 1 2 -\nbogus\n", 2, "want KEY pinned|known" },
		{ "# c\n\n%1$s trusted 1 2 -\n", 3,
		  "'trusted' is neither pinned nor known" },
		{ "racks-x25519:AAAA known 1 2 -\n", 1, "bad key" },
		{ "%1$s known x 2 -\n", 1, "bad FIRST_SEEN or LAST_SEEN" },
		{ "%1$s known 3 2 -\n", 1, "bad FIRST_SEEN or LAST_SEEN" },
		{ "%1$s known -1 2 -\n", 1, "bad FIRST_SEEN or LAST_SEEN" },
		{ "%1$s known 1 2 10.0.0.1,nowhere\n", 1,
		  "bad address 'nowhere'" },
		{ "%1$s known 1 2 10.0.0.0/8\n", 1, "bad address" },
		{ "%1$s known 1 2 1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5\n", 1,
		  "more than 4 addresses" },
		{ "%1$s known 1 2 - a b\n", 1, "too many fields" },
		{ "%1$s known 1 2 -\n%1$s pinned 0 0 -\n", 2,
		  "key listed twice" },
		{ "%1$s known 1 2 10.0.0.1\n%2$s known 1 2 10.0.0.1\n", 2,
		  "an address listed for another host too" },
		{ "%1$s known 1 2 10.0.0.1,10.0.0.1\n", 1,
		  "an address listed twice" },
		{ "%1$s known 1 2 -\n%2$s known 1 2 -", 2,
		  "no newline (truncated)" },
	};

	edp_host_key_format(key(1), k1);
	edp_host_key_format(key(2), k2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct known_hosts *kh = table(16);
		char text[512], err[256] = "", want[128];
		bool missing;

		snprintf(text, sizeof(text), cases[i].fmt, k1, k2);
		write_text(text);
		CHECK_EQ_INT(known_hosts_file_load(kh, path, &missing, err,
						   sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "%s:%u: ", path, cases[i].line);
		if (!CHECK(!strncmp(err, want, strlen(want))) ||
		    !CHECK(strstr(err, cases[i].why) != NULL))
			fprintf(stderr, "  case %zu: \"%s\"\n", i, err);
		unlink(path);
		known_hosts_free(kh);
	}
	/* A full table refuses more hosts than it keeps. */
	{
		struct known_hosts *kh = table(1);
		char text[512], err[256] = "";
		bool missing;

		snprintf(text, sizeof(text), "%s known 1 2 -\n%s known 1 2 -\n",
			 k1, k2);
		write_text(text);
		CHECK_EQ_INT(known_hosts_file_load(kh, path, &missing, err,
						   sizeof(err)), -EINVAL);
		CHECK(strstr(err, ":2: more hosts than rackd keeps") != NULL);
		unlink(path);
		known_hosts_free(kh);
	}
}

/* rackd's file (fake clock): what the engine records is written at most
 * once a second, a change by the control socket at once, what is pending
 * at shutdown then. */
TEST(rackd_writes_seen_hosts_at_most_once_a_second)
{
	struct known_hosts_file kf;
	struct rackd d;
	char err[256];
	bool missing;

	fake_rackd(&d);
	d.hosts_file = &kf;
	d.known_hosts = table(16);
	write_text("");
	known_hosts_file_init(&d, path);
	seen(d.known_hosts, 1, "10.0.0.1", 1);
	fake_advance(0);
	CHECK_EQ_INT(kf.writes, 1);
	/* Ten more within the second: one write, a second after the first. */
	for (int i = 0; i < 10; i++) {
		fake_advance(90);
		seen(d.known_hosts, (uint8_t)(2 + i), NULL, 2 + i);
	}
	CHECK_EQ_INT(kf.writes, 1);
	fake_advance(99);
	CHECK_EQ_INT(kf.writes, 1);
	fake_advance(1);
	CHECK_EQ_INT(kf.writes, 2);
	fake_advance(5000);
	CHECK_EQ_INT(kf.writes, 2);
	/* Long after: at once. A change of another kind: at once too. */
	seen(d.known_hosts, 1, NULL, 100);
	fake_advance(0);
	CHECK_EQ_INT(kf.writes, 3);
	known_hosts_pin(d.known_hosts, key(1), true);
	fake_advance(0);
	CHECK_EQ_INT(kf.writes, 4);
	/* Written now by the caller (the control socket): nothing left. */
	known_hosts_remove(d.known_hosts, key(2));
	CHECK_EQ_INT(known_hosts_file_write(&d), 0);
	fake_advance(2000);
	CHECK_EQ_INT(kf.writes, 5);
	/* Pending at shutdown: written then. */
	seen(d.known_hosts, 3, NULL, 200);
	seen(d.known_hosts, 4, NULL, 201);
	CHECK_EQ_INT(kf.writes, 5);
	known_hosts_file_free(&d);
	CHECK_EQ_INT(kf.writes, 6);
	CHECK_EQ_INT(kf.write_errors, 0);
	{
		struct known_hosts *back = table(16);
		const struct known_host *h;

		CHECK_EQ_INT(known_hosts_file_load(back, path, &missing, err,
						   sizeof(err)), 0);
		CHECK_EQ_INT(known_hosts_count(back), 10);
		h = known_hosts_by_key(back, key(4));
		CHECK(h && h->last_seen == 201);
		CHECK(known_hosts_by_key(back, key(2)) == NULL);
		known_hosts_free(back);
	}
	unlink(path);
	known_hosts_free(d.known_hosts);
	fake_rackd_free(&d);
}

static const struct unit_test tests[] = {
	UNIT(accept_new_verdicts),
	UNIT(pinned_verdicts),
	UNIT(anonymous_verdicts),
	UNIT(seen_records_times_and_addresses),
	UNIT(add_names_and_changes_heard),
	UNIT(bounded_eviction),
	UNIT(many_hosts),
	UNIT(file_round_trip),
	UNIT(file_malformed_lines),
	UNIT(rackd_writes_seen_hosts_at_most_once_a_second),
};

UNIT_MAIN("knownhosts", tests)
