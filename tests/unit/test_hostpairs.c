// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host pairs (rackd/core/hostpairs.c) and their file
 * (rackd/persist/hostpairs_file.c): a new one offered once confirmed, the
 * ones it replaces retired then and kept for SYNs in flight, a few per
 * peer; found by id, by peer and by address; aging and renewal by one
 * connection; the file round trip, its mode, and a malformed file
 * refused whole.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#include "hostpair.h"
#include "hostpairs.h"
#include "hostpairs_file.h"
#include "unit.h"

static char dir[64], path[128];
static const uint8_t self[32] = { 42 };

static void key(uint8_t out[32], uint8_t fill)
{
	memset(out, fill, 32);
}

TEST(renewed_pairs_replace_the_old_once_confirmed)
{
	struct host_pairs hp;
	uint8_t peer[32], other[32], s1[32], s2[32], s3[32], s4[32], so[32];
	struct host_pair *a, *b, *d;
	struct prefix p;

	host_pairs_init(&hp);
	CHECK(prefix_parse("10.0.0.9", &p) == 0);
	key(peer, 1);
	key(other, 2);
	key(s1, 11);
	key(s2, 12);
	key(s3, 13);
	key(s4, 15);
	key(so, 14);
	a = host_pairs_add(&hp, peer, s1, 100);
	CHECK(a->id == edp_hostpair_id(s1) && a->id != 0);
	/* Not offered until a set-up with it completed. */
	CHECK(host_pairs_at(&hp, &p.addr) == NULL);
	host_pairs_confirm(&hp, a, &p.addr);
	CHECK(host_pairs_at(&hp, &p.addr) == a);
	host_pairs_add(&hp, other, so, 100);
	b = host_pairs_add(&hp, peer, s2, 200);
	/* Made, not confirmed: the old one is still the one offered. */
	CHECK(!a->retired && host_pairs_at(&hp, &p.addr) == a);
	host_pairs_confirm(&hp, b, &p.addr);
	CHECK(a->retired && !b->retired);
	CHECK(host_pairs_at(&hp, &p.addr) == b);
	/* Still found by id, for SYNs in flight that named it. */
	CHECK(host_pairs_by_id(&hp, a->id) == a);
	/* A late set-up derived from the old one retires nothing newer. */
	host_pairs_confirm(&hp, a, &p.addr);
	CHECK(!b->retired);
	CHECK(host_pairs_of(&hp, peer) == b);
	CHECK_EQ_INT(hp.count, 3);
	host_pairs_add(&hp, peer, s3, 300);
	d = host_pairs_add(&hp, peer, s4, 400);
	/* HOSTPAIR_PER_PEER for one peer: the oldest goes. */
	CHECK_EQ_INT(hp.count, 4);
	CHECK(host_pairs_by_id(&hp, edp_hostpair_id(s1)) == NULL);
	CHECK(host_pairs_of(&hp, other) != NULL);
	CHECK(host_pairs_of(&hp, peer) == d);
	host_pairs_forget(&hp, peer);
	CHECK_EQ_INT(hp.count, 1);
	CHECK(host_pairs_of(&hp, peer) == NULL);
	CHECK(host_pairs_by_id(&hp, 0) == NULL);
	host_pairs_clear(&hp);
	CHECK_EQ_INT(hp.count, 0);
}

TEST(a_used_up_pair_is_renewed_by_one_connection)
{
	struct host_pair h = { .created = 1000, .conns = 10 };

	/* Fresh: named. */
	CHECK(host_pair_offer(&h, 1000, 60, 20));
	/* Used up: the first asker renews it, the others keep naming it. */
	CHECK(!host_pair_offer(&h, 1001, 60, 10));
	CHECK(host_pair_offer(&h, 1001, 60, 10));
	h.conns = 1000000;
	CHECK(host_pair_offer(&h, 1002, 60, 10));
	/* A renewal that did not come: tried again. */
	CHECK(!host_pair_offer(&h, 1001 + HOSTPAIR_RENEW_WAIT_S, 60, 10));
	/* Twice its lifetime: never named again. */
	CHECK(!host_pair_offer(&h, 1120, 60, 10));
	CHECK(!host_pair_offer(&h, 1120, 60, 10));
	h.retired = true;
	h.created = 2000;
	CHECK(!host_pair_offer(&h, 2000, 60, 10));
}

/* Counted uses mark the file for a save only every so many (each save
 * syncs it whole); the rest are remembered as unsaved, for the stop. */
TEST(uses_are_saved_in_batches)
{
	struct host_pairs hp;
	uint8_t peer[32], s[32];
	struct host_pair *h;

	host_pairs_init(&hp);
	key(peer, 5);
	key(s, 6);
	h = host_pairs_add(&hp, peer, s, 1);
	hp.dirty = false;
	for (unsigned i = 1; i < HOSTPAIR_COUNT_SAVE_EVERY; i++)
		host_pairs_count_use(&hp, h);
	CHECK(!hp.dirty && hp.counts_unsaved);
	host_pairs_count_use(&hp, h);
	CHECK(hp.dirty && h->conns == HOSTPAIR_COUNT_SAVE_EVERY);
	host_pairs_clear(&hp);
}

TEST(aging)
{
	struct host_pair h = { .created = 1000, .conns = 5 };

	CHECK(host_pair_offerable(&h, 1000, 60, 6));
	CHECK(!host_pair_offerable(&h, 1060, 60, 6));	/* lifetime */
	CHECK(!host_pair_offerable(&h, 1000, 60, 5));	/* connections */
	CHECK(!host_pair_offerable(&h, 999, 60, 6));	/* clock went back */
	h.retired = true;
	CHECK(!host_pair_offerable(&h, 1000, 60, 6));
}

TEST(found_by_the_address_last_met)
{
	struct host_pairs hp;
	uint8_t peer[32], s[32];
	struct host_pair *h;
	struct prefix p;

	host_pairs_init(&hp);
	key(peer, 3);
	key(s, 4);
	h = host_pairs_add(&hp, peer, s, 1);
	CHECK(prefix_parse("fd00::7", &p) == 0);
	CHECK(host_pairs_at(&hp, &p.addr) == NULL);	/* not met yet */
	h->peer_addr = p.addr;
	h->have_addr = true;
	CHECK(host_pairs_at(&hp, &p.addr) == h);
	host_pairs_clear(&hp);
}

TEST(file_round_trip)
{
	struct host_pairs hp, back;
	uint8_t peer[32], s1[32], s2[32];
	struct host_pair *h;
	struct stat st;
	char err[256] = "";
	struct prefix p;

	host_pairs_init(&hp);
	host_pairs_init(&back);
	key(peer, 5);
	key(s1, 6);
	key(s2, 7);
	host_pairs_add(&hp, peer, s1, 10);
	h = host_pairs_add(&hp, peer, s2, 20);
	h->conns = 42;
	CHECK(prefix_parse("10.1.2.3", &p) == 0);
	host_pairs_confirm(&hp, h, &p.addr);
	CHECK(hp.dirty);
	CHECK_EQ_INT(hostpairs_file_save(path, &hp, self), 0);
	CHECK(!hp.dirty);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK_EQ_INT(hostpairs_file_load(path, &back, self, err, sizeof(err)), 0);
	CHECK_EQ_INT(back.count, 2);
	/* Newest first, as saved; every field back. */
	CHECK(back.head->id == h->id && back.head->conns == 42 &&
	      back.head->created == 20 && !back.head->retired);
	CHECK(back.head->have_addr &&
	      addr_equal(&back.head->peer_addr, &p.addr));
	CHECK(!memcmp(back.head->secret, s2, 32));
	CHECK(back.head->next->retired);
	CHECK(host_pairs_of(&back, peer) == back.head);
	host_pairs_clear(&back);
	/* Another host key: nothing taken. */
	{
		uint8_t other[32] = { 43 };

		CHECK_EQ_INT(hostpairs_file_load(path, &back, other, err,
						 sizeof(err)), -ESTALE);
		CHECK_EQ_INT(back.count, 0);
	}
	host_pairs_clear(&hp);
}

TEST(malformed_file_refused_whole)
{
	static const char *const bad[] = {
		"pair id=1\n",
		"pair id=zz peer=00 secret=00 created=1 conns=0 retired=0\n",
		"nonsense\n",
	};
	struct host_pairs hp;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");

		fputs("# comment\n", f);
		fputs(bad[i], f);
		fclose(f);
		host_pairs_init(&hp);
		err[0] = '\0';
		CHECK_EQ_INT(hostpairs_file_load(path, &hp, self, err, sizeof(err)),
			     -EINVAL);
		CHECK(strstr(err, ":2:") != NULL);
		CHECK_EQ_INT(hp.count, 0);
	}
	/* None at all: empty, no error. */
	remove(path);
	CHECK_EQ_INT(hostpairs_file_load(path, &hp, self, err, sizeof(err)), 0);
	CHECK_EQ_INT(hp.count, 0);
}

TEST(path_beside_the_state)
{
	char out[64];

	CHECK_EQ_INT(hostpairs_file_path("/var/lib/racks/state", out,
					 sizeof(out)), 0);
	CHECK(!strcmp(out, "/var/lib/racks/hostpairs"));
	CHECK_EQ_INT(hostpairs_file_path("state", out, sizeof(out)), 0);
	CHECK(!strcmp(out, "hostpairs"));
	CHECK(hostpairs_file_path("/a/very/long/path/state", out, 8) < 0);
}

static const struct unit_test tests[] = {
	UNIT(renewed_pairs_replace_the_old_once_confirmed),
	UNIT(a_used_up_pair_is_renewed_by_one_connection),
	UNIT(uses_are_saved_in_batches),
	UNIT(aging),
	UNIT(found_by_the_address_last_met),
	UNIT(file_round_trip),
	UNIT(malformed_file_refused_whole),
	UNIT(path_beside_the_state),
};

static int run(void)
{
	int failed;

	if (sodium_init() < 0)
		abort();
	snprintf(dir, sizeof(dir), "/tmp/racks-hostpairs-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/hostpairs", dir);
	failed = unit_run(tests, sizeof(tests) / sizeof(tests[0]), "hostpairs");
	remove(path);
	rmdir(dir);
	return failed;
}

int main(void)
{
	return run() ? 1 : 0;
}
