// SPDX-License-Identifier: GPL-2.0-only
/*
 * The handshake tables' world (orders.h): the stateful fuzzer's fake
 * kernel, wire and peer, reset for every row, and rackd started over it
 * by daemon.c's own code with main.c's wiring, as fuzz_engine.c does.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "engine/engine.h"
#include "engine/wrap.h"
#include "orders.h"
#include "state.h"

/* Never there: the built-in defaults (setup_timeout 5 s, syn_timeout
 * 30 s) are what the rows run with. */
#define CONFIG_PATH "/nonexistent/racks-orders.conf"

const char *orders_current = "(none)";

/* A violation of the fuzzer's invariants aborts: say which row. */
static void on_abort(int sig)
{
	static const char what[] = "\nhandshake_orders: aborted in row ";

	(void)sig;
	if (write(2, what, sizeof(what) - 1) < 0 ||
	    write(2, orders_current, strlen(orders_current)) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(134);
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
}

/* The addresses, as the rtnetlink dump reports them at start-up. */
static void addresses(void)
{
	for (int f = 0; f < 2; f++)
		for (int i = 0; i < FZ_LOCAL_ADDRS; i++) {
			struct rtnl_addr_event ev = {
				.ifindex = fz_local_ifindex(i),
				.prefix = { *fz_local_addr(f, i),
					    f ? 64 : 24 },
			};

			fz_rtnl_addr(&ev);
		}
}

void orders_start(struct rackd *d, unsigned seed)
{
	signal(SIGABRT, on_abort);
	fz_rng_seed(seed);
	fz_fake_reset();
	fz_nft_reset();
	fz_net_reset();
	fz_peer_reset();
	memset(fz_events, 0, sizeof(fz_events));
	memset(d, 0, sizeof(*d));
	d->cfg = config_defaults();
	/* The model peer speaks the anonymous exchange (engine/peer.c). */
	d->cfg->trust = TRUST_ANONYMOUS;
	fz_wire(d);
	d->config_path = CONFIG_PATH;
	d->sock_path = "orders";
	d->state->path = NULL;
	fz_d = d;
	daemon_start(d);
	addresses();
	fz_auto = false;
	orders_settle(d);
}

void orders_stop(struct rackd *d)
{
	fz_net_loses = NULL;
	fz_d = NULL;
	daemon_stop(d);
	fz_fake_stopped(false);
	fz_check_input_done();
}

void orders_settle(struct rackd *d)
{
	fz_net_settle();
	fz_run_due();
	fz_check(d);
}

void orders_advance_to(struct rackd *d, uint64_t when)
{
	if (fz_now < when)
		fz_advance(when - fz_now);
	orders_settle(d);
}

struct conn *orders_conn(struct rackd *d, unsigned n)
{
	struct endpoint l, r;

	fz_flow_endpoints(n, &l, &r);
	return conn_lookup(&d->conns, &l, &r);
}

bool orders_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "handshake_orders: FAILED %s\n  ", orders_current);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return false;
}

const char *orders_state(const struct conn *c)
{
	return c ? conn_state_name(c->state) : "(none)";
}

const char *orders_why(const struct conn *c)
{
	const char *why = c ? conn_unmanaged_name(c->unmanaged) : NULL;

	return why ? why : "-";
}
