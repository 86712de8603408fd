// SPDX-License-Identifier: GPL-2.0-only
#include "queue.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

/* A queued packet is at most 0xffff bytes plus its attributes. */
#define QUEUE_RECV_BUF (0xffff + 4096)
/* Twice the batch limit (libmnl's rule), which holds a 64 KiB packet. */
#define QUEUE_VERDICT_BUF (2 * (0xffff + 4096))
#define QUEUE_SOCK_RCVBUF (8 * 1024 * 1024)
/* Bound one drain so timers and the control socket are not starved. */
#define QUEUE_BURST 256

struct queue {
	struct mnl_socket *nl;
	uint16_t num;
	uint32_t portid;
	queue_fn fn;
	void *arg;
	char *recv_buf;
	char *verdict_buf;
	struct mnl_nlmsg_batch *batch;
	struct queue_stats stats;
};

static int queue_config(struct queue *q, uint32_t maxlen, bool fail_open)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	/* Both flags always in the mask: a queue bound without fail-open
	 * has it cleared, whatever an earlier binder set. */
	uint32_t mask = NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN;
	uint32_t flags = NFQA_CFG_F_GSO | (fail_open ? NFQA_CFG_F_FAIL_OPEN : 0);
	int ret;

	/* Bind, copy range, length and flags in one message: the kernel
	 * applies them in that order, and all flags must travel in a
	 * single NFQA_CFG_FLAGS attribute (a second one would override). */
	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, q->num);
	nlh->nlmsg_flags |= NLM_F_ACK;
	nfq_nlmsg_cfg_put_cmd(nlh, AF_UNSPEC, NFQNL_CFG_CMD_BIND);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, 0xffff);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, maxlen);
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(mask));

	if (mnl_socket_sendto(q->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	ret = (int)mnl_socket_recvfrom(q->nl, buf, sizeof(buf));
	if (ret < 0)
		return -errno;
	ret = mnl_cb_run(buf, (size_t)ret, nlh->nlmsg_seq, q->portid, NULL,
			 NULL);
	return ret < 0 ? -errno : 0;
}

int queue_open(struct queue **out, uint16_t num, uint32_t maxlen,
	       bool fail_open, queue_fn fn, void *arg)
{
	struct queue *q = xcalloc(1, sizeof(*q));
	int fd, one = 1, rcvbuf = QUEUE_SOCK_RCVBUF, err;

	*out = NULL;
	q->num = num;
	q->fn = fn;
	q->arg = arg;
	q->recv_buf = xcalloc(1, QUEUE_RECV_BUF);
	q->verdict_buf = xcalloc(1, QUEUE_VERDICT_BUF);
	q->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!q->nl) {
		err = -errno;
		goto err;
	}
	if (mnl_socket_bind(q->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto err;
	}
	q->portid = mnl_socket_get_portid(q->nl);
	fd = mnl_socket_get_fd(q->nl);
	/* Losing a burst to ENOBUFS is better than an error per packet:
	 * the packets themselves are reinjected by fail-open. */
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
		       sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	err = queue_config(q, maxlen, fail_open);
	if (err)
		goto err;
	q->batch = mnl_nlmsg_batch_start(q->verdict_buf, QUEUE_VERDICT_BUF / 2);
	*out = q;
	return 0;
err:
	queue_close(q);
	return err;
}

void queue_close(struct queue *q)
{
	if (!q)
		return;
	if (q->batch)
		mnl_nlmsg_batch_stop(q->batch);
	if (q->nl)
		mnl_socket_close(q->nl);
	free(q->recv_buf);
	free(q->verdict_buf);
	free(q);
}

int queue_fd(const struct queue *q)
{
	return mnl_socket_get_fd(q->nl);
}

const struct queue_stats *queue_stats(const struct queue *q)
{
	return &q->stats;
}

void queue_flush(struct queue *q)
{
	size_t len = mnl_nlmsg_batch_size(q->batch);

	if (len == 0)
		return;
	if (mnl_socket_sendto(q->nl, mnl_nlmsg_batch_head(q->batch), len) < 0) {
		q->stats.send_errors++;
		log_warn("nfqueue: sending verdicts");
	}
	mnl_nlmsg_batch_reset(q->batch);
}

void queue_verdict(struct queue *q, uint32_t id, uint32_t verdict)
{
	struct nlmsghdr *nlh;

	nlh = nfq_nlmsg_put(mnl_nlmsg_batch_current(q->batch),
			    NFQNL_MSG_VERDICT, q->num);
	nfq_nlmsg_verdict_put(nlh, (int)id, (int)verdict);
	q->stats.verdicts++;
	/* batch_next() is false once the batch is past its half-size
	 * soft limit; the other half is headroom for this message. */
	if (!mnl_nlmsg_batch_next(q->batch))
		queue_flush(q);
}

void queue_verdict_repeat(struct queue *q, uint32_t id, uint32_t mark)
{
	struct nlmsghdr *nlh;

	nlh = nfq_nlmsg_put(mnl_nlmsg_batch_current(q->batch),
			    NFQNL_MSG_VERDICT, q->num);
	nfq_nlmsg_verdict_put(nlh, (int)id, NF_REPEAT);
	nfq_nlmsg_verdict_put_mark(nlh, mark);
	q->stats.verdicts++;
	if (!mnl_nlmsg_batch_next(q->batch))
		queue_flush(q);
}

void queue_verdict_replace(struct queue *q, uint32_t id, const uint8_t *data,
			   size_t len)
{
	struct nlmsghdr *nlh;

	/* A rewritten packet needs up to 64 KiB: make sure it fits. */
	if (mnl_nlmsg_batch_size(q->batch) + len + 256 > QUEUE_VERDICT_BUF / 2)
		queue_flush(q);
	nlh = nfq_nlmsg_put(mnl_nlmsg_batch_current(q->batch),
			    NFQNL_MSG_VERDICT, q->num);
	nfq_nlmsg_verdict_put(nlh, (int)id, NF_ACCEPT);
	nfq_nlmsg_verdict_put_pkt(nlh, data, (uint32_t)len);
	q->stats.verdicts++;
	q->stats.rewritten++;
	if (!mnl_nlmsg_batch_next(q->batch))
		queue_flush(q);
}

static int queue_packet_cb(const struct nlmsghdr *nlh, void *data)
{
	struct queue *q = data;
	struct nlattr *attr[NFQA_MAX + 1] = { 0 };
	struct nfqnl_msg_packet_hdr *ph;
	struct queue_packet pkt = { 0 };

	if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR]) {
		log_warnx("nfqueue: message without packet header");
		return MNL_CB_OK;
	}
	ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
	pkt.id = ntohl(ph->packet_id);
	pkt.hook = ph->hook;
	if (attr[NFQA_PAYLOAD]) {
		pkt.data = mnl_attr_get_payload(attr[NFQA_PAYLOAD]);
		pkt.len = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
	}
	pkt.orig_len = attr[NFQA_CAP_LEN] ?
		ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN])) : pkt.len;
	if (pkt.orig_len > pkt.len)
		q->stats.truncated++;
	if (attr[NFQA_MARK])
		pkt.mark = ntohl(mnl_attr_get_u32(attr[NFQA_MARK]));
	if (attr[NFQA_SKB_INFO])
		pkt.skbinfo = ntohl(mnl_attr_get_u32(attr[NFQA_SKB_INFO]));
	if (attr[NFQA_IFINDEX_INDEV])
		pkt.indev = ntohl(mnl_attr_get_u32(attr[NFQA_IFINDEX_INDEV]));
	if (attr[NFQA_IFINDEX_OUTDEV])
		pkt.outdev = ntohl(mnl_attr_get_u32(attr[NFQA_IFINDEX_OUTDEV]));
	q->stats.received++;
	q->fn(q->arg, q, &pkt);
	return MNL_CB_OK;
}

void queue_process(struct queue *q)
{
	int fd = queue_fd(q);

	for (int i = 0; i < QUEUE_BURST; i++) {
		ssize_t n = recv(fd, q->recv_buf, QUEUE_RECV_BUF, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				q->stats.recv_errors++;
				log_warn("nfqueue: recv");
			}
			break;
		}
		if (mnl_cb_run(q->recv_buf, (size_t)n, 0, q->portid,
			       queue_packet_cb, q) < 0 && errno != 0) {
			q->stats.recv_errors++;
			log_warn("nfqueue: parsing message");
		}
	}
	queue_flush(q);
}
