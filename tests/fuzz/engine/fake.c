// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel I/O rackd's engine calls, faked for the stateful fuzzer
 * (engine.h): one clock the input moves, the queue, raw sends, sock_diag,
 * rtnetlink, routes, addresses kept on "lo". Everything that would reach
 * the kernel is recorded or answered here instead (the rest of the host:
 * host.c).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>
#include <sanitizer/asan_interface.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "engine.h"
#include "inject.h"
#include "local.h"
#include "lohost.h"
#include "log.h"
#include "loop.h"
#include "netlink.h"
#include "packet.h"
#include "queue.h"
#include "rtnl.h"
#include "sockdiag.h"
#include "wrap.h"

/* Timer callbacks one input may run: inputs stay fast whatever they
 * ask for, and a timer that re-arms itself for now forever shows. */
#define FZ_TIMER_BUDGET 50000
#define FZ_TIMER_STORM 5000	/* callbacks at one instant */

uint64_t fz_now;
struct rackd *fz_d;
struct fz_sock fz_socks[FZ_FLOWS];
int fz_sockdiag_dump_err, fz_sockdiag_progress_err;
unsigned fz_addr_present[2];
int fz_route[2];
unsigned fz_lo_kept[2];

static struct timer_heap heap;
static unsigned timer_runs;

/* ---- the event loop: one clock, one heap ---- */

struct loop {
	int unused;
};
static struct loop the_loop;

struct loop *loop_new(void)
{
	return &the_loop;
}

/* Every timer must have been cancelled by whoever armed it. */
void loop_free(struct loop *loop)
{
	(void)loop;
}

int loop_add(struct loop *loop, int fd, uint32_t events, loop_fn fn,
	     void *arg)
{
	(void)loop, (void)fd, (void)events, (void)fn, (void)arg;
	return 0;
}

int loop_mod(struct loop *loop, int fd, uint32_t events)
{
	(void)loop, (void)fd, (void)events;
	return 0;
}

void loop_del(struct loop *loop, int fd)
{
	(void)loop, (void)fd;
}

uint64_t loop_dispatches(const struct loop *loop, int fd)
{
	(void)loop, (void)fd;
	return 0;
}

uint64_t loop_now(void)
{
	return fz_now;
}

void loop_timer_arm(struct loop *loop, struct timer *t, uint64_t delay_ms)
{
	(void)loop;
	FZ_CHECK(t->fn, "timer %p armed without a callback", (void *)t);
	timer_heap_arm(&heap, t, fz_now + delay_ms);
}

void loop_timer_cancel(struct loop *loop, struct timer *t)
{
	(void)loop;
	timer_heap_cancel(&heap, t);
}

int loop_run(struct loop *loop)
{
	(void)loop;
	abort();	/* the fuzzer is the loop */
}

void loop_stop(struct loop *loop)
{
	(void)loop;
}

size_t fz_timer_count(void)
{
	return heap.count;
}

struct timer *fz_timer_at(size_t i)
{
	return heap.items[i];
}

/*
 * timer_heap_run()'s loop, one callback at a time, so that the host's
 * own packets (an ACK to a held socket) are handled before the next, as
 * the real loop handles events between its timer runs, and the
 * invariants are checked on the way, after every fourth callback (all
 * of them cost a third of the fuzzer's time; every step ends with them).
 */
bool fz_run_due(void)
{
	unsigned storm = 0;

	while (heap.count && heap.items[0]->deadline <= fz_now) {
		struct timer *t = heap.items[0];

		if (timer_runs >= FZ_TIMER_BUDGET)
			return false;
		FZ_CHECK(!__asan_address_is_poisoned(t),
			 "timer %p due in freed memory", (void *)t);
		timer_heap_cancel(&heap, t);
		t->fn(t, t->arg);
		timer_runs++;
		FZ_CHECK(++storm < FZ_TIMER_STORM, "%u timer callbacks at %llu "
			 "ms without time passing", storm,
			 (unsigned long long)fz_now);
		fz_net_settle();
		if (timer_runs % 4 == 0)
			fz_check(fz_d);
	}
	return true;
}

/* The remote rackds' retransmissions due now (peer_setup.c), beside
 * ours; the wire in auto mode. */
static void others_due(void)
{
	fz_peer_run_due();
	if (fz_auto)
		fz_net_drain();
}

void fz_advance(uint64_t ms)
{
	uint64_t end = fz_now + ms, next;

	for (;;) {
		if (!fz_run_due())
			return;
		others_due();
		next = fz_peer_next_due();
		if (heap.count && heap.items[0]->deadline < next)
			next = heap.items[0]->deadline;
		if (next > end)
			break;
		fz_now = next;
	}
	fz_now = end;
	if (fz_run_due())
		others_due();
}

/* ---- the queues: the fail-open one and the strict one ---- */

struct queue {
	queue_fn fn;
	void *arg;
	bool fail_open;
	struct queue_stats stats;
};
static struct queue queues[2];	/* [FZ_QUEUE], [FZ_QUEUE_STRICT] */

/* The packet being decided: exactly one verdict for it, on its queue. */
static struct {
	bool open;
	struct queue *q;
	uint32_t id;
	unsigned verdicts;
	struct fz_verdict v;
	uint8_t *out;
	size_t outsize;
} cur;
static uint32_t next_id;

int queue_open(struct queue **out, uint16_t num, uint32_t maxlen,
	       bool fail_open, queue_fn fn, void *arg)
{
	struct queue *q = &queues[fail_open ? FZ_QUEUE : FZ_QUEUE_STRICT];

	(void)num, (void)maxlen;
	FZ_CHECK(!q->fn, "a second %s queue", fail_open ? "fail-open"
							 : "strict");
	memset(q, 0, sizeof(*q));
	q->fn = fn;
	q->arg = arg;
	q->fail_open = fail_open;
	*out = q;
	return 0;
}

void queue_close(struct queue *q)
{
	q->fn = NULL;
}

int queue_fd(const struct queue *q)
{
	(void)q;
	return -1;
}

void queue_process(struct queue *q)
{
	(void)q;
	abort();	/* packets come through fz_queue_packet() */
}

static void verdict(struct queue *q, uint32_t id, uint32_t v)
{
	FZ_CHECK(cur.open && id == cur.id, "verdict %u for packet %u, not "
		 "the one being decided (%u)", v, id, cur.id);
	FZ_CHECK(q == cur.q, "verdict for packet %u on the other queue", id);
	FZ_CHECK(++cur.verdicts == 1, "packet %u got %u verdicts", id,
		 cur.verdicts);
	cur.v.verdict = v;
	q->stats.verdicts++;
}

void queue_verdict(struct queue *q, uint32_t id, uint32_t v)
{
	FZ_CHECK(v == NF_ACCEPT || v == NF_DROP, "verdict %u", v);
	verdict(q, id, v);
}

void queue_verdict_repeat(struct queue *q, uint32_t id, uint32_t mark)
{
	verdict(q, id, NF_REPEAT);
	cur.v.mark = mark;
}

void queue_flush(struct queue *q)
{
	(void)q;
}

void queue_verdict_replace(struct queue *q, uint32_t id, const uint8_t *data,
			   size_t len)
{
	verdict(q, id, NF_ACCEPT);
	FZ_CHECK(len <= cur.outsize, "replacement of %zu bytes", len);
	memcpy(cur.out, data, len);
	cur.v.replaced = true;
	cur.v.len = len;
	q->stats.rewritten++;
}

const struct queue_stats *queue_stats(const struct queue *q)
{
	return &q->stats;
}

/* A replacement is the same segment with other options or window: it
 * parses, its checksum is right, and everything else is as it was. */
static void check_replacement(const uint8_t *orig, size_t len,
			      const uint8_t *repl, size_t rlen)
{
	struct packet a, b;

	FZ_CHECK(packet_parse(orig, len, &a) == PACKET_OK, "original");
	FZ_CHECK(packet_parse(repl, rlen, &b) == PACKET_OK,
		 "replacement does not parse (%zu bytes)", rlen);
	FZ_CHECK(csum_tcp_valid(&b.src, &b.dst, b.data + b.tcp_off, b.tcp_len),
		 "replacement's TCP checksum is wrong");
	FZ_CHECK(addr_equal(&a.src, &b.src) && addr_equal(&a.dst, &b.dst) &&
		 a.sport == b.sport && a.dport == b.dport && a.seq == b.seq &&
		 a.ack == b.ack && a.flags == b.flags &&
		 a.payload_len == b.payload_len &&
		 memcmp(a.data + a.tcp_off + a.hdr_len,
			b.data + b.tcp_off + b.hdr_len, a.payload_len) == 0,
		 "replacement changed more than options and window");
}

struct fz_verdict fz_queue_packet(int which, uint8_t hook,
				  const uint8_t *data, size_t len,
				  size_t orig_len, uint32_t skbinfo,
				  uint32_t mark, uint8_t *out, size_t outsize)
{
	struct queue *q = &queues[which];
	struct queue_packet qp = {
		.id = ++next_id, .hook = hook, .data = data, .len = len,
		.orig_len = orig_len, .skbinfo = skbinfo, .mark = mark,
	};

	FZ_CHECK(!cur.open, "packet queued while rackd decides packet %u",
		 cur.id);
	FZ_CHECK(q->fn, "queue closed");
	memset(&cur, 0, sizeof(cur));
	cur.open = true;
	cur.q = q;
	cur.id = qp.id;
	cur.out = out;
	cur.outsize = outsize;
	q->stats.received++;
	q->fn(q->arg, q, &qp);
	FZ_CHECK(cur.verdicts == 1, "packet %u (hook %u, %zu bytes) got no "
		 "verdict", qp.id, hook, len);
	cur.open = false;
	if (cur.v.replaced)
		check_replacement(data, len, out, cur.v.len);
	else if (cur.v.verdict != NF_DROP) {
		memcpy(out, data, len < outsize ? len : outsize);
		cur.v.len = len < outsize ? len : outsize;
	}
	return cur.v;
}

/* ---- raw sends ---- */

static uint8_t the_inject;

int inject_open(struct inject **out, uint32_t mark, uint32_t unspliced_mark)
{
	(void)mark, (void)unspliced_mark;
	*out = (struct inject *)&the_inject;
	return 0;
}

void inject_close(struct inject *inj)
{
	(void)inj;
}

void inject_set_mark(struct inject *inj, uint32_t mark,
		     uint32_t unspliced_mark)
{
	(void)inj, (void)mark, (void)unspliced_mark;
}

size_t fz_build(const struct inject_segment *seg, uint8_t *out, size_t size)
{
	int len = inject_build(seg, out, size);

	return len > 0 ? (size_t)len : 0;
}

/*
 * What rackd sends must be a segment: built by the real builder (which
 * refuses options that are no multiple of four, mixed families, too
 * long headers), it parses back to what was asked, checksum included.
 */
int inject_send(struct inject *inj, const struct inject_segment *seg)
{
	static uint8_t buf[0xffff];
	struct packet p;
	int len;

	(void)inj;
	FZ_CHECK(seg->src && seg->dst, "segment without endpoints");
	len = inject_build(seg, buf, sizeof(buf));
	FZ_CHECK(len > 0, "rackd's segment cannot be built: %s (family %u -> "
		 "%u, %zu option bytes, %zu payload)", strerror(-len),
		 seg->src->addr.family, seg->dst->addr.family, seg->optlen,
		 seg->paylen);
	FZ_CHECK(packet_parse(buf, (size_t)len, &p) == PACKET_OK,
		 "rackd's segment does not parse");
	FZ_CHECK(csum_tcp_valid(&p.src, &p.dst, p.data + p.tcp_off, p.tcp_len),
		 "rackd's segment has a wrong checksum");
	FZ_CHECK(p.seq == seg->seq && p.ack == seg->ack &&
		 p.flags == seg->flags && p.payload_len == seg->paylen &&
		 p.sport == seg->src->port && p.dport == seg->dst->port,
		 "rackd's segment parses to something else");
	FZ_CHECK(seg->src->port && seg->dst->port, "segment to or from port 0");
	if (p.opt.racks_len) {
		struct edp_msg m;

		FZ_CHECK(edp_option_parse(p.data + p.opt.racks_off,
					  p.opt.racks_len, &m) == EDP_OK ||
			 edp_marker_type(p.data + p.opt.racks_off,
					 p.opt.racks_len),
			 "rackd sent a racks option that does not parse");
	}
	fz_net_injected(buf, (size_t)len, seg->unspliced);
	return 0;
}

int inject_unreachable(struct inject *inj, const struct endpoint *local,
		       const struct endpoint *remote, uint32_t seq)
{
	(void)inj;
	FZ_CHECK(local->addr.family == remote->addr.family,
		 "ICMP unreachable across families");
	fz_net_unreachable(local, remote, seq);
	return 0;
}

/* ---- sock_diag, from the local kernel's sockets ---- */

static void progress_of(const struct fz_sock *s, struct sockdiag_progress *pr)
{
	uint32_t snd0 = s->restored ? s->base_snd
				    : s->isn + (s->active ? 0 : 1);
	uint32_t rcv0 = s->restored ? s->base_rcv : s->risn + 1;

	memset(pr, 0, sizeof(*pr));
	pr->state = s->state;
	/* The active opener's bytes_acked counts its SYN (conn.c). */
	pr->bytes_acked = s->snd_una - snd0;
	pr->bytes_received = s->rcv_nxt - rcv0;
	pr->bytes_retrans = s->retrans_bytes;
	pr->bytes_sent = s->snd_nxt - snd0 - (s->restored || !s->active ? 0 : 1)
			 + s->retrans_bytes;
	pr->snd_wscale = s->snd_wscale;
	pr->rcv_wscale = s->rcv_wscale;
	pr->unacked = s->unacked;
	pr->backoff = s->backoff;
	pr->retransmits = s->retransmits;
	pr->options = s->options;
	pr->advmss = s->mss;
	pr->snd_mss = s->mss;
}

int sockdiag_dump(sockdiag_fn fn, void *arg)
{
	if (fz_sockdiag_dump_err)
		return -fz_sockdiag_dump_err;
	for (unsigned n = 0; n < FZ_FLOWS; n++) {
		struct sockdiag_entry e = { .state = fz_socks[n].state };

		if (!fz_socks[n].exists)
			continue;
		fz_flow_endpoints(n, &e.local, &e.remote);
		e.inode = n + 1000;
		e.retransmits = fz_socks[n].retransmits > 255 ? 255 :
				(uint8_t)fz_socks[n].retransmits;
		fn(arg, &e);
	}
	return 0;
}

int sockdiag_progress(const struct endpoint *local,
		      const struct endpoint *remote,
		      struct sockdiag_progress *out)
{
	int n = fz_flow_of(local, remote);

	if (fz_sockdiag_progress_err)
		return -fz_sockdiag_progress_err;
	if (n < 0 || !fz_socks[n].exists)
		return -ENOENT;
	progress_of(&fz_socks[n], out);
	return 0;
}

int sockdiag_state(const struct endpoint *local, const struct endpoint *remote)
{
	int n = fz_flow_of(local, remote);

	if (fz_sockdiag_progress_err)
		return -fz_sockdiag_progress_err;
	if (n < 0 || !fz_socks[n].exists)
		return -ENOENT;
	return fz_socks[n].state;
}

/* ---- rtnetlink ---- */

static struct rtnl_handlers rtnl_h;
static uint8_t the_rtnl;

int rtnl_open(struct rtnl **out, const struct rtnl_handlers *h)
{
	rtnl_h = *h;
	*out = (struct rtnl *)&the_rtnl;
	return 0;
}

void rtnl_close(struct rtnl *r)
{
	(void)r;
	memset(&rtnl_h, 0, sizeof(rtnl_h));
}

int rtnl_fd(const struct rtnl *r)
{
	(void)r;
	return -1;
}

/* The answers arrive as events: fuzz_engine.c delivers one per present
 * address right after start-up, as the first turns of the loop would. */
int rtnl_dump_addresses(struct rtnl *r)
{
	(void)r;
	return 0;
}

void rtnl_process(struct rtnl *r)
{
	(void)r;
	abort();
}

void fz_rtnl_link(const struct rtnl_link_event *ev)
{
	if (rtnl_h.link)
		rtnl_h.link(rtnl_h.arg, ev);
}

void fz_rtnl_addr(const struct rtnl_addr_event *ev)
{
	if (rtnl_h.addr)
		rtnl_h.addr(rtnl_h.arg, ev);
}

/* ---- routes and addresses ---- */

int local_source(const struct addr *dst, struct addr *src)
{
	int f = dst->family == AF_INET6, i = fz_route[f];

	if (i < 0 || !(fz_addr_present[f] & (1u << i)))
		return -ENETUNREACH;
	*src = *fz_local_addr(f, i);
	return 0;
}

/*
 * netlink's one request (common/netlink.c): only local.c's route lookup
 * (RTM_GETROUTE for one address) is asked here. A pool's remote address
 * routes as unicast (if its family has a route at all), a local one as
 * local; anything else has no route.
 */
int netlink_transact(int bus, struct nlmsghdr *nlh, char *buf, size_t buflen,
		     mnl_cb_t cb, void *data)
{
	const struct rtmsg *req = mnl_nlmsg_get_payload(nlh);
	struct addr dst = { .family = req->rtm_family };
	char reply[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *r = mnl_nlmsg_put_header(reply);
	struct rtmsg *rtm;
	struct nlattr *attr;
	int f = dst.family == AF_INET6;

	(void)buf, (void)buflen;
	FZ_CHECK(bus == NETLINK_ROUTE && nlh->nlmsg_type == RTM_GETROUTE,
		 "netlink request %d/%u", bus, nlh->nlmsg_type);
	mnl_attr_for_each(attr, nlh, sizeof(*req))
		if (mnl_attr_get_type(attr) == RTA_DST &&
		    mnl_attr_get_payload_len(attr) <= sizeof(dst.bytes))
			memcpy(dst.bytes, mnl_attr_get_payload(attr),
			       mnl_attr_get_payload_len(attr));
	r->nlmsg_type = RTM_NEWROUTE;
	rtm = mnl_nlmsg_put_extra_header(r, sizeof(*rtm));
	rtm->rtm_family = dst.family;
	if (fz_local_index(&dst) >= 0)
		rtm->rtm_type = RTN_LOCAL;
	else if (fz_route[f] >= 0 && (fz_remote_index(&dst) >= 0))
		rtm->rtm_type = RTN_UNICAST;
	else
		return -ENETUNREACH;
	return cb ? (cb(r, data) < 0 ? -EIO : 0) : 0;
}

static unsigned *lo_bit(const struct addr *a, unsigned *bit)
{
	int i = fz_local_index(a);

	FZ_CHECK(i >= 0, "an address rackd never had kept on lo");
	*bit = 1u << i;
	return &fz_lo_kept[a->family == AF_INET6];
}

int lohost_add(const struct addr *a)
{
	unsigned bit, *kept = lo_bit(a, &bit);

	if (*kept & bit)
		return -EEXIST;
	*kept |= bit;
	return 0;
}

int lohost_del(const struct addr *a)
{
	unsigned bit, *kept = lo_bit(a, &bit);

	if (!(*kept & bit))
		return -EADDRNOTAVAIL;
	*kept &= ~bit;
	return 0;
}

/* ---- per input ---- */

void fz_fake_reset(void)
{
	timer_heap_free(&heap);
	timer_heap_init(&heap);
	timer_runs = 0;
	fz_now = 1000000;
	next_id = 0;
	memset(&cur, 0, sizeof(cur));
	memset(queues, 0, sizeof(queues));
	memset(fz_socks, 0, sizeof(fz_socks));
	fz_sockdiag_dump_err = fz_sockdiag_progress_err = 0;
	fz_addr_present[0] = fz_addr_present[1] = 3;
	fz_route[0] = fz_route[1] = 0;
	fz_lo_kept[0] = fz_lo_kept[1] = 0;
	memset(&rtnl_h, 0, sizeof(rtnl_h));
}

void fz_fake_stopped(bool handed_over)
{
	for (size_t i = 0; i < heap.count; i++)
		FZ_CHECK(false, "timer %p (deadline %llu) still armed after "
			 "daemon_stop()%s", (void *)heap.items[i],
			 (unsigned long long)heap.items[i]->deadline,
			 __asan_address_is_poisoned(heap.items[i]) ?
			 ", in freed memory" : "");
	if (handed_over)
		return;		/* the table and the kept addresses may stay */
	FZ_CHECK(!fz_table || fz_nft_failed, "table inet racks left behind by "
		 "a rackd with nothing to hand over");
	FZ_CHECK((!fz_lo_kept[0] && !fz_lo_kept[1]) ||
		 fz_known("restart-orphans-lo"), "addresses left on lo "
		 "(%x, %x) by a rackd that removed its table",
		 fz_lo_kept[0], fz_lo_kept[1]);
}
