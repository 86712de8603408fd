// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reconnection alone: its source linked with fake kernel I/O (fake.h)
 * and a recording notifier, its neighbours stubbed: the channel (MACs
 * valid or not, messages recorded), splice (succeeds or fails), hold and
 * liveness (calls counted, paths faked). Covers reconnections refused
 * (forged, replayed, on the wrong port), refused then retried and
 * accepted, an accepted one spliced before it is answered, a failed
 * splice answered by nobody, and our own reconnection acknowledged.
 */
#include "../../rackd/engine/reconnect.c"

#include <string.h>

#include "fake.h"
#include "unit.h"

/* ---- neighbours, stubbed ---- */

static channel_fn handlers[EDP_TYPE_MAX];
static bool mac_valid = true;
static uint8_t sent_type[FAKE_MAX];
static uint32_t sent_counter[FAKE_MAX];
static unsigned nmsgs;

int channel_handle(struct rackd *d, uint8_t type, channel_fn fn)
{
	(void)d;
	handlers[type] = fn;
	return 0;
}

bool channel_numbered_valid(struct rackd *d, struct conn *c,
			    const struct edp_msg *m)
{
	(void)d, (void)c, (void)m;
	return mac_valid;
}

int channel_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			  uint32_t counter)
{
	(void)d, (void)c;
	if (nmsgs < FAKE_MAX) {
		sent_type[nmsgs] = type;
		sent_counter[nmsgs++] = counter;
	}
	return 0;
}

/* Reconnection SYNs: recorded as messages of their type; what the next
 * one parsed says is set by the test. */
static struct rcsyn_seen answered;	/* the SYN a SYN-ACK answered */
static unsigned third_acks;
static int parse_err;
static struct edp_msg parsed;
static struct rcsyn_seen parsed_seen;

int rcsyn_send_syn(struct rackd *d, struct conn *c, uint32_t counter)
{
	return channel_send_numbered(d, c, EDP_RECONNECT, counter);
}

int rcsyn_send_synack(struct rackd *d, struct conn *c, uint32_t counter,
		      const struct rcsyn_seen *syn)
{
	answered = *syn;
	return channel_send_numbered(d, c, EDP_RECONNECT_ACK, counter);
}

int rcsyn_send_ack(struct rackd *d, struct conn *c,
		   const struct rcsyn_seen *synack)
{
	(void)d, (void)c, (void)synack;
	third_acks++;
	return 0;
}

int rcsyn_parse(const struct packet *p, struct edp_msg *m,
		struct rcsyn_seen *s)
{
	(void)p;
	*m = parsed;
	*s = parsed_seen;
	return parse_err;
}

static int splice_err;
static unsigned spliced, held, resumed, nudged, heard, moved, probed;
static struct endpoint spliced_remote;

int splice_apply(struct rackd *d, struct conn *const *conns, unsigned n)
{
	(void)d;
	if (splice_err)
		return -splice_err;
	spliced += n;
	if (n)
		spliced_remote = conns[0]->wire_remote;
	return 0;
}

void hold_begin(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d, (void)conns;
	held += n;
}

void hold_end(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d, (void)conns;
	resumed += n;
}

void hold_nudge(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
	nudged++;
}

void live_heard_path(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
	heard++;
}

static struct live_peer path;

struct live_peer *live_move(struct rackd *d, struct conn *c, bool suspended)
{
	(void)d;
	moved++;
	path.suspended = suspended;
	c->host = &path;
	return &path;
}

void live_probe_now(struct rackd *d, struct live_peer *p)
{
	(void)d, (void)p;
	probed++;
}

int local_source(const struct addr *dst, struct addr *src)
{
	(void)dst;
	*src = unit_addr("10.0.9.1");
	return 0;
}

static struct rackd d;

/* A connected connection on a working path, as the server: its peer
 * (10.0.0.2:40000) may move. */
static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	reconnect_init(&d);
	memset(handlers, 0, sizeof(handlers));
	CHECK_EQ_INT(reconnect_handle_messages(&d), 0);
	mac_valid = true;
	splice_err = 0;
	nmsgs = spliced = held = resumed = nudged = heard = moved = probed = 0;
	third_acks = 0;
	parse_err = 0;
	memset(&answered, 0, sizeof(answered));
	memset(&path, 0, sizeof(path));
	c = fake_conn(&d, "10.0.0.1:22", "10.0.0.2:40000", false);
	c->host = &path;
	event_subscribe(&d.events, RECONNECT_EVENTS, reconnect_event, &d);
	return c;
}

static void teardown(void)
{
	reconnect_free(&d);
	fake_rackd_free(&d);
}

/* A RECONNECT (or its ACK) arriving from SRC to DST. */
static uint32_t deliver(struct conn *c, uint8_t type, uint32_t counter,
			const char *src, const char *dst)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = type,
			     .conn_id = c->edp->conn_id, .counter = counter };
	struct endpoint s, t;
	struct packet p = { 0 };
	bool port;

	CHECK(endpoint_parse(src, &s, &port) == 0);
	CHECK(endpoint_parse(dst, &t, &port) == 0);
	p.src = s.addr;
	p.sport = s.port;
	p.dst = t.addr;
	p.dport = t.port;
	return handlers[type](&d, c, &p, &m);
}

static unsigned sent_of(uint8_t type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nmsgs; i++)
		n += sent_type[i] == type;
	return n;
}

TEST(test_registers_reconnections)
{
	setup();
	CHECK(handlers[EDP_RECONNECT] != NULL);
	CHECK(handlers[EDP_RECONNECT_ACK] != NULL);
	CHECK(handlers[EDP_HEARTBEAT] == NULL);
	teardown();
}

TEST(test_refused)
{
	struct conn *c = setup();

	/* Not under the connection's key. */
	mac_valid = false;
	deliver(c, EDP_RECONNECT, 5, "10.0.7.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_mac, 1);
	mac_valid = true;
	/* A counter not above the last one seen: a replay. */
	c->edp->hb_in = 5;
	deliver(c, EDP_RECONNECT, 5, "10.0.7.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	/* Our own end never moves: another local port is refused. */
	deliver(c, EDP_RECONNECT, 6, "10.0.7.2:40000", "10.0.0.1:23");
	CHECK_EQ_INT(d.reconnect->stats.refused_other, 1);
	/* A connection on no path is in no state to follow. */
	c->host = NULL;
	deliver(c, EDP_RECONNECT, 7, "10.0.7.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_other, 2);
	fake_advance(1);
	/* Nothing moved, nothing answered. */
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(nmsgs, 0);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	CHECK_EQ_INT(c->wire_remote.addr.v4.s_addr,
		     unit_addr("10.0.0.2").v4.s_addr);
	teardown();
}

TEST(test_refused_then_retried_and_accepted)
{
	struct conn *c = setup();

	c->edp->hb_in = 5;
	deliver(c, EDP_RECONNECT, 4, "10.0.7.2:41000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	/* The peer asks again with its next counter. */
	deliver(c, EDP_RECONNECT, 6, "10.0.7.2:41000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.accepted, 1);
	CHECK_EQ_INT(c->edp->hb_in, 6);
	/* The new wire endpoints, at once; spliced and answered together
	 * on the next turn of the loop. */
	CHECK_EQ_INT(c->wire_remote.port, 41000);
	CHECK_EQ_INT(moved, 1);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 1);
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(nmsgs, 0);
	fake_advance(0);
	CHECK_EQ_INT(spliced, 1);
	CHECK_EQ_INT(spliced_remote.port, 41000);
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 1);
	CHECK_EQ_INT(sent_counter[0], 6);
	CHECK_EQ_INT(c->reconnections, 1);
	teardown();
}

TEST(test_accepted_held_connection_resumes)
{
	struct conn *c = setup();
	struct conn_hold h = { 0 };

	c->hold = &h;
	c->state = CONN_SUSPENDED;
	deliver(c, EDP_RECONNECT, 1, "10.0.7.2:40000", "10.0.0.1:22");
	fake_advance(0);
	/* Answered, then its path heard and its hold lifted. */
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 1);
	CHECK_EQ_INT(heard, 1);
	CHECK_EQ_INT(resumed, 1);
	c->hold = NULL;
	teardown();
}

TEST(test_splice_failure_answers_nothing)
{
	struct conn *c = setup();

	splice_err = EIO;
	deliver(c, EDP_RECONNECT, 1, "10.0.7.2:40000", "10.0.0.1:22");
	fake_advance(0);
	/* The peer asks again; nothing said meanwhile. */
	CHECK_EQ_INT(nmsgs, 0);
	CHECK_EQ_INT(resumed + nudged, 0);
	teardown();
}

TEST(test_same_endpoints_again_is_no_move)
{
	struct conn *c = setup();

	deliver(c, EDP_RECONNECT, 1, "10.0.0.2:40000", "10.0.0.1:22");
	fake_advance(0);
	/* Answered (the peer's answer may have been lost), no new event. */
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 1);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	CHECK_EQ_INT(moved, 0);
	teardown();
}

TEST(test_gone_before_flush_is_forgotten)
{
	struct conn *c = setup();

	deliver(c, EDP_RECONNECT, 1, "10.0.7.2:40000", "10.0.0.1:22");
	event_post(&d.events, EVENT_GONE, c, NULL);
	fake_advance(0);
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(nmsgs, 0);
	teardown();
}

TEST(test_our_reconnection_acknowledged)
{
	struct conn *c = setup();

	/* Our endpoints changed: unconfirmed until the peer answers a
	 * reconnection sent from now on. */
	c->edp->hb_out = 10;
	reconnect_begin(c);
	CHECK(!c->confirmed);
	reconnect_send(&d, c);
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 1);
	CHECK_EQ_INT(sent_counter[0], 11);
	/* An answer to one never sent is refused; one to a reconnection
	 * sent before the change proves the path, not the move. */
	deliver(c, EDP_RECONNECT_ACK, 12, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	deliver(c, EDP_RECONNECT_ACK, 10, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK(!c->confirmed);
	CHECK_EQ_INT(heard, 1);
	/* Answered twice: the second is a replay. */
	deliver(c, EDP_RECONNECT_ACK, 10, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 2);
	/* The answer to ours confirms, and resumes it. */
	deliver(c, EDP_RECONNECT_ACK, 11, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK(c->confirmed);
	CHECK_EQ_INT(d.reconnect->stats.acks_in, 2);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 1);
	CHECK_EQ_INT(heard, 2);
	teardown();
}

TEST(test_manual_peer_moves_and_holds)
{
	struct conn *c = setup();
	struct conn *other = fake_conn(&d, "10.0.0.1:22", "10.0.0.2:40001",
				       false);
	struct addr src = unit_addr("10.0.9.1");
	struct endpoint peer;
	bool port;

	other->host = &path;
	CHECK(endpoint_parse("10.0.8.2", &peer, &port) == 0);
	/* Without a port every connection to the peer host moves. */
	CHECK_EQ_INT(reconnect_set_peer(&d, c, &peer, false), 2);
	CHECK_EQ_INT(spliced, 2);
	CHECK_EQ_INT(held, 2);
	CHECK_EQ_INT(probed, 1);
	CHECK(!c->confirmed && !other->confirmed);
	CHECK(addr_equal(&c->wire_remote.addr, &peer.addr));
	/* From the source address the route to it gives. */
	CHECK(addr_equal(&c->wire_local.addr, &src));
	CHECK_EQ_INT(d.reconnect->stats.manual, 1);
	teardown();
}

/* A reconnection SYN (or SYN-ACK) from SRC to DST, carrying TYPE. */
static uint32_t deliver_syn(struct conn *c, uint8_t type, uint32_t counter,
			    uint64_t conn_id, const char *src, const char *dst)
{
	struct endpoint s, t;
	struct packet p = { 0 };
	bool port;

	parsed = (struct edp_msg){ .version = EDP_VERSION, .type = type,
				   .conn_id = conn_id, .counter = counter };
	parsed_seen = (struct rcsyn_seen){ .end = 5000, .ack = 7000,
					   .has_ts = true, .tsval = 42 };
	(void)c;
	CHECK(endpoint_parse(src, &s, &port) == 0);
	CHECK(endpoint_parse(dst, &t, &port) == 0);
	p.src = s.addr;
	p.sport = s.port;
	p.dst = t.addr;
	p.dport = t.port;
	p.flags = TCP_FLAG_SYN |
		  (type == EDP_RECONNECT_ACK ? TCP_FLAG_ACK : 0);
	return reconnect_syn_input(&d, &p);
}

TEST(test_syn_reconnection_answered_by_synack)
{
	struct conn *c = setup();

	conn_index_edp(&d.conns, c, c->edp->conn_id);
	/* Through a NAT: another address and port than the socket's. */
	CHECK_EQ_INT(deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id,
				 "10.0.7.2:61000", "10.0.0.1:22"), NF_DROP);
	CHECK_EQ_INT(d.reconnect->stats.accepted, 1);
	CHECK_EQ_INT(c->wire_remote.port, 61000);
	fake_advance(0);
	/* Spliced, then answered with a SYN-ACK naming that SYN's end. */
	CHECK_EQ_INT(spliced, 1);
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 1);
	CHECK_EQ_INT(answered.end, 5000);
	CHECK_EQ_INT(answered.tsval, 42);
	teardown();
}

TEST(test_syn_reconnection_refused)
{
	struct conn *c = setup();

	conn_index_edp(&d.conns, c, c->edp->conn_id);
	/* Not a message: consumed, counted, nothing else. */
	parse_err = -EBADMSG;
	CHECK_EQ_INT(deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id,
				 "10.0.7.2:61000", "10.0.0.1:22"), NF_DROP);
	CHECK_EQ_INT(d.reconnect->stats.malformed, 1);
	parse_err = 0;
	/* No such connection. */
	CHECK_EQ_INT(deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id + 1,
				 "10.0.7.2:61000", "10.0.0.1:22"), NF_DROP);
	CHECK_EQ_INT(d.reconnect->stats.unknown, 1);
	/* Forged, then replayed. */
	mac_valid = false;
	deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id, "10.0.7.2:61000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_mac, 1);
	mac_valid = true;
	c->edp->hb_in = 3;
	deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id, "10.0.7.2:61000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	fake_advance(1);
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(nmsgs, 0);
	CHECK_EQ_INT(c->wire_remote.port, 40000);
	teardown();
}

TEST(test_synack_completes_the_handshake)
{
	struct conn *c = setup();

	conn_index_edp(&d.conns, c, c->edp->conn_id);
	c->edp->hb_out = 10;
	reconnect_begin(c);
	reconnect_send(&d, c);
	/* A replayed answer completes nothing. */
	deliver_syn(c, EDP_RECONNECT_ACK, 12, c->edp->conn_id,
		    "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(third_acks, 0);
	deliver_syn(c, EDP_RECONNECT_ACK, 11, c->edp->conn_id,
		    "10.0.0.2:40000", "10.0.0.1:22");
	CHECK(c->confirmed);
	CHECK_EQ_INT(third_acks, 1);
	CHECK_EQ_INT(d.reconnect->stats.acks_out, 1);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_syn_reconnection_answered_by_synack),
	UNIT(test_syn_reconnection_refused),
	UNIT(test_synack_completes_the_handshake),
	UNIT(test_registers_reconnections),
	UNIT(test_refused),
	UNIT(test_refused_then_retried_and_accepted),
	UNIT(test_accepted_held_connection_resumes),
	UNIT(test_splice_failure_answers_nothing),
	UNIT(test_same_endpoints_again_is_no_move),
	UNIT(test_gone_before_flush_is_forgotten),
	UNIT(test_our_reconnection_acknowledged),
	UNIT(test_manual_peer_moves_and_holds),
};

UNIT_MAIN("reconnect", tests)
