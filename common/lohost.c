// SPDX-License-Identifier: GPL-2.0-only
#include "lohost.h"

#include <errno.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <time.h>

#include "netlink.h"

/* RTM_NEWADDR or RTM_DELADDR of A as a host route on "lo". */
static int request(const struct addr *a, uint16_t type)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;
	size_t alen = a->family == AF_INET ? 4 : 16;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			   (type == RTM_NEWADDR ? NLM_F_CREATE | NLM_F_EXCL : 0);
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = a->family;
	ifa->ifa_prefixlen = a->family == AF_INET ? 32 : 128;
	/* Host scope: never chosen as the source of new connections. */
	ifa->ifa_scope = a->family == AF_INET ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE;
	ifa->ifa_flags = a->family == AF_INET6 ? IFA_F_NODAD : 0;
	ifa->ifa_index = if_nametoindex("lo");
	if (!ifa->ifa_index)
		return -ENODEV;
	mnl_attr_put(nlh, IFA_LOCAL, alen, a->bytes);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, a->bytes);
	if (type == RTM_NEWADDR)
		mnl_attr_put_u8(nlh, IFA_PROTO, LOHOST_IFA_PROTO);
	return netlink_transact(NETLINK_ROUTE, nlh, buf, sizeof(buf), NULL,
				NULL);
}

int lohost_add(const struct addr *a)
{
	return request(a, RTM_NEWADDR);
}

int lohost_del(const struct addr *a)
{
	return request(a, RTM_DELADDR);
}
