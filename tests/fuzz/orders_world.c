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
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "engine/engine.h"
#include "engine/wrap.h"
#include "hostpairs.h"
#include "knownhosts.h"
#include "orders.h"
#include "state.h"

/* Never there: the built-in defaults (setup_timeout 5 s, syn_timeout
 * 30 s) are what the rows run with. */
#define CONFIG_PATH "/nonexistent/racks-orders.conf"

const char *orders_current = "(none)";
enum orders_case orders_case;
const char *const orders_case_names[CASE_MAX] = {
	"host handshake", "derived key", "anonymous",
};

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

/*
 * What an earlier connection between the two hosts left at both ends
 * (hostauth.c finish(), setup.c setup_connected()): a host pair, its
 * peer met at flow N's remote address and trusted there. The secret is
 * the seed's; only the two ends' agreeing on it matters.
 */
static void share_pair(struct rackd *d, unsigned seed, unsigned n)
{
	uint8_t secret[EDP_HOSTPAIR_SECRET_LEN] = { 0x72, 0x61 };
	struct endpoint l, r;
	struct host_pair *h;

	fz_flow_endpoints(n, &l, &r);
	memcpy(secret + 2, &seed, sizeof(seed));
	h = host_pairs_add(&d->host_pairs, fz_model.pk, secret,
			   (int64_t)time(NULL));
	host_pairs_confirm(&d->host_pairs, h, &r.addr);
	known_hosts_seen(d->known_hosts, fz_model.pk, &r.addr,
			 (int64_t)time(NULL));
	fz_model_add_pair(secret, d->hostkey.pk);
	fz_model.pairs[0].confirmed = true;
}

void orders_start(struct rackd *d, unsigned seed, unsigned n)
{
	signal(SIGABRT, on_abort);
	fz_rng_seed(seed);
	fz_fake_reset();
	fz_nft_reset();
	fz_net_reset();
	fz_model_reset(orders_case != CASE_ANONYMOUS, false, seed);
	fz_peer_reset();
	memset(fz_events, 0, sizeof(fz_events));
	memset(d, 0, sizeof(*d));
	d->cfg = config_defaults();
	/* A peer rackd before host keys: only trust anonymous keys it. */
	if (orders_case == CASE_ANONYMOUS)
		d->cfg->trust = TRUST_ANONYMOUS;
	fz_wire(d);
	d->config_path = CONFIG_PATH;
	d->sock_path = "orders";
	d->state->path = NULL;
	fz_d = d;
	daemon_start(d);
	if (orders_case == CASE_DERIVED)
		share_pair(d, seed, n);
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
