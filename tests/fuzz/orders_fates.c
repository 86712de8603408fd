// SPDX-License-Identifier: GPL-2.0-only
/*
 * Handshakes that never finish (orders.h): not an order but a fate, what
 * our end does with a handshake still not over when setup_timeout comes
 * (a real one, which the kernel may still finish until syn_timeout), or
 * whose socket went. Everything towards the peer is lost on the wire.
 */
#include <stdio.h>

#include "engine/engine.h"
#include "orders.h"

enum fate { FATE_RESET, FATE_UNANSWERED, FATE_SYNACK_LOST };

/* Our entry at setup_timeout after the first SYN, and at syn_timeout. */
enum fate_state { F_GONE, F_HANDSHAKE, F_RELEASED, F_ANY };

struct fate_row {
	enum fate fate;
	int family;
	enum role role;
	enum fate_state at_setup, at_syn;
	const char *name;
};

static const struct fate_row fates[] = {
	{ FATE_RESET, 0, REAL_CLIENT, F_GONE, F_GONE, "v4 our-client: "
	  "socket reset before any SYN-ACK: forgotten at setup_timeout" },
	{ FATE_RESET, 1, REAL_CLIENT, F_GONE, F_GONE, "v6 our-client: "
	  "socket reset before any SYN-ACK: forgotten at setup_timeout" },
	{ FATE_UNANSWERED, 0, REAL_CLIENT, F_HANDSHAKE, F_GONE, "v4 "
	  "our-client: SYNs unanswered: in its handshake until syn_timeout" },
	{ FATE_UNANSWERED, 1, REAL_CLIENT, F_HANDSHAKE, F_GONE, "v6 "
	  "our-client: SYNs unanswered: in its handshake until syn_timeout" },
	/* Its SYN-ACK went by us: set-up's deadline, then its reason (the
	 * sweep forgets it once the kernel drops the request). */
	{ FATE_SYNACK_LOST, 0, REAL_SERVER, F_RELEASED, F_ANY, "v4 "
	  "our-server: every SYN-ACK lost: released (setup_timeout) at "
	  "setup_timeout" },
	{ FATE_SYNACK_LOST, 1, REAL_SERVER, F_RELEASED, F_ANY, "v6 "
	  "our-server: every SYN-ACK lost: released (setup_timeout) at "
	  "setup_timeout" },
};

static bool fate_is(const struct conn *c, enum fate_state want)
{
	switch (want) {
	case F_GONE:
		return !c;
	case F_HANDSHAKE:
		return c && c->state == CONN_HANDSHAKE;
	case F_RELEASED:
		return c && c->state == CONN_RELEASED &&
		       c->unmanaged != UNMANAGED_NO;
	default:
		return true;
	}
}

static bool to_peer(const struct fz_pkt *w)
{
	return w->to_peer;
}

static bool check(struct rackd *d, unsigned n, enum fate_state want,
		  const char *when)
{
	struct conn *c = orders_conn(d, n);

	if (fate_is(c, want))
		return true;
	return orders_fail("at %s: %s (%s)", when, orders_state(c),
			   orders_why(c));
}

static bool run_fate(struct rackd *d, const struct fate_row *f,
		     unsigned index)
{
	unsigned n = (unsigned)f->family;	/* flow 0: IPv4, 1: IPv6 */
	uint64_t t0;
	bool ok;

	orders_current = f->name;
	orders_start(d, 100000 + index, n);
	fz_net_loses = to_peer;
	fz_auto = true;
	t0 = fz_now;
	if (f->role == REAL_CLIENT)
		fz_kernel_connect(n, fz_rand(), 0x0f);
	else
		fz_peer_connect(n, fz_rand(), 1, false);
	orders_settle(d);
	/* A RST (or the application closing) before any SYN-ACK. */
	if (f->fate == FATE_RESET)
		fz_socks[n].exists = false;
	/* The kernel goes on retransmitting meanwhile. */
	for (uint64_t rto = 1000; rto < 30000; rto *= 2) {
		orders_advance_to(d, t0 + rto);
		if (f->role == REAL_CLIENT)
			fz_kernel_retransmit(n);
		else
			fz_peer_retransmit_syn(n);
		orders_settle(d);
	}
	orders_advance_to(d, t0 + d->cfg->setup_timeout_ms + 1);
	ok = check(d, n, f->at_setup, "setup_timeout");
	orders_advance_to(d, t0 + d->cfg->syn_timeout_ms + 1);
	ok = check(d, n, f->at_syn, "syn_timeout") && ok;
	orders_stop(d);
	return ok;
}

unsigned orders_run_fates(struct rackd *d, unsigned *ran)
{
	unsigned failed = 0;

	*ran = sizeof(fates) / sizeof(fates[0]);
	for (unsigned i = 0; i < *ran; i++)
		failed += !run_fate(d, &fates[i], i);
	return failed;
}
