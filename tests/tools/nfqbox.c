// SPDX-License-Identifier: GPL-2.0-only
/*
 * nfqbox: the NFQUEUE plumbing the test-bed's middleboxes share (see
 * nfqbox.h). The queue copies what its owner asks for; wintrack takes
 * headers only and GSO packets whole, disorder whole packets, segmented.
 */
#include "nfqbox.h"

#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <libmnl/libmnl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <nftables/libnftables.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "xt_queue.h"

#define QUEUE_MAXLEN 8192
#define RECV_BUF (128 * 1024)
#define VERDICT_BUF (64 * 1024)
#define SOCK_RCVBUF (16 * 1024 * 1024)
#define BURST 256

struct nfqbox {
	struct mnl_socket *nl;
	uint32_t portid;
	uint16_t num;
	struct mnl_nlmsg_batch *batch;
	char *verdict_buf, *recv_buf;
	const struct nfqbox_ops *ops;
	void *arg;
	uint64_t received, recv_errors, enobufs;
};

/* --- flows ------------------------------------------------------------------ */

static uint32_t hash_end(const uint8_t *addr, size_t alen, uint16_t port)
{
	uint32_t h = 2166136261u ^ port;

	for (size_t i = 0; i < alen; i++)
		h = (h ^ addr[i]) * 16777619u;
	return h;
}

/* The two ends' hashes summed: the same for both directions. */
size_t nfqbox_bucket(const struct nfqbox_segment *s, size_t nbuckets)
{
	size_t alen = s->family == 4 ? 4 : 16;

	return (hash_end(s->saddr, alen, s->sport) +
		hash_end(s->daddr, alen, s->dport)) % nbuckets;
}

static bool end_is(const struct nfqbox_tuple *t, int i, const uint8_t *addr,
		   uint16_t port)
{
	return t->port[i] == port && !memcmp(t->addr[i], addr, 16);
}

int nfqbox_tuple_from(const struct nfqbox_tuple *t,
		      const struct nfqbox_segment *s)
{
	if (t->family != s->family)
		return -1;
	for (int i = 0; i < 2; i++)
		if (end_is(t, i, s->saddr, s->sport) &&
		    end_is(t, !i, s->daddr, s->dport))
			return i;
	return -1;
}

void nfqbox_tuple_set(struct nfqbox_tuple *t, const struct nfqbox_segment *s)
{
	t->family = s->family;
	memcpy(t->addr[0], s->saddr, 16);
	memcpy(t->addr[1], s->daddr, 16);
	t->port[0] = s->sport;
	t->port[1] = s->dport;
}

/* --- parsing a forwarded segment --------------------------------------- */

/* The window-scale shift of a SYN (0x80 | shift, at most 14) and whether
 * the segment carries racks' option 254. */
static int parse_options(const uint8_t *opt, size_t len,
			 struct nfqbox_segment *s)
{
	size_t i = 0;

	while (i < len) {
		uint8_t kind = opt[i];

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 2 > len || opt[i + 1] < 2 || i + opt[i + 1] > len)
			return -EINVAL;
		if (kind == 3 && opt[i + 1] == 3 && (s->flags & TH_SYN))
			s->wscale = 0x80 | (opt[i + 2] > 14 ? 14 : opt[i + 2]);
		if (kind == 254)
			s->racks = true;
		/* ExID 0x7261, then version and type (edp/option.c). */
		if (kind == 254 && opt[i + 1] >= 5 && opt[i + 2] == 0x72 &&
		    opt[i + 3] == 0x61)
			s->racks_type = opt[i + 4] & 0x0f;
		i += opt[i + 1];
	}
	return 0;
}

static int parse_tcp(const uint8_t *p, size_t caplen, size_t off,
		     size_t l4len, struct nfqbox_segment *s)
{
	size_t doff;

	if (caplen < off + 20)
		return -EINVAL;
	p += off;
	doff = (size_t)(p[12] >> 4) * 4;
	if (doff < 20 || doff > l4len || caplen < off + doff)
		return -EINVAL;
	s->sport = (uint16_t)(p[0] << 8 | p[1]);
	s->dport = (uint16_t)(p[2] << 8 | p[3]);
	s->seq = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 |
		 (uint32_t)p[6] << 8 | p[7];
	s->ack = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 |
		 (uint32_t)p[10] << 8 | p[11];
	s->flags = p[13] & 0x3f;
	s->win = (uint16_t)(p[14] << 8 | p[15]);
	s->len = (uint32_t)(l4len - doff);
	return parse_options(p + 20, doff - 20, s);
}

int nfqbox_parse(const uint8_t *p, size_t caplen, size_t wirelen,
		 struct nfqbox_segment *s)
{
	memset(s, 0, sizeof(*s));
	if (caplen < 1)
		return -EINVAL;
	if (p[0] >> 4 == 4) {
		size_t ihl = (size_t)(p[0] & 0xf) * 4;
		size_t tot = (size_t)(p[2] << 8 | p[3]);

		if (caplen < 20 || ihl < 20 || caplen < ihl)
			return -EINVAL;
		if (tot == 0)		/* a BIG TCP super-packet */
			tot = wirelen;
		if (p[9] != 6 || (p[6] & 0x3f) || p[7])
			return 1;
		if (tot < ihl)
			return -EINVAL;
		s->family = 4;
		memcpy(s->saddr, p + 12, 4);
		memcpy(s->daddr, p + 16, 4);
		return parse_tcp(p, caplen, ihl, tot - ihl, s);
	}
	if (p[0] >> 4 == 6) {
		size_t off = 40, plen = (size_t)(p[4] << 8 | p[5]);
		uint8_t next = p[6];

		if (caplen < 40)
			return -EINVAL;
		plen = plen ? plen : wirelen - 40;	/* jumbogram */
		/* Hop-by-hop, routing and destination options. */
		while (next == 0 || next == 43 || next == 60) {
			size_t hlen;

			if (caplen < off + 2)
				return -EINVAL;
			hlen = ((size_t)p[off + 1] + 1) * 8;
			next = p[off];
			off += hlen;
		}
		if (next != 6)
			return 1;
		if (off - 40 > plen)
			return -EINVAL;
		s->family = 6;
		memcpy(s->saddr, p + 8, 16);
		memcpy(s->daddr, p + 24, 16);
		return parse_tcp(p, caplen, off, plen - (off - 40), s);
	}
	return -EINVAL;
}

/* --- the rule that feeds the queue ------------------------------------ */

static int nft_script(const char *script)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int ret;

	if (!ctx)
		errx(1, "libnftables: out of memory");
	nft_ctx_buffer_error(ctx);
	ret = nft_run_cmd_from_buffer(ctx, script);
	nft_ctx_free(ctx);
	return ret;
}

const char *nfqbox_rule_add(struct nfqbox *q, const char *table,
			    const char *chain)
{
	char script[512];
	int ret;

	snprintf(script, sizeof(script),
		 "add rule inet %s %s counter queue num %u\n", table, chain,
		 q->num);
	if (nft_script(script) == 0)
		return "native";
	/* The kernels of the test machines lack the native queue
	 * statement. No bypass: a dead middlebox drops, as a real one. */
	ret = xt_queue_add_rule(table, chain, q->num, false);
	if (ret)
		errx(1, "adding the queue rule to inet %s %s: %s", table, chain,
		     strerror(-ret));
	return "xt";
}

/* --- the queue ---------------------------------------------------------- */

struct nfqbox *nfqbox_open(uint16_t num, uint32_t copy_range, bool gso)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nfqbox *q = calloc(1, sizeof(*q));
	struct nlmsghdr *nlh;
	/* No fail-open: an overflow drops, and shows. */
	uint32_t flags = gso ? NFQA_CFG_F_GSO : 0;
	int rcvbuf = SOCK_RCVBUF, ret;

	if (!q)
		err(1, "calloc");
	q->num = num;
	q->nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!q->nl || mnl_socket_bind(q->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		err(1, "netlink socket");
	q->portid = mnl_socket_get_portid(q->nl);
	if (setsockopt(mnl_socket_get_fd(q->nl), SOL_SOCKET, SO_RCVBUFFORCE,
		       &rcvbuf, sizeof(rcvbuf)) < 0)
		warn("SO_RCVBUFFORCE");
	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, num);
	nlh->nlmsg_flags |= NLM_F_ACK;
	nfq_nlmsg_cfg_put_cmd(nlh, AF_UNSPEC, NFQNL_CFG_CMD_BIND);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, (int)copy_range);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, QUEUE_MAXLEN);
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
	if (mnl_socket_sendto(q->nl, nlh, nlh->nlmsg_len) < 0)
		err(1, "binding queue %u", num);
	ret = (int)mnl_socket_recvfrom(q->nl, buf, sizeof(buf));
	if (ret < 0 || mnl_cb_run(buf, (size_t)ret, nlh->nlmsg_seq, q->portid,
				  NULL, NULL) < 0)
		err(1, "binding queue %u", num);
	q->verdict_buf = calloc(1, VERDICT_BUF);
	q->recv_buf = malloc(RECV_BUF);
	if (!q->verdict_buf || !q->recv_buf)
		err(1, "calloc");
	q->batch = mnl_nlmsg_batch_start(q->verdict_buf, VERDICT_BUF / 2);
	return q;
}

static void verdicts_flush(struct nfqbox *q)
{
	size_t len = mnl_nlmsg_batch_size(q->batch);

	if (len && mnl_socket_sendto(q->nl, mnl_nlmsg_batch_head(q->batch),
				     len) < 0)
		warn("sending verdicts");
	mnl_nlmsg_batch_reset(q->batch);
}

void nfqbox_free(struct nfqbox *q)
{
	if (!q)
		return;
	verdicts_flush(q);
	mnl_nlmsg_batch_stop(q->batch);
	mnl_socket_close(q->nl);
	free(q->verdict_buf);
	free(q->recv_buf);
	free(q);
}

void nfqbox_verdict(struct nfqbox *q, uint32_t id, bool accept)
{
	struct nlmsghdr *nlh = nfq_nlmsg_put(mnl_nlmsg_batch_current(q->batch),
					     NFQNL_MSG_VERDICT, q->num);

	nfq_nlmsg_verdict_put(nlh, (int)id, accept ? NF_ACCEPT : NF_DROP);
	if (!mnl_nlmsg_batch_next(q->batch))
		verdicts_flush(q);
}

static int packet_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfqbox *q = data;
	struct nlattr *attr[NFQA_MAX + 1] = { 0 };
	struct nfqnl_msg_packet_hdr *ph;
	struct nfqbox_segment seg;
	const uint8_t *payload = NULL;
	size_t caplen = 0, wirelen;
	int ret;

	if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR])
		return MNL_CB_OK;
	ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
	if (attr[NFQA_PAYLOAD]) {
		payload = mnl_attr_get_payload(attr[NFQA_PAYLOAD]);
		caplen = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
	}
	wirelen = attr[NFQA_CAP_LEN] ?
		ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN])) : caplen;
	q->received++;
	ret = payload ? nfqbox_parse(payload, caplen, wirelen, &seg) : -EINVAL;
	q->ops->packet(q->arg, ntohl(ph->packet_id), payload, caplen, wirelen,
		       ret == 0 ? &seg : NULL);
	return MNL_CB_OK;
}

static void queue_drain(struct nfqbox *q)
{
	int fd = mnl_socket_get_fd(q->nl);

	for (int i = 0; i < BURST; i++) {
		ssize_t n = recv(fd, q->recv_buf, RECV_BUF, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == ENOBUFS) {
				/* The kernel dropped packets: counted in
				 * the stats (kernel_user_drops) too. */
				q->enobufs++;
				continue;
			}
			if (errno != EAGAIN && errno != EINTR) {
				q->recv_errors++;
				warn("recv");
			}
			break;
		}
		if (mnl_cb_run(q->recv_buf, (size_t)n, 0, q->portid, packet_cb,
			       q) < 0)
			q->recv_errors++;
	}
	verdicts_flush(q);
}

void nfqbox_run(struct nfqbox *q, const struct nfqbox_ops *ops, void *arg)
{
	struct pollfd pfd[2];
	bool done = false;
	sigset_t sigs;

	q->ops = ops;
	q->arg = arg;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	pfd[0] = (struct pollfd){ .fd = mnl_socket_get_fd(q->nl),
				  .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = signalfd(-1, &sigs, SFD_CLOEXEC),
				  .events = POLLIN };
	if (pfd[1].fd < 0)
		err(1, "signalfd");
	while (!done) {
		int timeout = ops->timeout ? ops->timeout(arg) : -1;

		if (poll(pfd, 2, timeout) < 0) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		if (pfd[0].revents & POLLIN)
			queue_drain(q);
		if (ops->due) {
			ops->due(arg);
			verdicts_flush(q);
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(pfd[1].fd, &si, sizeof(si)) != sizeof(si))
				continue;
			done = si.ssi_signo != SIGUSR1;
			ops->stats(arg);
		}
	}
	close(pfd[1].fd);
}

/* --- counters ------------------------------------------------------------- */

void nfqbox_counters(const struct nfqbox *q, struct nfqbox_counters *c)
{
	FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
	unsigned num, portid, total, mode, range, drop, udrop;

	*c = (struct nfqbox_counters){ .received = q->received,
				       .recv_errors = q->recv_errors,
				       .enobufs = q->enobufs };
	if (!f)
		return;
	while (fscanf(f, "%u %u %u %u %u %u %u %*u %*d", &num, &portid,
		      &total, &mode, &range, &drop, &udrop) == 7) {
		if (num == q->num) {
			c->kernel_queued = total;
			c->kernel_full = drop;
			c->kernel_user = udrop;
		}
	}
	fclose(f);
}

void nfqbox_counters_json(const struct nfqbox *q, FILE *out)
{
	struct nfqbox_counters c;

	nfqbox_counters(q, &c);
	fprintf(out, "\"received\": %" PRIu64 ", \"recv_errors\": %" PRIu64
		", \"enobufs\": %" PRIu64 ", \"kernel_queued\": %u"
		", \"kernel_queue_full_drops\": %u, \"kernel_user_drops\": %u",
		c.received, c.recv_errors, c.enobufs, c.kernel_queued,
		c.kernel_full, c.kernel_user);
}

static void tmp_name(const char *path, char *tmp, size_t size)
{
	snprintf(tmp, size, "%s.tmp", path);
}

FILE *nfqbox_stats_open(const char *path)
{
	char tmp[4096];
	FILE *f;

	tmp_name(path, tmp, sizeof(tmp));
	f = fopen(tmp, "w");
	if (!f)
		warn("%s", tmp);
	return f;
}

void nfqbox_stats_close(FILE *f, const char *path)
{
	char tmp[4096];

	tmp_name(path, tmp, sizeof(tmp));
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		warn("%s", path);
}
