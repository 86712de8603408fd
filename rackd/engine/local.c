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
#include "lohost.h"
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

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rtm;

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
	    nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return MNL_CB_OK;
	rtm = mnl_nlmsg_get_payload(nlh);
	*(int *)data = rtm->rtm_type;
	return MNL_CB_OK;
}

/* What the routing table does with packets to DST: RTN_UNICAST,
 * RTN_LOCAL, RTN_BROADCAST, ...; -errno when it has no route. */
static int route_type(const struct addr *dst)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;
	int type = -ENOENT, ret;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = dst->family;
	rtm->rtm_dst_len = dst->family == AF_INET ? 32 : 128;
	mnl_attr_put(nlh, RTA_DST, addr_len(dst), dst->bytes);
	ret = netlink_transact(NETLINK_ROUTE, nlh, buf, sizeof(buf), route_cb,
			       &type);
	return ret ? ret : type;
}

bool local_remote_usable(const struct addr *a)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t zero[16];

	if (a->family == AF_INET) {
		/* 0/8 (this network), 127/8, 224/4 and 240/4 (multicast,
		 * reserved, the limited broadcast). */
		if (a->bytes[0] == 0 || a->bytes[0] == 127 ||
		    a->bytes[0] >= 224)
			return false;
	} else if (!memcmp(a->bytes, zero, 15) || a->bytes[0] == 0xff ||
		   !memcmp(a->bytes, v4mapped, sizeof(v4mapped))) {
		/* ::, ::1, multicast, and IPv4 in IPv6's clothes. */
		return false;
	}
	/* This host's own addresses, subnet broadcasts, and what it cannot
	 * reach are no peer's. */
	return route_type(a) == RTN_UNICAST;
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
	ret = lohost_add(addr);
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
		ret = lohost_del(&k->addr);
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
