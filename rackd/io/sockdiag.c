// SPDX-License-Identifier: GPL-2.0-only
#include "sockdiag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <linux/tcp.h>	/* glibc's tcp_info lacks the byte counters */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "netlink.h"

#ifndef MNL_SOCKET_DUMP_SIZE
#define MNL_SOCKET_DUMP_SIZE 32768	/* libmnl >= 1.0.5 defines it */
#endif

struct dump_ctx {
	sockdiag_fn fn;
	void *arg;
};

static void unmap_v4(struct addr *a)
{
	uint8_t v4[4];

	memcpy(v4, a->bytes + 12, 4);
	memset(a->bytes, 0, sizeof(a->bytes));
	memcpy(a->bytes, v4, 4);
	a->family = AF_INET;
}

/* A's tcp_info, if A is one: older or newer kernels send a shorter or
 * longer struct, read as far as both go. */
static bool tcp_info_of(const struct nlattr *a, struct tcp_info *ti)
{
	if (mnl_attr_get_type(a) != INET_DIAG_INFO)
		return false;
	memset(ti, 0, sizeof(*ti));
	memcpy(ti, mnl_attr_get_payload(a),
	       mnl_attr_get_payload_len(a) < sizeof(*ti) ?
	       mnl_attr_get_payload_len(a) : sizeof(*ti));
	return true;
}

static int entry_attr(const struct nlattr *a, void *data)
{
	struct sockdiag_entry *e = data;
	struct tcp_info ti;

	if (tcp_info_of(a, &ti))
		e->retransmits = ti.tcpi_retransmits;
	return MNL_CB_OK;
}

static int sockdiag_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dump_ctx *ctx = data;
	const struct inet_diag_msg *m;
	struct sockdiag_entry e;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return MNL_CB_OK;
	m = mnl_nlmsg_get_payload(nlh);
	if (m->idiag_family != AF_INET && m->idiag_family != AF_INET6)
		return MNL_CB_OK;
	memset(&e, 0, sizeof(e));
	e.local.addr.family = e.remote.addr.family = m->idiag_family;
	memcpy(e.local.addr.bytes, m->id.idiag_src,
	       addr_len(&e.local.addr));
	memcpy(e.remote.addr.bytes, m->id.idiag_dst,
	       addr_len(&e.remote.addr));
	e.local.port = ntohs(m->id.idiag_sport);
	e.remote.port = ntohs(m->id.idiag_dport);
	/* A dual-stack socket talking IPv4 reports v4-mapped addresses;
	 * on the wire (and in the table) that connection is IPv4. */
	if (e.local.addr.family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&e.remote.addr.v6)) {
		unmap_v4(&e.local.addr);
		unmap_v4(&e.remote.addr);
	}
	e.state = m->idiag_state;
	e.inode = m->idiag_inode;
	mnl_attr_parse(nlh, sizeof(*m), entry_attr, &e);
	ctx->fn(ctx->arg, &e);
	return MNL_CB_OK;
}

static int dump_family(struct mnl_socket *nl, uint8_t family,
		       struct dump_ctx *ctx)
{
	char buf[MNL_SOCKET_DUMP_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct inet_diag_req_v2 *req;
	uint32_t seq = (uint32_t)time(NULL) ^ family;
	uint32_t portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int ret;

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = family;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = ~(1U << TCP_STATE_LISTEN);
	req->idiag_ext = 1 << (INET_DIAG_INFO - 1);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, sockdiag_cb, ctx);
	} while (ret > MNL_CB_STOP);
	return ret < 0 ? -errno : 0;
}

int sockdiag_dump(sockdiag_fn fn, void *arg)
{
	struct dump_ctx ctx = { fn, arg };
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_SOCK_DIAG,
						 SOCK_CLOEXEC);
	int ret;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	ret = dump_family(nl, AF_INET, &ctx);
	if (ret == 0)
		ret = dump_family(nl, AF_INET6, &ctx);
out:
	mnl_socket_close(nl);
	return ret;
}

struct progress_ctx {
	struct sockdiag_progress *out;
	bool found;		/* its tcp_info came */
	bool seen;		/* the socket itself came (state set) */
};

static int progress_attr(const struct nlattr *a, void *data)
{
	struct progress_ctx *ctx = data;
	struct tcp_info ti;

	if (!tcp_info_of(a, &ti))
		return MNL_CB_OK;
	ctx->out->bytes_acked = ti.tcpi_bytes_acked;
	ctx->out->bytes_received = ti.tcpi_bytes_received;
	ctx->out->snd_wscale = ti.tcpi_snd_wscale;
	ctx->out->rcv_wscale = ti.tcpi_rcv_wscale;
	ctx->out->rcv_ssthresh = ti.tcpi_rcv_ssthresh;
	ctx->out->snd_wnd = ti.tcpi_snd_wnd;
	ctx->out->unacked = ti.tcpi_unacked;
	ctx->out->backoff = ti.tcpi_backoff;
	ctx->out->retransmits = ti.tcpi_retransmits;
	ctx->out->bytes_sent = ti.tcpi_bytes_sent;
	ctx->out->bytes_retrans = ti.tcpi_bytes_retrans;
	ctx->out->options = ti.tcpi_options;
	ctx->out->advmss = ti.tcpi_advmss;
	ctx->out->snd_mss = ti.tcpi_snd_mss;
	ctx->found = true;
	return MNL_CB_OK;
}

static int progress_cb(const struct nlmsghdr *nlh, void *data)
{
	struct progress_ctx *ctx = data;
	const struct inet_diag_msg *m;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return MNL_CB_ERROR;
	m = mnl_nlmsg_get_payload(nlh);
	ctx->out->state = m->idiag_state;
	ctx->seen = true;
	return mnl_attr_parse(nlh, sizeof(*m), progress_attr, ctx);
}

/* Ask for the one socket LOCAL <-> REMOTE; CTX says what came. */
static int query(const struct endpoint *local, const struct endpoint *remote,
		 struct progress_ctx *ctx)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct inet_diag_req_v2 *req;
	uint32_t seq = (uint32_t)time(NULL);

	memset(ctx->out, 0, sizeof(*ctx->out));
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = local->addr.family;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = ~0U;
	req->idiag_ext = 1 << (INET_DIAG_INFO - 1);
	req->id.idiag_sport = htons(local->port);
	req->id.idiag_dport = htons(remote->port);
	memcpy(req->id.idiag_src, local->addr.bytes, addr_len(&local->addr));
	memcpy(req->id.idiag_dst, remote->addr.bytes, addr_len(&remote->addr));
	req->id.idiag_cookie[0] = req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

	return netlink_transact(NETLINK_SOCK_DIAG, nlh, buf, sizeof(buf),
				progress_cb, ctx);
}

int sockdiag_progress(const struct endpoint *local,
		      const struct endpoint *remote,
		      struct sockdiag_progress *out)
{
	struct progress_ctx ctx = { out, false, false };
	int ret = query(local, remote, &ctx);

	return ret ? ret : ctx.found ? 0 : -ENOENT;
}

int sockdiag_state(const struct endpoint *local, const struct endpoint *remote)
{
	struct sockdiag_progress pr;
	struct progress_ctx ctx = { &pr, false, false };
	int ret = query(local, remote, &ctx);

	/* The kernel's exact lookup falls back to a listener on the
	 * local end: that is no socket of this flow. */
	if (ret)
		return ret;
	if (!ctx.seen || pr.state == TCP_STATE_LISTEN)
		return -ENOENT;
	return pr.state;
}
