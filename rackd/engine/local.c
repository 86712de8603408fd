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
