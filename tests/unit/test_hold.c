// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hold alone: its source linked with fake kernel I/O (fake.h: tcp_info
 * answers, recorded sends and held-set updates, a fake clock) and a
 * recording notifier; liveness is a stub that counts the paths heard.
 * Covers a suspension held, its segments answered in the peer's name
 * with a closed window, a resumption with nothing in flight, one kicked
 * back into retransmitting and finished by the peer's ACK, traffic
 * resuming a hold (and forged segments that do not), and an abort after
 * max_suspend.
 */
#include "../../rackd/engine/hold.c"

#include <errno.h>
#include <string.h>

#include "fake.h"
#include "unit.h"

static unsigned heard;

void live_heard_path(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
	heard++;
}

static struct rackd d;

/* A held connection: the peer has acked 100 bytes, sent 50. */
static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	heard = 0;
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:22", true);
	/* A client's bytes_acked counts its SYN (conn_seq_progress()). */
	fake_progress.bytes_acked = 101;	/* snd_una 1101 */
	fake_progress.bytes_received = 50;	/* rcv_nxt 2051 */
	fake_progress.unacked = 1;
	fake_progress.retransmits = 1;
	hold_begin(&d, &c, 1);
	return c;
}

static void teardown(void)
{
	fake_rackd_free(&d);
}

/* An outbound segment of C's socket: a retransmission of its first
 * unacknowledged byte, acknowledging everything it received. */
static struct packet segment(uint8_t flags, uint32_t seq, uint32_t ack,
			     uint16_t payload)
{
	struct packet p = { .flags = flags, .seq = seq, .ack = ack,
			    .payload_len = payload, .window = 512 };

	return p;
}

static const struct fake_segment *last_sent(void)
{
	return fake_nsent ? &fake_sent[(fake_nsent - 1) % FAKE_MAX] : NULL;
}

TEST(test_suspend_holds)
{
	struct conn *c = setup();

	CHECK_EQ_INT(c->state, CONN_SUSPENDED);
	CHECK(c->hold != NULL && c->hold->known);
	CHECK_EQ_INT(c->hold->snd_una, 1101);
	CHECK_EQ_INT(c->hold->rcv_nxt, 2051);
	CHECK_EQ_INT(fake_held_added, 1);
	CHECK_EQ_INT(d.held, 1);
	CHECK_EQ_INT(fake_count(EVENT_SUSPEND), 1);
	CHECK(timer_pending(&c->expiry));
	CHECK_EQ_INT(c->expiry.deadline, fake_now + d.cfg->max_suspend_ms);
	/* Suspending it again changes nothing. */
	hold_begin(&d, &c, 1);
	CHECK_EQ_INT(fake_held_added, 1);
	CHECK_EQ_INT(fake_count(EVENT_SUSPEND), 1);
	teardown();
}

TEST(test_hold_answered)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 1101, 2051, 100);
	const struct fake_segment *s;

	CHECK_EQ_INT(hold_segment(&d, c, &p), NF_DROP);
	s = last_sent();
	if (!CHECK(s != NULL))
		return;
	/* In the peer's name, acknowledging exactly what the peer had,
	 * window closed. */
	CHECK(endpoint_equal(&s->src, &c->remote));
	CHECK(endpoint_equal(&s->dst, &c->local));
	CHECK_EQ_INT(s->flags, TCP_FLAG_ACK);
	CHECK_EQ_INT(s->seq, 2051);
	CHECK_EQ_INT(s->ack, 1101);
	CHECK_EQ_INT(s->window, 0);
	CHECK_EQ_INT(c->hold->answered, 1);
	CHECK_EQ_INT(d.live->stats.hold_answers, 1);
	/* A probe below what the socket claims acked clamps snd_una. */
	p = segment(TCP_FLAG_ACK, 1050, 2051, 0);
	hold_segment(&d, c, &p);
	CHECK_EQ_INT(last_sent()->ack, 1051);
	CHECK_EQ_INT(d.live->stats.hold_clamped, 1);
	/* Its own RST is swallowed, never answered. */
	p = segment(TCP_FLAG_RST, 1101, 0, 0);
	fake_nsent = 0;
	CHECK_EQ_INT(hold_segment(&d, c, &p), NF_DROP);
	CHECK_EQ_INT(fake_nsent, 0);
	teardown();
}

TEST(test_no_answer_before_a_timeout)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 1101, 2051, 100);

	/* Suspended before the socket's first retransmission timeout: its
	 * segment is dropped unanswered, so the timeout still counts. */
	fake_progress.retransmits = 0;
	fake_nsent = 0;
	CHECK_EQ_INT(hold_segment(&d, c, &p), NF_DROP);
	CHECK_EQ_INT(fake_nsent, 0);
	CHECK_EQ_INT(c->hold->answered, 0);
	teardown();
}

TEST(test_resume_nothing_in_flight)
{
	struct conn *c = setup();

	fake_nevents = 0;
	hold_end(&d, &c, 1);
	CHECK_EQ_INT(c->state, CONN_CONNECTED);
	CHECK(c->hold == NULL);
	CHECK_EQ_INT(d.held, 0);
	CHECK_EQ_INT(fake_held_removed, 1);
	CHECK(!timer_pending(&c->expiry));
	CHECK_EQ_INT(fake_count(EVENT_RESUME), 1);
	CHECK_EQ_INT(fake_count(EVENT_SAVED), 1);
	CHECK_EQ_INT(d.live->stats.resumes, 1);
	teardown();
}

TEST(test_resumption_kicked)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 1101, 2051, 100);

	hold_segment(&d, c, &p);
	/* Data in flight, the timer backed off three times during the cut:
	 * three ICMP unreachables wind it back, the window stays closed. */
	fake_progress.unacked = 2;
	fake_progress.backoff = 3;
	fake_nevents = 0;
	hold_end(&d, &c, 1);
	CHECK_EQ_INT(fake_unreachables, 3);
	CHECK_EQ_INT(d.live->stats.resume_kicks, 3);
	CHECK(c->hold != NULL && c->hold->resuming);
	CHECK_EQ_INT(c->state, CONN_CONNECTED);
	CHECK_EQ_INT(d.held, 1);
	CHECK_EQ_INT(fake_count(EVENT_RESUME), 1);
	CHECK_EQ_INT(fake_count(EVENT_SAVED), 0);
	CHECK_EQ_INT(c->expiry.deadline, fake_now + HOLD_RESUME_MAX_MS);
	/* Its retransmission goes to the peer now. */
	CHECK_EQ_INT(hold_segment(&d, c, &p), NF_ACCEPT);
	/* The peer acknowledges it: the hold is over. */
	p = segment(TCP_FLAG_ACK, 2051, 1201, 0);
	CHECK_EQ_INT(hold_inbound(&d, c, &p, NULL, 0), 0);
	CHECK(c->hold == NULL);
	CHECK_EQ_INT(d.held, 0);
	CHECK_EQ_INT(fake_count(EVENT_SAVED), 1);
	CHECK(!timer_pending(&c->expiry));
	teardown();
}

TEST(test_resumption_that_never_hears_back)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 1101, 2051, 100);

	hold_segment(&d, c, &p);
	fake_progress.unacked = 2;
	fake_progress.backoff = 1;
	hold_end(&d, &c, 1);
	fake_advance(HOLD_RESUME_MAX_MS);
	CHECK_EQ_INT(fake_expired, 1);	/* track.c then calls hold_finish */
	hold_finish(&d, c);
	CHECK(c->hold == NULL);
	CHECK_EQ_INT(d.held, 0);
	teardown();
}

TEST(test_peer_traffic_resumes)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK, 2051, 1101, 10);

	/* The peer's segments arrive: its path works again. */
	CHECK_EQ_INT(hold_inbound(&d, c, &p, NULL, 0), 0);
	CHECK_EQ_INT(heard, 1);
	CHECK_EQ_INT(d.live->stats.resumed_by_traffic, 1);
	/* The socket acknowledging new data of the peer's proves it too. */
	p = segment(TCP_FLAG_ACK, 1101, 2061, 0);
	CHECK_EQ_INT(hold_segment(&d, c, &p), NF_ACCEPT);
	CHECK_EQ_INT(heard, 2);
	teardown();
}

/* Anyone who knows the addresses and ports can send these: none is a
 * segment the socket would take, none resumes anything. */
TEST(test_forged_segments_resume_nothing)
{
	struct conn *c = setup();
	struct packet forged[] = {
		segment(TCP_FLAG_ACK, 2051 + 0x40000000u, 1101, 10),
		segment(TCP_FLAG_ACK, 2051, 1101 + 0x40000000u, 0),
		segment(TCP_FLAG_ACK, 2051, 1101 - 0x20000u, 0),
		segment(TCP_FLAG_ACK, 2051 + 0x20000u, 1101, 0),
		segment(TCP_FLAG_SYN | TCP_FLAG_ACK, 2051, 1101, 0),
		segment(TCP_FLAG_RST | TCP_FLAG_ACK, 2051, 1101, 0),
		segment(0, 2051, 1101, 0),
	};

	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		CHECK_EQ_INT(hold_inbound(&d, c, &forged[i], NULL, 0), 0);
		if (!CHECK_EQ_INT(heard, 0))
			fprintf(stderr, "  case %zu\n", i);
	}
	CHECK_EQ_INT(d.live->stats.hold_unacceptable,
		     sizeof(forged) / sizeof(forged[0]));
	CHECK_EQ_INT(d.live->stats.resumed_by_traffic, 0);
	CHECK(c->hold != NULL && !c->hold->resuming);
	/* The peer's real segment, a little behind or ahead: resumes. */
	forged[0] = segment(TCP_FLAG_ACK, 2051 - 1000, 1101 + 50, 0);
	CHECK_EQ_INT(hold_inbound(&d, c, &forged[0], NULL, 0), 0);
	CHECK_EQ_INT(heard, 1);
	teardown();
}

/* A resumption ends on the peer's ACK of our retransmission only: an ACK
 * beyond anything we could have sent ends nothing. */
TEST(test_forged_ack_ends_no_resumption)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 1101, 2051, 100);

	hold_segment(&d, c, &p);
	fake_progress.unacked = 2;
	fake_progress.backoff = 1;
	hold_end(&d, &c, 1);
	CHECK(c->hold != NULL && c->hold->resuming);
	p = segment(TCP_FLAG_ACK, 2051, 1101 + 0x30000000u, 0);
	hold_inbound(&d, c, &p, NULL, 0);
	p = segment(TCP_FLAG_ACK, 2051 + 0x30000000u, 1201, 0);
	hold_inbound(&d, c, &p, NULL, 0);
	CHECK(c->hold != NULL && c->hold->resuming);
	CHECK_EQ_INT(d.held, 1);
	p = segment(TCP_FLAG_ACK, 2051, 1201, 0);
	hold_inbound(&d, c, &p, NULL, 0);
	CHECK(c->hold == NULL);
	CHECK_EQ_INT(d.held, 0);
	teardown();
}

/* The path goes silent again while a connection still resumes: held
 * again, suspended and counted, its window closed as before. */
TEST(test_resuming_connection_held_again)
{
	struct conn *c = setup();
	struct packet p = segment(TCP_FLAG_ACK | TCP_FLAG_PSH, 1101, 2051, 100);

	hold_segment(&d, c, &p);
	fake_progress.unacked = 2;
	fake_progress.backoff = 1;
	hold_end(&d, &c, 1);
	CHECK(c->hold != NULL && c->hold->resuming);
	CHECK_EQ_INT(c->state, CONN_CONNECTED);
	hold_begin(&d, &c, 1);
	CHECK(c->hold != NULL && !c->hold->resuming);
	CHECK_EQ_INT(c->state, CONN_SUSPENDED);
	CHECK_EQ_INT(c->suspensions, 2);
	CHECK_EQ_INT(d.held, 1);
	CHECK_EQ_INT(c->expiry.deadline, fake_now + d.cfg->max_suspend_ms);
	/* Its segments are answered again, not let through. */
	CHECK_EQ_INT(hold_segment(&d, c, &p), NF_DROP);
	teardown();
}

TEST(test_abort_after_max_suspend)
{
	struct conn *c = setup();
	const struct fake_segment *s;

	fake_advance(d.cfg->max_suspend_ms);
	CHECK_EQ_INT(fake_expired, 1);	/* track.c then calls hold_abort */
	fake_nsent = 0;
	hold_abort(&d, c);
	s = last_sent();
	if (!CHECK(s != NULL))
		return;
	/* An exact RST to the local socket, in the peer's name. */
	CHECK_EQ_INT(s->flags, TCP_FLAG_RST);
	CHECK_EQ_INT(s->seq, 2051);
	CHECK(endpoint_equal(&s->dst, &c->local));
	CHECK_EQ_INT(fake_count(EVENT_ABORT), 1);
	CHECK_EQ_INT(c->state, CONN_RELEASED);
	CHECK(c->hold == NULL);
	CHECK_EQ_INT(d.held, 0);
	teardown();
}

TEST(test_nudge_winds_back_an_unheld_socket)
{
	struct conn *c = setup();

	hold_end(&d, &c, 1);
	fake_progress.unacked = 1;
	fake_progress.backoff = 2;
	hold_nudge(&d, c);
	CHECK_EQ_INT(fake_unreachables, 2);
	fake_progress.unacked = 0;
	hold_nudge(&d, c);
	CHECK_EQ_INT(fake_unreachables, 2);
	teardown();
}

TEST(test_failed_set_update_still_holds_in_memory)
{
	struct conn *c;

	fake_rackd(&d);
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:22", true);
	fake_ruleset_err = EIO;
	hold_begin(&d, &c, 1);
	/* nft refused: the count of held flows is not raised, but the
	 * socket is held (and answered) all the same. */
	CHECK_EQ_INT(d.held, 0);
	CHECK_EQ_INT(c->state, CONN_SUSPENDED);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_suspend_holds),
	UNIT(test_hold_answered),
	UNIT(test_no_answer_before_a_timeout),
	UNIT(test_resume_nothing_in_flight),
	UNIT(test_resumption_kicked),
	UNIT(test_resumption_that_never_hears_back),
	UNIT(test_peer_traffic_resumes),
	UNIT(test_forged_segments_resume_nothing),
	UNIT(test_forged_ack_ends_no_resumption),
	UNIT(test_resuming_connection_held_again),
	UNIT(test_abort_after_max_suspend),
	UNIT(test_nudge_winds_back_an_unheld_socket),
	UNIT(test_failed_set_update_still_holds_in_memory),
};

UNIT_MAIN("hold", tests)
