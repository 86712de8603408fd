// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reconnection alone: its source linked with fake kernel I/O (fake.h)
 * and a recording notifier, its neighbours stubbed: the channel (MACs
 * valid or not, messages recorded), the reconnection SYNs (recorded, what
 * the next one parsed set by the test), splice (succeeds or fails), hold
 * and liveness (calls counted, paths faked). Covers a peer's SYN answered
 * with a challenge to where it came from and nothing more; the third
 * segment from there spliced before it is answered; a third segment from
 * anywhere else (a peer naming a third party's address), under a wrong
 * MAC, too late, or without a SYN refused; addresses no peer can have;
 * forged, replayed and malformed SYNs; and our own reconnection: its
 * SYN-ACK's challenge answered, resumed only by the peer's last answer.
 */
#include "../../rackd/engine/reconnect.c"

#include <string.h>

#include "fake.h"
#include "unit.h"

/* ---- neighbours, stubbed ---- */

static channel_fn handlers[EDP_TYPE_MAX];
static bool mac_valid = true, confirm_valid = true, usable = true;
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

/* The challenge the last confirmation was checked against. */
static uint8_t checked_against[EDP_CHALLENGE_LEN];

bool channel_confirm_valid(struct rackd *d, struct conn *c,
			   const struct edp_msg *m, const uint8_t *challenge)
{
	(void)d, (void)c, (void)m;
	memcpy(checked_against, challenge, EDP_CHALLENGE_LEN);
	return confirm_valid;
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

/* Numbered by the caller (a reconnection's answer): recorded with them. */
static uint32_t sent_seq[FAKE_MAX], sent_ack[FAKE_MAX];

int channel_send_numbered_at(struct rackd *d, struct conn *c, uint8_t type,
			     uint32_t counter, uint32_t seq, uint32_t ack)
{
	if (nmsgs < FAKE_MAX) {
		sent_seq[nmsgs] = seq;
		sent_ack[nmsgs] = ack;
	}
	return channel_send_numbered(d, c, type, counter);
}

bool local_remote_usable(const struct addr *a)
{
	(void)a;
	return usable;
}

/* Reconnection SYNs: recorded as messages of their type; what the next
 * one parsed says is set by the test. */
static struct rcsyn_seen answered;	/* the SYN a SYN-ACK answered */
static struct endpoint answered_to;	/* where that SYN-ACK went */
static uint8_t answered_challenge[EDP_CHALLENGE_LEN];
static unsigned third_acks;
static int parse_err;
static struct edp_msg parsed;
static struct rcsyn_seen parsed_seen;

int rcsyn_send_syn(struct rackd *d, struct conn *c, uint32_t counter)
{
	return channel_send_numbered(d, c, EDP_RECONNECT, counter);
}

int rcsyn_send_synack(struct rackd *d, struct conn *c, uint32_t counter,
		      const struct rcsyn_seen *syn,
		      const struct endpoint *wire_local,
		      const struct endpoint *wire_remote,
		      const uint8_t *challenge)
{
	(void)wire_local;
	answered = *syn;
	answered_to = *wire_remote;
	memcpy(answered_challenge, challenge, EDP_CHALLENGE_LEN);
	return channel_send_numbered(d, c, EDP_RECONNECT_ACK, counter);
}

int rcsyn_send_confirm(struct rackd *d, struct conn *c,
		       const struct rcsyn_seen *synack)
{
	(void)d;
	if (!synack->has_challenge)
		return -EPROTO;
	c->edp->hb_out++;
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

/* The conn table's half of the real check; unit tests have no kernel
 * sockets to collide with. */
enum splice_tuple splice_tuple_check(struct rackd *d, const struct conn *c,
				     const struct endpoint *wl,
				     const struct endpoint *wr,
				     struct conn **other)
{
	struct conn *o = conn_lookup_wire(&d->conns, wl, wr);

	if (other)
		*other = o;
	return o && o != c ? SPLICE_TUPLE_CONN : SPLICE_TUPLE_FREE;
}

void hold_begin(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d, (void)conns;
	held += n;
}

static unsigned hold_end_calls;

void hold_end(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d, (void)conns;
	resumed += n;
	hold_end_calls++;
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
	mac_valid = confirm_valid = usable = true;
	splice_err = 0;
	nmsgs = spliced = held = resumed = nudged = heard = moved = probed = 0;
	hold_end_calls = 0;
	third_acks = 0;
	parse_err = 0;
	memset(&answered, 0, sizeof(answered));
	memset(&answered_to, 0, sizeof(answered_to));
	memset(&path, 0, sizeof(path));
	c = fake_conn(&d, "10.0.0.1:22", "10.0.0.2:40000", false);
	c->host = &path;
	conn_index_edp(&d.conns, c, c->edp->conn_id);
	event_subscribe(&d.events, RECONNECT_EVENTS, reconnect_event, &d);
	return c;
}

static void teardown(void)
{
	reconnect_free(&d);
	fake_rackd_free(&d);
}

static struct packet segment(const char *src, const char *dst)
{
	struct endpoint s, t;
	struct packet p = { 0 };
	bool port;

	CHECK(endpoint_parse(src, &s, &port) == 0);
	CHECK(endpoint_parse(dst, &t, &port) == 0);
	p.src = s.addr;
	p.sport = s.port;
	p.dst = t.addr;
	p.dport = t.port;
	return p;
}

/* The numbers the next message delivered carries. */
static uint32_t deliver_seq, deliver_ack;

/* A zero-length message of TYPE arriving from SRC to DST. */
static uint32_t deliver(struct conn *c, uint8_t type, uint32_t counter,
			const char *src, const char *dst)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = type,
			     .conn_id = c->edp->conn_id, .counter = counter };
	struct packet p = segment(src, dst);

	p.flags = TCP_FLAG_ACK;
	p.seq = deliver_seq;
	p.ack = deliver_ack;
	return handlers[type](&d, c, &p, &m);
}

/* A reconnection SYN (or SYN-ACK) from SRC to DST, carrying TYPE. */
static uint32_t deliver_syn(struct conn *c, uint8_t type, uint32_t counter,
			    uint64_t conn_id, const char *src, const char *dst)
{
	struct packet p = segment(src, dst);

	parsed = (struct edp_msg){ .version = EDP_VERSION, .type = type,
				   .conn_id = conn_id, .counter = counter };
	parsed_seen = (struct rcsyn_seen){ .end = 5000, .ack = 7000,
					   .has_ts = true, .tsval = 42,
					   .has_challenge = true };
	memset(parsed_seen.challenge, 0x77, EDP_CHALLENGE_LEN);
	(void)c;
	p.flags = TCP_FLAG_SYN |
		  (type == EDP_RECONNECT_ACK ? TCP_FLAG_ACK : 0);
	return reconnect_syn_input(&d, &p);
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
	CHECK(handlers[EDP_RECONNECT_CONFIRM] != NULL);
	CHECK(handlers[EDP_HEARTBEAT] == NULL);
	teardown();
}

/* A SYN proves the key, not the address it names: answered there with a
 * challenge, and nothing else changes. */
TEST(test_syn_answered_with_a_challenge_only)
{
	struct conn *c = setup();

	CHECK_EQ_INT(deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id,
				 "10.0.7.2:61000", "10.0.0.1:22"), NF_DROP);
	CHECK_EQ_INT(d.reconnect->stats.challenges_out, 1);
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 1);
	CHECK_EQ_INT(sent_counter[0], 3);
	CHECK_EQ_INT(answered_to.port, 61000);
	CHECK_EQ_INT(answered.end, 5000);
	CHECK_EQ_INT(answered.tsval, 42);
	CHECK(!memcmp(answered_challenge, c->edp->rc_challenge,
		      EDP_CHALLENGE_LEN));
	CHECK_EQ_INT(c->edp->hb_in, 3);
	fake_advance(1);
	CHECK_EQ_INT(d.reconnect->stats.accepted, 0);
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(moved, 0);
	CHECK_EQ_INT(c->wire_remote.port, 40000);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	teardown();
}

/* Through a NAT: another address and port than the socket's. The third
 * segment from there moves the connection, spliced before it is
 * answered, on the next turn of the loop. */
TEST(test_confirmed_from_the_syns_source_is_followed)
{
	struct conn *c = setup();

	deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id, "10.0.7.2:61000",
		    "10.0.0.1:22");
	/* The third segment: the SYN's end, our SYN-ACK's end. */
	deliver_seq = 5000;
	deliver_ack = 7777;
	CHECK_EQ_INT(deliver(c, EDP_RECONNECT_CONFIRM, 4, "10.0.7.2:61000",
			     "10.0.0.1:22"), NF_DROP);
	deliver_seq = deliver_ack = 0;
	CHECK(!memcmp(checked_against, answered_challenge,
		      EDP_CHALLENGE_LEN));
	CHECK_EQ_INT(d.reconnect->stats.accepted, 1);
	CHECK_EQ_INT(c->edp->hb_in, 4);
	CHECK(!c->edp->rc_claim);
	CHECK_EQ_INT(c->wire_remote.port, 61000);
	CHECK_EQ_INT(moved, 1);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 1);
	CHECK_EQ_INT(spliced, 0);
	fake_advance(0);
	CHECK_EQ_INT(spliced, 1);
	CHECK_EQ_INT(spliced_remote.port, 61000);
	/* Its answer carries the confirmation's counter and resumes the
	 * peer; ours resumes here. */
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 2);
	CHECK_EQ_INT(sent_counter[1], 4);
	/* With the handshake's own numbers, which a window tracker that
	 * met the flow at the SYN takes (reconnect_flush). */
	CHECK_EQ_INT(sent_seq[1], 7777);
	CHECK_EQ_INT(sent_ack[1], 5000);
	CHECK_EQ_INT(heard, 1);
	CHECK_EQ_INT(c->reconnections, 1);
	/* Its copy again: a replay, the claim is spent. */
	deliver(c, EDP_RECONNECT_CONFIRM, 4, "10.0.7.2:61000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_unproven, 1);
	teardown();
}

/* The key's holder names someone else's address and port (issue 20's
 * redirect): the SYN-ACK goes there, and a third segment from anywhere
 * else, or one that does not know the challenge, changes nothing. */
TEST(test_confirmation_from_elsewhere_refused)
{
	struct conn *c = setup();

	deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id, "10.0.5.5:5555",
		    "10.0.0.1:22");
	CHECK_EQ_INT(answered_to.port, 5555);
	deliver(c, EDP_RECONNECT_CONFIRM, 4, "10.0.7.2:61000", "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_CONFIRM, 5, "10.0.5.5:5556", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_unproven, 2);
	confirm_valid = false;
	deliver(c, EDP_RECONNECT_CONFIRM, 6, "10.0.5.5:5555", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_mac, 1);
	confirm_valid = true;
	/* A counter not above the SYN's: a replay. */
	deliver(c, EDP_RECONNECT_CONFIRM, 3, "10.0.5.5:5555", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	/* Too late: the challenge went stale. */
	fake_advance(RECONNECT_CLAIM_MS + 1);
	deliver(c, EDP_RECONNECT_CONFIRM, 7, "10.0.5.5:5555", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_unproven, 3);
	CHECK_EQ_INT(d.reconnect->stats.accepted, 0);
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(c->wire_remote.port, 40000);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	teardown();
}

/* Two connections can never share the tuple their segments travel with:
 * the kernel could not tell them apart. */
TEST(test_confirmation_onto_another_connections_tuple_refused)
{
	struct conn *c = setup();
	struct conn *other = fake_conn(&d, "10.0.0.1:22", "10.0.7.2:61000",
				       false);

	deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id, "10.0.7.2:61000",
		    "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_CONFIRM, 4, "10.0.7.2:61000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_collision, 1);
	CHECK_EQ_INT(d.reconnect->stats.accepted, 0);
	CHECK_EQ_INT(c->wire_remote.port, 40000);
	fake_advance(1);
	CHECK_EQ_INT(spliced, 0);
	/* Once the other one is gone, the same claim goes through. */
	free(other->edp);
	conn_remove(&d.conns, other);
	deliver(c, EDP_RECONNECT_CONFIRM, 5, "10.0.7.2:61000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.accepted, 1);
	CHECK(conn_lookup_wire(&d.conns, &c->wire_local, &c->wire_remote) ==
	      c);
	teardown();
}

TEST(test_retried_syn_keeps_its_challenge)
{
	struct conn *c = setup();
	uint8_t first[EDP_CHALLENGE_LEN];

	deliver_syn(c, EDP_RECONNECT, 3, c->edp->conn_id, "10.0.7.2:61000",
		    "10.0.0.1:22");
	memcpy(first, answered_challenge, sizeof(first));
	deliver_syn(c, EDP_RECONNECT, 4, c->edp->conn_id, "10.0.7.2:61000",
		    "10.0.0.1:22");
	CHECK(!memcmp(first, answered_challenge, sizeof(first)));
	/* The answer to the first still counts. */
	deliver(c, EDP_RECONNECT_CONFIRM, 5, "10.0.7.2:61000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.accepted, 1);
	/* Another source: another challenge. */
	deliver_syn(c, EDP_RECONNECT, 6, c->edp->conn_id, "10.0.8.2:61000",
		    "10.0.0.1:22");
	CHECK(memcmp(first, answered_challenge, sizeof(first)) != 0);
	teardown();
}

TEST(test_refused)
{
	struct conn *c = setup();

	/* Not under the connection's key. */
	mac_valid = false;
	deliver_syn(c, EDP_RECONNECT, 5, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_mac, 1);
	mac_valid = true;
	/* A counter not above the last one seen: a replay. */
	c->edp->hb_in = 5;
	deliver_syn(c, EDP_RECONNECT, 5, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	/* Our own end never moves: another local port is refused. */
	deliver_syn(c, EDP_RECONNECT, 6, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:23");
	CHECK_EQ_INT(d.reconnect->stats.refused_other, 1);
	/* From an address no peer has (ours, loopback, broadcast...). */
	usable = false;
	deliver_syn(c, EDP_RECONNECT, 6, c->edp->conn_id, "127.0.0.1:40000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_address, 1);
	usable = true;
	/* A zero-length RECONNECT cannot be challenged. */
	deliver(c, EDP_RECONNECT, 7, "10.0.7.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_other, 2);
	/* A third segment with no SYN before it. */
	deliver(c, EDP_RECONNECT_CONFIRM, 8, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_unproven, 1);
	/* A connection on no path is in no state to follow. */
	c->host = NULL;
	deliver_syn(c, EDP_RECONNECT, 9, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_other, 3);
	fake_advance(1);
	/* Nothing moved, nothing answered. */
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(nmsgs, 0);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	CHECK_EQ_INT(c->wire_remote.addr.v4.s_addr,
		     unit_addr("10.0.0.2").v4.s_addr);
	CHECK_EQ_INT(c->edp->hb_in, 5);
	teardown();
}

TEST(test_syn_reconnection_malformed_or_unknown)
{
	struct conn *c = setup();

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
	CHECK_EQ_INT(nmsgs, 0);
	teardown();
}

TEST(test_confirmed_held_connection_resumes)
{
	struct conn *c = setup();
	struct conn_hold h = { 0 };

	c->hold = &h;
	c->state = CONN_SUSPENDED;
	deliver_syn(c, EDP_RECONNECT, 1, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	CHECK_EQ_INT(heard + resumed, 0);
	deliver(c, EDP_RECONNECT_CONFIRM, 2, "10.0.7.2:40000", "10.0.0.1:22");
	fake_advance(0);
	/* Answered, then its path heard and its hold lifted. */
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 2);
	CHECK_EQ_INT(heard, 1);
	CHECK_EQ_INT(resumed, 1);
	c->hold = NULL;
	teardown();
}

/* Many connections followed in one burst lift their holds together: one
 * call (one nft transaction), not one each. */
TEST(test_resumptions_batched)
{
	struct conn *c = setup();
	struct conn *b = fake_conn(&d, "10.0.0.1:22", "10.0.0.2:40001", false);
	struct conn_hold h1 = { 0 }, h2 = { 0 };

	b->host = &path;
	conn_index_edp(&d.conns, b, b->edp->conn_id);
	c->hold = &h1;
	b->hold = &h2;
	c->state = b->state = CONN_SUSPENDED;
	deliver_syn(c, EDP_RECONNECT, 1, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_CONFIRM, 2, "10.0.7.2:40000", "10.0.0.1:22");
	deliver_syn(b, EDP_RECONNECT, 1, b->edp->conn_id, "10.0.7.2:40001",
		    "10.0.0.1:22");
	deliver(b, EDP_RECONNECT_CONFIRM, 2, "10.0.7.2:40001", "10.0.0.1:22");
	fake_advance(0);
	CHECK_EQ_INT(resumed, 2);
	CHECK_EQ_INT(hold_end_calls, 1);
	c->hold = b->hold = NULL;
	teardown();
}

TEST(test_splice_failure_answers_nothing)
{
	struct conn *c = setup();

	splice_err = EIO;
	deliver_syn(c, EDP_RECONNECT, 1, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_CONFIRM, 2, "10.0.7.2:40000", "10.0.0.1:22");
	fake_advance(0);
	/* The peer asks again; nothing said meanwhile but the SYN-ACK. */
	CHECK_EQ_INT(nmsgs, 1);
	CHECK_EQ_INT(resumed + nudged, 0);
	teardown();
}

TEST(test_same_endpoints_again_is_no_move)
{
	struct conn *c = setup();

	deliver_syn(c, EDP_RECONNECT, 1, c->edp->conn_id, "10.0.0.2:40000",
		    "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_CONFIRM, 2, "10.0.0.2:40000", "10.0.0.1:22");
	fake_advance(0);
	/* Answered (the peer's answer may have been lost), no new event. */
	CHECK_EQ_INT(sent_of(EDP_RECONNECT_ACK), 2);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	CHECK_EQ_INT(moved, 0);
	teardown();
}

TEST(test_gone_before_flush_is_forgotten)
{
	struct conn *c = setup();

	deliver_syn(c, EDP_RECONNECT, 1, c->edp->conn_id, "10.0.7.2:40000",
		    "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_CONFIRM, 2, "10.0.7.2:40000", "10.0.0.1:22");
	event_post(&d.events, EVENT_GONE, c, NULL);
	fake_advance(0);
	CHECK_EQ_INT(spliced, 0);
	CHECK_EQ_INT(nmsgs, 1);
	teardown();
}

/* Our own reconnection: the peer's SYN-ACK is answered with the third
 * segment, and only the peer's answer to that (sent once it spliced)
 * confirms and resumes. */
TEST(test_our_reconnection_confirmed_then_resumed)
{
	struct conn *c = setup();

	c->edp->hb_out = 10;
	reconnect_begin(c);
	CHECK(!c->confirmed);
	reconnect_send(&d, c);
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 1);
	CHECK_EQ_INT(sent_counter[0], 11);
	/* An answer to one never sent completes nothing. */
	deliver_syn(c, EDP_RECONNECT_ACK, 12, c->edp->conn_id,
		    "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(third_acks, 0);
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 1);
	deliver_syn(c, EDP_RECONNECT_ACK, 11, c->edp->conn_id,
		    "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(third_acks, 1);
	CHECK_EQ_INT(d.reconnect->stats.acks_out, 1);
	CHECK_EQ_INT(c->edp->hb_out, 12);
	/* Not yet: the peer has not spliced. */
	CHECK(!c->confirmed);
	CHECK_EQ_INT(heard, 0);
	/* A stale answer (before the move) proves the path, not the move. */
	deliver(c, EDP_RECONNECT_ACK, 10, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 2);
	/* The answer to our third segment: confirmed, and resumed on the
	 * next turn of the loop with whatever else got there meanwhile. */
	deliver(c, EDP_RECONNECT_ACK, 12, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK(c->confirmed);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 1);
	CHECK_EQ_INT(heard, 0);
	fake_advance(0);
	CHECK_EQ_INT(heard, 1);
	CHECK_EQ_INT(c->edp->rc_answers, 1);
	/* Answered twice: the second is a replay. */
	deliver(c, EDP_RECONNECT_ACK, 12, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK_EQ_INT(d.reconnect->stats.refused_replay, 3);
	teardown();
}

/* Re-opened where it was (liveness.c): confirmed, resumed, not a move. */
TEST(test_reopened_where_it_was_is_no_move)
{
	struct conn *c = setup();

	c->edp->hb_out = 10;
	reconnect_reopen(c);
	CHECK(!c->confirmed && c->edp->rc_reopen);
	reconnect_send(&d, c);
	deliver_syn(c, EDP_RECONNECT_ACK, 11, c->edp->conn_id,
		    "10.0.0.2:40000", "10.0.0.1:22");
	deliver(c, EDP_RECONNECT_ACK, 12, "10.0.0.2:40000", "10.0.0.1:22");
	CHECK(c->confirmed && !c->edp->rc_reopen);
	CHECK_EQ_INT(fake_count(EVENT_RECONNECT), 0);
	CHECK_EQ_INT(c->reconnections, 0);
	fake_advance(0);
	CHECK_EQ_INT(heard, 1);
	/* A move after it is one again. */
	reconnect_begin(c);
	CHECK(!c->edp->rc_reopen);
	teardown();
}

/* A reset that acknowledges exactly our pending reconnection SYN is the
 * path's answer, not the socket's business; any other is not. */
TEST(test_reset_answering_our_syn_is_the_paths)
{
	struct conn *c = setup();
	struct packet p = segment("10.0.0.2:40000", "10.0.0.1:22");

	c->edp->hb_out = 10;
	reconnect_reopen(c);
	reconnect_send(&d, c);
	c->edp->rc_syn_end = 4242;	/* what rcsyn.c would have set */
	p.flags = TCP_FLAG_RST | TCP_FLAG_ACK;
	p.ack = 4241;
	CHECK(!reconnect_reset(&d, c, &p));
	p.ack = 4242;
	p.flags = TCP_FLAG_RST;
	CHECK(!reconnect_reset(&d, c, &p));
	p.flags = TCP_FLAG_RST | TCP_FLAG_ACK;
	CHECK(reconnect_reset(&d, c, &p));
	CHECK(reconnect_reset(&d, c, &p));
	CHECK_EQ_INT(d.reconnect->stats.reset_by_path, 2);
	CHECK_EQ_INT(c->edp->rc_refusals, 2);
	/* Nothing pending: nothing of ours to answer. */
	c->edp->rc_pending = 0;
	CHECK(!reconnect_reset(&d, c, &p));
	teardown();
}

/* A socket retransmitting unanswered on a path that answers re-opens
 * alone; not on a suspended path, a held or an unconfirmed one, nor
 * below the threshold. */
TEST(test_stalled_connection_reopens_alone)
{
	struct conn *c = setup();

	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS - 1);
	CHECK(c->confirmed);
	/* reopen = no: heartbeats only, never a SYN. */
	d.cfg->reopen = false;
	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS);
	CHECK(c->confirmed);
	CHECK_EQ_INT(probed, 0);
	d.cfg->reopen = true;
	path.suspended = true;
	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS);
	CHECK(c->confirmed);
	path.suspended = false;
	/* Seen first: the path is probed. */
	fake_advance(10);
	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS);
	CHECK(c->confirmed);
	CHECK_EQ_INT(probed, 1);
	/* Still stalled, the path silent meanwhile: not this flow alone. */
	fake_advance(1000);
	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS);
	CHECK(c->confirmed);
	/* Still stalled, the path heard since: this flow alone. */
	path.last_heard = fake_now;
	fake_advance(1000);
	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS);
	CHECK(!c->confirmed && c->edp->rc_reopen);
	CHECK_EQ_INT(d.reconnect->stats.stalls, 1);
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 1);
	/* Already re-opening: not again. */
	reconnect_stalled(&d, c, RECONNECT_STALL_RETRANSMITS + 1);
	CHECK_EQ_INT(d.reconnect->stats.stalls, 1);
	teardown();
}

TEST(test_synack_without_a_challenge_is_not_answered)
{
	struct conn *c = setup();
	struct packet p = segment("10.0.0.2:40000", "10.0.0.1:22");

	c->edp->hb_out = 10;
	reconnect_begin(c);
	reconnect_send(&d, c);
	parsed = (struct edp_msg){ .version = EDP_VERSION,
				   .type = EDP_RECONNECT_ACK,
				   .conn_id = c->edp->conn_id, .counter = 11 };
	parsed_seen = (struct rcsyn_seen){ .end = 5000, .ack = 7000 };
	p.flags = TCP_FLAG_SYN | TCP_FLAG_ACK;
	reconnect_syn_input(&d, &p);
	CHECK_EQ_INT(third_acks, 0);
	CHECK_EQ_INT(d.reconnect->stats.refused_other, 1);
	CHECK(!c->confirmed);
	teardown();
}

/* Thousands moving at once send no more than reconnect_rate SYNs a
 * second, and an unanswered one waits longer each time. */
TEST(test_reconnections_paced_and_spaced)
{
	struct conn *c = setup();
	struct conn *b = fake_conn(&d, "10.0.0.1:22", "10.0.0.2:40001", false);
	struct conn *e = fake_conn(&d, "10.0.0.1:22", "10.0.0.2:40002", false);

	d.cfg->reconnect_rate = 10;	/* two at once */
	reconnect_init(&d);
	CHECK(reconnect_send(&d, c));
	CHECK(reconnect_send(&d, b));
	CHECK(!reconnect_send(&d, e));
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 2);
	CHECK_EQ_INT(d.reconnect->stats.paced, 1);
	/* Not due again yet: nothing sent, nothing held back. */
	CHECK(reconnect_send(&d, c));
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 2);
	fake_advance(RECONNECT_RETRY_MS);
	CHECK(reconnect_send(&d, e));
	CHECK(reconnect_send(&d, c));
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 4);
	/* Its second retry waits twice as long. */
	fake_advance(RECONNECT_RETRY_MS);
	CHECK(reconnect_send(&d, c));
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 4);
	fake_advance(RECONNECT_RETRY_MS);
	CHECK(reconnect_send(&d, c));
	CHECK_EQ_INT(sent_of(EDP_RECONNECT), 5);
	CHECK_EQ_INT(c->edp->rc_pending, 3);
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

/* "rackctl peer" that nft refuses, or that would put a connection onto
 * another's tuple: nothing moved, nothing unconfirmed. */
TEST(test_manual_peer_undone_when_refused)
{
	struct conn *c = setup();
	struct conn *other = fake_conn(&d, "10.0.9.1:22", "10.0.8.2:40000",
				       false);
	struct endpoint peer, was_l = c->wire_local, was_r = c->wire_remote;
	bool port;

	CHECK(endpoint_parse("10.0.8.2:40000", &peer, &port) == 0);
	/* local_source() says 10.0.9.1: exactly OTHER's tuple. */
	CHECK_EQ_INT(reconnect_set_peer(&d, c, &peer, true), -EADDRINUSE);
	CHECK(endpoint_equal(&c->wire_local, &was_l));
	CHECK(endpoint_equal(&c->wire_remote, &was_r));
	CHECK(c->confirmed);
	free(other->edp);
	conn_remove(&d.conns, other);
	splice_err = EIO;
	CHECK_EQ_INT(reconnect_set_peer(&d, c, &peer, true), -EIO);
	CHECK(endpoint_equal(&c->wire_local, &was_l));
	CHECK(endpoint_equal(&c->wire_remote, &was_r));
	CHECK(c->confirmed);
	CHECK_EQ_INT(held, 0);
	CHECK(conn_lookup_wire(&d.conns, &was_l, &was_r) == c);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_registers_reconnections),
	UNIT(test_syn_answered_with_a_challenge_only),
	UNIT(test_confirmed_from_the_syns_source_is_followed),
	UNIT(test_confirmation_from_elsewhere_refused),
	UNIT(test_confirmation_onto_another_connections_tuple_refused),
	UNIT(test_retried_syn_keeps_its_challenge),
	UNIT(test_refused),
	UNIT(test_syn_reconnection_malformed_or_unknown),
	UNIT(test_confirmed_held_connection_resumes),
	UNIT(test_resumptions_batched),
	UNIT(test_splice_failure_answers_nothing),
	UNIT(test_same_endpoints_again_is_no_move),
	UNIT(test_gone_before_flush_is_forgotten),
	UNIT(test_our_reconnection_confirmed_then_resumed),
	UNIT(test_reopened_where_it_was_is_no_move),
	UNIT(test_reset_answering_our_syn_is_the_paths),
	UNIT(test_stalled_connection_reopens_alone),
	UNIT(test_synack_without_a_challenge_is_not_answered),
	UNIT(test_reconnections_paced_and_spaced),
	UNIT(test_manual_peer_moves_and_holds),
	UNIT(test_manual_peer_undone_when_refused),
};

UNIT_MAIN("reconnect", tests)
