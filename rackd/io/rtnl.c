// SPDX-License-Identifier: GPL-2.0-only
#include "rtnl.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"

#ifndef MNL_SOCKET_DUMP_SIZE
#define MNL_SOCKET_DUMP_SIZE 32768	/* libmnl >= 1.0.5 defines it */
#endif

struct rtnl {
	struct mnl_socket *nl;
	struct rtnl_handlers h;
	char *buf;
};

int rtnl_open(struct rtnl **out, const struct rtnl_handlers *h)
{
	struct rtnl *r = xcalloc(1, sizeof(*r));
	unsigned groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
	int err;

	*out = NULL;
	r->h = *h;
	r->buf = xcalloc(1, MNL_SOCKET_DUMP_SIZE);
	r->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!r->nl) {
		err = -errno;
		goto err;
	}
	if (mnl_socket_bind(r->nl, groups, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto err;
	}
	*out = r;
	return 0;
err:
	rtnl_close(r);
	return err;
}

void rtnl_close(struct rtnl *r)
{
	if (!r)
		return;
	if (r->nl)
		mnl_socket_close(r->nl);
	free(r->buf);
	free(r);
}

int rtnl_fd(const struct rtnl *r)
{
	return mnl_socket_get_fd(r->nl);
}

static int link_attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, IFLA_MAX) < 0)
		return MNL_CB_OK;
	if (type == IFLA_IFNAME && mnl_attr_validate(a, MNL_TYPE_STRING) < 0)
		return MNL_CB_OK;
	tb[type] = a;
	return MNL_CB_OK;
}

static void rtnl_link(struct rtnl *r, const struct nlmsghdr *nlh)
{
	const struct nlattr *tb[IFLA_MAX + 1] = { 0 };
	const struct ifinfomsg *ifi;
	struct rtnl_link_event ev = { 0 };

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return;
	ifi = mnl_nlmsg_get_payload(nlh);
	mnl_attr_parse(nlh, sizeof(*ifi), link_attr_cb, tb);
	ev.ifindex = (uint32_t)ifi->ifi_index;
	ev.name = tb[IFLA_IFNAME] ? mnl_attr_get_str(tb[IFLA_IFNAME]) : "?";
	ev.up = ifi->ifi_flags & IFF_UP;
	ev.carrier = ifi->ifi_flags & IFF_LOWER_UP;
	ev.removed = nlh->nlmsg_type == RTM_DELLINK;
	if (r->h.link)
		r->h.link(r->h.arg, &ev);
}

static int addr_attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, IFA_MAX) < 0)
		return MNL_CB_OK;
	tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

static void rtnl_addr(struct rtnl *r, const struct nlmsghdr *nlh)
{
	const struct nlattr *tb[IFA_MAX + 1] = { 0 };
	const struct ifaddrmsg *ifa;
	const struct nlattr *a;
	struct rtnl_addr_event ev = { 0 };
	size_t want;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return;
	ifa = mnl_nlmsg_get_payload(nlh);
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return;
	mnl_attr_parse(nlh, sizeof(*ifa), addr_attr_cb, tb);
	/* IFA_LOCAL is the local address on point-to-point links. */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	want = ifa->ifa_family == AF_INET ? 4 : 16;
	if (!a || mnl_attr_get_payload_len(a) != want)
		return;
	ev.ifindex = ifa->ifa_index;
	ev.prefix.addr.family = ifa->ifa_family;
	memcpy(ev.prefix.addr.bytes, mnl_attr_get_payload(a), want);
	ev.prefix.len = ifa->ifa_prefixlen;
	ev.removed = nlh->nlmsg_type == RTM_DELADDR;
	if (r->h.addr)
		r->h.addr(r->h.arg, &ev);
}

static int rtnl_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rtnl *r = data;

	switch (nlh->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
		rtnl_link(r, nlh);
		break;
	case RTM_NEWADDR:
	case RTM_DELADDR:
		rtnl_addr(r, nlh);
		break;
	}
	return MNL_CB_OK;
}

int rtnl_dump_addresses(struct rtnl *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;

	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_UNSPEC;
	return mnl_socket_sendto(r->nl, nlh, nlh->nlmsg_len) < 0 ? -errno : 0;
}

void rtnl_process(struct rtnl *r)
{
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(r->nl, r->buf,
						MNL_SOCKET_DUMP_SIZE);

		if (n < 0) {
			if (errno == ENOBUFS)
				log_warnx("rtnetlink: events lost (ENOBUFS)");
			else if (errno != EAGAIN && errno != EINTR)
				log_warn("rtnetlink: recv");
			if (errno != ENOBUFS && errno != EINTR)
				return;
			continue;
		}
		mnl_cb_run(r->buf, (size_t)n, 0, 0, rtnl_cb, r);
	}
}
