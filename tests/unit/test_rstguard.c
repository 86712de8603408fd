// SPDX-License-Identifier: GPL-2.0-only
/*
 * rstguard alone: its source linked with fake kernel I/O (fake.h: a fake
 * clock, recorded sends); liveness is a stub path and a probe counter.
 * Covers the resets that go to the socket at once (unknown hop count,
 * the peer's, an unmanaged connection), one held back and dropped once
 * the path is heard, one delivered as it came when it is not, and a
 * connection that goes while one is held.
 */
#include "../../rackd/engine/rstguard.c"

#include <string.h>

#include "fake.h"
#include "unit.h"

static unsigned probes;

void live_probe_now(struct rackd *d, struct live_peer *p)
{
	(void)d, (void)p;
	probes++;
}

static struct rackd d;
static struct rstguard_state guard;
static struct live_peer path;

static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	memset(&guard, 0, sizeof(guard));
	memset(&path, 0, sizeof(path));
	d.rstguard = &guard;
	rstguard_init(&d);
	probes = 0;
	fake_nsent = 0;
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:22", true);
	c->host = &path;
	path.last_heard = fake_now;
	c->edp->peer_ttl = 63;
	return c;
}

static void teardown(void)
{
	for (struct conn *c = d.conns.head; c; c = c->next)
		c->host = NULL;
	rstguard_free(&d);
	fake_rackd_free(&d);
}

static struct packet rst(uint8_t ttl)
{
	struct packet p = { .ttl = ttl, .seq = 5000, .ack = 0,
			    .flags = TCP_FLAG_RST };

	return p;
}

TEST(test_resets_that_go_to_the_socket_at_once)
{
	struct conn *c = setup();
	struct packet p = rst(63);

	/* The peer's hop count. */
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_ACCEPT);
	/* No connection of ours. */
	CHECK_EQ_INT(rstguard_inbound(&d, NULL, &p), NF_ACCEPT);
	/* The peer's hop count not learnt yet. */
	p.ttl = 64;
	c->edp->peer_ttl = 0;
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_ACCEPT);
	/* Not managed (adopting, released): plain TCP's rules. */
	c->edp->peer_ttl = 63;
	c->state = CONN_ADOPTING;
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_ACCEPT);
	CHECK_EQ_INT(guard.stats.held, 0);
	CHECK_EQ_INT(probes, 0);
	teardown();
}

TEST(test_held_back_and_dropped_when_the_path_answers)
{
	struct conn *c = setup();
	struct packet p = rst(64);

	fake_advance(10);
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_DROP);
	CHECK(c->edp->rst_held);
	CHECK_EQ_INT(guard.stats.held, 1);
	CHECK_EQ_INT(probes, 1);
	/* Another one while held: counted, one probe is enough. */
	p.seq = 5100;
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_DROP);
	CHECK_EQ_INT(guard.stats.held, 2);
	CHECK_EQ_INT(probes, 1);
	/* Not heard yet: still held. */
	fake_advance(RSTGUARD_TICK_MS);
	CHECK(c->edp->rst_held);
	/* The peer answers. */
	path.last_heard = fake_now + 1;
	fake_advance(RSTGUARD_TICK_MS);
	CHECK(!c->edp->rst_held);
	CHECK_EQ_INT(guard.stats.dropped, 1);
	CHECK_EQ_INT(guard.stats.delivered, 0);
	CHECK_EQ_INT(fake_nsent, 0);
	CHECK(!timer_pending(&guard.timer));
	teardown();
}

TEST(test_delivered_as_it_came_when_the_path_stays_silent)
{
	struct conn *c = setup();
	struct packet p = rst(64);

	p.flags = TCP_FLAG_RST | TCP_FLAG_ACK;
	p.ack = 7777;
	fake_advance(10);
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_DROP);
	fake_advance(2 * d.cfg->suspend_after_ms - RSTGUARD_TICK_MS);
	CHECK(c->edp->rst_held);
	CHECK_EQ_INT(fake_nsent, 0);
	fake_advance(2 * RSTGUARD_TICK_MS);
	CHECK(!c->edp->rst_held);
	CHECK_EQ_INT(guard.stats.delivered, 1);
	if (CHECK_EQ_INT(fake_nsent, 1)) {
		CHECK(endpoint_equal(&fake_sent[0].src, &c->remote));
		CHECK(endpoint_equal(&fake_sent[0].dst, &c->local));
		CHECK_EQ_INT(fake_sent[0].seq, 5000);
		CHECK_EQ_INT(fake_sent[0].ack, 7777);
		CHECK_EQ_INT(fake_sent[0].flags, TCP_FLAG_RST | TCP_FLAG_ACK);
	}
	teardown();
}

TEST(test_a_connection_gone_takes_its_reset_along)
{
	struct conn *c = setup();
	struct conn *o = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22", true);
	struct packet p = rst(64);

	o->host = &path;
	o->edp->peer_ttl = 63;
	CHECK_EQ_INT(rstguard_inbound(&d, c, &p), NF_DROP);
	CHECK_EQ_INT(rstguard_inbound(&d, o, &p), NF_DROP);
	CHECK_EQ_INT(guard.nheld, 2);
	rstguard_event(&d, EVENT_GONE, c, NULL);
	CHECK_EQ_INT(guard.nheld, 1);
	CHECK(guard.held[0] == o);
	fake_advance(2 * d.cfg->suspend_after_ms + RSTGUARD_TICK_MS);
	CHECK_EQ_INT(guard.stats.delivered, 1);
	CHECK_EQ_INT(fake_nsent, 1);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_resets_that_go_to_the_socket_at_once),
	UNIT(test_held_back_and_dropped_when_the_path_answers),
	UNIT(test_delivered_as_it_came_when_the_path_stays_silent),
	UNIT(test_a_connection_gone_takes_its_reset_along),
};

UNIT_MAIN("rstguard", tests)
