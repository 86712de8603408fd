// SPDX-License-Identifier: GPL-2.0-only
#include "loaddr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

bool loaddr_is_local(const struct addr *a)
{
	struct ifaddrs *list, *i;
	bool found = false;

	if (getifaddrs(&list) < 0)
		return false;
	for (i = list; i && !found; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa || sa->sa_family != a->family)
			continue;
		if (a->family == AF_INET)
			found = memcmp(&((const struct sockaddr_in *)sa)->sin_addr,
				       a->bytes, 4) == 0;
		else
			found = memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
				       a->bytes, 16) == 0;
	}
	freeifaddrs(list);
	return found;
}

static int request(const struct addr *a, uint16_t type)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct mnl_socket *nl;
	struct ifaddrmsg *ifa;
	size_t alen = a->family == AF_INET ? 4 : 16;
	uint32_t seq = (uint32_t)time(NULL);
	ssize_t n;
	int ret;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			   (type == RTM_NEWADDR ? NLM_F_CREATE | NLM_F_EXCL : 0);
	nlh->nlmsg_seq = seq;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = a->family;
	ifa->ifa_prefixlen = a->family == AF_INET ? 32 : 128;
	/* Host scope: never picked as the source of new connections. */
	ifa->ifa_scope = a->family == AF_INET ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE;
	ifa->ifa_flags = a->family == AF_INET6 ? IFA_F_NODAD : 0;
	ifa->ifa_index = if_nametoindex("lo");
	if (!ifa->ifa_index)
		return -ENODEV;
	mnl_attr_put(nlh, IFA_LOCAL, alen, a->bytes);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, a->bytes);
	if (type == RTM_NEWADDR)
		mnl_attr_put_u8(nlh, IFA_PROTO, LOADDR_IFA_PROTO);

	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	ret = mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), NULL,
			 NULL) < 0 ? -errno : 0;
out:
	mnl_socket_close(nl);
	return ret;
}

int loaddr_add(const struct addr *a)
{
	return request(a, RTM_NEWADDR);
}

int loaddr_del(const struct addr *a)
{
	return request(a, RTM_DELADDR);
}
