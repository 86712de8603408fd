// SPDX-License-Identifier: GPL-2.0-only
/*
 * Adoption's learning alone: its source linked with fake kernel I/O
 * (fake.h: tcp_info answers, recorded sends, a fake clock) and stubs for
 * the adopt sets and the ruleset. Covers the challenge ACK's numbers
 * turned into each stream's first sequence number, for a passive and an
 * active opener; stale samples (too low) never winning; the two rounds
 * it takes to trust a value; an opener it cannot tell (assumed active);
 * numbers across the 2^32 wrap; and giving up: no socket, a FIN, numbers
 * that never settle.
 */
#include "../../rackd/engine/adopt_learn.c"

#include <errno.h>
#include <string.h>

#include "fake.h"
#include "unit.h"

/* The adopt sets and the rules: recorded, never written. */
static unsigned set_adds, set_dels, rule_runs;

int adoptset_update(struct flowset *as, const struct flowset_flow *flows,
		    unsigned n, bool add)
{
	(void)as, (void)flows;
	if (add)
		set_adds += n;
	else
		set_dels += n;
	return 0;
}

void ruleset_chains_write(FILE *f, const struct config *cfg, bool spliced,
			  bool held, bool adopting)
{
	(void)cfg, (void)spliced, (void)held;
	fprintf(f, "adopting %d\n", adopting);
}

int ruleset_run(const char *script, char *err, size_t errlen)
{
	(void)script, (void)err, (void)errlen;
	rule_runs++;
	return 0;
}

static struct rackd d;
static struct adopt_state state;
static struct adopt_learning learning;
static unsigned done_calls;
static bool done_ok;
static struct adopt_learnt done_l;
static const char *done_why;

static void done(struct rackd *dd, struct conn *c, bool ok,
		 const struct adopt_learnt *l, const char *why)
{
	(void)dd, (void)c;
	done_calls++;
	done_ok = ok;
	done_l = *l;
	done_why = why;
}

/* A connection being learnt; its socket (fake_progress) is quiet. */
static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	memset(&state, 0, sizeof(state));
	memset(&learning, 0, sizeof(learning));
	d.adopt = &state;
	d.adoptset = (struct flowset *)&state;	/* not NULL: "open" */
	timer_init(&state.kick, adopt_learn_kick, &d);
	set_adds = set_dels = rule_runs = done_calls = 0;
	done_ok = false;
	done_why = NULL;
	c = fake_conn(&d, "10.0.0.2:5001", "10.0.0.1:40000", false);
	adopt_learn_start(&d, c, &learning, done);
	return c;
}

static void teardown(void)
{
	adopt_learn_stop(&d, &learning);
	fake_advance(0);
	free(state.pending);
	free(state.leaving);
	fake_rackd_free(&d);
}

/* What the socket sends: a pure ACK, or data. */
static struct packet segment(uint8_t flags, uint32_t seq, uint32_t ack,
			     uint16_t payload)
{
	struct packet p = { .flags = flags, .seq = seq, .ack = ack,
			    .payload_len = payload, .window = 512 };

	return p;
}

/* The socket's counters: X_snd 5001, X_rcv 9001, 1000 bytes sent and
 * acknowledged, 2000 received; ACTIVE says whether it sent the SYN. */
static void quiet_socket(bool active)
{
	fake_progress.bytes_sent = 1000;
	fake_progress.bytes_retrans = 0;
	fake_progress.bytes_acked = active ? 1001 : 1000;
	fake_progress.bytes_received = 2000;
	fake_progress.unacked = 0;
}

static uint32_t verdict_of(struct packet p)
{
	return adopt_learn_segment(&d, &learning, &p);
}

TEST(test_quiet_passive_socket_learnt_in_two_rounds)
{
	struct conn *c = setup();

	quiet_socket(false);
	fake_advance(0);	/* the batch: into the set, first round */
	CHECK_EQ_INT(set_adds, 1);
	CHECK_EQ_INT(d.adopt_rules, true);
	CHECK_EQ_INT(fake_nsent, 1);
	/* A SYN into our own socket, in the peer's name. */
	CHECK_EQ_INT(fake_sent[0].flags, TCP_FLAG_SYN);
	CHECK(endpoint_equal(&fake_sent[0].src, &c->remote));
	CHECK(endpoint_equal(&fake_sent[0].dst, &c->local));
	/* Its challenge ACK: snd_nxt 6001, rcv_nxt 11001. */
	CHECK_EQ_INT(verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0)),
		     NF_ACCEPT);
	CHECK_EQ_INT(done_calls, 0);	/* one round is not enough */
	fake_advance(ADOPT_ROUND_MS);
	CHECK_EQ_INT(fake_nsent, 2);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	CHECK_EQ_INT(done_calls, 1);
	CHECK(done_ok);
	CHECK_EQ_INT(done_l.x_snd, 5001);
	CHECK_EQ_INT(done_l.x_rcv, 9001);
	CHECK(!done_l.active && done_l.active_known);
	/* Out of the set, and the rules go with the last flow. */
	fake_advance(0);
	CHECK_EQ_INT(set_dels, 1);
	CHECK_EQ_INT(d.adopt_rules, false);
	CHECK_EQ_INT(state.stats.learnt, 1);
	teardown();
}

TEST(test_handshake_options_from_tcp_info)
{
	setup();
	quiet_socket(false);
	fake_progress.options = SOCKDIAG_OPT_TIMESTAMPS | SOCKDIAG_OPT_SACK |
				SOCKDIAG_OPT_WSCALE;
	fake_progress.rcv_wscale = 9;
	fake_progress.snd_wscale = 7;
	fake_progress.advmss = 1448;
	fake_progress.snd_mss = 1428;
	fake_advance(0);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	fake_advance(ADOPT_ROUND_MS);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	CHECK(done_ok);
	CHECK(done_l.lend.has_wscale && done_l.rend.has_wscale);
	CHECK_EQ_INT(done_l.lend.wscale, 9);	/* ours: what we receive */
	CHECK_EQ_INT(done_l.rend.wscale, 7);
	CHECK(done_l.lend.sack_permitted && done_l.rend.has_timestamp);
	CHECK_EQ_INT(done_l.lend.mss, 1448);
	CHECK_EQ_INT(done_l.rend.mss, 1428);
	teardown();
}

TEST(test_active_opener_counts_its_syn)
{
	setup();
	quiet_socket(true);
	fake_advance(0);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	fake_advance(ADOPT_ROUND_MS);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	CHECK(done_ok);
	CHECK_EQ_INT(done_l.x_snd, 5001);
	CHECK(done_l.active && done_l.active_known);
	teardown();
}

TEST(test_stale_samples_are_lower_and_never_win)
{
	setup();
	quiet_socket(false);
	fake_advance(0);
	/* Made before 100 more bytes arrived and 50 more left: low. */
	verdict_of(segment(TCP_FLAG_ACK, 5951, 10901, 0));
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	fake_advance(ADOPT_ROUND_MS);
	verdict_of(segment(TCP_FLAG_ACK, 5951, 10901, 0));
	CHECK_EQ_INT(done_calls, 0);	/* the max was seen in one round */
	/* A data segment: its end is snd_nxt; 100 new bytes counted. */
	fake_progress.bytes_sent = 1100;
	fake_progress.unacked = 1;
	verdict_of(segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 6001, 11001, 100));
	CHECK_EQ_INT(done_calls, 1);
	CHECK_EQ_INT(done_l.x_snd, 5001);
	CHECK_EQ_INT(done_l.x_rcv, 9001);
	teardown();
}

TEST(test_retransmissions_are_not_new_bytes)
{
	setup();
	quiet_socket(false);
	/* 300 bytes retransmitted: bytes_sent counts them twice. */
	fake_progress.bytes_sent = 1300;
	fake_progress.bytes_retrans = 300;
	fake_advance(0);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	fake_advance(ADOPT_ROUND_MS);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	CHECK(done_ok);
	CHECK_EQ_INT(done_l.x_snd, 5001);
	teardown();
}

TEST(test_opener_unknown_with_data_in_flight_is_assumed_active)
{
	setup();
	quiet_socket(false);
	fake_progress.unacked = 3;
	fake_advance(0);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	fake_advance(ADOPT_ROUND_MS);
	verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
	CHECK(done_ok);
	CHECK(done_l.active && !done_l.active_known);
	teardown();
}

TEST(test_numbers_across_the_wrap)
{
	setup();
	quiet_socket(false);
	/* X_snd 0xfffffe00: 1000 bytes later snd_nxt has wrapped. */
	fake_advance(0);
	verdict_of(segment(TCP_FLAG_ACK, 0xfffffe00u + 1000, 0xfffffff0u + 2000,
			   0));
	/* A stale one from just before the wrap must stay below. */
	verdict_of(segment(TCP_FLAG_ACK, 0xfffffe00u + 990, 0xfffffff0u + 1990,
			   0));
	fake_advance(ADOPT_ROUND_MS);
	verdict_of(segment(TCP_FLAG_ACK, 0xfffffe00u + 1000, 0xfffffff0u + 2000,
			   0));
	CHECK(done_ok);
	CHECK_EQ_INT(done_l.x_snd, 0xfffffe00u);
	CHECK_EQ_INT(done_l.x_rcv, 0xfffffff0u);
	teardown();
}

TEST(test_no_socket_gives_up)
{
	setup();
	fake_progress_err = ENOENT;
	fake_advance(0);
	CHECK_EQ_INT(done_calls, 1);
	CHECK(!done_ok);
	CHECK_EQ_STR(done_why, "no such socket");
	teardown();
}

TEST(test_a_fin_gives_up)
{
	setup();
	quiet_socket(false);
	fake_advance(0);
	verdict_of(segment(TCP_FLAG_ACK | TCP_FLAG_FIN, 6001, 11001, 0));
	CHECK_EQ_INT(done_calls, 1);
	CHECK(!done_ok);
	CHECK_EQ_STR(done_why, "socket closing");
	teardown();
}

TEST(test_numbers_that_never_settle_give_up)
{
	setup();
	quiet_socket(false);
	fake_advance(0);
	for (unsigned i = 0; i < ADOPT_MAX_ROUNDS; i++) {
		/* Every round a new, higher maximum: never seen twice. */
		fake_progress.bytes_received = 2000 - i;
		verdict_of(segment(TCP_FLAG_ACK, 6001, 11001, 0));
		fake_advance(ADOPT_ROUND_MS);
	}
	CHECK_EQ_INT(done_calls, 1);
	CHECK(!done_ok);
	CHECK_EQ_STR(done_why, "sequence numbers not settled");
	CHECK_EQ_INT(state.stats.rounds, ADOPT_MAX_ROUNDS);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_quiet_passive_socket_learnt_in_two_rounds),
	UNIT(test_handshake_options_from_tcp_info),
	UNIT(test_active_opener_counts_its_syn),
	UNIT(test_stale_samples_are_lower_and_never_win),
	UNIT(test_retransmissions_are_not_new_bytes),
	UNIT(test_opener_unknown_with_data_in_flight_is_assumed_active),
	UNIT(test_numbers_across_the_wrap),
	UNIT(test_no_socket_gives_up),
	UNIT(test_a_fin_gives_up),
	UNIT(test_numbers_that_never_settle_give_up),
};

UNIT_MAIN("adopt_learn", tests)
