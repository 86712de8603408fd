// SPDX-License-Identifier: GPL-2.0-only
#include "fake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "config.h"
#include "inject.h"
#include "keystate.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "migrate.h"
#include "reconnect.h"
#include "ruleset.h"
#include "splice.h"
#include "state.h"
#include "unit.h"

uint64_t fake_now;
struct fake_segment fake_sent[FAKE_MAX];
unsigned fake_nsent, fake_unreachables, fake_expired;
struct sockdiag_progress fake_progress;
int fake_progress_err;
unsigned fake_progress_calls;
int fake_sock_state;
unsigned fake_held_added, fake_held_removed;
int fake_ruleset_err;
struct fake_event fake_events[FAKE_MAX];
unsigned fake_nevents;

static struct timer_heap heap;

uint64_t loop_now(void)
{
	return fake_now;
}

void loop_timer_arm(struct loop *loop, struct timer *t, uint64_t delay_ms)
{
	(void)loop;
	timer_heap_arm(&heap, t, fake_now + delay_ms);
}

void loop_timer_cancel(struct loop *loop, struct timer *t)
{
	(void)loop;
	if (timer_pending(t))
		timer_heap_cancel(&heap, t);
}

void fake_advance(uint64_t ms)
{
	uint64_t end = fake_now + ms;

	while (timer_heap_next(&heap) <= end) {
		fake_now = timer_heap_next(&heap);
		timer_heap_run(&heap, fake_now);
	}
	fake_now = end;
}

int inject_send(struct inject *inj, const struct inject_segment *seg)
{
	struct fake_segment *f = &fake_sent[fake_nsent % FAKE_MAX];

	(void)inj;
	f->src = *seg->src;
	f->dst = *seg->dst;
	f->seq = seg->seq;
	f->ack = seg->ack;
	f->flags = seg->flags;
	f->window = seg->window;
	f->optlen = seg->optlen;
	if (seg->optlen)
		memcpy(f->options, seg->options,
		       seg->optlen < sizeof(f->options) ? seg->optlen
							: sizeof(f->options));
	f->paylen = seg->paylen;
	if (seg->paylen)
		memcpy(f->payload, seg->payload,
		       seg->paylen < sizeof(f->payload) ? seg->paylen
							: sizeof(f->payload));
	fake_nsent++;
	return 0;
}

int inject_unreachable(struct inject *inj, const struct endpoint *local,
		       const struct endpoint *remote, uint32_t seq)
{
	(void)inj, (void)local, (void)remote, (void)seq;
	fake_unreachables++;
	return 0;
}

int sockdiag_progress(const struct endpoint *local,
		      const struct endpoint *remote,
		      struct sockdiag_progress *out)
{
	(void)local, (void)remote;
	fake_progress_calls++;
	if (fake_progress_err)
		return -fake_progress_err;
	*out = fake_progress;
	return 0;
}

int sockdiag_state(const struct endpoint *local, const struct endpoint *remote)
{
	(void)local, (void)remote;
	fake_progress_calls++;
	if (fake_progress_err)
		return -fake_progress_err;
	return fake_sock_state;
}

int ruleset_held(const struct config *cfg, struct conn *const *conns,
		 unsigned n, bool add, bool chains, bool spliced, bool adopting,
		 char *err, size_t errlen)
{
	(void)cfg, (void)conns, (void)chains, (void)spliced, (void)adopting;
	if (fake_ruleset_err) {
		snprintf(err, errlen, "fake nft error");
		return -fake_ruleset_err;
	}
	if (add)
		fake_held_added += n;
	else
		fake_held_removed += n;
	return 0;
}

static void record(void *arg, enum event_type type, struct conn *c,
		   const char *reason)
{
	(void)arg, (void)reason;
	if (fake_nevents < FAKE_MAX)
		fake_events[fake_nevents++] = (struct fake_event){ type, c };
}

unsigned fake_count(enum event_type type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake_nevents; i++)
		n += fake_events[i].type == type;
	return n;
}

void fake_rackd(struct rackd *d)
{
	static struct live_state live;
	static struct reconnect_state reconnect;
	static struct splice_stats splice;
	static struct local_state local;
	static struct state_file state;
	static struct migrate_stats migrate;
	static struct channel channel;

	memset(d, 0, sizeof(*d));
	memset(&live, 0, sizeof(live));
	memset(&reconnect, 0, sizeof(reconnect));
	memset(&splice, 0, sizeof(splice));
	memset(&local, 0, sizeof(local));
	memset(&state, 0, sizeof(state));
	memset(&migrate, 0, sizeof(migrate));
	memset(&channel, 0, sizeof(channel));
	d->live = &live;
	d->reconnect = &reconnect;
	d->splice = &splice;
	d->local = &local;
	d->state = &state;
	d->migrate = &migrate;
	d->channel = &channel;
	d->cfg = config_defaults();
	ratelimit_init(&d->unauth_queries, RACKD_UNAUTH_QUERY_RATE,
		       RACKD_UNAUTH_QUERY_BURST);
	conn_table_init(&d->conns);
	timer_heap_free(&heap);
	timer_heap_init(&heap);
	fake_now = 1000;
	fake_nsent = fake_unreachables = fake_expired = fake_nevents = 0;
	fake_held_added = fake_held_removed = 0;
	fake_ruleset_err = fake_progress_err = 0;
	fake_progress_calls = 0;
	memset(&fake_progress, 0, sizeof(fake_progress));
	fake_progress.state = 1;	/* TCP_ESTABLISHED */
	fake_sock_state = 1;
	event_subscribe(&d->events, EVENT_ALL, record, NULL);
}

static void free_conn(struct conn *c)
{
	free(c->edp);
	free(c->hold);
}

void fake_rackd_free(struct rackd *d)
{
	/* The heap still points at the connections' timers. */
	timer_heap_free(&heap);
	conn_table_free(&d->conns, free_conn);
	config_free(d->cfg);
}

static void on_expiry(struct timer *t, void *arg)
{
	(void)t, (void)arg;
	fake_expired++;
}

struct conn *fake_conn(struct rackd *d, const char *local, const char *remote,
		       bool client)
{
	struct endpoint l, r;
	struct conn *c;
	bool port;

	CHECK(endpoint_parse(local, &l, &port) == 0 && port);
	CHECK(endpoint_parse(remote, &r, &port) == 0 && port);
	c = conn_insert(&d->conns, &l, &r, client ? CONN_OUTGOING
						  : CONN_INCOMING);
	timer_init(&c->expiry, on_expiry, c);
	c->peer = PEER_RACKS;
	c->state = CONN_CONNECTED;
	c->confirmed = true;
	c->lend.isn = 1000;
	c->rend.isn = 2000;
	c->edp = xcalloc(1, sizeof(*c->edp));
	c->edp->keyed = c->edp->have_peer_key = true;
	c->edp->phase = SETUP_COMPLETE;
	c->edp->conn_id = c->id + 0x1000;
	return c;
}
