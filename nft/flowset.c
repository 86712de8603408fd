// SPDX-License-Identifier: GPL-2.0-only
#include "flowset.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "table.h"

/* Elements per set-element message: well inside one netlink message. */
#define FLOWSET_CHUNK 64
/* Room for a batch of FLOWSET_CHUNK IPv6 elements (about 80 bytes each). */
#define FLOWSET_BUF 32768

struct flowset {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
	char buf[FLOWSET_BUF];
};

int flowset_open(struct flowset **out)
{
	struct flowset *fs = calloc(1, sizeof(*fs));
	int ret;

	if (!fs)
		return -ENOMEM;
	fs->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!fs->nl || mnl_socket_bind(fs->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		flowset_close(fs);
		return ret;
	}
	fs->portid = mnl_socket_get_portid(fs->nl);
	*out = fs;
	return 0;
}

void flowset_close(struct flowset *fs)
{
	if (!fs)
		return;
	if (fs->nl)
		mnl_socket_close(fs->nl);
	free(fs);
}

void flowset_declare(FILE *f, const char *name)
{
	for (int v6 = 0; v6 < 2; v6++) {
		const char *a = v6 ? "ipv6_addr" : "ipv4_addr";

		fprintf(f, "\tset %s%c {\n\t\ttype %s . inet_service . "
			   "%s . inet_service\n\t\tflags timeout\n\t}\n",
			name, v6 ? '6' : '4', a, a);
	}
}

void flowset_write(FILE *f, const char *name, const struct flowset_flow *flow,
		   uint32_t timeout_ms)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN];
	bool v6 = flow->local.addr.family == AF_INET6;

	fprintf(f, "add element %s %s %s%c { %s . %u . %s . %u timeout "
		   "%ums }\n", RULESET_FAMILY, RULESET_TABLE, name,
		v6 ? '6' : '4',
		addr_format(&flow->local.addr, l, sizeof(l)), flow->local.port,
		addr_format(&flow->remote.addr, r, sizeof(r)), flow->remote.port,
		timeout_ms);
}

/* A concatenation's fields each start on a 32-bit register: a port
 * takes four bytes (network order, then two zero bytes). */
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

/* The elements of one message: up to FLOWSET_CHUNK flows of FAMILY from
 * *I on; advances *I. NULL when none is left, or out of memory (*I < N). */
static struct nftnl_set *chunk(const char *name,
			       const struct flowset_flow *flows, unsigned n,
			       unsigned *i, int family, uint32_t timeout_ms,
			       bool add)
{
	struct nftnl_set *s = nftnl_set_alloc();
	char set[NFT_SET_MAXNAMELEN];
	unsigned taken = 0;

	if (!s)
		return NULL;
	snprintf(set, sizeof(set), "%s%c", name, family == AF_INET6 ? '6' : '4');
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, RULESET_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, set);
	for (; *i < n && taken < FLOWSET_CHUNK; (*i)++) {
		const struct flowset_flow *fl = &flows[*i];
		struct nftnl_set_elem *e;
		uint8_t key[2 * (16 + 4)];
		size_t klen;

		if (fl->local.addr.family != family)
			continue;
		e = nftnl_set_elem_alloc();
		if (!e) {
			nftnl_set_free(s);
			return NULL;
		}
		klen = key_put(key, key_put(key, 0, &fl->local), &fl->remote);
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, (uint32_t)klen);
		if (add)
			nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT,
					       timeout_ms);
		nftnl_set_elem_add(s, e);	/* s owns e now */
		taken++;
	}
	if (taken == 0) {
		nftnl_set_free(s);
		return NULL;
	}
	return s;
}

/* Send one batch; its one acknowledged message is ELEM_SEQ. The kernel
 * applies a batch inside sendmsg(): once the answer is read, it holds. */
static int send_batch(struct flowset *fs, struct mnl_nlmsg_batch *batch,
		      uint32_t elem_seq)
{
	ssize_t len;

	if (mnl_socket_sendto(fs->nl, mnl_nlmsg_batch_head(batch),
			      mnl_nlmsg_batch_size(batch)) < 0)
		return -errno;
	len = mnl_socket_recvfrom(fs->nl, fs->buf, sizeof(fs->buf));
	if (len < 0)
		return -errno;
	if (mnl_cb_run(fs->buf, (size_t)len, elem_seq, fs->portid, NULL,
		       NULL) < 0)
		return -errno;
	return 0;
}

int flowset_update(struct flowset *fs, const char *name,
		   const struct flowset_flow *flows, unsigned n,
		   uint32_t timeout_ms, bool add)
{
	int ret = 0, first = 0;

	for (int fam = 0; fam < 2 && !ret; fam++) {
		int family = fam ? AF_INET6 : AF_INET;
		unsigned i = 0;

		while (i < n && !ret) {
			unsigned from = i;
			struct nftnl_set *s = chunk(name, flows, n, &i, family,
						    timeout_ms, add);
			struct mnl_nlmsg_batch *batch;
			struct nlmsghdr *nlh;
			uint32_t elem_seq;

			if (!s) {
				if (i < n)
					ret = -ENOMEM;
				continue;
			}
			batch = mnl_nlmsg_batch_start(fs->buf, sizeof(fs->buf));
			nftnl_batch_begin(mnl_nlmsg_batch_current(batch),
					  fs->seq++);
			mnl_nlmsg_batch_next(batch);
			elem_seq = fs->seq++;
			nlh = nftnl_nlmsg_build_hdr(
				mnl_nlmsg_batch_current(batch),
				add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
				NFPROTO_INET,
				(add ? NLM_F_CREATE : 0) | NLM_F_ACK, elem_seq);
			nftnl_set_elems_nlmsg_build_payload(nlh, s);
			mnl_nlmsg_batch_next(batch);
			nftnl_batch_end(mnl_nlmsg_batch_current(batch),
					fs->seq++);
			mnl_nlmsg_batch_next(batch);
			nftnl_set_free(s);
			ret = send_batch(fs, batch, elem_seq);
			mnl_nlmsg_batch_stop(batch);
			/* A transaction is all or nothing: one element that
			 * expired keeps the chunk's others in. They leave
			 * one by one, and the deletion goes on. */
			if (ret == -ENOENT && !add) {
				for (unsigned j = from; j < i && n > 1; j++)
					if (flows[j].local.addr.family ==
					    family)
						(void)flowset_update(
							fs, name, &flows[j], 1,
							0, false);
				first = ret;
				ret = 0;
			}
		}
	}
	return ret ? ret : first;
}
