// SPDX-License-Identifier: GPL-2.0-only
#include "adoptset.h"

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
#define ADOPTSET_CHUNK 64

struct adoptset {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
};

void adoptset_declare(FILE *f)
{
	for (int v6 = 0; v6 < 2; v6++) {
		const char *a = v6 ? "ipv6_addr" : "ipv4_addr";

		fprintf(f, "\tset adopt%c {\n\t\ttype %s . inet_service . "
			   "%s . inet_service\n\t\tflags timeout\n\t}\n",
			v6 ? '6' : '4', a, a);
	}
}

void adoptset_write(FILE *f, const struct adoptset_flow *flow)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN];
	bool v6 = flow->local.addr.family == AF_INET6;

	fprintf(f, "add element %s %s adopt%c { %s . %u . %s . %u timeout "
		   "%ums }\n", RULESET_FAMILY, RULESET_TABLE, v6 ? '6' : '4',
		addr_format(&flow->local.addr, l, sizeof(l)), flow->local.port,
		addr_format(&flow->remote.addr, r, sizeof(r)), flow->remote.port,
		ADOPTSET_TIMEOUT_MS);
}

void adoptset_rules(FILE *f, const struct config *cfg, const char *chain)
{
	/* rackd's own segments (its channel, its ACKs to held sockets)
	 * carry its mark and are none of this. */
	for (int v6 = 0; v6 < 2; v6++)
		fprintf(f, "add rule %s %s %s meta mark != 0x%08x ip%s saddr . "
			   "tcp sport . ip%s daddr . tcp dport @adopt%c goto "
			   "divert\n", RULESET_FAMILY, RULESET_TABLE, chain,
			cfg->mark, v6 ? "6" : "", v6 ? "6" : "",
			v6 ? '6' : '4');
}

int adoptset_open(struct adoptset **out)
{
	struct adoptset *as = calloc(1, sizeof(*as));
	int ret;

	if (!as)
		return -ENOMEM;
	as->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!as->nl || mnl_socket_bind(as->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		adoptset_close(as);
		return ret;
	}
	as->portid = mnl_socket_get_portid(as->nl);
	*out = as;
	return 0;
}

void adoptset_close(struct adoptset *as)
{
	if (!as)
		return;
	if (as->nl)
		mnl_socket_close(as->nl);
	free(as);
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

/* One set-element message for up to ADOPTSET_CHUNK flows of FAMILY
 * from *I on; advances *I. NULL when out of memory. */
static struct nftnl_set *chunk(const struct adoptset_flow *flows, unsigned n,
			       unsigned *i, int family, bool add)
{
	struct nftnl_set *s = nftnl_set_alloc();
	unsigned taken = 0;

	if (!s)
		return NULL;
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, RULESET_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME,
			  family == AF_INET6 ? "adopt6" : "adopt4");
	for (; *i < n && taken < ADOPTSET_CHUNK; (*i)++) {
		const struct adoptset_flow *fl = &flows[*i];
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
					       ADOPTSET_TIMEOUT_MS);
		nftnl_set_elem_add(s, e);	/* s owns e now */
		taken++;
	}
	if (taken == 0) {
		nftnl_set_free(s);
		return NULL;
	}
	return s;
}

/* Send one batch and wait for the kernel's answer to its last message. */
static int send_batch(struct adoptset *as, struct mnl_nlmsg_batch *batch,
		      uint32_t last_seq)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t ret;

	if (mnl_socket_sendto(as->nl, mnl_nlmsg_batch_head(batch),
			      mnl_nlmsg_batch_size(batch)) < 0)
		return -errno;
	/* Every message asks for an ACK: read until the last one's. */
	for (;;) {
		const struct nlmsghdr *nlh;

		ret = mnl_socket_recvfrom(as->nl, buf, sizeof(buf));
		if (ret < 0)
			return -errno;
		nlh = (const struct nlmsghdr *)buf;
		if (mnl_cb_run(buf, (size_t)ret, 0, as->portid, NULL, NULL) < 0 &&
		    errno != ENOENT)
			return -errno;
		if (mnl_nlmsg_ok(nlh, (int)ret) && nlh->nlmsg_seq == last_seq)
			return 0;
	}
}

int adoptset_update(struct adoptset *as, const struct adoptset_flow *flows,
		    unsigned n, bool add)
{
	/* Room for a batch of ADOPTSET_CHUNK IPv6 elements (about 80 bytes
	 * each), and a constant size: MNL_SOCKET_BUFFER_SIZE is not one. */
	static char buf[32768];
	int ret = 0;

	for (int fam = 0; fam < 2 && !ret; fam++) {
		int family = fam ? AF_INET6 : AF_INET;
		unsigned i = 0;

		while (i < n && !ret) {
			struct nftnl_set *s = chunk(flows, n, &i, family, add);
			struct mnl_nlmsg_batch *batch;
			struct nlmsghdr *nlh;
			uint32_t elem_seq;

			if (!s) {
				/* None left of FAMILY, or out of memory. */
				if (i < n)
					ret = -ENOMEM;
				continue;
			}
			batch = mnl_nlmsg_batch_start(buf, sizeof(buf));
			nftnl_batch_begin(mnl_nlmsg_batch_current(batch),
					  as->seq++);
			mnl_nlmsg_batch_next(batch);
			elem_seq = as->seq++;
			nlh = nftnl_nlmsg_build_hdr(
				mnl_nlmsg_batch_current(batch),
				add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
				NFPROTO_INET,
				(add ? NLM_F_CREATE : 0) | NLM_F_ACK, elem_seq);
			nftnl_set_elems_nlmsg_build_payload(nlh, s);
			mnl_nlmsg_batch_next(batch);
			nftnl_batch_end(mnl_nlmsg_batch_current(batch),
					as->seq++);
			mnl_nlmsg_batch_next(batch);
			nftnl_set_free(s);
			ret = send_batch(as, batch, elem_seq);
			mnl_nlmsg_batch_stop(batch);
		}
	}
	return ret;
}
