// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stateful fuzzer: rackd's whole engine, wired by rackd/main.c's own
 * wire() and started and stopped by rackd/daemon.c, over a fake kernel
 * (tests/fuzz/engine/, see engine.h), driven by a sequence of operations
 * decoded from the input: segments from the local sockets and from the
 * remote hosts (a well-behaved peer rackd among them, with valid keys and
 * MACs), crafted segments, the wire's losses and reorderings, time,
 * sockets closing, links and addresses coming and going, nft and
 * sock_diag failing, and the control commands (peer, export, import, ...).
 * The invariants (engine/check.c) are checked after every step and on the
 * way through the timers; a run ends with daemon_stop(), after which no
 * timer may be left.
 *
 * Input: three bytes of configuration, two of seed, then operations, each
 * an opcode byte and its arguments (missing bytes read as zero). The
 * third configuration byte's high bits choose the remote rackds and our
 * trust (configure()): all clear, as before host keys existed (the
 * seeds of then replay as they did).
 * tests/fuzz/gen_seeds.py writes seeds that reach the deep states.
 * RACKS_FUZZ_LOG=1 traces a run (rackd's log included) on stderr.
 */
#include <netinet/in.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_cmds.h"
#include "daemon.h"
#include "engine/engine.h"
#include "engine/wrap.h"
#include "fuzz.h"
#include "log.h"
#include "proto.h"
#include "state.h"

#define MAX_OPS 400
#define EXPORTS 4
/* Never there: a reload takes the built-in defaults. */
#define CONFIG_PATH "/nonexistent/racks-fuzz.conf"

int LLVMFuzzerInitialize(int *argc, char ***argv);

enum op {
	OP_ADVANCE,		/* time passes: table index */
	OP_CONNECT,		/* flow, ISN, options: a local app connects */
	OP_PEER_CONNECT,	/* flow, ISN, options: a remote app connects */
	OP_DELIVER,		/* count, drop mask: the wire's first ones */
	OP_DRAIN,		/* the whole wire, nothing lost */
	OP_AUTO,		/* the wire drains by itself after every step */
	OP_SEND,		/* flow, length: the local app sends */
	OP_PEER_SEND,		/* flow, length: the remote app sends */
	OP_SOCK,		/* flow, what, arg: the local socket changes */
	OP_PEER_MSG,		/* flow, what, arg: the peer rackd speaks */
	OP_RAW,			/* flow, 6 bytes: a crafted segment */
	OP_LINK,		/* link, flags: rtnetlink link event */
	OP_ADDR,		/* address, flags: rtnetlink address event */
	OP_ROUTE,		/* family, address: the route's source */
	OP_CUT,			/* mask: addresses cut off the network */
	OP_NFT_FAIL,		/* kinds, count */
	OP_SOCKDIAG_FAIL,	/* mode */
	OP_CTL,			/* command, args */
	OP_PEER_STATE,		/* flow, what, args: the remote host */
	OP_WIRE,		/* duplicate or reorder */
	OP_HANDSHAKE,		/* flow, who: connect and let it all happen */
	OP_RESTART,		/* with or without its state file */
	OP_MAX
};

static const uint64_t advance_ms[16] = {
	1, 10, 50, 100, 200, 250, 500, 1000, 1700, 2500, 5000, 10000,
	30000, 60000, 300000, 3,
};

static char exports[EXPORTS][2048];
static unsigned user_cut, link_down;
/* The configuration bytes (configure()), for a restart; the state
 * file's path. */
static uint8_t config_a, config_b, config_c;
static uint16_t config_seed;
static char state_path[64];

uint8_t fz_u8(struct fz_input *in)
{
	return in->pos < in->len ? in->data[in->pos++] : 0;
}

uint16_t fz_u16(struct fz_input *in)
{
	uint8_t hi = fz_u8(in);

	return (uint16_t)(hi << 8 | fz_u8(in));
}

static uint32_t isn_of(uint8_t mode, unsigned n)
{
	switch (mode & 3) {
	case 0:
		return fz_rand();
	case 1:		/* the sequence space wraps during the connection */
		return 0xfffffff0u - (mode >> 2);
	case 2:
		return 0x7ffffff0u + (mode >> 2);
	default:
		return 1000u * (n + 1);
	}
}

/* The remote rackds (peer_setup.c) and our trust, from configuration
 * byte C: 0x20 they have host keys (else they are rackds before host
 * keys: short option, KEY exchange); 0x40 our trust is accept-new (else
 * anonymous: with 0x20 clear, as every input was before host keys);
 * 0x80 their own trust is anonymous. Accept-new must refuse a rackd
 * before host keys (check.c). */
#define CONF_HOSTKEYS 0x20
#define CONF_ACCEPT_NEW 0x40
#define CONF_PEER_ANONYMOUS 0x80

/* The configuration: short timeouts and a small table reachable; with
 * the seed's top bit, host pairs used up after two connections (their
 * renewal). */
static void configure(struct config *cfg, uint8_t a, uint8_t b, uint8_t c,
		      uint16_t seed)
{
	static const uint32_t half[4] = { 16384, 1, 2, 4 };
	static const uint32_t per_prefix[4] = { 4096, 1, 2, 3 };
	static const uint64_t suspend[4] = { 5000, 1000, 300, 5000 };
	static const uint64_t max_suspend[4] = { 3ULL * 86400000, 20000, 3000,
						 60000 };
	static const uint64_t setup[4] = { 5000, 1000, 300, 2000 };
	static const uint64_t syn[4] = { 30000, 3000, 500, 30000 };
	static const uint64_t sweep[4] = { 10000, 1000, 300, 60000 };
	static const uint32_t maxconn[8] = { 1000000, 1, 2, 3, 4, 8, 16, 1000 };

	cfg->suspend_after_ms = suspend[a & 3];
	cfg->max_suspend_ms = max_suspend[a >> 2 & 3];
	cfg->answer_probes = !(a & 0x10);
	cfg->setup_timeout_ms = setup[a >> 5 & 3];
	cfg->syn_timeout_ms = syn[b & 3];
	cfg->sweep_interval_ms = sweep[b >> 2 & 3];
	cfg->max_connections = maxconn[b >> 4 & 7];
	cfg->retry_interval_ms = b & 0x80 ? 200 : 1000;
	cfg->max_half_open = half[c & 3];
	cfg->max_half_open_per_prefix = per_prefix[c >> 2 & 3];
	cfg->trust = c & CONF_ACCEPT_NEW ? TRUST_ACCEPT_NEW : TRUST_ANONYMOUS;
	if (seed & 0x8000)
		cfg->hostpair_max_connections = 2;
	if (c & 0x10) {
		/* One server port, the pool's first local (and remote) one. */
		cfg->all_ports = false;
		cfg->ports = xcalloc(1, sizeof(*cfg->ports));
		cfg->ports[0].first = cfg->ports[0].last = fz_local_port(0);
		cfg->nports = 1;
	}
}

static void set_cut(void)
{
	fz_cut = user_cut | link_down;
}

/* ---- control commands, as rackctl sends them ---- */

__attribute__((format(printf, 2, 3)))
static char *ctl(struct rackd *d, const char *fmt, ...)
{
	char req[4096], err[256], *out = NULL;
	const struct ctl_command *cmd;
	struct proto_msg msg;
	size_t outlen = 0;
	va_list ap;
	FILE *f;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(req, sizeof(req), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(req) ||
	    proto_parse(req, (size_t)n, &msg))
		return NULL;
	cmd = ctl_command_find(proto_get(&msg, "cmd"));
	f = open_memstream(&out, &outlen);
	if (cmd && f)
		cmd->run(d, &msg, f, err, sizeof(err));
	if (f)
		fclose(f);
	proto_msg_free(&msg);
	fz_trace("ctl %.40s -> %.200s", fmt, out ? out : "");
	return out;
}

/* The id of the connection ARG picks in the table, or one unknown. */
static unsigned long long conn_id(struct rackd *d, uint8_t arg)
{
	size_t i = arg % (d->conns.count + 1);

	for (struct conn *c = d->conns.head; c; c = c->next)
		if (i-- == 0)
			return (unsigned long long)c->id;
	return 999999;
}

static void keep_export(const char *reply, unsigned slot)
{
	const char *s = reply ? strstr(reply, "\nstate=") : NULL;
	size_t len;

	if (!s)
		return;
	s += 7;
	len = strcspn(s, "\n");
	if (len < sizeof(exports[0]))
		snprintf(exports[slot % EXPORTS], sizeof(exports[0]), "%.*s",
			 (int)len, s);
}

static void op_ctl(struct rackd *d, struct fz_input *in)
{
	uint8_t what = fz_u8(in), a = fz_u8(in), b = fz_u8(in);
	unsigned long long id = conn_id(d, a);
	char addr[ADDR_STRLEN], *out = NULL, line[2048];
	const struct addr *peer = fz_remote_addr(b & 1, b >> 1 & 3 ? 2 : 1);

	switch (what % 10) {
	case 0:
		out = ctl(d, "cmd=status\n");
		break;
	case 1:
		out = ctl(d, "cmd=list\n");
		break;
	case 2:
		out = ctl(d, "cmd=show\nid=%llu\n", id);
		break;
	case 3:		/* rackctl peer ID ADDR[:PORT] */
		if (fz_known("peer-splice-fail"))
			fz_nft_fail(0, 0);
		addr_format(peer, addr, sizeof(addr));
		if (b & 8)
			out = ctl(d, "cmd=peer\nid=%llu\npeer=%s%s%s:%u\n", id,
				  peer->family == AF_INET6 ? "[" : "", addr,
				  peer->family == AF_INET6 ? "]" : "",
				  fz_remote_port(b >> 4 & 1 ? 2 : 1));
		else
			out = ctl(d, "cmd=peer\nid=%llu\npeer=%s\n", id, addr);
		break;
	case 4:
		out = ctl(d, "cmd=export\nid=%llu\n", id);
		keep_export(out, b);
		break;
	case 5:
		out = ctl(d, "cmd=unexport\nid=%llu\n", id);
		break;
	case 6:
		out = ctl(d, "cmd=release\nid=%llu\n", id);
		break;
	case 7:		/* an export brought back, maybe damaged on the way */
		snprintf(line, sizeof(line), "%s", exports[b % EXPORTS]);
		if (!line[0])
			break;
		if (a & 1) {
			line[(a >> 1) % strlen(line)] = (char)(b | 0x20);
			for (unsigned n = 0; n < FZ_FLOWS; n++)
				fz_peers[n].tainted = true;
		}
		out = ctl(d, "cmd=import\nstate=%s\n", line);
		break;
	case 8:
		out = ctl(d, "cmd=restored\nid=%llu\n", id);
		break;
	default:
		out = ctl(d, "cmd=reload\n");
		fz_check_bound_changed(d);
	}
	free(out);
}

/* ---- the local sockets and the remote hosts ---- */

/* Whether a splice of rackd's travels with flow N's tuple: no socket
 * older than rackd can be there (the move would have been refused,
 * splice.c splice_tuple_check()), nor a new one come by a handshake
 * (track.c refuses its SYN). */
static bool spliced_onto(unsigned n)
{
	struct endpoint l, r;

	fz_flow_endpoints(n, &l, &r);
	for (struct conn *c = fz_d ? fz_d->conns.head : NULL; c; c = c->next)
		if (c->mapped && endpoint_equal(&c->mapped_local, &l) &&
		    endpoint_equal(&c->mapped_remote, &r))
			return true;
	return false;
}

static void op_sock(unsigned n, uint8_t what, uint8_t arg)
{
	static const uint8_t states[8] = { 6, 5, 7, 8, 9, 11, 1, 12 };
	struct fz_sock *k = &fz_socks[n];
	struct fz_peer *p = &fz_peers[n];

	switch (what % 8) {
	case 0:		/* gone: closed, reset, checkpointed */
		k->exists = false;
		return;
	case 1:
		if (k->exists)
			k->state = states[arg % 8];
		return;
	case 2:
		fz_kernel_retransmit(n);
		return;
	case 3: {	/* established before rackd knew (adoption) */
		uint32_t isn = isn_of(arg, n), risn = fz_rand();

		if (spliced_onto(n))
			return;
		fz_kernel_established(n, isn, risn, arg & 0x80);
		fz_flow_endpoints(n, &p->ours, &p->wire);
		p->sock = p->established = true;
		p->active = !(arg & 0x80);
		p->isn = risn;
		p->risn = isn;
		p->snd_nxt = risn + 1;
		p->rcv_nxt = isn + 1;
		return;
	}
	case 4:		/* restored by CRIU: its counters start again */
		if (!k->isn && !k->snd_una)
			return;
		k->exists = true;
		k->state = 1;
		k->restored = true;
		k->base_snd = k->snd_una;
		k->base_rcv = k->rcv_nxt;
		return;
	case 5:
		k->unacked = arg & 7;
		k->backoff = arg >> 3 & 7;
		k->retransmits = arg >> 6;
		return;
	case 6:
		k->zero_window = arg & 1;
		return;
	default:
		fz_kernel_send(n, arg & 0x7f, arg & 0x80);
	}
}

static void op_peer_state(unsigned n, uint8_t what, uint8_t arg)
{
	struct fz_peer *p = &fz_peers[n];

	switch (what % 6) {
	case 0:		/* its rackd restarted without its state */
		fz_peer_forget(n);
		return;
	case 1:		/* its rackd: there, of which kind; a new host key;
			 * its host pairs lost */
		p->racks = arg & 1;
		p->hostkeys = fz_model.hostkeys ^ !!(arg & 2);
		if (arg & 4)
			fz_model_new_key();
		if (arg & 8)
			fz_model_forget_pairs();
		return;
	case 2:
		p->silent = arg & 1;
		return;
	case 3:		/* it moves, and says so */
		fz_peer_move(n, arg & 3, arg >> 2 & 3, true);
		return;
	case 4:		/* it moves without a word */
		fz_peer_move(n, arg & 3, arg >> 2 & 3, false);
		return;
	default:
		fz_peer_send(n, arg & 0x7f, arg & 0x80);
	}
}

static void op_link(uint8_t i, uint8_t flags)
{
	struct rtnl_link_event ev = {
		.ifindex = fz_local_ifindex(i & 1), .name = i & 1 ? "eth1" : "eth0",
		.up = flags & 1, .carrier = flags & 2, .removed = flags & 4,
	};
	bool usable = ev.up && ev.carrier && !ev.removed;

	link_down = usable ? link_down & ~(1u << (i & 1))
			   : link_down | 1u << (i & 1);
	set_cut();
	fz_rtnl_link(&ev);
}

static void op_addr(uint8_t which, uint8_t flags)
{
	int f = which & 1, i = which >> 1 & 1;
	struct rtnl_addr_event ev = {
		.ifindex = fz_local_ifindex(i),
		.prefix = { *fz_local_addr(f, i), f ? 64 : 24 },
		.removed = flags & 1,
	};

	if (ev.removed)
		fz_addr_present[f] &= ~(1u << i);
	else
		fz_addr_present[f] |= 1u << i;
	/* The kernel's routes follow the addresses there are. */
	if (fz_route[f] >= 0 && !(fz_addr_present[f] & (1u << fz_route[f])))
		fz_route[f] = fz_addr_present[f] & 1 ? 0 :
			      fz_addr_present[f] & 2 ? 1 : -1;
	if (!(flags & 2))	/* else: the event is lost (ENOBUFS) */
		fz_rtnl_addr(&ev);
}

static void op_handshake(struct rackd *d, unsigned n, uint8_t who)
{
	(void)d;
	if (who & 1)
		fz_kernel_connect(n, isn_of(who >> 1, n), 0x0f);
	else
		fz_peer_connect(n, isn_of(who >> 1, n), 1, false);
	fz_net_settle();
	fz_net_drain();
	fz_advance(5);
	fz_net_drain();
	fz_advance(50);
	fz_net_drain();
}

static const char *const op_names[OP_MAX] = {
	"advance", "connect", "peer_connect", "deliver", "drain", "auto",
	"send", "peer_send", "sock", "peer_msg", "raw", "link", "addr",
	"route", "cut", "nft_fail", "sockdiag_fail", "ctl", "peer_state",
	"wire", "handshake", "restart",
};

/* rackd starts: wired by main.c's code, started by daemon.c's, with
 * the addresses the rtnetlink dump reports in its first turns. */
static void start(struct rackd *d, const char *state)
{
	memset(d, 0, sizeof(*d));
	d->cfg = config_defaults();
	configure(d->cfg, config_a, config_b, config_c, config_seed);
	fz_wire(d);
	d->config_path = CONFIG_PATH;
	d->sock_path = "fuzz";
	d->state->path = state;
	fz_d = d;
	daemon_start(d);
	/* Writing the file at every change would cost the fuzzer more than
	 * it tells: only a stop writes it (daemon_stop()'s hand-over). */
	d->state->path = NULL;
	for (int f = 0; f < 2; f++)
		for (int i = 0; i < FZ_LOCAL_ADDRS; i++)
			if (fz_addr_present[f] & (1u << i))
				op_addr((uint8_t)(f | i << 1), 0);
}

/* rackd stops; with a state file, its table and kept addresses may stay
 * for the next one. */
static void stop(struct rackd *d, bool with_state)
{
	d->state->path = with_state ? state_path : NULL;
	fz_d = NULL;
	daemon_stop(d);
	fz_fake_stopped(with_state);
}

/* A restart with its state file: the next rackd takes over the table
 * and the connections; without: they are adopted, if at all. */
/* Known bug "restart-fatal": two connections whose wire tuples collide
 * (spliced or about to be) make the next start fail. */
static bool wires_collide(struct rackd *d)
{
	for (struct conn *c = d->conns.head; c; c = c->next)
		for (struct conn *o = c->next; o; o = o->next)
			if (conn_spliced(c) && conn_spliced(o) &&
			    endpoint_equal(&c->wire_local, &o->wire_local) &&
			    endpoint_equal(&c->wire_remote, &o->wire_remote))
				return true;
	return false;
}

static void restart(struct rackd *d, bool with_state)
{
	if (with_state && fz_known("restart-fatal") && wires_collide(d))
		with_state = false;
	stop(d, with_state);
	/* A table that cannot be installed stops rackd at start-up, by
	 * design: no failure is injected there. */
	fz_nft_fail(0, 0);
	start(d, with_state ? state_path : NULL);
	fz_check_bound_changed(d);
	if (with_state)
		unlink(state_path);
}

static void op(struct rackd *d, struct fz_input *in)
{
	uint8_t code = fz_u8(in) % OP_MAX, x, y;
	unsigned n;

	if (fz_tracing) {
		size_t end = in->pos + 7 < in->len ? in->pos + 7 : in->len;
		char args[32] = "";

		for (size_t i = in->pos; i < end; i++)
			snprintf(args + strlen(args), sizeof(args) - strlen(args),
				 " %02x", in->data[i]);
		fz_trace("op %s:%s ...", op_names[code], args);
	}
	switch (code) {
	case OP_ADVANCE:
		fz_advance(advance_ms[fz_u8(in) % 16]);
		return;
	case OP_CONNECT:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		fz_kernel_connect(n, isn_of(x, n), fz_u8(in));
		return;
	case OP_PEER_CONNECT:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		y = fz_u8(in);
		fz_peer_connect(n, isn_of(x, n), y, y & 0x80);
		return;
	case OP_DELIVER:
		x = fz_u8(in);
		y = fz_u8(in);
		for (unsigned i = 0; i < 1u + (x & 7); i++)
			fz_net_deliver(y >> i & 1);
		return;
	case OP_DRAIN:
		fz_net_drain();
		return;
	case OP_AUTO:
		fz_auto = fz_u8(in) & 1;
		return;
	case OP_SEND:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		fz_kernel_send(n, x & 0x7f, x & 0x80);
		return;
	case OP_PEER_SEND:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		fz_peer_send(n, x & 0x7f, x & 0x80);
		return;
	case OP_SOCK:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		op_sock(n, x, fz_u8(in));
		return;
	case OP_PEER_MSG:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		fz_peer_message(n, x, fz_u8(in));
		return;
	case OP_RAW:
		fz_peer_raw(fz_u8(in) % FZ_FLOWS, in);
		return;
	case OP_LINK:
		x = fz_u8(in);
		op_link(x, fz_u8(in));
		return;
	case OP_ADDR:
		x = fz_u8(in);
		op_addr(x, fz_u8(in));
		return;
	case OP_ROUTE:
		x = fz_u8(in);
		fz_route[x & 1] = x >> 1 & 1 ? (x >> 2 & 1) : -1;
		return;
	case OP_CUT:
		user_cut = fz_u8(in) & 3;
		set_cut();
		return;
	case OP_NFT_FAIL:
		x = fz_u8(in);
		fz_nft_fail(x & 15, 1 + (x >> 4 & 3));
		return;
	case OP_SOCKDIAG_FAIL:
		x = fz_u8(in);
		fz_sockdiag_dump_err = x & 1 ? 105 /* ENOBUFS */ : 0;
		fz_sockdiag_progress_err = x & 2 ? 5 /* EIO */ : 0;
		return;
	case OP_CTL:
		op_ctl(d, in);
		return;
	case OP_PEER_STATE:
		n = fz_u8(in) % FZ_FLOWS;
		x = fz_u8(in);
		op_peer_state(n, x, fz_u8(in));
		return;
	case OP_WIRE:
		if (fz_u8(in) & 1)
			fz_net_dup();
		else
			fz_net_rotate();
		return;
	case OP_HANDSHAKE:
		n = fz_u8(in) % FZ_FLOWS;
		op_handshake(d, n, fz_u8(in));
		return;
	default:
		restart(d, fz_u8(in) & 1);
	}
}

/* What the loop does between two events: the host's own packets, the
 * timers due, the wire in auto mode; then the invariants. */
static void step(struct rackd *d)
{
	fz_net_settle();
	fz_run_due();
	if (fz_auto)
		fz_net_drain();
	fz_check(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_tracing = getenv("RACKS_FUZZ_LOG") != NULL;
	snprintf(state_path, sizeof(state_path), "/dev/shm/racks-fuzz-%d.state",
		 (int)getpid());
	fz_rng_install();
	if (sodium_init() < 0)
		abort();
	atexit(fz_check_stats_print);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_input in = { data, size, 0 };
	struct rackd d;
	uint16_t seed;

	config_a = fz_u8(&in);
	config_b = fz_u8(&in);
	config_c = fz_u8(&in);
	seed = config_seed = fz_u16(&in);
	fz_rng_seed(seed + 1);
	fz_fake_reset();
	fz_nft_reset();
	fz_net_reset();
	fz_model_reset(config_c & CONF_HOSTKEYS, config_c & CONF_PEER_ANONYMOUS,
		       seed);
	fz_peer_reset();
	memset(exports, 0, sizeof(exports));
	memset(fz_events, 0, sizeof(fz_events));
	user_cut = link_down = 0;
	start(&d, NULL);
	fz_auto = config_a & 0x80;
	step(&d);
	for (unsigned ops = 0; in.pos < in.len && ops < MAX_OPS; ops++) {
		op(&d, &in);
		step(&d);
	}
	stop(&d, false);
	fz_check_input_done();
	return 0;
}
