// SPDX-License-Identifier: GPL-2.0-only
#include "local.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "netlink.h"

int local_source(const struct addr *dst, struct addr *src)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);
	int fd, ret = 0;

	/* A connected UDP socket asks the routing table without sending. */
	if (dst->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(9);
		sin->sin_addr = dst->v4;
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(9);
		sin6->sin6_addr = dst->v6;
		len = sizeof(*sin6);
	}
	fd = socket(dst->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		ret = -errno;
		goto out;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		ret = -errno;
		goto out;
	}
	memset(src, 0, sizeof(*src));
	src->family = dst->family;
	if (dst->family == AF_INET)
		src->v4 = ((struct sockaddr_in *)&ss)->sin_addr;
	else
		src->v6 = ((struct sockaddr_in6 *)&ss)->sin6_addr;
out:
	close(fd);
	return ret;
}

/* RTM_NEWADDR or RTM_DELADDR of ADDR as a host route on "lo". */
static int addr_request(const struct addr *a, uint16_t type)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;

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
	mnl_attr_put(nlh, IFA_LOCAL, addr_len(a), a->bytes);
	mnl_attr_put(nlh, IFA_ADDRESS, addr_len(a), a->bytes);
	if (type == RTM_NEWADDR)
		mnl_attr_put_u8(nlh, IFA_PROTO, LOCAL_IFA_PROTO);

	return netlink_transact(NETLINK_ROUTE, nlh, buf, sizeof(buf), NULL,
				NULL);
}

static struct local_kept **find(struct local_state *s, const struct addr *a)
{
	struct local_kept **pp = &s->kept;

	while (*pp && !addr_equal(&(*pp)->addr, a))
		pp = &(*pp)->next;
	return pp;
}

int local_keep(struct local_state *s, const struct addr *addr)
{
	struct local_kept **pp = find(s, addr), *k = *pp;
	char buf[ADDR_STRLEN];
	int ret;

	if (k) {
		k->refs++;
		return 0;
	}
	k = xcalloc(1, sizeof(*k));
	k->addr = *addr;
	k->refs = 1;
	*pp = k;
	ret = addr_request(addr, RTM_NEWADDR);
	if (ret == 0) {
		k->added = true;
		s->keeps++;
		log_info("address %s kept on lo for its connections",
			 addr_format(addr, buf, sizeof(buf)));
	} else if (ret != -EEXIST) {
		s->keep_errors++;
		log_warnx("keeping address %s on lo: %s",
			  addr_format(addr, buf, sizeof(buf)), strerror(-ret));
	}
	return ret == -EEXIST ? 0 : ret;
}

void local_adopt(struct local_state *s, const struct addr *addr)
{
	struct local_kept **pp = find(s, addr);
	int ret;

	if (*pp) {
		(*pp)->refs++;
		return;
	}
	/* Left on lo by the rackd before us, or gone: ours either way. */
	ret = local_keep(s, addr);
	if (ret == 0 && (pp = find(s, addr)) && *pp)
		(*pp)->added = true;
}

static void drop(struct local_kept *k)
{
	char buf[ADDR_STRLEN];
	int ret;

	if (k->added) {
		ret = addr_request(&k->addr, RTM_DELADDR);
		if (ret && ret != -EADDRNOTAVAIL)
			log_warnx("removing kept address %s: %s",
				  addr_format(&k->addr, buf, sizeof(buf)),
				  strerror(-ret));
		else
			log_info("kept address %s removed from lo",
				 addr_format(&k->addr, buf, sizeof(buf)));
	}
	free(k);
}

void local_unkeep(struct local_state *s, const struct addr *addr)
{
	struct local_kept **pp = find(s, addr), *k = *pp;

	if (!k || --k->refs)
		return;
	*pp = k->next;
	drop(k);
}

bool local_is_kept(const struct local_state *s, const struct addr *addr)
{
	for (const struct local_kept *k = s->kept; k; k = k->next)
		if (addr_equal(&k->addr, addr))
			return true;
	return false;
}

void local_leave(struct local_state *s)
{
	while (s->kept) {
		struct local_kept *k = s->kept;

		s->kept = k->next;
		free(k);
	}
}

void local_free(struct local_state *s)
{
	while (s->kept) {
		struct local_kept *k = s->kept;

		s->kept = k->next;
		drop(k);
	}
}
