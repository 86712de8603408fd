// SPDX-License-Identifier: GPL-2.0-only
/*
 * The message channel alone (channel.c over fake kernel I/O): the
 * sequence numbers every message carries (a keepalive's, from the
 * socket's counters; set-up's answers mirrored without asking the
 * kernel; where the socket was last seen once it is gone), heartbeats
 * refused on a carrier whose socket is gone, the receiver's window check,
 * and what is counted.
 */
#include "../../rackd/engine/channel.c"

#include <string.h>

#include "fake.h"
#include "unit.h"

static struct rackd d;
static unsigned handled;
/* What the handler sends in answer, if anything. */
static uint8_t answer_type;

static uint32_t handler(struct rackd *dd, struct conn *c,
			const struct packet *p, const struct edp_msg *m)
{
	struct edp_msg a = { .version = EDP_VERSION, .type = answer_type };

	(void)p, (void)m;
	handled++;
	if (answer_type)
		channel_send(dd, c, &a);
	return NF_DROP;
}

/* A client connection, ISNs 1000 (ours) and 2000 (the peer's), whose
 * socket acknowledged 500000 bytes and received 700000 (beyond the
 * first window), window scale 7. */
static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:22", true);
	fake_progress.bytes_acked = 500000;
	fake_progress.bytes_received = 700000;
	fake_progress.snd_wscale = fake_progress.rcv_wscale = 7;
	handled = 0;
	answer_type = 0;
	CHECK_EQ_INT(channel_handle(&d, EDP_KEY, handler), 0);
	CHECK_EQ_INT(channel_handle(&d, EDP_HEARTBEAT, handler), 0);
	return c;
}

static struct packet message(uint32_t seq, uint32_t ack)
{
	return (struct packet){ .family = AF_INET, .seq = seq, .ack = ack,
				.flags = TCP_FLAG_ACK };
}

static const struct edp_msg key = { .version = EDP_VERSION,
				    .type = EDP_KEY };

TEST(test_numbers_are_a_keepalives)
{
	struct conn *c = setup();

	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_nsent, 1);
	/* snd_una 1000 + 500000 (a client's counts its SYN), rcv_nxt
	 * 2000 + 1 + 700000: one below each. */
	CHECK_EQ_INT(fake_sent[0].seq, 500999);
	CHECK_EQ_INT(fake_sent[0].ack, 702000);
	CHECK_EQ_INT(fake_sent[0].flags, TCP_FLAG_ACK);
	CHECK_EQ_INT(d.edp.msgs_out, 1);
	fake_rackd_free(&d);
}

TEST(test_in_handshake_first_numbers)
{
	struct conn *c = setup();

	fake_progress.state = TCP_STATE_SYN_RECV;
	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_sent[0].seq, 1001);
	CHECK_EQ_INT(fake_sent[0].ack, 2001);
	fake_rackd_free(&d);
}

TEST(test_answer_mirrors_without_asking_the_kernel)
{
	struct conn *c = setup();
	struct packet p;
	unsigned asked;

	answer_type = EDP_KEY;
	c->state = CONN_SETUP;
	/* In set-up, a message at the first numbers passes without a
	 * query... */
	p = message(2000, 1001);
	asked = fake_progress_calls;
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_DROP);
	CHECK_EQ_INT(handled, 1);
	/* ...and so does its answer, which mirrors it. */
	CHECK_EQ_INT(fake_progress_calls, asked);
	CHECK_EQ_INT(fake_nsent, 1);
	CHECK_EQ_INT(fake_sent[0].seq, 1001);
	CHECK_EQ_INT(fake_sent[0].ack, 2000);

	/* The peer at its snd_una 702001 (seq 702000), having our 501000
	 * (ack 500999): the check asks the kernel once, the answer does not. */
	p = message(702000, 500999);
	asked = fake_progress_calls;
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_DROP);
	CHECK_EQ_INT(fake_progress_calls, asked + 1);
	CHECK_EQ_INT(fake_sent[1].seq, 500999);
	CHECK_EQ_INT(fake_sent[1].ack, 702000);

	/* The hint ends with the handler: what is sent next asks. */
	asked = fake_progress_calls;
	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_progress_calls, asked + 1);
	CHECK_EQ_INT(fake_sent[2].seq, 500999);
	CHECK_EQ_INT(fake_sent[2].ack, 702000);
	fake_rackd_free(&d);
}

/* A heartbeat from C's peer, under C's key. */
static struct edp_msg heartbeat(struct conn *c, uint32_t counter)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_HEARTBEAT,
			     .conn_id = c->edp->conn_id, .counter = counter };

	edp_mac_counter(c->edp->key,
			numbered_role(EDP_HEARTBEAT, !conn_is_client(c)),
			counter, &c->edp->t, m.mac);
	return m;
}

/* Once set-up is over, the first numbers prove nothing (anyone who saw
 * the handshake knows them): only the live ones pass. */
TEST(test_first_numbers_refused_once_connected)
{
	struct conn *c = setup();
	struct packet p = message(2000, 1001);
	struct edp_msg hb = heartbeat(c, 1);
	unsigned asked;

	/* 100 MB each way: the first numbers are far behind. */
	fake_progress.bytes_acked = fake_progress.bytes_received = 100000000;
	asked = fake_progress_calls;
	CHECK_EQ_INT(channel_input(&d, c, &p, &hb), NF_DROP);
	CHECK_EQ_INT(handled, 0);
	CHECK_EQ_INT(d.edp.bad_seq, 1);
	CHECK_EQ_INT(fake_progress_calls, asked + 1);
	/* The live numbers pass (positive control). */
	p = message(100002000, 100000999);
	CHECK_EQ_INT(channel_input(&d, c, &p, &hb), NF_DROP);
	CHECK_EQ_INT(handled, 1);
	/* An adopted connection in set-up: its first numbers are long
	 * past, so they prove nothing either. */
	c->state = CONN_SETUP;
	c->rebased = true;
	c->snd_base = c->lend.isn;
	c->rcv_base = c->rend.isn + 1;
	p = message(2000, 1001);
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_DROP);
	CHECK_EQ_INT(handled, 1);
	CHECK_EQ_INT(d.edp.bad_seq, 2);
	fake_rackd_free(&d);
}

/* A forgery costs a MAC, never a question to the kernel; a set-up
 * message after set-up goes to its handler (which only counts it)
 * without one either. */
TEST(test_forgeries_ask_the_kernel_nothing)
{
	struct conn *c = setup();
	struct packet p = message(702000, 500999);
	struct edp_msg hb = heartbeat(c, 1);
	unsigned asked = fake_progress_calls;

	hb.mac[0] ^= 1;
	CHECK_EQ_INT(channel_input(&d, c, &p, &hb), NF_DROP);
	CHECK_EQ_INT(d.edp.bad_mac, 1);
	CHECK_EQ_INT(handled, 0);
	p = message(702000 + 0x40000000u, 7);
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_DROP);
	CHECK_EQ_INT(handled, 1);
	CHECK_EQ_INT(fake_progress_calls, asked);
	/* Unkeyed, a numbered message is refused outright. */
	c->edp->keyed = false;
	hb = heartbeat(c, 2);
	CHECK_EQ_INT(channel_input(&d, c, &p, &hb), NF_DROP);
	CHECK_EQ_INT(d.edp.unexpected, 1);
	CHECK_EQ_INT(fake_progress_calls, asked);
	fake_rackd_free(&d);
}

/* A message without a MAC (an ADOPT) is judged as a TCP socket judges a
 * segment, by the windows it has now; one under the key by the largest
 * windows the connection could have. */
TEST(test_unauthenticated_numbers_judged_by_the_windows_in_force)
{
	struct conn *c = setup();
	struct edp_msg hb = heartbeat(c, 1);
	/* 9 MB behind where we are, inside a 64 MB scaled window. */
	struct packet old = message(702000 - 9000000, 500999);
	struct packet near = message(702000 - 200000, 500999 + 100000);

	fake_progress.snd_wscale = fake_progress.rcv_wscale = 10;
	fake_progress.rcv_ssthresh = 3000000;
	fake_progress.snd_wnd = 2000000;
	CHECK(!channel_seq_plausible(c, &old));
	CHECK(channel_seq_plausible(c, &near));
	/* Beyond what we sent, or ahead of what we received: no. */
	near.ack = 500999 + 2200000;
	CHECK(!channel_seq_plausible(c, &near));
	near = message(702000 + 100000, 500999);
	CHECK(!channel_seq_plausible(c, &near));
	/* Under the key, where it sits is only a sanity check. */
	CHECK_EQ_INT(channel_input(&d, c, &old, &hb), NF_DROP);
	CHECK_EQ_INT(handled, 1);
	fake_rackd_free(&d);
}

/* A half-open entry is proven by a message that passes the check, not
 * by one that fails it. */
TEST(test_message_proves_a_half_open_entry)
{
	struct conn *c = setup();
	struct packet p = message(2000, 77777);

	fake_progress.bytes_acked = fake_progress.bytes_received = 100000000;
	c->state = CONN_SETUP;
	conn_halfopen_add(&d.conns, c);
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_DROP);
	CHECK(c->ho.linked);
	CHECK_EQ_INT(d.conns.halfopen.count, 1);
	p = message(2000, 1001);
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_DROP);
	CHECK(!c->ho.linked);
	CHECK_EQ_INT(d.conns.halfopen.count, 0);
	fake_rackd_free(&d);
}

TEST(test_hint_is_for_its_connection_and_setup_only)
{
	struct conn *c = setup();
	struct conn *other = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22",
				       true);
	struct edp_msg hb = { .version = EDP_VERSION,
			      .type = EDP_HEARTBEAT };

	channel_hint(&d, c, 111, 222);
	/* Another connection, or a numbered message, asks the kernel. */
	CHECK_EQ_INT(channel_send(&d, other, &key), 0);
	CHECK_EQ_INT(fake_sent[0].seq, 500999);
	CHECK_EQ_INT(channel_send(&d, c, &hb), 0);
	CHECK_EQ_INT(fake_sent[1].seq, 500999);
	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_sent[2].seq, 111);
	CHECK_EQ_INT(fake_sent[2].ack, 222);
	channel_hint_clear(&d);
	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_sent[3].seq, 500999);
	fake_rackd_free(&d);
}

TEST(test_gone_socket)
{
	struct conn *c = setup();
	struct edp_msg hb = { .version = EDP_VERSION,
			      .type = EDP_HEARTBEAT };
	struct edp_msg hb_ack = { .version = EDP_VERSION,
				  .type = EDP_HEARTBEAT_ACK };
	uint32_t una = 0;

	/* Never seen, now gone: no heartbeat, set-up at first numbers.
	 * The kernel has no socket (-ENOENT, closed: liveness asks for the
	 * sweep) or could not be asked (-ENOTCONN). */
	fake_progress_err = ENOENT;
	CHECK_EQ_INT(channel_send(&d, c, &hb), -ENOENT);
	CHECK_EQ_INT(channel_send(&d, c, &hb_ack), -ENOENT);
	fake_progress_err = ENOBUFS;
	CHECK_EQ_INT(channel_send(&d, c, &hb), -ENOTCONN);
	fake_progress_err = ENOENT;
	CHECK_EQ_INT(fake_nsent, 0);
	CHECK_EQ_INT(d.edp.msgs_out + d.edp.send_errors, 0);
	CHECK(!channel_snd_una(c, &una));
	CHECK_EQ_INT(una, 0);
	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_sent[0].seq, 1001);

	/* Seen, then gone: where it was last seen; still no heartbeat. */
	fake_progress_err = 0;
	CHECK(channel_snd_una(c, &una));
	CHECK_EQ_INT(una, 501000);
	fake_progress.bytes_acked = 900000;	/* unseen progress */
	fake_progress_err = ENOENT;
	CHECK(!channel_snd_una(c, &una));
	CHECK_EQ_INT(una, 501000);
	CHECK_EQ_INT(channel_send(&d, c, &hb), -ENOENT);
	CHECK_EQ_INT(channel_send(&d, c, &key), 0);
	CHECK_EQ_INT(fake_sent[1].seq, 500999);
	CHECK_EQ_INT(fake_sent[1].ack, 702000);
	CHECK_EQ_INT(d.edp.msgs_out, 2);
	fake_rackd_free(&d);
}

TEST(test_window_check)
{
	struct conn *c = setup();
	/* Scale 7: a window is 0xffff << 7, about 8 MB. */
	uint32_t slack = 0xffffu << 7;
	struct {
		uint32_t seq, ack;
		bool ok;
	} cases[] = {
		{ 2000, 1001, true },		/* first numbers: a window */
		{ 2000 + 65000, 1001, true },	/* behind the live ones */
		{ 702000, 500999, true },		/* where we are */
		{ 702000 + slack - 2, 500999, true },	/* a window ahead */
		{ 702000 - slack, 500999 - slack, true },	/* a window behind */
		{ 702000 + slack + 10, 500999, false },
		{ 702000, 500999 - slack - 10, false },
		{ 702000 + 0x80000000u, 500999, false },	/* off the path */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct packet p = message(cases[i].seq, cases[i].ack);
		struct edp_msg hb = heartbeat(c, (uint32_t)i + 1);
		uint64_t bad = d.edp.bad_seq;

		handled = 0;
		channel_input(&d, c, &p, &hb);
		if (!CHECK_EQ_INT(handled, cases[i].ok) ||
		    !CHECK_EQ_INT(d.edp.bad_seq, bad + !cases[i].ok))
			fprintf(stderr, "  case %zu\n", i);
	}
	/* Gone before it was ever seen: only the first numbers pass, and
	 * only in set-up; a connected one takes nothing. */
	c = fake_conn(&d, "10.0.0.1:40002", "10.0.0.2:22", true);
	fake_progress_err = ENOENT;
	{
		struct packet near = message(2000, 1001);
		struct packet far = message(702000, 500999);
		struct edp_msg hb = heartbeat(c, 1);

		handled = 0;
		channel_input(&d, c, &near, &hb);
		channel_input(&d, c, &far, &hb);
		CHECK_EQ_INT(handled, 0);
		c->state = CONN_SETUP;
		channel_input(&d, c, &near, &key);
		channel_input(&d, c, &far, &key);
		CHECK_EQ_INT(handled, 1);
	}
	fake_rackd_free(&d);
}

TEST(test_data_and_unknown)
{
	struct conn *c = setup();
	struct packet p = message(702000, 500999);
	struct edp_msg done = { .version = EDP_VERSION, .type = EDP_DONE };

	/* A message with data is the kernel's to judge. */
	p.payload_len = 1;
	CHECK_EQ_INT(channel_input(&d, c, &p, &key), NF_ACCEPT);
	CHECK_EQ_INT(d.edp.with_payload, 1);
	p.payload_len = 0;
	/* No connection: not ours, it goes on; a type nobody handles. */
	CHECK_EQ_INT(channel_input(&d, NULL, &p, &key), NF_ACCEPT);
	CHECK_EQ_INT(d.edp.unknown_conn, 1);
	CHECK_EQ_INT(channel_input(&d, c, &p, &done), NF_DROP);
	CHECK_EQ_INT(d.edp.unexpected, 1);
	CHECK_EQ_INT(handled, 0);
	/* Registration errors. */
	CHECK_EQ_INT(channel_handle(&d, EDP_KEY, handler), -EEXIST);
	CHECK_EQ_INT(channel_handle(&d, EDP_SYN, handler), -EINVAL);
	CHECK_EQ_INT(channel_handle(&d, EDP_TYPE_MAX, handler), -EINVAL);
	fake_rackd_free(&d);
}

static const struct unit_test tests[] = {
	UNIT(test_numbers_are_a_keepalives),
	UNIT(test_in_handshake_first_numbers),
	UNIT(test_answer_mirrors_without_asking_the_kernel),
	UNIT(test_first_numbers_refused_once_connected),
	UNIT(test_forgeries_ask_the_kernel_nothing),
	UNIT(test_unauthenticated_numbers_judged_by_the_windows_in_force),
	UNIT(test_message_proves_a_half_open_entry),
	UNIT(test_hint_is_for_its_connection_and_setup_only),
	UNIT(test_gone_socket),
	UNIT(test_window_check),
	UNIT(test_data_and_unknown),
};

UNIT_MAIN("channel", tests)
