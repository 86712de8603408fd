// SPDX-License-Identifier: GPL-2.0-only
/*
 * Liveness alone: its source linked with fake kernel I/O (fake.h), a
 * stubbed channel, splice and kept addresses, and path ops that record
 * what a path's news would make hold, reconnect and migrate do. Covers
 * what the namespace tests reach only after seconds: a path silent until
 * suspended, heard and resumed, replays and forgeries ignored, a link
 * without carrier, a parked path.
 */
#include "../../rackd/engine/liveness.c"

#include <errno.h>
#include <string.h>

#include "fake.h"
#include "unit.h"

/* ---- the channel, splice and kept addresses, stubbed ---- */

static channel_fn handlers[EDP_TYPE_MAX];
static bool mac_valid = true;
struct sent_msg {
	struct conn *c;
	uint8_t type;
	uint32_t counter;
};
static struct sent_msg msgs[FAKE_MAX];
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

/* A connection whose socket is gone: channel_send refuses to let it
 * carry heartbeats (-ENOENT: the kernel has none). ALL_CLOSED: every
 * connection's socket is gone. */
static struct conn *closed_carrier;
static bool all_closed;
static unsigned sweeps_asked;

int channel_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			  uint32_t counter)
{
	(void)d;
	if ((c == closed_carrier || all_closed) &&
	    (type == EDP_HEARTBEAT || type == EDP_HEARTBEAT_ACK))
		return -ENOENT;
	if (nmsgs < FAKE_MAX)
		msgs[nmsgs++] = (struct sent_msg){ c, type, counter };
	return 0;
}

bool local_is_kept(const struct local_state *s, const struct addr *addr)
{
	(void)s, (void)addr;
	return false;
}

/* No route change: the path's own local address stays the way out. */
int local_source(const struct addr *dst, struct addr *src)
{
	(void)dst, (void)src;
	return -ENETUNREACH;
}

int splice_apply(struct rackd *d, struct conn *const *conns, unsigned n)
{
	(void)d, (void)conns, (void)n;
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

static unsigned kept_locals;

void splice_keep_local(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
	kept_locals++;
}

/* ---- path ops that record ---- */

static unsigned downs, ups, parked_ticks, reconnects, moves, unholds;
static struct conn *last_down, *last_up;

static void op_down(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d;
	downs += n;
	if (n)
		last_down = conns[0];
	for (unsigned i = 0; i < n; i++)
		conns[i]->state = CONN_SUSPENDED;
}

static void op_up(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d;
	ups += n;
	if (n)
		last_up = conns[0];
	for (unsigned i = 0; i < n; i++)
		conns[i]->state = CONN_CONNECTED;
}

static void op_parked(struct rackd *d, struct live_peer *p)
{
	(void)d, (void)p;
	parked_ticks++;
}

static bool paced;

static bool op_reconnect(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
	if (paced)
		return false;
	reconnects++;
	return true;
}

/* As reconnect_begin(): unconfirmed until the peer follows. */
static void op_moving(struct conn *c)
{
	c->confirmed = false;
	moves++;
}

static unsigned reopened;

/* As reconnect_reopen(). */
static void op_reopen(struct conn *c)
{
	c->confirmed = false;
	reopened++;
}

static void op_held_again(struct rackd *d, struct conn *c, uint64_t held_ms)
{
	(void)d, (void)c, (void)held_ms;
}

static void op_unhold(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
	unholds++;
}

/* As daemon_sweep_soon(). */
static void op_carriers_gone(struct rackd *d)
{
	(void)d;
	sweeps_asked++;
}

static const struct live_ops ops = {
	.carriers_gone = op_carriers_gone,
	.path_down = op_down,
	.path_up = op_up,
	.parked_tick = op_parked,
	.reconnect = op_reconnect,
	.moving = op_moving,
	.reopen = op_reopen,
	.held_again = op_held_again,
	.unhold = op_unhold,
};

static struct rackd d;

static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	live_set_ops(&d, &ops);
	memset(handlers, 0, sizeof(handlers));
	CHECK_EQ_INT(live_handle_messages(&d), 0);
	mac_valid = true;
	nmsgs = downs = ups = parked_ticks = reconnects = moves = unholds = 0;
	kept_locals = reopened = 0;
	paced = false;
	last_down = last_up = NULL;
	closed_carrier = NULL;
	all_closed = false;
	sweeps_asked = 0;
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:22", true);
	event_subscribe(&d.events, LIVE_EVENTS, live_event, &d);
	event_post(&d.events, EVENT_CONNECTED, c, NULL);
	return c;
}

static void teardown(void)
{
	for (struct conn *c = d.conns.head; c; c = c->next)
		live_detach(&d, c);
	live_free(&d);
	fake_rackd_free(&d);
}

static unsigned sent_of(uint8_t type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nmsgs; i++)
		n += msgs[i].type == type;
	return n;
}

/* A numbered message from the peer, through the handler liveness
 * registered with the channel. */
static uint32_t deliver(struct conn *c, uint8_t type, uint32_t counter)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = type,
			     .conn_id = c->edp->conn_id, .counter = counter };
	struct packet p = { 0 };

	return handlers[type](&d, c, &p, &m);
}

TEST(test_registers_heartbeats)
{
	setup();
	CHECK(handlers[EDP_HEARTBEAT] != NULL);
	CHECK(handlers[EDP_HEARTBEAT_ACK] != NULL);
	CHECK(handlers[EDP_RECONNECT] == NULL);
	teardown();
}

TEST(test_silent_path_is_suspended)
{
	struct conn *c = setup();

	CHECK(c->host != NULL);
	/* suspend_after is 5 s: heartbeats every third of it, unanswered. */
	fake_advance(d.cfg->suspend_after_ms - 1);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 3);
	CHECK_EQ_INT(downs, 0);
	CHECK(!c->host->suspended);
	fake_advance(1);
	CHECK_EQ_INT(downs, 1);
	CHECK(last_down == c);
	CHECK(c->host->suspended);
	CHECK_EQ_INT(live_suspended_count(&d), 1);
	teardown();
}

TEST(test_answered_path_stays_up)
{
	struct conn *c = setup();

	for (int i = 0; i < 20; i++) {
		fake_advance(1000);
		/* The peer answers every heartbeat. */
		if (c->edp->hb_out > c->edp->hb_acked)
			CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT_ACK,
					     c->edp->hb_out), NF_DROP);
	}
	CHECK_EQ_INT(downs, 0);
	CHECK(sent_of(EDP_HEARTBEAT) >= 6);
	CHECK_EQ_INT(d.live->stats.heartbeat_acks_in, sent_of(EDP_HEARTBEAT));
	teardown();
}

TEST(test_heard_path_resumes)
{
	struct conn *c = setup();

	/* Heartbeats alone: re-opening is tested below. */
	d.cfg->reopen = false;
	fake_advance(d.cfg->suspend_after_ms);
	CHECK_EQ_INT(downs, 1);
	/* Suspended: tried every retry_interval. */
	nmsgs = 0;
	fake_advance(3 * d.cfg->retry_interval_ms);
	CHECK(sent_of(EDP_HEARTBEAT) >= 3);
	CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out), NF_DROP);
	CHECK_EQ_INT(ups, 1);
	CHECK(last_up == c);
	CHECK(!c->host->suspended);
	CHECK_EQ_INT(live_suspended_count(&d), 0);
	teardown();
}

/*
 * The peer's heartbeat is answered, but proves only that its segments
 * reach us (behind a NAT that forgot the flow, ours may not reach it):
 * the path stays suspended and probes at once; the answer to that probe
 * resumes it.
 */
TEST(test_peer_heartbeat_answered_but_only_our_answer_resumes)
{
	struct conn *c = setup();

	d.cfg->reopen = false;
	fake_advance(d.cfg->suspend_after_ms);
	CHECK_EQ_INT(downs, 1);
	fake_advance(100);
	nmsgs = 0;
	CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT, 7), NF_DROP);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT_ACK), 1);
	CHECK_EQ_INT(msgs[0].counter, 7);
	CHECK_EQ_INT(c->edp->hb_in, 7);
	CHECK_EQ_INT(ups, 0);
	CHECK(c->host->suspended);
	CHECK_EQ_INT(d.live->stats.heard_one_way, 1);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 1);
	/* A second one right after: no second probe yet. */
	CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT, 8), NF_DROP);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 1);
	CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out), NF_DROP);
	CHECK_EQ_INT(ups, 1);
	CHECK(!c->host->suspended);
	teardown();
}

/* Working, the peer's heartbeats do not keep a path whose own go
 * unanswered from being suspended (a one-way fault). */
TEST(test_one_way_path_is_suspended)
{
	struct conn *c = setup();

	for (uint32_t i = 1; i <= 10; i++) {
		fake_advance(d.cfg->suspend_after_ms / 5);
		deliver(c, EDP_HEARTBEAT, i);
	}
	CHECK_EQ_INT(downs, 1);
	CHECK(c->host->suspended);
	teardown();
}

TEST(test_replays_and_forgeries_ignored)
{
	struct conn *c = setup();

	d.cfg->reopen = false;
	fake_advance(d.cfg->suspend_after_ms);
	CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT, 7), NF_DROP);
	CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out), NF_DROP);
	CHECK_EQ_INT(ups, 1);
	fake_advance(d.cfg->suspend_after_ms + 1);
	CHECK_EQ_INT(downs, 2);
	nmsgs = 0;
	/* The same heartbeat again, an answer to one never sent, an answer
	 * under the wrong key: the path stays suspended, nothing answered. */
	deliver(c, EDP_HEARTBEAT, 7);
	deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out + 1);
	mac_valid = false;
	deliver(c, EDP_HEARTBEAT, 8);
	CHECK_EQ_INT(d.live->stats.replayed, 2);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT_ACK), 0);
	CHECK_EQ_INT(ups, 1);
	CHECK(c->host->suspended);
	teardown();
}

TEST(test_moved_connection_reconnects_on_resume)
{
	struct conn *c = setup();

	fake_advance(d.cfg->suspend_after_ms);
	/* Its endpoints changed while the path was down: the peer must
	 * learn them before it is resumed. */
	c->confirmed = false;
	reconnects = 0;
	deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out);
	CHECK_EQ_INT(ups, 0);
	CHECK(reconnects >= 1);
	/* On a working path, asked again until the peer answers. */
	reconnects = 0;
	fake_advance(2000);
	CHECK(reconnects >= 4);
	teardown();
}

/* Many connections reconnecting at once, held back by the pacing: the
 * rest go at the next tick, which comes sooner than the usual retry. */
TEST(test_paced_reconnections_resume_soon)
{
	struct conn *c = setup();
	struct conn *other = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22",
				       true);

	d.cfg->reopen = false;
	event_post(&d.events, EVENT_CONNECTED, other, NULL);
	fake_advance(d.cfg->suspend_after_ms);
	c->confirmed = other->confirmed = false;
	paced = true;
	deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out);
	CHECK_EQ_INT(reconnects, 0);
	CHECK(timer_pending(&c->host->timer));
	CHECK(c->host->timer.deadline <= fake_now + LIVE_PACED_RETRY_MS);
	/* Tokens again: both go at that tick. */
	paced = false;
	fake_advance(LIVE_PACED_RETRY_MS);
	CHECK_EQ_INT(reconnects, 2);
	teardown();
}

TEST(test_link_without_carrier_suspends_at_once)
{
	struct conn *c = setup();
	struct rtnl_addr_event a = { .ifindex = 3 };
	struct rtnl_link_event down = { .ifindex = 3, .name = "veth0",
					.up = true, .carrier = false };
	struct rtnl_link_event up = down;

	a.prefix.addr = c->local.addr;
	a.prefix.len = 24;
	live_addr_event(&d, &a);
	live_link_event(&d, &down);
	CHECK_EQ_INT(downs, 1);
	CHECK_EQ_INT(d.live->stats.link_suspensions, 1);
	/* Nothing is sent from a link without carrier. */
	nmsgs = 0;
	fake_advance(3000);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 0);
	CHECK_EQ_INT(reconnects, 0);
	CHECK_EQ_STR(live_wait_name(live_waiting_for(&d, c)), "link_down");
	/* Its return is tried at once: re-opened with a reconnection. */
	up.carrier = true;
	live_link_event(&d, &up);
	fake_advance(0);
	CHECK_EQ_INT(reconnects, 1);
	CHECK_EQ_STR(live_wait_name(live_waiting_for(&d, c)), "path_silent");
	teardown();
}

/*
 * A suspended path re-opens itself: its connections become unconfirmed
 * (each must reconnect, with a SYN on its own endpoints) and the path's
 * probes are those reconnections, every retry_interval; the answer to
 * one resumes the path, and the others reconnect in turn.
 */
TEST(test_suspended_path_reopens_with_reconnections)
{
	struct conn *c = setup();
	struct conn *o = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22", true);

	event_post(&d.events, EVENT_CONNECTED, o, NULL);
	CHECK_EQ_STR(live_wait_name(live_waiting_for(&d, c)), "none");
	fake_advance(d.cfg->suspend_after_ms);
	CHECK_EQ_INT(downs, 2);
	CHECK_EQ_INT(reopened, 2);
	CHECK_EQ_INT(moves, 0);
	CHECK(!c->confirmed && !o->confirmed);
	CHECK_EQ_INT(d.live->stats.reopens, 1);
	CHECK_EQ_STR(live_wait_name(live_waiting_for(&d, c)), "path_silent");
	nmsgs = reconnects = 0;
	fake_advance(5 * d.cfg->retry_interval_ms);
	CHECK_EQ_INT(reconnects, 5);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 0);
	CHECK_EQ_INT(c->host->tries, 6);	/* one at the suspension */
	CHECK_EQ_INT(live_suspended_ms(c), 5 * d.cfg->retry_interval_ms);
	/* One is followed (reconnect.c): the path is heard, the other one
	 * asks too, and stays held until followed. */
	c->confirmed = true;
	reconnects = 0;
	live_heard_path(&d, c);
	CHECK(!c->host->suspended);
	CHECK_EQ_INT(ups, 1);
	CHECK_EQ_INT(reconnects, 1);
	CHECK_EQ_STR(live_wait_name(live_waiting_for(&d, o)), "none");
	teardown();
}

TEST(test_reopen_off_waits_for_heartbeats)
{
	struct conn *c = setup();

	d.cfg->reopen = false;
	fake_advance(d.cfg->suspend_after_ms);
	CHECK_EQ_INT(reopened, 0);
	CHECK(c->confirmed);
	CHECK_EQ_STR(live_wait_name(live_waiting_for(&d, c)), "reopen_off");
	nmsgs = 0;
	fake_advance(3 * d.cfg->retry_interval_ms);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 3);
	CHECK_EQ_INT(reconnects, 0);
	teardown();
}

/* A long silence spaces the tries out, doubling up to
 * retry_interval_max; the path's return resets it. */
TEST(test_long_silence_backs_off)
{
	struct conn *c = setup();

	d.cfg->reopen = false;
	d.cfg->retry_backoff_after_ms = 10000;
	d.cfg->retry_interval_max_ms = 4000;
	fake_advance(d.cfg->suspend_after_ms);
	nmsgs = 0;
	/* 10 s at 1 s, then 2 s, then 4 s, 4 s, ... */
	fake_advance(10000);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 10);
	nmsgs = 0;
	fake_advance(2000);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 1);
	nmsgs = 0;
	fake_advance(4000);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 1);
	nmsgs = 0;
	fake_advance(40000);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 10);
	deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out);
	CHECK(!c->host->suspended);
	CHECK_EQ_INT(c->host->backoff, 0);
	teardown();
}

TEST(test_removed_address_suspends_and_keeps_it)
{
	struct conn *c = setup();
	struct rtnl_addr_event a = { .ifindex = 3 };

	a.prefix.addr = c->local.addr;
	a.prefix.len = 24;
	live_addr_event(&d, &a);
	a.removed = true;
	live_addr_event(&d, &a);
	CHECK_EQ_INT(downs, 1);
	CHECK_EQ_INT(kept_locals, 1);
	CHECK_EQ_INT(d.live->stats.addr_suspensions, 1);
	teardown();
}

TEST(test_parked_path_ticks_for_migration)
{
	struct conn *c;

	setup();
	c = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22", true);
	c->migration = MIG_AWAY;
	event_post(&d.events, EVENT_CONNECTED, c, NULL);
	CHECK(c->host->parked);
	nmsgs = 0;
	fake_advance(10000);
	CHECK(parked_ticks >= 1);
	/* Its own connection's heartbeats only: none on the parked path. */
	for (unsigned i = 0; i < nmsgs; i++)
		CHECK(msgs[i].c != c);
	/* Heard or not, a parked path is resumed by its own step only. */
	deliver(c, EDP_HEARTBEAT, 5);
	CHECK(c->host->suspended);
	teardown();
}

TEST(test_gone_connection_leaves_its_path)
{
	struct conn *c = setup();

	c->hold = NULL;
	event_post(&d.events, EVENT_GONE, c, NULL);
	CHECK(c->host == NULL);
	CHECK(d.live->peers == NULL);
	/* Held when it goes: its hold goes with it. */
	event_post(&d.events, EVENT_CONNECTED, c, NULL);
	fake_advance(d.cfg->suspend_after_ms);
	c->hold = (struct conn_hold *)&d;	/* only tested for NULL */
	event_post(&d.events, EVENT_CLOSING, c, NULL);
	CHECK_EQ_INT(unholds, 1);
	c->hold = NULL;
	teardown();
}

TEST(test_closed_carrier_leaves_heartbeats_to_another)
{
	struct conn *c = setup();
	struct conn *o = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22", true);

	event_post(&d.events, EVENT_CONNECTED, o, NULL);
	CHECK(o->host == c->host);
	/* Whichever comes next, the closed one never carries a heartbeat,
	 * and the path still sends one per interval. */
	closed_carrier = o;
	for (int i = 0; i < 6; i++) {
		fake_advance(d.cfg->suspend_after_ms / 3);
		CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), i + 1);
		CHECK(msgs[nmsgs - 1].c == c);
		CHECK_EQ_INT(deliver(c, EDP_HEARTBEAT_ACK, c->edp->hb_out),
			     NF_DROP);
	}
	CHECK_EQ_INT(d.live->stats.heartbeats_out, 6);
	CHECK_EQ_INT(downs, 0);
	/* Found closed: the sweep that forgets it is asked for. */
	CHECK(sweeps_asked >= 1);
	CHECK(d.live->stats.carriers_gone >= 1);
	closed_carrier = NULL;
	teardown();
}

/*
 * A server of short connections: every connection of a path closed since
 * the last sweep. Its heartbeats have no carrier and go unanswered, but
 * there is nothing left to hold: the path is not suspended (nothing held,
 * no reconnection SYN for a closed socket), the sweep is asked for, and a
 * connection that carries again makes silence count once more.
 */
TEST(test_path_whose_connections_all_closed_is_not_suspended)
{
	struct conn *c = setup();
	struct conn *o = fake_conn(&d, "10.0.0.1:40001", "10.0.0.2:22", true);

	event_post(&d.events, EVENT_CONNECTED, o, NULL);
	all_closed = true;
	fake_advance(3 * d.cfg->suspend_after_ms);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 0);
	CHECK_EQ_INT(downs, 0);
	CHECK_EQ_INT(reconnects, 0);
	CHECK(!c->host->suspended);
	CHECK(sweeps_asked >= 1);
	CHECK(d.live->stats.carrierless >= 1);
	/* The positive control: one socket open again, still unanswered:
	 * suspended within suspend_after. */
	all_closed = false;
	fake_advance(d.cfg->suspend_after_ms);
	CHECK(sent_of(EDP_HEARTBEAT) >= 1);
	CHECK_EQ_INT(downs, 2);		/* both held, one call */
	CHECK(c->host->suspended);
	teardown();
}

/* Every connection of the path half-closed by its peer (CLOSE_WAIT): a
 * closing carrier goes last, but when there is no other it still carries
 * the heartbeat (the peer's socket, in FIN_WAIT2, answers). */
TEST(test_closing_carriers_still_carry_when_nothing_else_does)
{
	struct conn *c = setup();

	fake_sock_state = TCP_STATE_CLOSE_WAIT;
	fake_advance(d.cfg->suspend_after_ms / 3);
	CHECK_EQ_INT(sent_of(EDP_HEARTBEAT), 1);
	CHECK(msgs[nmsgs - 1].c == c);
	CHECK_EQ_INT(sweeps_asked, 0);
	fake_sock_state = TCP_STATE_ESTABLISHED;
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_registers_heartbeats),
	UNIT(test_silent_path_is_suspended),
	UNIT(test_answered_path_stays_up),
	UNIT(test_heard_path_resumes),
	UNIT(test_peer_heartbeat_answered_but_only_our_answer_resumes),
	UNIT(test_one_way_path_is_suspended),
	UNIT(test_suspended_path_reopens_with_reconnections),
	UNIT(test_reopen_off_waits_for_heartbeats),
	UNIT(test_long_silence_backs_off),
	UNIT(test_replays_and_forgeries_ignored),
	UNIT(test_moved_connection_reconnects_on_resume),
	UNIT(test_paced_reconnections_resume_soon),
	UNIT(test_link_without_carrier_suspends_at_once),
	UNIT(test_removed_address_suspends_and_keeps_it),
	UNIT(test_parked_path_ticks_for_migration),
	UNIT(test_gone_connection_leaves_its_path),
	UNIT(test_closed_carrier_leaves_heartbeats_to_another),
	UNIT(test_path_whose_connections_all_closed_is_not_suspended),
	UNIT(test_closing_carriers_still_carry_when_nothing_else_does),
};

UNIT_MAIN("liveness", tests)
