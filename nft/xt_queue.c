// SPDX-License-Identifier: GPL-2.0-only
#include "xt_queue.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/xt_NFQUEUE.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

static struct nftnl_rule *xt_queue_rule(const char *table, const char *chain,
					uint16_t num, bool bypass)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr *counter = nftnl_expr_alloc("counter");
	struct nftnl_expr *tg = nftnl_expr_alloc("target");
	struct xt_NFQ_info_v3 *info = calloc(1, sizeof(*info));

	if (!r || !counter || !tg || !info)
		fatalx(EXIT_NOMEM, "out of memory");
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);

	info->queuenum = num;
	info->queues_total = 1;
	info->flags = bypass ? NFQ_FLAG_BYPASS : 0;
	nftnl_expr_set_str(tg, NFTNL_EXPR_TG_NAME, "NFQUEUE");
	nftnl_expr_set_u32(tg, NFTNL_EXPR_TG_REV, 3);
	/* libnftnl takes ownership of info. */
	nftnl_expr_set(tg, NFTNL_EXPR_TG_INFO, info, sizeof(*info));

	nftnl_rule_add_expr(r, counter);
	nftnl_rule_add_expr(r, tg);
	return r;
}

/* Append (or, FIRST, insert before every rule of CHAIN) the rule. */
static int add(const char *table, const char *chain, uint16_t num,
	       bool bypass, bool first)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 2];
	struct mnl_socket *nl = NULL;
	struct mnl_nlmsg_batch *batch;
	struct nftnl_rule *r;
	struct nlmsghdr *nlh;
	uint32_t seq = (uint32_t)time(NULL), rule_seq, portid;
	int ret;

	r = xt_queue_rule(table, chain, num, bypass);
	batch = mnl_nlmsg_batch_start(buf, sizeof(buf) / 2);
	nftnl_batch_begin(mnl_nlmsg_batch_current(batch), seq++);
	mnl_nlmsg_batch_next(batch);
	rule_seq = seq;
	nlh = nftnl_rule_nlmsg_build_hdr(mnl_nlmsg_batch_current(batch),
					 NFT_MSG_NEWRULE, NFPROTO_INET,
					 (first ? 0 : NLM_F_APPEND) |
					 NLM_F_CREATE | NLM_F_ACK, seq++);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	mnl_nlmsg_batch_next(batch);
	nftnl_batch_end(mnl_nlmsg_batch_current(batch), seq++);
	mnl_nlmsg_batch_next(batch);

	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(batch),
			      mnl_nlmsg_batch_size(batch)) < 0) {
		ret = -errno;
		goto out;
	}
	/* One ACK (or error) for the rule message. */
	ret = (int)mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (ret < 0) {
		ret = -errno;
		goto out;
	}
	ret = mnl_cb_run(buf, (size_t)ret, rule_seq, portid, NULL, NULL);
	ret = ret < 0 ? -errno : 0;
out:
	if (nl)
		mnl_socket_close(nl);
	mnl_nlmsg_batch_stop(batch);
	nftnl_rule_free(r);
	return ret;
}

int xt_queue_add_rule(const char *table, const char *chain, uint16_t num,
		      bool bypass)
{
	return add(table, chain, num, bypass, false);
}

int xt_queue_insert_rule(const char *table, const char *chain, uint16_t num,
			 bool bypass)
{
	return add(table, chain, num, bypass, true);
}
