// SPDX-License-Identifier: GPL-2.0-only
#include "offerset.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "table.h"

struct offerset {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
};

void offerset_declare(FILE *f)
{
	for (int v6 = 0; v6 < 2; v6++) {
		const char *a = v6 ? "ipv6_addr" : "ipv4_addr";

		fprintf(f, "\tset offered%c {\n\t\ttype %s . inet_service . "
			   "%s . inet_service\n\t\tflags timeout\n\t}\n",
			v6 ? '6' : '4', a, a);
	}
}

int offerset_open(struct offerset **out)
{
	struct offerset *os = calloc(1, sizeof(*os));
	int ret;

	if (!os)
		return -ENOMEM;
	os->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!os->nl || mnl_socket_bind(os->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		offerset_close(os);
		return ret;
	}
	os->portid = mnl_socket_get_portid(os->nl);
	*out = os;
	return 0;
}

void offerset_close(struct offerset *os)
{
	if (!os)
		return;
	if (os->nl)
		mnl_socket_close(os->nl);
	free(os);
}

/*
 * The key of a concatenation: each field starts on a 32-bit register, so
 * a port takes four bytes (network order, then two zero bytes).
 */
static size_t key_put(uint8_t *key, size_t off, const struct endpoint *e)
{
	size_t alen = addr_len(&e->addr);

	memcpy(key + off, e->addr.bytes, alen);
	off += alen;
	key[off] = (uint8_t)(e->port >> 8);
	key[off + 1] = (uint8_t)e->port;
	key[off + 2] = key[off + 3] = 0;
	return off + 4;
}

int offerset_add(struct offerset *os, const struct endpoint *local,
		 const struct endpoint *remote)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	uint8_t key[2 * (16 + 4)];
	struct mnl_nlmsg_batch *batch;
	struct nftnl_set_elem *e;
	struct nftnl_set *s;
	struct nlmsghdr *nlh;
	uint32_t elem_seq;
	size_t klen;
	int ret;

	s = nftnl_set_alloc();
	e = nftnl_set_elem_alloc();
	if (!s || !e) {
		nftnl_set_free(s);
		nftnl_set_elem_free(e);
		return -ENOMEM;
	}
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, RULESET_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, local->addr.family == AF_INET6 ?
			  "offered6" : "offered4");
	klen = key_put(key, key_put(key, 0, local), remote);
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, (uint32_t)klen);
	nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT, OFFERSET_TIMEOUT_MS);
	nftnl_set_elem_add(s, e);	/* s owns e now */

	batch = mnl_nlmsg_batch_start(buf, sizeof(buf));
	nftnl_batch_begin(mnl_nlmsg_batch_current(batch), os->seq++);
	mnl_nlmsg_batch_next(batch);
	elem_seq = os->seq++;
	nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(batch),
				    NFT_MSG_NEWSETELEM, NFPROTO_INET,
				    NLM_F_CREATE | NLM_F_ACK, elem_seq);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	mnl_nlmsg_batch_next(batch);
	nftnl_batch_end(mnl_nlmsg_batch_current(batch), os->seq++);
	mnl_nlmsg_batch_next(batch);
	nftnl_set_free(s);

	/* The kernel applies the batch inside sendmsg(): once the ACK is
	 * read the element is there, before the SYN is let go. */
	if (mnl_socket_sendto(os->nl, mnl_nlmsg_batch_head(batch),
			      mnl_nlmsg_batch_size(batch)) < 0) {
		ret = -errno;
		mnl_nlmsg_batch_stop(batch);
		return ret;
	}
	mnl_nlmsg_batch_stop(batch);
	ret = (int)mnl_socket_recvfrom(os->nl, buf, sizeof(buf));
	if (ret < 0)
		return -errno;
	ret = mnl_cb_run(buf, (size_t)ret, elem_seq, os->portid, NULL, NULL);
	return ret < 0 ? -errno : 0;
}
