// SPDX-License-Identifier: GPL-2.0-only
/*
 * Adoption's agreement alone: its source linked with fake kernel I/O and
 * stubs that record what it asks of its neighbours (channel sends,
 * set-up, learning). Covers a released connection offered to the peer
 * three times and given up; agreeing with a peer (answering once, the
 * role from the numbers); a tie refused; taking a peer's larger numbers
 * only when ours were learnt, and only a little; messages outside the
 * window refused; a managed connection adopted again only for its exact
 * numbers and only once a heartbeat under its key went unanswered (never
 * when the peer answers, never while held); an unknown flow's ADOPT
 * taken only once its numbers check out against the learnt ones.
 */
#include "../../rackd/engine/adopt.c"

#include <errno.h>
#include <string.h>

#include "fake.h"
#include "unit.h"

/* What adoption asked of its neighbours. */
static struct edp_msg sent[16];
static unsigned nsent, setups, learns, releases;
static bool plausible = true;
static adopt_learn_done learn_cb;

int channel_send(struct rackd *d, struct conn *c, const struct edp_msg *m)
{
	(void)d, (void)c;
	if (nsent < 16)
		sent[nsent] = *m;
	nsent++;
	return 0;
}

bool channel_seq_plausible(struct conn *c, const struct packet *p)
{
	(void)c, (void)p;
	return plausible;
}

/* Numbers kept from before ours were learnt: plausible unless they are
 * the ones in FORGED_SEQ. */
static uint32_t forged_seq = 0xdead;

bool channel_numbers_plausible(struct conn *c, uint32_t seq, uint32_t ack)
{
	(void)c, (void)ack;
	return seq != forged_seq;
}

static unsigned heartbeats;

int channel_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			  uint32_t counter)
{
	(void)d, (void)c, (void)counter;
	heartbeats += type == EDP_HEARTBEAT;
	return 0;
}

int channel_handle_unchecked(struct rackd *d, uint8_t type, channel_fn fn)
{
	(void)d, (void)type, (void)fn;
	return 0;
}

void setup_begin(struct rackd *d, struct conn *c)
{
	(void)d;
	setups++;
	c->state = CONN_SETUP;
}

void setup_release(struct rackd *d, struct conn *c, const char *why)
{
	(void)d, (void)why;
	releases++;
	c->state = CONN_RELEASED;
	c->peer = PEER_NONE;
}

void hold_end(struct rackd *d, struct conn **conns, unsigned n)
{
	(void)d, (void)conns, (void)n;
}

void live_detach(struct rackd *d, struct conn *c)
{
	(void)d, (void)c;
}

void adopt_learn_start(struct rackd *d, struct conn *c,
		       struct adopt_learning *l, adopt_learn_done done)
{
	(void)d;
	l->c = c;
	learns++;
	learn_cb = done;
}

void adopt_learn_stop(struct rackd *d, struct adopt_learning *l)
{
	(void)d, (void)l;
}

uint32_t adopt_learn_segment(struct rackd *d, struct adopt_learning *l,
			     const struct packet *p)
{
	(void)d, (void)l, (void)p;
	return NF_ACCEPT;
}

void adopt_learn_kick(struct timer *t, void *arg)
{
	(void)t, (void)arg;
}

int flowset_open(struct flowset **fs)
{
	*fs = NULL;
	return -ENOTSUP;
}

void flowset_close(struct flowset *fs)
{
	(void)fs;
}

void adoptset_write(FILE *f, const struct flowset_flow *flow)
{
	(void)f, (void)flow;
}

int sockdiag_dump(sockdiag_fn fn, void *arg)
{
	(void)fn, (void)arg;
	return 0;
}

static struct rackd d;
static struct adopt_state state;

static struct conn *new_conn(struct rackd *dd, const struct endpoint *local,
			     const struct endpoint *remote, enum conn_dir dir)
{
	return conn_insert(&dd->conns, local, remote, dir);
}

static const struct adopt_ops ops = { .new_conn = new_conn };

/* A client's connection whose handshake ended plain: ISNs 1000 (ours)
 * and 2000 (the peer's), so X_snd 1001, X_rcv 2001. */
static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	memset(&state, 0, sizeof(state));
	d.adopt = &state;
	adopt_set_ops(&d, &ops);
	nsent = setups = learns = releases = heartbeats = 0;
	plausible = true;
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:80", true);
	free(c->edp);
	c->edp = NULL;
	c->lend.seen = c->rend.seen = true;
	c->state = CONN_RELEASED;
	c->peer = PEER_NONE;
	c->unmanaged = UNMANAGED_SYN_RETRANSMITTED;
	return c;
}

static void teardown(void)
{
	for (struct conn *c = d.conns.head; c; c = c->next)
		adopt_free(&d, c);
	fake_rackd_free(&d);
}

/* The peer's ADOPT for C: its own first byte OWN, ours PEER. */
static void peer_says(struct conn *c, uint32_t own, uint32_t peer,
		      uint8_t flags)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_ADOPT,
			     .x_own = own, .x_peer = peer, .flags = flags };
	struct packet p = { .src = c->remote.addr, .dst = c->local.addr,
			    .sport = c->remote.port, .dport = c->local.port,
			    .flags = TCP_FLAG_ACK };

	CHECK_EQ_INT(adopt_input(&d, c, &p, &m), NF_DROP);
}

TEST(test_plain_peer_is_asked_three_times)
{
	struct conn *c = setup();

	adopt_released(&d, c);
	CHECK_EQ_INT(c->state, CONN_ADOPTING);
	CHECK_EQ_INT(c->adoption, ADOPTION_OFFERED);
	CHECK_EQ_INT(learns, 0);	/* it saw the handshake */
	CHECK_EQ_INT(nsent, 0);
	fake_advance(ADOPT_FIRST_MS);
	CHECK_EQ_INT(nsent, 1);
	CHECK_EQ_INT(sent[0].x_own, 1001);
	CHECK_EQ_INT(sent[0].x_peer, 2001);
	CHECK_EQ_INT(sent[0].flags, 0);
	fake_advance(ADOPT_WAIT1_MS);
	fake_advance(ADOPT_WAIT2_MS);
	CHECK_EQ_INT(nsent, 3);
	fake_advance(ADOPT_WAIT3_MS - 1);
	CHECK_EQ_INT(c->state, CONN_ADOPTING);
	fake_advance(1);
	CHECK_EQ_INT(nsent, 3);
	CHECK_EQ_INT(c->state, CONN_RELEASED);
	CHECK_EQ_INT(c->adoption, ADOPTION_UNANSWERED);
	CHECK_EQ_INT(c->unmanaged, UNMANAGED_ADOPTION_UNANSWERED);
	CHECK_EQ_INT(c->cause, UNMANAGED_SYN_RETRANSMITTED);
	/* Never again, even when released again. */
	adopt_released(&d, c);
	fake_advance(60000);
	CHECK_EQ_INT(nsent, 3);
	CHECK_EQ_INT(state.stats.unanswered, 1);
	teardown();
}

TEST(test_agreement_answers_once_and_takes_the_role_of_the_numbers)
{
	struct conn *c = setup();

	adopt_released(&d, c);
	fake_advance(ADOPT_FIRST_MS);
	CHECK_EQ_INT(nsent, 1);
	/* The peer learnt the same numbers, had not heard ours. */
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(nsent, 2);
	CHECK_EQ_INT(sent[1].flags, EDP_ADOPT_AGREED);
	CHECK_EQ_INT(setups, 1);
	CHECK_EQ_INT(c->adoption, ADOPTION_SETUP);
	/* Our stream starts lower: we are set-up's client. */
	CHECK_EQ_INT(c->dir, CONN_OUTGOING);
	CHECK(c->rebased);
	CHECK_EQ_INT(c->snd_base, 1000);	/* active: counts its SYN */
	CHECK_EQ_INT(c->rcv_base, 2001);
	/* Its copy again, not saying it agreed: our answer was lost. */
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(nsent, 3);
	CHECK_EQ_INT(sent[2].flags, EDP_ADOPT_AGREED);
	/* One that says so needs no answer. */
	peer_says(c, 2001, 1001, EDP_ADOPT_AGREED);
	CHECK_EQ_INT(nsent, 3);
	/* Set-up completes: managed. */
	c->state = CONN_CONNECTED;
	adopt_event(&d, EVENT_CONNECTED, c, NULL);
	CHECK_EQ_INT(c->adoption, ADOPTION_DONE);
	CHECK_EQ_INT(c->unmanaged, UNMANAGED_NO);
	CHECK_EQ_INT(state.stats.completed, 1);
	teardown();
}

TEST(test_larger_isn_is_the_server)
{
	struct conn *c = setup();

	c->lend.isn = 3000;	/* X_snd 3001 > X_rcv 2001 */
	adopt_released(&d, c);
	peer_says(c, 2001, 3001, EDP_ADOPT_AGREED);
	CHECK_EQ_INT(nsent, 0);	/* it agreed already */
	CHECK_EQ_INT(setups, 1);
	CHECK_EQ_INT(c->dir, CONN_INCOMING);
	teardown();
}

TEST(test_equal_numbers_are_refused)
{
	struct conn *c = setup();

	c->lend.isn = 2000;
	adopt_released(&d, c);
	peer_says(c, 2001, 2001, EDP_ADOPT_AGREED);
	CHECK_EQ_INT(setups, 0);
	CHECK_EQ_INT(c->adoption, ADOPTION_FAILED);
	CHECK_EQ_INT(c->unmanaged, UNMANAGED_ADOPTION_FAILED);
	teardown();
}

TEST(test_numbers_from_the_handshake_are_never_raised)
{
	struct conn *c = setup();

	adopt_released(&d, c);
	peer_says(c, 2001 + 10, 1001, 0);
	CHECK_EQ_INT(setups, 0);
	CHECK_EQ_INT(nsent, 1);		/* ours again, unchanged */
	CHECK_EQ_INT(sent[0].x_own, 1001);
	CHECK_EQ_INT(sent[0].x_peer, 2001);
	CHECK_EQ_INT(c->rcv_base, 2001);
	CHECK_EQ_INT(state.stats.disagreed, 1);
	teardown();
}

/* A connection found by the start-up scan, learnt a little low. */
static struct conn *learnt_low(void)
{
	struct conn *c = setup();
	struct adopt_learnt l = { .x_snd = 1001, .x_rcv = 2001 - 100,
				  .active = false, .active_known = true };

	c->lend.seen = c->rend.seen = false;
	adopt_released(&d, c);	/* syn_retransmitted: adopt */
	CHECK_EQ_INT(learns, 1);
	CHECK_EQ_INT(c->adoption, ADOPTION_LEARNING);
	learn_cb(&d, c, true, &l, NULL);
	fake_advance(0);
	return c;
}

TEST(test_learnt_numbers_rise_to_the_peers)
{
	struct conn *c = learnt_low();

	CHECK_EQ_INT(nsent, 1);	/* at once: no handshake to wait for */
	CHECK_EQ_INT(c->rcv_base, 1901);
	peer_says(c, 2001, 1001, 0);
	/* Raised, said so, and agreed: the peer will find them equal. */
	CHECK_EQ_INT(c->rcv_base, 2001);
	CHECK_EQ_INT(c->snd_base, 1001);	/* passive */
	CHECK_EQ_INT(nsent, 2);
	CHECK_EQ_INT(sent[1].x_peer, 2001);
	CHECK_EQ_INT(setups, 1);
	teardown();
}

TEST(test_learnt_numbers_rise_only_a_little)
{
	struct conn *c = learnt_low();

	peer_says(c, 1901 + ADOPT_RAISE_MAX + 1, 1001, 0);
	CHECK_EQ_INT(c->rcv_base, 1901);
	CHECK_EQ_INT(setups, 0);
	teardown();
}

TEST(test_outside_the_window_is_refused)
{
	struct conn *c = setup();

	plausible = false;
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(c->adoption, ADOPTION_NONE);
	CHECK_EQ_INT(d.edp.bad_seq, 1);
	teardown();
}

/* A managed connection, keyed, whose peer says it forgot it. */
static struct conn *managed(void)
{
	struct conn *c = setup();

	c->state = CONN_CONNECTED;
	c->peer = PEER_RACKS;
	c->edp = xcalloc(1, sizeof(*c->edp));
	c->edp->keyed = true;
	return c;
}

static void managed_teardown(struct conn *c)
{
	free(c->edp);
	c->edp = NULL;
	teardown();
}

TEST(test_managed_connection_adopted_again_only_for_its_numbers)
{
	struct conn *c = managed();

	peer_says(c, 2001, 1002, 0);	/* not quite */
	CHECK_EQ_INT(heartbeats, 0);
	CHECK_EQ_INT(state.stats.readopt_asked, 0);
	/* Its exact numbers: no release yet, a heartbeat under the key asks
	 * the peer whether it still holds it. */
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(releases, 0);
	CHECK_EQ_INT(heartbeats, 1);
	CHECK_EQ_INT(state.stats.readopt_asked, 1);
	CHECK_EQ_INT(c->state, CONN_CONNECTED);
	/* Asked again before it had time to answer: nothing yet. */
	fake_advance(READOPT_WAIT_MS - 1);
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(releases, 0);
	CHECK_EQ_INT(heartbeats, 1);
	/* Unanswered, and the peer still asks: it forgot. */
	fake_advance(1);
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(releases, 1);
	CHECK_EQ_INT(state.stats.readopted, 1);
	CHECK_EQ_INT(c->cause, UNMANAGED_PEER_FORGOT);
	CHECK_EQ_INT(setups, 1);	/* the numbers matched at once */
	managed_teardown(c);
}

/* Anyone who saw the handshake knows the numbers of an ADOPT: the peer's
 * answer under the key shows it was not the peer, and nothing changes. */
TEST(test_forged_adopt_never_releases_a_keyed_connection)
{
	struct conn *c = managed();

	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(heartbeats, 1);
	c->edp->hb_acked = c->edp->hb_out;	/* answered */
	fake_advance(10 * READOPT_WAIT_MS);
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(releases, 0);
	CHECK_EQ_INT(c->state, CONN_CONNECTED);
	CHECK_EQ_INT(state.stats.readopt_refused, 1);
	CHECK_EQ_INT(state.stats.readopted, 0);
	/* Held, or resuming: never touched, not even asked. */
	c->state = CONN_SUSPENDED;
	c->edp->readopt_hb = 0;
	peer_says(c, 2001, 1001, 0);
	fake_advance(10 * READOPT_WAIT_MS);
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(releases, 0);
	CHECK_EQ_INT(heartbeats, 2);
	CHECK_EQ_INT(state.stats.readopt_refused, 3);
	managed_teardown(c);
}

/* An ADOPT for a flow we do not know starts its adoption, but its numbers
 * count only once ours are learnt and show it sat where the connection
 * is: a forged one raises nothing. */
TEST(test_unknown_flows_adopt_checked_once_learnt)
{
	struct endpoint local, remote;
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_ADOPT,
			     .x_own = 1901 + 1000, .x_peer = 1001 };
	struct packet p = { .flags = TCP_FLAG_ACK, .seq = forged_seq };
	struct adopt_learnt l = { .x_snd = 1001, .x_rcv = 1901,
				  .active = false, .active_known = true };
	bool port;
	struct conn *c;

	setup();
	CHECK(endpoint_parse("10.0.0.9:5000", &remote, &port) == 0);
	CHECK(endpoint_parse("10.0.0.1:80", &local, &port) == 0);
	p.src = remote.addr;
	p.sport = remote.port;
	p.dst = local.addr;
	p.dport = local.port;
	CHECK_EQ_INT(adopt_input(&d, NULL, &p, &m), NF_DROP);
	c = conn_lookup(&d.conns, &local, &remote);
	if (!CHECK(c != NULL) || !CHECK_EQ_INT(learns, 1))
		return teardown();
	learn_cb(&d, c, true, &l, NULL);
	CHECK_EQ_INT(c->rcv_base, 1901);	/* not raised */
	CHECK_EQ_INT(state.stats.unchecked_dropped, 1);
	CHECK_EQ_INT(setups, 0);
	/* Our own ADOPT asks the peer instead. */
	fake_advance(0);
	CHECK_EQ_INT(nsent, 1);
	CHECK_EQ_INT(sent[0].x_own, 1001);
	/* The same from where the connection is: taken (positive control). */
	p.seq = 7;
	CHECK_EQ_INT(adopt_input(&d, c, &p, &m), NF_DROP);
	CHECK_EQ_INT(c->rcv_base, 2901);
	teardown();
}

/* Judging an ADOPT may mean asking the kernel, which anyone can make us
 * do: without the budget, or when it could change nothing, nothing
 * happens. */
TEST(test_adopt_budget_and_useless_adopts)
{
	struct conn *c = managed();

	/* Other numbers than a managed connection's: no question. */
	ratelimit_init(&d.unauth_queries, 1, 1);
	peer_says(c, 2001, 1005, 0);
	CHECK_EQ_INT(d.edp.unexpected, 1);
	CHECK_EQ_INT(d.stats.unauth_paced, 0);
	CHECK_EQ_INT(ratelimit_avail(&d.unauth_queries, fake_now), 1);
	managed_teardown(c);

	c = setup();
	ratelimit_init(&d.unauth_queries, 1, 1);
	CHECK(ratelimit_take(&d.unauth_queries, fake_now));
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(d.stats.unauth_paced, 1);
	CHECK_EQ_INT(c->adoption, ADOPTION_NONE);
	CHECK_EQ_INT(nsent, 0);
	/* A second later there is budget again. */
	fake_advance(1000);
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(c->state, CONN_SETUP);
	teardown();
}

/* The peer's handshake ended plain while ours did not: our end still in
 * its set-up (the SYN with the offer came late, beside the plain
 * retransmission), or holding a record of a SYN that was stale. An ADOPT,
 * once the kernel shows the handshake complete, makes it adopt. */
TEST(test_adopt_ends_an_unfinished_handshake)
{
	struct conn *c = setup();

	c->state = CONN_SETUP;
	c->peer = PEER_RACKS;
	c->unmanaged = UNMANAGED_NO;
	/* Not established yet: nothing. */
	fake_progress.state = 2;	/* SYN_SENT */
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(c->state, CONN_SETUP);
	CHECK_EQ_INT(releases, 0);
	/* Established: released from its set-up, adopted, agreed. */
	fake_progress.state = 1;
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(releases, 1);
	CHECK_EQ_INT(c->cause, UNMANAGED_HANDSHAKE_UNSEEN);
	CHECK_EQ_INT(setups, 1);
	CHECK_EQ_INT(c->adoption, ADOPTION_SETUP);
	teardown();

	/* A record of a SYN whose SYN-ACK we never saw: learnt. */
	c = setup();
	c->state = CONN_HANDSHAKE;
	c->peer = PEER_UNKNOWN;
	c->lend.seen = false;
	peer_says(c, 2001, 1001, 0);
	CHECK_EQ_INT(c->state, CONN_ADOPTING);
	CHECK_EQ_INT(learns, 1);
	CHECK_EQ_INT(c->adoption, ADOPTION_LEARNING);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(test_plain_peer_is_asked_three_times),
	UNIT(test_agreement_answers_once_and_takes_the_role_of_the_numbers),
	UNIT(test_larger_isn_is_the_server),
	UNIT(test_equal_numbers_are_refused),
	UNIT(test_numbers_from_the_handshake_are_never_raised),
	UNIT(test_learnt_numbers_rise_to_the_peers),
	UNIT(test_learnt_numbers_rise_only_a_little),
	UNIT(test_outside_the_window_is_refused),
	UNIT(test_managed_connection_adopted_again_only_for_its_numbers),
	UNIT(test_forged_adopt_never_releases_a_keyed_connection),
	UNIT(test_unknown_flows_adopt_checked_once_learnt),
	UNIT(test_adopt_budget_and_useless_adopts),
	UNIT(test_adopt_ends_an_unfinished_handshake),
};

UNIT_MAIN("adopt", tests)
