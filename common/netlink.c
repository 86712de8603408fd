// SPDX-License-Identifier: GPL-2.0-only
#include "netlink.h"

#include <errno.h>
#include <sys/socket.h>

int netlink_transact(int bus, struct nlmsghdr *nlh, char *buf, size_t buflen,
		     mnl_cb_t cb, void *data)
{
	struct mnl_socket *nl = mnl_socket_open2(bus, SOCK_CLOEXEC);
	uint32_t seq = nlh->nlmsg_seq;
	ssize_t n;
	int ret;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	n = mnl_socket_recvfrom(nl, buf, buflen);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	ret = mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), cb,
			 data);
	ret = ret < 0 ? -errno : 0;
out:
	mnl_socket_close(nl);
	return ret;
}
