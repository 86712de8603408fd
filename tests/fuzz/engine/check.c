// SPDX-License-Identifier: GPL-2.0-only
/*
 * The invariants of the stateful fuzzer (engine.h), checked after every
 * step of an input and after every timer callback: what rackd's books
 * must say whatever happened, and what the fake kernel must agree with.
 * A violation aborts with what was wrong (fz_violation()); the
 * sanitizers catch memory errors on their own. Also counted here: the
 * states rackd's connections reached, across inputs (the evidence that
 * the deep ones are fuzzed at all).
 */
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "engine.h"
#include "hold.h"
#include "keystate.h"
#include "liveness.h"
#include "local.h"
#include "splice.h"

#define MAX_CONNS 4096
#define MAX_PATHS 4096

/* States reached, each counted once per input (and overall). */
enum reach {
	R_SETUP, R_CONNECTED, R_SUSPENDED, R_RESUMING, R_SPLICED,
	R_ADOPTING, R_ADOPTED, R_LEAVING, R_AWAY, R_ARRIVING, R_KEPT,
	R_PATHS2, R_MAX
};
static const char *const reach_names[R_MAX] = {
	"setup", "connected", "suspended", "resuming", "spliced",
	"adopting", "adopted", "exported", "peer-away", "imported",
	"kept-on-lo", "2+conns-on-a-path",
};
static bool reached[R_MAX];
static uint64_t reached_total[R_MAX], inputs;

/* rackd's set-up counters (rackd.h), as last seen in this input, and
 * what they moved by across inputs: how connections were keyed, and
 * the anonymous exchanges and host keys refused. */
enum { K_ANONYMOUS, K_EXCHANGE, K_DERIVED, K_REFUSED, K_MISMATCH, K_MAX };
static const char *const keyed_names[K_MAX] = {
	"anonymous", "host-handshake", "derived", "anonymous-refused",
	"host-key-mismatch",
};
static uint64_t keyed_seen[K_MAX], keyed_total[K_MAX];
/* When trust was last seen anonymous in this input, and the set-up
 * deadline then: a set-up begun before a reload to other trust may end
 * anonymously within it. */
static bool anon_seen;
static uint64_t anon_last, anon_deadline;

static const char *cname(const struct conn *c)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "conn %llu (%s)", (unsigned long long)c->id,
		 conn_state_name(c->state));
	return buf;
}

static struct conn *conns[MAX_CONNS];
static size_t nconns;
static size_t bound_floor;	/* connections older than the bound */

void fz_check_bound_changed(struct rackd *d)
{
	bound_floor = d->conns.count;
}

static bool in_table(const struct conn *c)
{
	for (size_t i = 0; i < nconns; i++)
		if (conns[i] == c)
			return true;
	return false;
}

/* The table: its list, its count, its hash chains, its bound. */
static void check_table(struct rackd *d)
{
	struct conn_table *t = &d->conns;
	struct conn *prev = NULL;
	size_t imported = 0;

	nconns = 0;
	for (struct conn *c = t->head; c; prev = c, c = c->next) {
		FZ_CHECK(nconns < t->count && nconns < MAX_CONNS, "the table's "
			 "list is longer than its count %zu (or cyclic)",
			 t->count);
		FZ_CHECK(c->prev == prev && c->table == t, "%s: list links",
			 cname(c));
		FZ_CHECK(conn_lookup(t, &c->local, &c->remote) == c,
			 "%s: not found by its endpoints", cname(c));
		conns[nconns++] = c;
	}
	FZ_CHECK(nconns == t->count && t->tail == prev, "the table counts %zu "
		 "connections, its list has %zu", t->count, nconns);
	for (size_t i = 0; i < nconns && fz_known("import-bound"); i++)
		imported += conns[i]->imported;
	/* Those a restart restored or a reload found stay: only new ones
	 * must respect the bound. */
	if (t->count < bound_floor)
		bound_floor = t->count;
	FZ_CHECK(t->count <= d->cfg->max_connections + imported ||
		 t->count <= bound_floor, "%zu connections, more than "
		 "max_connections %u", t->count, d->cfg->max_connections);
}

/* Half-open entries: a list of live connections' links, counted right,
 * within their bounds (halfopen.h). */
static void check_halfopen(struct rackd *d)
{
	const struct halfopen *h = &d->conns.halfopen;
	const struct halfopen_link *prev = NULL;
	unsigned n = 0, linked = 0;

	for (const struct halfopen_link *l = h->head; l; prev = l, l = l->next) {
		bool found = false;

		FZ_CHECK(++n <= h->count && n <= MAX_CONNS, "the half-open "
			 "list is longer than its count %u (or cyclic)",
			 h->count);
		FZ_CHECK(l->linked && l->prev == prev, "half-open list links");
		for (size_t i = 0; i < nconns && !found; i++)
			found = &conns[i]->ho == l;
		FZ_CHECK(found, "a half-open entry of no connection in the "
			 "table");
		FZ_CHECK(halfopen_prefix_count(h, &l->src) <=
			 d->cfg->max_half_open_per_prefix, "%u half-open from "
			 "one prefix, more than max_half_open_per_prefix %u",
			 halfopen_prefix_count(h, &l->src),
			 d->cfg->max_half_open_per_prefix);
	}
	FZ_CHECK(n == h->count && h->tail == prev, "half-open counts %u, its "
		 "list has %u", h->count, n);
	for (size_t i = 0; i < nconns; i++)
		linked += conns[i]->ho.linked;
	FZ_CHECK(linked == n, "%u connections half-open, the list has %u",
		 linked, n);
	FZ_CHECK(n <= d->cfg->max_half_open || n <= bound_floor, "%u half-open, "
		 "more than max_half_open %u", n, d->cfg->max_half_open);
}

static unsigned count_kept(struct rackd *d, const struct addr *a)
{
	unsigned n = 0;

	for (size_t i = 0; i < nconns; i++)
		n += conns[i]->kept_local &&
		     addr_equal(&conns[i]->local.addr, a);
	(void)d;
	return n;
}

static void check_conn(struct rackd *d, struct conn *c)
{
	const struct conn_edp *e = c->edp;

	FZ_CHECK(c->state < CONN_STATE_MAX && c->peer <= PEER_NONE &&
		 c->migration <= MIG_ARRIVING && c->adoption < ADOPTION_MAX,
		 "%s: enum out of range", cname(c));
	/* Heartbeats, reconnections and AWAY need its keys. */
	FZ_CHECK(!c->host || (e && e->keyed), "%s is on a heartbeat path "
		 "without keys", cname(c));
	FZ_CHECK(!c->edp_id || (e && e->conn_id == c->edp_id &&
				conn_find_edp(&d->conns, c->edp_id) == c),
		 "%s: indexed by an id its keys do not have", cname(c));
	if ((c->state == CONN_CONNECTED || c->state == CONN_SUSPENDED) &&
	    c->peer == PEER_RACKS)
		FZ_CHECK(e && e->keyed, "%s: managed without keys", cname(c));
	/* A key from a host pair names the host it is shared with. */
	FZ_CHECK(!e || !e->keyed || e->have_peer_host ||
		 (e->source != KEY_SOURCE_EXCHANGE &&
		  e->source != KEY_SOURCE_DERIVED), "%s: keyed from a host "
		 "pair, with no peer host", cname(c));
	FZ_CHECK(c->state != CONN_SETUP || (e && c->peer == PEER_RACKS),
		 "%s: set-up without key state", cname(c));
	/* The sweep leaves handshakes and set-ups to their own deadline. */
	FZ_CHECK((c->state != CONN_HANDSHAKE && c->state != CONN_SETUP) ||
		 timer_pending(&c->expiry), "%s: no deadline: never forgotten",
		 cname(c));
	/* A handshake is looked at within setup_timeout (track.c), however
	 * late its SYNs come: no connection stays in it unasked. */
	FZ_CHECK(c->state != CONN_HANDSHAKE || !timer_pending(&c->expiry) ||
		 c->expiry.deadline <= fz_now + (d->cfg->setup_timeout_ms <
						 d->cfg->syn_timeout_ms ?
						 d->cfg->setup_timeout_ms :
						 d->cfg->syn_timeout_ms),
		 "%s: in its handshake with a deadline %llu ms away",
		 cname(c), (unsigned long long)(c->expiry.deadline - fz_now));
	FZ_CHECK(!c->adopt || c->state == CONN_ADOPTING, "%s: adoption state "
		 "outside adoption", cname(c));
	FZ_CHECK(c->state != CONN_ADOPTING || c->adopt, "%s: adopting "
		 "without adoption state", cname(c));
	/* Held: suspended, or resuming until the peer acknowledges. */
	if (c->hold) {
		FZ_CHECK(c->state == CONN_SUSPENDED || c->hold->resuming,
			 "%s: held but neither suspended nor resuming",
			 cname(c));
		FZ_CHECK(c->host, "%s: held off any path: nothing resumes it",
			 cname(c));
		FZ_CHECK(fz_nft_failed || fz_nft_held(&c->local, &c->remote),
			 "%s: held, but not in the held set", cname(c));
	}
	FZ_CHECK(c->state != CONN_SUSPENDED || c->hold, "%s: suspended "
		 "without a hold: its segments are not answered", cname(c));
	if (c->mapped && !fz_nft_failed) {
		struct endpoint wl, wr;

		FZ_CHECK(fz_nft_spliced(&c->local, &c->remote, &wl, &wr) &&
			 endpoint_equal(&wl, &c->mapped_local) &&
			 endpoint_equal(&wr, &c->mapped_remote),
			 "%s: mapped, but the splice maps say otherwise",
			 cname(c));
	}
	if (c->kept_local)
		FZ_CHECK(local_is_kept(d->local, &c->local.addr), "%s: keeps "
			 "an address nobody keeps", cname(c));
}

/* Paths: acyclic lists, each connection on one, counts right. */
static void check_paths(struct rackd *d)
{
	unsigned paths = 0, on_paths = 0, hosted = 0;

	for (struct live_peer *p = d->live->peers; p; p = p->next) {
		unsigned n = 0;
		bool carrier = !p->carrier;

		FZ_CHECK(++paths < MAX_PATHS, "the path list is cyclic");
		FZ_CHECK(p->nconns > 0, "an empty path is kept");
		for (struct conn *c = p->conns; c; c = c->host_next) {
			FZ_CHECK(++n <= p->nconns, "path's connection list "
				 "longer than its count %u (or cyclic)",
				 p->nconns);
			FZ_CHECK(in_table(c), "a path holds a connection that "
				 "is not in the table");
			FZ_CHECK(c->host == p, "%s: on a path it does not name",
				 cname(c));
			FZ_CHECK((addr_equal(&p->local, &c->wire_local.addr) &&
				  addr_equal(&p->remote, &c->wire_remote.addr) &&
				  p->parked == conn_parked(c)) ||
				 fz_known("peer-splice-fail"), "%s: on a path "
				 "other than its wire endpoints'", cname(c));
			carrier |= c == p->carrier;
		}
		FZ_CHECK(n == p->nconns, "path counts %u connections, has %u",
			 p->nconns, n);
		FZ_CHECK(carrier, "the path's carrier is not on it");
		FZ_CHECK(p->parked || timer_pending(&p->timer) ||
			 fz_known("migrate-stays-untimed"), "a path without a "
			 "timer: never heartbeats nor suspends");
		for (struct live_peer *q = p->next; q; q = q->next)
			FZ_CHECK(q->parked != p->parked ||
				 !addr_equal(&q->local, &p->local) ||
				 !addr_equal(&q->remote, &p->remote),
				 "two paths for the same addresses");
		on_paths += n;
		reached[R_PATHS2] |= n > 1;
	}
	for (size_t i = 0; i < nconns; i++)
		hosted += conns[i]->host != NULL;
	FZ_CHECK(on_paths == hosted, "%u connections name a path, paths hold "
		 "%u", hosted, on_paths);
}

/* The tuple a connection's segments travel with: its splice's, or its
 * socket's. */
static void wire_of(const struct conn *c, const struct endpoint **l,
		    const struct endpoint **r)
{
	*l = c->mapped ? &c->mapped_local : &c->local;
	*r = c->mapped ? &c->mapped_remote : &c->remote;
}

/* A splice onto another connection's tuple hands that connection's
 * segments to the wrong socket. */
static void check_wires(void)
{
	for (size_t i = 0; i < nconns; i++) {
		const struct endpoint *l, *r, *ol, *or;

		if (!conns[i]->mapped)
			continue;
		wire_of(conns[i], &l, &r);
		for (size_t j = 0; j < nconns; j++) {
			if (j == i)
				continue;
			wire_of(conns[j], &ol, &or);
			/* A socket's own tuple taken (the other is not spliced)
			 * is the open splice-new-socket. */
			FZ_CHECK(!endpoint_equal(l, ol) || !endpoint_equal(r, or) ||
				 fz_known("wire-collision") ||
				 (!conns[j]->mapped &&
				  fz_known("splice-new-socket")), "%s is spliced onto "
				 "the tuple conn %llu's segments travel with",
				 cname(conns[i]),
				 (unsigned long long)conns[j]->id);
		}
	}
}

/* Every armed timer lives in memory that is still allocated. */
static void check_timers(void)
{
	for (size_t i = 0; i < fz_timer_count(); i++) {
		struct timer *t = fz_timer_at(i);

		FZ_CHECK(!__asan_address_is_poisoned(t), "timer %p armed in "
			 "freed memory", (void *)t);
		FZ_CHECK(t->index == i, "timer heap index");
	}
}

/* rackd's books against the fake nft's sets (when nothing failed). */
static void check_nft(struct rackd *d)
{
	unsigned held = 0, mapped = 0;

	for (size_t i = 0; i < nconns; i++) {
		held += conns[i]->hold != NULL;
		mapped += conns[i]->mapped;
	}
	FZ_CHECK(mapped == d->splice->mapped, "%u connections mapped, splice "
		 "counts %u", mapped, d->splice->mapped);
	for (struct local_kept *k = d->local->kept; k; k = k->next)
		FZ_CHECK(k->refs == count_kept(d, &k->addr), "a kept address "
			 "counts %u users, has %u", k->refs,
			 count_kept(d, &k->addr));
	if (fz_nft_failed || !fz_table)
		return;
	FZ_CHECK(held == d->held && held == fz_nft_held_count(), "%u held, "
		 "rackd counts %u, the held set has %u", held, d->held,
		 fz_nft_held_count());
	FZ_CHECK((d->held > 0) == fz_chains.held_out &&
		 (d->held > 0) == fz_chains.held_in, "held chains' rules %s "
		 "with %u held", fz_chains.held_out ? "in" : "out", d->held);
	FZ_CHECK(mapped == fz_nft_splice_count(), "%u mapped, the maps hold "
		 "%u", mapped, fz_nft_splice_count());
	FZ_CHECK((mapped > 0) == fz_chains.splice_in &&
		 (mapped > 0) == fz_chains.splice_out, "splicing rules %s with "
		 "%u mapped", fz_chains.splice_in ? "in" : "out", mapped);
	FZ_CHECK(d->adopt_rules == fz_chains.adopt_out, "adoption rules %s, "
		 "rackd thinks %s", fz_chains.adopt_out ? "in" : "out",
		 d->adopt_rules ? "in" : "out");
}

/*
 * Where trust is not anonymous, no connection is keyed anonymously: a
 * rackd before host keys is refused (anonymous_refused, or its set-up
 * times out), never managed. Judged by the trust in force when rackd's
 * count moved (a restart starts the counts again), but for set-ups that
 * began under trust anonymous before a reload changed it: those end
 * within their setup_timeout, as they began.
 */
static void check_trust(struct rackd *d)
{
	const uint64_t now[K_MAX] = {
		d->edp.keyed_anonymous, d->edp.keyed_exchange,
		d->edp.keyed_derived, d->edp.anonymous_refused,
		d->edp.hs_mismatch,
	};

	for (int k = 0; k < K_MAX; k++) {
		if (now[k] < keyed_seen[k])
			keyed_seen[k] = 0;
		keyed_total[k] += now[k] - keyed_seen[k];
	}
	if (d->cfg->trust == TRUST_ANONYMOUS || d->cfg->ntrust) {
		anon_seen = true;
		anon_last = fz_now;
		anon_deadline = d->cfg->setup_timeout_ms;
	}
	FZ_CHECK(now[K_ANONYMOUS] == keyed_seen[K_ANONYMOUS] ||
		 (anon_seen && fz_now <= anon_last + anon_deadline),
		 "a connection keyed anonymously where trust is %s",
		 trust_policy_name(d->cfg->trust));
	memcpy(keyed_seen, now, sizeof(keyed_seen));
}

static void count_reached(void)
{
	for (size_t i = 0; i < nconns; i++) {
		const struct conn *c = conns[i];

		reached[R_SETUP] |= c->state == CONN_SETUP;
		reached[R_CONNECTED] |= c->state == CONN_CONNECTED &&
					c->peer == PEER_RACKS;
		reached[R_SUSPENDED] |= c->state == CONN_SUSPENDED;
		reached[R_RESUMING] |= c->hold && c->hold->resuming;
		reached[R_SPLICED] |= c->mapped;
		reached[R_ADOPTING] |= c->state == CONN_ADOPTING;
		reached[R_ADOPTED] |= c->adoption == ADOPTION_DONE;
		reached[R_LEAVING] |= c->migration == MIG_LEAVING;
		reached[R_AWAY] |= c->migration == MIG_AWAY;
		reached[R_ARRIVING] |= c->migration == MIG_ARRIVING;
		reached[R_KEPT] |= c->kept_local;
	}
}

void fz_check(struct rackd *d)
{
	static int off = -1;

	/* RACKS_FUZZ_NOCHECK=1: the sanitizers alone, to see where a
	 * violation leads. */
	if (off < 0)
		off = getenv("RACKS_FUZZ_NOCHECK") != NULL;
	if (!d || !d->loop || off)
		return;
	check_table(d);
	check_halfopen(d);
	for (size_t i = 0; i < nconns; i++)
		check_conn(d, conns[i]);
	check_paths(d);
	check_wires();
	check_timers();
	check_nft(d);
	check_trust(d);
	count_reached();
}

void fz_check_input_done(void)
{
	bound_floor = 0;
	memset(keyed_seen, 0, sizeof(keyed_seen));
	anon_seen = false;
	inputs++;
	for (int i = 0; i < R_MAX; i++) {
		reached_total[i] += reached[i];
		reached[i] = false;
	}
}

void fz_check_stats_print(void)
{
	fprintf(stderr, "fuzz_engine: %llu inputs; inputs reaching each "
		"state:", (unsigned long long)inputs);
	for (int i = 0; i < R_MAX; i++)
		fprintf(stderr, " %s %llu", reach_names[i],
			(unsigned long long)reached_total[i]);
	fprintf(stderr, "\nfuzz_engine: rackd's set-ups:");
	for (int k = 0; k < K_MAX; k++)
		fprintf(stderr, " %s %llu", keyed_names[k],
			(unsigned long long)keyed_total[k]);
	fprintf(stderr, "; the peers' host handshakes %llu, derived keys "
		"%llu, anonymous keys %llu, failed handshakes %llu",
		(unsigned long long)fz_model_exchanges,
		(unsigned long long)fz_model_derived,
		(unsigned long long)fz_model_anonymous,
		(unsigned long long)fz_model_hs_failed);
	fprintf(stderr, "\nfuzz_engine: messages the peers could not verify "
		"%llu (stale reconnection confirmations %llu); events posted:",
		(unsigned long long)fz_peer_unverified,
		(unsigned long long)fz_peer_stale_confirms);
	for (int t = 0; t < EVENT_MAX; t++)
		if (event_name(t))
			fprintf(stderr, " %s %llu", event_name(t),
				(unsigned long long)fz_events_total[t]);
	fprintf(stderr, "\n");
}
