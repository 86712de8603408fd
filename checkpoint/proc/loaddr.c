// SPDX-License-Identifier: GPL-2.0-only
#include "loaddr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "lohost.h"

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

int loaddr_add(const struct addr *a)
{
	return lohost_add(a);
}

int loaddr_del(const struct addr *a)
{
	return lohost_del(a);
}

int loaddr_first_global(struct addr *a)
{
	struct ifaddrs *list, *i;
	int ret = -ENOENT;

	if (getifaddrs(&list) < 0)
		return -errno;
	for (int pass = 0; pass < 2 && ret; pass++)
		for (i = list; i && ret; i = i->ifa_next) {
			const struct sockaddr *sa = i->ifa_addr;

			/* Addresses kept (or restored) on lo are others'. */
			if (!sa || sa->sa_family != (pass ? AF_INET6 : AF_INET) ||
			    (i->ifa_flags & IFF_LOOPBACK))
				continue;
			memset(a, 0, sizeof(*a));
			a->family = (uint8_t)sa->sa_family;
			if (pass)
				a->v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
			else
				a->v4 = ((const struct sockaddr_in *)sa)->sin_addr;
			if (pass && IN6_IS_ADDR_LINKLOCAL(&a->v6))
				continue;
			ret = 0;
		}
	freeifaddrs(list);
	return ret;
}
