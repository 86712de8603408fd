// SPDX-License-Identifier: GPL-2.0-only
/*
 * The handshake in every order (issue 21): a table of orders, each run
 * through rackd's whole engine over the stateful fuzzer's world
 * (tests/fuzz/engine/, engine.h: the fake kernel, the wire, and a
 * well-behaved peer rackd on the remote host), once with our rackd as
 * the client and once as the server, IPv4 and IPv6, the peer with rackd
 * and without. A row is one order of:
 *
 *   - the client's SYN with racks' offer (S1) and, if the row says so,
 *     its kernel's plain retransmission a second later (S2, same ISN);
 *     a duplicate of either on the wire;
 *   - the order those reach the server in, and whether the last of them
 *     is held back until the handshake is over (late: it meets an
 *     established socket), right behind its last ACK or after all;
 *   - the order of the server's SYN-ACKs (with or without racks' option,
 *     as the server's side decides) at the client: as sent, reversed,
 *     the first duplicated;
 *   - the set-up messages (or ADOPTs) behind or ahead of the handshake's
 *     last ACK and the first data: as sent, data first, messages first
 *     (each twice: a host handshake's fragments duplicated),
 *     all reversed;
 *   - with our end the server of a racks client: the client's own ADOPTs
 *     delivered, or lost (its answers to ours pass), so that our end has
 *     to decide by itself what a handshake it missed the end of was.
 *
 * Every row asserts, on our end and on the peer's:
 *   1. setup_timeout after our end first saw the connection (its first
 *      SYN, or a late one), no connection of ours is in `handshake`,
 *      and the peer's kernel finished its handshake;
 *   2. once set-up had its setup_timeout too, ours is connected,
 *      adopting, or released with a named reason;
 *   3. in the end the two agree: with a racks peer both are managed
 *      under the same key (conn id), directly or by adoption; with a
 *      plain peer ours is released and says why (or, our end the
 *      server, never saw the connection: only offers are diverted).
 * The table runs for three pairs of rackds (orders.h): a peer rackd
 * with host keys and our default trust (accept-new), meeting for the
 * first time (every row: set-up is a host handshake, its three messages
 * in fragments, which the row's orders reorder and duplicate too) and
 * once they share a host pair (a derived key); and a peer rackd before
 * host keys with trust anonymous (the anonymous exchange). The last two
 * run the IPv4 racks-peer rows (set-up does not depend on the family;
 * ORDERS_FULL=1: every racks-peer row). The key a row ends with must be
 * of its case's kind (an adoption's always comes from a host handshake).
 * A second, short table holds handshakes that never finish (a socket
 * reset, SYNs or SYN-ACKs lost): forgotten at once, kept in `handshake`
 * while the kernel may still finish it (until syn_timeout), or released
 * with set-up's reason.
 *
 * Our end is the real engine; the other is peer.c's model of a rackd,
 * not a second engine (the engine's state is one instance per process).
 * The fuzzer's invariants (engine/check.c) hold after every step. A
 * failing row prints its name and what it saw; RACKS_FUZZ_LOG=1 with
 * ORDERS_CASE=C ORDERS_ROW=N traces one row of case C (0 to 2, as
 * orders.h lists them; ORDERS_FATES=1: and the second table);
 * ORDERS_LIST=1 lists the rows.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "engine/engine.h"
#include "keystate.h"
#include "option.h"
#include "orders.h"
#include "packet.h"

/* The kernel retransmits an unanswered SYN after its initial RTO. */
#define SYN_RTO_MS 1000
/* Long enough for every adoption to have ended (adopt.h: 1 + 3 + 4 s of
 * ADOPTs, then set-up), short of syn_timeout. */
#define FINAL_MS 25000

/* The last SYN of a row held back: not, until just after the handshake's
 * last ACK (ahead of the messages and data), until after everything. */
enum late { LATE_NONE, LATE_AFTER_ACK, LATE_AFTER_ALL, LATE_MAX };
static const char *const late_names[LATE_MAX] = {
	"", " (last after the ACK)", " (last after all)" };
enum synacks { SA_AS_SENT, SA_REVERSED, SA_DUPLICATED, SA_MAX };
enum setup_order { SU_AS_SENT, SU_DATA_FIRST, SU_MESSAGES_FIRST,
		   SU_REVERSED, SU_MAX };

static const char *const synack_names[SA_MAX] = {
	"as-sent", "reversed", "dup-first" };
static const char *const setup_names[SU_MAX] = {
	"as-sent", "data-first", "messages-first-twice", "reversed" };

/* The SYNs of a row: S1 (offer), S2 (plain copy), a duplicate of each. */
enum { SYN_S1, SYN_S2, SYN_S1_DUP, SYN_S2_DUP, SYN_MAX };
static const char *const syn_names[SYN_MAX] = { "S1", "S2", "S1'", "S2'" };

struct row {
	int family;			/* 0 IPv4, 1 IPv6: flow 0 or 1 */
	enum role role;
	bool peer_racks;
	/* The peer's own ADOPTs lost on the way (its answers to ours pass):
	 * our end must decide by itself. */
	bool adopts_lost;
	uint8_t syns[SYN_MAX];		/* delivery order, NSYNS of them */
	unsigned nsyns;
	enum late late;			/* the last one held back: where */
	enum synacks synacks;
	enum setup_order setup;
	char name[160];
};

static struct rackd the_d;
/* What the rows of a case ended in, for its summary. */
static unsigned ended_direct, ended_adopted, ended_released, ended_unseen;

/* ---- the rows ---- */

/* SYNS (a multiset, by kind) in every distinct order, into ROWS. */
static unsigned permute(const struct row *base, uint8_t *syns, unsigned n,
			unsigned k, struct row *rows, unsigned nrows)
{
	unsigned added = 0;

	if (k == n) {
		rows[nrows] = *base;
		memcpy(rows[nrows].syns, syns, n);
		rows[nrows].nsyns = n;
		return 1;
	}
	for (unsigned i = k; i < n; i++) {
		bool seen = false;
		uint8_t t;

		/* A duplicate is the same packet as its original: orders
		 * that only swap the two are one order. */
		for (unsigned j = k; j < i; j++)
			seen |= (syns[j] & 1) == (syns[i] & 1);
		if (seen)
			continue;
		t = syns[k], syns[k] = syns[i], syns[i] = t;
		added += permute(base, syns, n, k + 1, rows, nrows + added);
		t = syns[k], syns[k] = syns[i], syns[i] = t;
	}
	return added;
}

static void name_row(struct row *r)
{
	size_t len;

	len = (size_t)snprintf(r->name, sizeof(r->name), "%s our-%s %s%s syns=",
			       r->family ? "v6" : "v4",
			       r->role == REAL_CLIENT ? "client" : "server",
			       r->peer_racks ? "racks-peer" : "plain-peer",
			       r->adopts_lost ? " its-adopts-lost" : "");
	for (unsigned i = 0; i < r->nsyns; i++)
		len += (size_t)snprintf(r->name + len, sizeof(r->name) - len,
					"%s%s", i ? "," : "",
					syn_names[r->syns[i]]);
	snprintf(r->name + len, sizeof(r->name) - len,
		 "%s synacks=%s setup=%s", late_names[r->late],
		 synack_names[r->synacks], setup_names[r->setup]);
}

/* Every row; returns how many (ROWS has room for MAX). */
static unsigned make_rows(struct row *rows, unsigned max)
{
	/* The SYN multisets: S1 alone or with S2, each maybe duplicated. */
	static const uint8_t sets[][SYN_MAX + 1] = {
		{ 1, SYN_S1 },
		{ 2, SYN_S1, SYN_S1_DUP },
		{ 2, SYN_S1, SYN_S2 },
		{ 3, SYN_S1, SYN_S2, SYN_S1_DUP },
		{ 3, SYN_S1, SYN_S2, SYN_S2_DUP },
		{ 4, SYN_S1, SYN_S2, SYN_S1_DUP, SYN_S2_DUP },
	};
	unsigned n = 0;

	for (int f = 0; f < 2; f++)
	for (int role = 0; role < 2; role++)
	for (int racks = 1; racks >= 0; racks--)
	for (int lost = 0; lost < 2; lost++)
	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++)
	for (int late = 0; late < LATE_MAX; late++)
	for (int sa = 0; sa < SA_MAX; sa++)
	for (int su = 0; su < SU_MAX; su++) {
		struct row base = { .family = f, .role = (enum role)role,
				    .peer_racks = racks,
				    .late = (enum late)late,
				    .synacks = (enum synacks)sa,
				    .setup = (enum setup_order)su };
		uint8_t syns[SYN_MAX];
		unsigned added;

		/* Only a racks client adopts of its own accord. */
		if (lost && (role != REAL_SERVER || !racks))
			continue;
		base.adopts_lost = lost;
		memcpy(syns, sets[s] + 1, sets[s][0]);
		if (n + 24 > max) {
			fprintf(stderr, "handshake_orders: too many rows\n");
			exit(2);
		}
		added = permute(&base, syns, sets[s][0], 0, rows, n);
		for (unsigned i = n; i < n + added; i++)
			name_row(&rows[i]);
		n += added;
	}
	return n;
}

/* ---- a row's phases ---- */

/* The client's SYNs on the wire (S1, then S2 a RTO later, then the
 * duplicates); where each kind sits on it. */
static void client_syns(struct rackd *d, const struct row *r, unsigned n,
			bool *has)
{
	memset(has, 0, SYN_MAX * sizeof(*has));
	for (unsigned i = 0; i < r->nsyns; i++)
		has[r->syns[i]] = true;
	if (r->role == REAL_CLIENT)
		fz_kernel_connect(n, fz_rand(), 0x0f);
	else
		fz_peer_connect(n, fz_rand(), 1, false);
	orders_settle(d);
	/* The first SYN waits its RTO on the way. */
	orders_advance_to(d, fz_now + SYN_RTO_MS);
	if (has[SYN_S2]) {
		if (r->role == REAL_CLIENT)
			fz_kernel_retransmit(n);
		else
			fz_peer_retransmit_syn(n);
		orders_settle(d);
	}
	/* Wire: S1, [S2], then the copies. */
	if (has[SYN_S1_DUP])
		fz_net_dup_at(0);
	if (has[SYN_S2_DUP])
		fz_net_dup_at(1);
}

/* Where SYN kind K sits on the wire while the SYNs lead it: the SYNs
 * not delivered yet keep the order they were put there in. */
static unsigned syn_position(const bool *has, const bool *done, uint8_t k)
{
	static const uint8_t put[SYN_MAX] = { SYN_S1, SYN_S2, SYN_S1_DUP,
					      SYN_S2_DUP };
	unsigned pos = 0;

	for (unsigned i = 0; i < SYN_MAX && put[i] != k; i++)
		pos += has[put[i]] && !done[put[i]];
	return pos;
}

/* Deliver the SYNs in the row's order, the last one held if late; the
 * server's answers pile up behind them. */
static void deliver_syns(struct rackd *d, const struct row *r,
			 const bool *has, bool *done)
{
	unsigned count = r->nsyns - (r->late != LATE_NONE ? 1 : 0);

	memset(done, 0, SYN_MAX * sizeof(*done));
	for (unsigned i = 0; i < count; i++) {
		fz_net_deliver_at(syn_position(has, done, r->syns[i]), false);
		done[r->syns[i]] = true;
		orders_advance_to(d, fz_now + 1);
	}
}

/* The segments behind the held SYN (if any) towards the client: the
 * SYN-ACKs, in the row's order. */
static void deliver_synacks(struct rackd *d, const struct row *r)
{
	unsigned first = r->late != LATE_NONE ? 1 : 0;
	unsigned n = fz_net_wire_count() - first;

	if (r->synacks == SA_DUPLICATED && n)
		fz_net_dup_at(first), n++;
	for (unsigned i = 0; i < n; i++) {
		unsigned at = r->synacks == SA_REVERSED ? first + n - 1 - i
							: first;

		fz_net_deliver_at(at, false);
		orders_advance_to(d, fz_now + 1);
	}
}

/* fz_net_loses for a row whose peer's ADOPTs are lost: those of its
 * own accord (not saying it agrees) towards us. */
static bool peer_adopt(const struct fz_pkt *w)
{
	struct packet p;
	struct fz_seg s;
	struct edp_msg m;
	size_t olen = 0;
	const uint8_t *o;

	if (w->to_peer || !fz_seg_parse(w->data, w->len, &s, &p))
		return false;
	o = fz_exp_option(&s, &olen);
	return !(s.flags & TCP_FLAG_SYN) && o && fz_racks_exid(o, olen) &&
	       edp_option_parse(o, olen, &m) == EDP_OK &&
	       m.type == EDP_ADOPT && !(m.flags & EDP_ADOPT_AGREED);
}

static bool is_message(const struct fz_pkt *w)
{
	struct packet p;
	struct fz_seg s;
	size_t olen = 0;
	const uint8_t *o;

	if (!fz_seg_parse(w->data, w->len, &s, &p))
		return false;
	o = fz_exp_option(&s, &olen);
	return !(s.flags & TCP_FLAG_SYN) && o && fz_racks_exid(o, olen);
}

/* The index of the next segment to deliver under ORDER among the first
 * N after FIRST; N is not 0. */
static unsigned next_of(enum setup_order order, unsigned first, unsigned n)
{
	bool want_msg = order == SU_MESSAGES_FIRST;

	if (order == SU_REVERSED)
		return first + n - 1;
	if (order == SU_AS_SENT)
		return first;
	for (unsigned i = first; i < first + n; i++)
		if (is_message(fz_net_wire_at(i)) == want_msg)
			return i;
	return first;
}

/* The client's pure ACK on the wire after FIRST (the handshake's last
 * segment), delivered; the late SYN right behind it. */
static void deliver_ack_then_late(struct rackd *d, const struct row *r)
{
	bool to_peer = r->role == REAL_CLIENT;

	for (unsigned i = 1; i < fz_net_wire_count(); i++) {
		const struct fz_pkt *w = fz_net_wire_at(i);
		struct packet p;
		struct fz_seg s;

		if (w->to_peer != to_peer || is_message(w) ||
		    !fz_seg_parse(w->data, w->len, &s, &p) ||
		    (s.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) != TCP_FLAG_ACK)
			continue;
		fz_net_deliver_at(i, false);
		orders_advance_to(d, fz_now + 1);
		break;
	}
	fz_net_deliver_at(0, false);
	orders_advance_to(d, fz_now + 1);
}

/* The handshake's last ACKs, the first data and the first set-up
 * messages (or ADOPTs), in the row's order; the late SYN where the row
 * puts it. */
static void deliver_rest(struct rackd *d, const struct row *r, unsigned n)
{
	unsigned first = r->late == LATE_AFTER_ALL ? 1 : 0, count;

	if (r->late == LATE_AFTER_ACK)
		deliver_ack_then_late(d, r);
	fz_kernel_send(n, 100, false);
	fz_peer_send(n, 100, false);
	orders_settle(d);
	count = fz_net_wire_count() - first;
	/* Each message twice: the copies behind everything. */
	for (unsigned i = first; r->setup == SU_MESSAGES_FIRST &&
	     i < first + count; i++)
		if (is_message(fz_net_wire_at(i)))
			fz_net_dup_at(i);
	count = fz_net_wire_count() - first;
	for (; count; count--) {
		fz_net_deliver_at(next_of(r->setup, first, count), false);
		orders_advance_to(d, fz_now + 1);
	}
	if (r->late == LATE_AFTER_ALL) {
		fz_net_deliver_at(0, false);
		orders_advance_to(d, fz_now + 1);
	}
}

/*
 * The peer model's rackd sends one ADOPT when its offer is answered
 * plain (peer.c); a real one sends ADOPT_SENDS of them, ADOPT_WAIT1_MS
 * and ADOPT_WAIT2_MS apart, until one is answered. Its later ones, at
 * their times after FROM.
 */
static void peer_adopts_again(struct rackd *d, unsigned n, uint64_t from)
{
	static const uint64_t at[] = { ADOPT_WAIT1_MS,
				       ADOPT_WAIT1_MS + ADOPT_WAIT2_MS };
	const struct fz_peer *p = &fz_peers[n];

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		orders_advance_to(d, from + at[i]);
		if (p->racks && p->syn_offered && p->established &&
		    !p->setup && !p->connected) {
			fz_peer_message(n, 5, 0);
			orders_settle(d);
		}
	}
}

/* ---- what a row asserts ---- */

/* 1: setup_timeout after our end saw it first, nobody in its handshake. */
static bool check_decided(struct rackd *d, unsigned n)
{
	const struct fz_peer *p = &fz_peers[n];

	for (struct conn *c = d->conns.head; c; c = c->next)
		if (c->state == CONN_HANDSHAKE)
			return orders_fail("conn %llu still in handshake after "
				    "setup_timeout", (unsigned long long)c->id);
	if (!p->sock || !p->established)
		return orders_fail("the peer's handshake is not over (its socket "
			    "%s)", p->sock ? "not established" : "gone");
	return true;
}

/* 2: once set-up had its time, ours is decided, with a reason if not
 * managed. */
/* A plain client's SYNs never reach our rackd (only offers are
 * diverted): its connection is the kernel's alone, nothing to say. */
static bool never_ours(const struct row *r)
{
	return r->role == REAL_SERVER && !r->peer_racks;
}

static bool check_settled(struct rackd *d, const struct row *r, unsigned n)
{
	struct conn *c = orders_conn(d, n);

	if (!c && never_ours(r))
		return true;
	if (!c)
		return orders_fail("our connection was forgotten");
	switch (c->state) {
	case CONN_CONNECTED:
	case CONN_ADOPTING:
		return true;
	case CONN_RELEASED:
		if (c->unmanaged != UNMANAGED_NO)
			return true;
		return orders_fail("released without a reason");
	default:
		return orders_fail("in %s once set-up timed out", orders_state(c));
	}
}

/* How the row's case keys C: an adoption's set-up has no nonces to
 * derive with (setup.c agreed_pair()). */
static enum key_source case_source(const struct conn *c)
{
	switch (orders_case) {
	case CASE_ANONYMOUS:
		return KEY_SOURCE_ANONYMOUS;
	case CASE_DERIVED:
		if (c->adoption == ADOPTION_NONE)
			return KEY_SOURCE_DERIVED;
		/* fall through */
	default:
		return KEY_SOURCE_EXCHANGE;
	}
}

/* 3: the two ends agree. */
static bool check_agree(struct rackd *d, const struct row *r, unsigned n)
{
	const struct fz_peer *p = &fz_peers[n];
	struct conn *c = orders_conn(d, n);

	if (!c && never_ours(r)) {
		ended_unseen++;
		return true;
	}
	if (!c)
		return orders_fail("our connection was forgotten");
	if (!r->peer_racks) {
		if (c->state == CONN_RELEASED && c->unmanaged != UNMANAGED_NO) {
			ended_released++;
			return true;
		}
		return orders_fail("with a plain peer: %s (%s), not released "
			    "with a reason", orders_state(c), orders_why(c));
	}
	if (c->state != CONN_CONNECTED || !p->connected)
		return orders_fail("ours %s (%s, adoption %s), the peer's %s",
			    orders_state(c), orders_why(c),
			    conn_adoption_name(c->adoption),
			    p->connected ? "connected" :
			    p->setup ? "in set-up" : "not set up");
	if (!c->edp || c->edp->conn_id != p->conn_id)
		return orders_fail("connected under different keys");
	if (c->edp->source != case_source(c))
		return orders_fail("keyed by %s, not by %s",
				   key_source_name(c->edp->source),
				   key_source_name(case_source(c)));
	if (c->adoption == ADOPTION_DONE)
		ended_adopted++;
	else
		ended_direct++;
	return true;
}

/* When our end must have decided: setup_timeout after it first saw the
 * connection (a late SYN is its first), or after the first SYN. */
static uint64_t decide_by(struct rackd *d, unsigned n, uint64_t t0)
{
	struct conn *c = orders_conn(d, n);
	uint64_t from = c && c->created_mono > t0 ? c->created_mono : t0;

	return from + d->cfg->setup_timeout_ms;
}

static bool run_row(const struct row *r, unsigned index)
{
	struct rackd *d = &the_d;
	unsigned n = (unsigned)r->family;	/* flow 0: IPv4, 1: IPv6 */
	bool has[SYN_MAX], done[SYN_MAX], ok;
	uint64_t t0;

	orders_current = r->name;
	orders_start(d, index + 1 + 10000 * (unsigned)orders_case, n);
	fz_peers[n].racks = r->peer_racks;
	fz_net_loses = r->adopts_lost ? peer_adopt : NULL;
	t0 = fz_now;
	client_syns(d, r, n, has);
	deliver_syns(d, r, has, done);
	deliver_synacks(d, r);
	deliver_rest(d, r, n);
	/* From here the network delivers everything, in order. */
	fz_auto = true;
	fz_net_drain();
	peer_adopts_again(d, n, t0 + SYN_RTO_MS);
	orders_advance_to(d, decide_by(d, n, t0));
	ok = check_decided(d, n);
	/* Set-up starts with the SYN-ACK, a RTO after the first SYN. */
	orders_advance_to(d, t0 + SYN_RTO_MS + d->cfg->setup_timeout_ms + 100);
	ok = ok && check_settled(d, r, n);
	orders_advance_to(d, t0 + FINAL_MS);
	ok = ok && check_agree(d, r, n);
	orders_stop(d);
	return ok;
}

/* Whether the current case runs ROW: the main one every row, the
 * others the racks-peer ones (with a plain peer no set-up runs), IPv4's
 * unless FULL. */
static bool in_case(const struct row *row, bool full)
{
	return orders_case == CASE_HANDSHAKE ||
	       (row->peer_racks && (full || row->family == 0));
}

/* The current case's rows; how many failed. */
static unsigned run_case(const struct row *rows, unsigned nrows,
			 const char *only, bool full)
{
	unsigned failed = 0, ran = 0, fam[2] = { 0, 0 };

	ended_direct = ended_adopted = ended_released = ended_unseen = 0;
	for (unsigned i = 0; i < nrows; i++) {
		if ((only && (unsigned)atoi(only) != i) ||
		    !in_case(&rows[i], full || only))
			continue;
		if (fz_tracing)
			fprintf(stderr, "row %u (%s): %s\n", i,
				orders_case_names[orders_case], rows[i].name);
		ran++;
		fam[rows[i].family]++;
		if (!run_row(&rows[i], i)) {
			fprintf(stderr, "  (row %u: ORDERS_CASE=%d ORDERS_ROW=%u "
				"RACKS_FUZZ_LOG=1 to trace it)\n", i,
				(int)orders_case, i);
			failed++;
		}
	}
	printf("handshake_orders: %s: %u orders (IPv4 %u, IPv6 %u), %u "
	       "passed, %u failed; connected at once %u, by adoption %u",
	       orders_case_names[orders_case], ran, fam[0], fam[1],
	       ran - failed, failed, ended_direct, ended_adopted);
	if (orders_case == CASE_HANDSHAKE)
		printf("; plain peer: released %u, never seen %u",
		       ended_released, ended_unseen);
	printf("\n");
	return failed;
}

int main(void)
{
	static struct row rows[8192];
	const char *only = getenv("ORDERS_ROW"), *which = getenv("ORDERS_CASE");
	unsigned nrows, failed = 0, fates_ran = 0, fates_failed = 0;

	fz_tracing = getenv("RACKS_FUZZ_LOG") != NULL;
	fz_rng_install();
	if (sodium_init() < 0)
		return 2;
	nrows = make_rows(rows, sizeof(rows) / sizeof(rows[0]));
	if (getenv("ORDERS_LIST")) {
		for (unsigned i = 0; i < nrows; i++)
			printf("%u %s\n", i, rows[i].name);
		return 0;
	}
	for (int k = 0; k < CASE_MAX; k++) {
		if (which && atoi(which) != k)
			continue;
		orders_case = (enum orders_case)k;
		failed += run_case(rows, nrows, only,
				   getenv("ORDERS_FULL") != NULL);
	}
	orders_case = CASE_HANDSHAKE;
	if (!only || getenv("ORDERS_FATES"))
		fates_failed = orders_run_fates(&the_d, &fates_ran);
	printf("handshake_orders: %u handshakes that never finish (IPv4 and "
	       "IPv6), %u failed\n", fates_ran, fates_failed);
	return failed || fates_failed ? 1 : 0;
}
