// SPDX-License-Identifier: GPL-2.0-only
#include "loaddr.h"

#include <errno.h>
#include <ifaddrs.h>
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
