// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stateful fuzzer's network (engine.h): what this host's netfilter
 * hooks do with rackd's ruleset, and the wire to the remote hosts.
 *
 * Every segment this host sends or receives goes through the rules the
 * fake nft holds (nft.c), as nft/ruleset.c writes them: diverted to the
 * queue (rackd decides, exactly one verdict) or not, rewritten by the
 * splice maps, held. A verdict of NF_REPEAT sends a segment through its
 * hook again with rackd's mark. What passes prerouting reaches the local
 * kernel (kernel.c).
 *
 * What the local kernel and rackd's raw sends emit is kept in a backlog
 * and handled after the current step (never while rackd decides a
 * packet, as in the real event loop); the wire is a FIFO the input
 * delivers, drops, duplicates or reorders, or drains in auto mode.
 */
#include <errno.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <string.h>

#include "announce.h"
#include "engine.h"
#include "option.h"
#include "packet.h"

#define WIRE_MAX 64
#define BACKLOG_MAX 64
#define REPEAT_MAX 8		/* passes of one segment through a hook */

bool fz_auto;
unsigned fz_cut;
bool (*fz_net_loses)(const struct fz_pkt *w);

/* ---- the wire and the host's backlog ---- */

static struct fz_pkt wire[WIRE_MAX];
static unsigned wire_head, wire_n;
static struct {
	bool to_kernel;
	size_t len;
	uint8_t data[FZ_PKT_MAX];
} backlog[BACKLOG_MAX];
static unsigned back_head, back_n;

static void wire_push(bool to_peer, const uint8_t *pkt, size_t len)
{
	struct fz_pkt *w;

	if (wire_n == WIRE_MAX || len > FZ_PKT_MAX) {
		fz_trace("wire full: a segment lost");
		return;
	}
	w = &wire[(wire_head + wire_n++) % WIRE_MAX];
	w->to_peer = to_peer;
	w->len = len;
	memcpy(w->data, pkt, len);
}

static void backlog_push(bool to_kernel, const uint8_t *pkt, size_t len)
{
	unsigned i;

	if (back_n == BACKLOG_MAX || len > FZ_PKT_MAX) {
		fz_trace("backlog full: a segment lost");
		return;
	}
	i = (back_head + back_n++) % BACKLOG_MAX;
	backlog[i].to_kernel = to_kernel;
	backlog[i].len = len;
	memcpy(backlog[i].data, pkt, len);
}

void fz_host_emit(const struct fz_seg *s)
{
	uint8_t buf[FZ_PKT_MAX];
	size_t len = fz_seg_build(s, buf, sizeof(buf));

	if (len)
		backlog_push(false, buf, len);
}

/* Out of this host onto the wire, if it is not cut off; spliced unless
 * it carries the mark the splicing rules let by (UNSPLICED). */
static void to_wire(struct fz_seg *s, bool unspliced)
{
	uint8_t buf[FZ_PKT_MAX];
	size_t len;

	if (fz_table && !unspliced)
		fz_nft_splice_out(&s->src, &s->dst);
	if (fz_is_cut(&s->src.addr))
		return;
	len = fz_seg_build(s, buf, sizeof(buf));
	if (len)
		wire_push(true, buf, len);
}

/* ---- netfilter ---- */

/*
 * Known bugs (tests/fuzz/BUGS.md) step aside when listed in
 * RACKS_FUZZ_KNOWN: the segment that would set one off goes nowhere.
 *  syn-reuse         a SYN on the tuple of a connection rackd manages
 *  abort-keeps-keys  an ADOPT for a connection aborted with its keys
 *  splice-new-socket a SYN on the tuple a splice uses
 */
static bool known_filtered(const struct fz_seg *s, bool outbound)
{
	const struct endpoint *l = outbound ? &s->src : &s->dst;
	const struct endpoint *r = outbound ? &s->dst : &s->src;
	struct conn *c = conn_lookup(&fz_d->conns, l, r), *w;
	size_t olen = 0;
	const uint8_t *o = fz_exp_option(s, &olen);
	struct edp_msg m;

	if ((s->flags & TCP_FLAG_SYN) && fz_known("splice-new-socket") &&
	    (w = conn_lookup_wire(&fz_d->conns, l, r)) && w != c)
		return true;
	if (!c)
		return false;
	if ((s->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST)) ==
	    TCP_FLAG_SYN && fz_known("syn-reuse") &&
	    (c->host || c->hold || c->mapped || c->edp ||
	     c->migration != MIG_NONE))
		return true;
	return c->state == CONN_RELEASED && c->edp && o &&
	       edp_option_parse(o, olen, &m) == EDP_OK &&
	       m.type == EDP_ADOPT && fz_known("abort-keeps-keys");
}

/* The server ports rackd considers (ruleset.c syn_chain(), probe_in):
 * a SYN-ACK's source port, any other segment's destination port. */
static bool server_port(const struct fz_seg *s)
{
	const struct config *cfg = fz_d->cfg;
	bool synack = (s->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) ==
		      (TCP_FLAG_SYN | TCP_FLAG_ACK);
	uint16_t port = synack ? s->src.port : s->dst.port;

	for (size_t i = 0; i < cfg->nports && !cfg->all_ports; i++)
		if (port >= cfg->ports[i].first && port <= cfg->ports[i].last)
			return true;
	return cfg->all_ports;
}

/* Output: the handshake rule (fail-open queue), held flows (strict
 * queue), flows being adopted (fail-open); -1 when nothing diverts. */
static int divert_out(const struct fz_seg *s)
{
	uint8_t f = s->flags & (TCP_FLAG_FIN | TCP_FLAG_SYN | TCP_FLAG_RST);

	if (!fz_table)
		return -1;
	if (f == TCP_FLAG_SYN && (!(s->flags & TCP_FLAG_ACK) ?
				  server_port(s) :
				  fz_nft_offered(&s->src, &s->dst)))
		return FZ_QUEUE;
	if (fz_chains.held_out && fz_nft_held(&s->src, &s->dst))
		return fz_rules.strict ? FZ_QUEUE_STRICT : FZ_QUEUE;
	if (fz_chains.adopt_out && fz_nft_adopting(&s->src, &s->dst))
		return FZ_QUEUE;
	return -1;
}

void fz_net_output(const uint8_t *pkt, size_t len)
{
	static uint8_t out[0xffff];
	struct packet p;
	struct fz_seg s;
	int which;

	if (!fz_seg_parse(pkt, len, &s, &p))
		return;
	/* A source address gone (and not kept on lo) fails routing first. */
	if (!fz_present(&s.src.addr) && !fz_kept(&s.src.addr))
		return;
	if (known_filtered(&s, true))
		return;
	which = divert_out(&s);
	if (which >= 0) {
		struct fz_verdict v = fz_queue_packet(which, NF_INET_LOCAL_OUT,
						      pkt, len, len, 0, 0, out,
						      sizeof(out));

		if (v.verdict == NF_DROP || !fz_seg_parse(out, v.len, &s, &p))
			return;
	}
	to_wire(&s, false);
}

/* Prerouting, step 1: the peer rackd's messages and reconnections. */
static bool racks_message(const struct fz_seg *s)
{
	size_t olen = 0;
	const uint8_t *o = fz_exp_option(s, &olen);
	uint8_t f = s->flags & (TCP_FLAG_FIN | TCP_FLAG_SYN | TCP_FLAG_RST);

	if (!(s->flags & TCP_FLAG_SYN))
		return s->optlen + 20 > 40 && fz_racks_exid(o, olen);
	if (f != TCP_FLAG_SYN)
		return false;
	if (s->optlen == 4 * EDP_RCSYN_DOFF - 20 && s->paylen >= 4 &&
	    ((uint32_t)s->payload[0] << 24 | (uint32_t)s->payload[1] << 16 |
	     (uint32_t)s->payload[2] << 8 | s->payload[3]) == EDP_RCSYN_MAGIC)
		return true;
	return o && olen >= 5 && o[1] == EDP_OPT_HDR_LEN && fz_racks_exid(o, olen) &&
	       (o[4] == (EDP_VERSION << 4 | EDP_RECONNECT) ||
		o[4] == (EDP_VERSION << 4 | EDP_RECONNECT_ACK));
}

/* Step 3, input_ctl: SYN-ACKs, SYNs offering racks, probes, resets. */
static bool handshake_in(const struct fz_seg *s, bool marked)
{
	uint8_t f = s->flags & (TCP_FLAG_FIN | TCP_FLAG_SYN | TCP_FLAG_RST |
				TCP_FLAG_ACK);
	size_t olen = 0;
	const uint8_t *o = fz_exp_option(s, &olen);
	bool probe = fz_d->cfg->answer_probes &&
		     s->tos >> 2 == EDP_PROBE_DSCP;

	/* Every reset, for rstguard.c: before the port test. */
	if ((s->flags & (TCP_FLAG_SYN | TCP_FLAG_RST)) == TCP_FLAG_RST &&
	    !marked)
		return true;
	/* syn_in and probe_in consider the server ports only. */
	if (!(s->flags & (TCP_FLAG_FIN | TCP_FLAG_SYN | TCP_FLAG_RST)) ||
	    !server_port(s))
		return false;
	if (f == (TCP_FLAG_SYN | TCP_FLAG_ACK) && !marked)
		return true;
	if (f == TCP_FLAG_SYN && fz_racks_exid(o, olen) && !marked)
		return true;
	if (probe && f == TCP_FLAG_SYN && !marked)
		return true;
	return probe && (s->flags & (TCP_FLAG_FIN | TCP_FLAG_SYN |
				     TCP_FLAG_RST)) == TCP_FLAG_FIN &&
	       (!marked || !fz_rules.probe_fin_marked);
}

void fz_net_input(const uint8_t *pkt, size_t len, uint32_t skbinfo,
		  size_t orig_len)
{
	static uint8_t out[0xffff];
	uint8_t buf[FZ_PKT_MAX];
	bool marked = false;
	struct packet p;
	struct fz_seg s;

	if (!fz_seg_parse(pkt, len, &s, &p))
		return;
	for (unsigned pass = 0;; pass++) {
		int which = -1;
		struct fz_verdict v;

		if (pass == REPEAT_MAX && fz_known("repeat-loop"))
			return;
		FZ_CHECK(pass < REPEAT_MAX, "a segment went through prerouting "
			 "%u times (NF_REPEAT, diverted again each time)", pass);
		/* Steps as nft/ruleset.c orders them (ruleset_chains_write). */
		if (fz_table && !marked && racks_message(&s))
			which = fz_rules.strict ? FZ_QUEUE_STRICT : FZ_QUEUE;
		if (which < 0 && fz_table && fz_chains.splice_in)
			fz_nft_splice_in(&s.src, &s.dst);
		if (which < 0 && fz_table && handshake_in(&s, marked))
			which = FZ_QUEUE;
		if (which < 0 && fz_table && fz_chains.held_in && !marked &&
		    fz_nft_held(&s.dst, &s.src))
			which = fz_rules.strict ? FZ_QUEUE_STRICT : FZ_QUEUE;
		if (which < 0)
			break;
		if (known_filtered(&s, false))
			return;
		len = fz_seg_build(&s, buf, sizeof(buf));
		if (!len)
			return;
		if (skbinfo & FZ_BAD_CSUM) {
			/* Corrupted on the way: once, as it arrived. */
			buf[p.tcp_off + 16] ^= 0x5a;
			skbinfo &= ~FZ_BAD_CSUM;
		}
		v = fz_queue_packet(which, NF_INET_PRE_ROUTING, buf, len,
				    orig_len > len ? orig_len : len, skbinfo,
				    marked ? fz_d->cfg->mark : 0, out,
				    sizeof(out));
		if (v.verdict == NF_DROP || !fz_seg_parse(out, v.len, &s, &p))
			return;
		/* Accepted: on to the next hook, past the rest of this
		 * chain (a message accepted so is not spliced). */
		if (v.verdict != NF_REPEAT)
			break;
		FZ_CHECK(v.mark == fz_d->cfg->mark, "NF_REPEAT with mark %x",
			 v.mark);
		marked = true;
	}
	fz_kernel_receive(&s);
}

/* ---- rackd's raw sends, the wire, the backlog ---- */

void fz_net_injected(const uint8_t *pkt, size_t len, bool unspliced)
{
	struct packet p;
	struct fz_seg s;

	if (!fz_seg_parse(pkt, len, &s, &p))
		return;
	/* Raw sockets route too: from an address gone, nothing leaves. */
	if (!fz_present(&s.src.addr) && !fz_kept(&s.src.addr) &&
	    fz_local_index(&s.src.addr) >= 0)
		return;
	if (fz_local_index(&s.dst.addr) >= 0)
		backlog_push(true, pkt, len);	/* to a socket of ours */
	else
		to_wire(&s, unspliced);
}

void fz_net_from_peer(const uint8_t *pkt, size_t len)
{
	wire_push(false, pkt, len);
}

/* What the kernel and rackd's sends left for the host to handle. */
void fz_net_settle(void)
{
	for (unsigned i = 0; back_n && i < 1024; i++) {
		unsigned h = back_head;
		struct packet p;
		struct fz_seg s;

		back_head = (back_head + 1) % BACKLOG_MAX;
		back_n--;
		if (backlog[h].to_kernel) {
			if (fz_seg_parse(backlog[h].data, backlog[h].len, &s, &p))
				fz_kernel_receive(&s);
		} else {
			fz_net_output(backlog[h].data, backlog[h].len);
		}
	}
}

bool fz_net_deliver(bool drop)
{
	struct fz_pkt *w;
	struct packet p;

	fz_net_settle();
	if (!wire_n)
		return false;
	w = &wire[wire_head];
	wire_head = (wire_head + 1) % WIRE_MAX;
	wire_n--;
	if (packet_parse(w->data, w->len, &p) != PACKET_OK)
		return true;
	if (fz_tracing) {
		char a[ADDR_STRLEN], b[ADDR_STRLEN];

		fz_trace("wire %s%s: %s.%u > %s.%u flags %02x seq %u ack %u "
			 "len %zu%s", drop ? "DROPS " : "",
			 w->to_peer ? "to peer" : "to us",
			 addr_format(&p.src, a, sizeof(a)), p.sport,
			 addr_format(&p.dst, b, sizeof(b)), p.dport, p.flags,
			 p.seq, p.ack, p.payload_len,
			 p.opt.racks_len ? " racks" : "");
	}
	if (drop || (fz_net_loses && fz_net_loses(w)))
		return true;
	if (w->to_peer)
		fz_peer_receive(w->data, w->len);
	else if (fz_present(&p.dst) && !fz_is_cut(&p.dst))
		fz_net_input(w->data, w->len, 0, w->len);
	fz_net_settle();
	/* Known bug "reconnect-twice": no two segments in one burst. */
	if (fz_known("reconnect-twice"))
		fz_run_due();
	return true;
}

unsigned fz_net_wire_count(void)
{
	return wire_n;
}

const struct fz_pkt *fz_net_wire_at(unsigned i)
{
	return i < wire_n ? &wire[(wire_head + i) % WIRE_MAX] : NULL;
}

bool fz_net_deliver_at(unsigned i, bool drop)
{
	struct fz_pkt w;

	if (i >= wire_n)
		return false;
	/* To the front, the others' order kept. */
	w = wire[(wire_head + i) % WIRE_MAX];
	for (; i > 0; i--)
		wire[(wire_head + i) % WIRE_MAX] =
			wire[(wire_head + i - 1) % WIRE_MAX];
	wire[wire_head] = w;
	return fz_net_deliver(drop);
}

/* Drains in a row that stopped at their bound with segments still on
 * the wire. */
static unsigned unending;

void fz_net_drain(void)
{
	unsigned i;

	for (i = 0; i < 256 && fz_net_deliver(false); i++)
		;
	if (i < 256 || !wire_n) {
		unending = 0;
		return;
	}
	/* Well-behaved ends answer a segment with a few at most, and those
	 * need no answer: a wire that never empties is two ends answering
	 * each other without end (BUGS.md, handshake-restart-loop). */
	FZ_CHECK(++unending < 4, "the wire never empties: %u segments "
		 "delivered in a row, and more keep coming (at %llu ms)",
		 256 * unending, (unsigned long long)fz_now);
}

void fz_net_dup(void)
{
	fz_net_dup_at(0);
}

void fz_net_dup_at(unsigned i)
{
	const struct fz_pkt *w = fz_net_wire_at(i);

	if (w && wire_n < WIRE_MAX)
		wire_push(w->to_peer, w->data, w->len);
}

void fz_net_rotate(void)
{
	static struct fz_pkt w;

	if (wire_n > 1) {
		w = wire[wire_head];
		wire_head = (wire_head + 1) % WIRE_MAX;
		wire_n--;
		wire_push(w.to_peer, w.data, w.len);
	}
}

void fz_net_reset(void)
{
	static bool pooled;

	if (!pooled) {
		fz_pool_init();
		pooled = true;
	}
	wire_head = wire_n = back_head = back_n = 0;
	unending = 0;
	fz_auto = false;
	fz_cut = 0;
}
