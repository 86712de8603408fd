// SPDX-License-Identifier: GPL-2.0-only
#include "relayaddr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "util.h"

/* Whether a socket of the tree is bound to A: restore makes it local on
 * the destination (on lo), which could then not reach this host there. */
static bool tree_uses(const struct procsock_set *socks, const struct addr *a)
{
	for (size_t i = 0; i < socks->n; i++)
		if (socks->socks[i].kind != PROCSOCK_IDLE &&
		    addr_equal(&socks->socks[i].local.addr, a))
			return true;
	return false;
}

/* An address of this host the destination can reach the wrapper at: a
 * global one that no socket of the tree is bound to (IPv4 first). */
static int pick(pid_t pid, const struct procsock_set *socks,
		const char *explicit, char *out, size_t outlen)
{
	struct ifaddrs *list, *i;

	if (explicit) {
		struct endpoint e;
		bool has_port;

		endpoint_parse(explicit, &e, &has_port);
		if (tree_uses(socks, &e.addr)) {
			util_err("--relay-addr %s is an address process %d's "
				 "sockets are bound to: restored, they make it "
				 "local on the destination, which could not "
				 "reach the wrapper there", explicit,
				 (int)pid);
			return -EINVAL;
		}
		snprintf(out, outlen, "%s", explicit);
		return 0;
	}
	if (getifaddrs(&list) < 0)
		return -errno;
	for (int pass = 0; pass < 2 && !out[0]; pass++)
		for (i = list; i && !out[0]; i = i->ifa_next) {
			struct addr a = { 0 };
			const struct sockaddr *sa = i->ifa_addr;

			if (!sa || sa->sa_family != (pass ? AF_INET6 : AF_INET))
				continue;
			a.family = (uint8_t)sa->sa_family;
			if (pass)
				a.v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
			else
				a.v4 = ((const struct sockaddr_in *)sa)->sin_addr;
			if ((!pass && a.bytes[0] == 127) ||
			    (pass && (IN6_IS_ADDR_LOOPBACK(&a.v6) ||
				      IN6_IS_ADDR_LINKLOCAL(&a.v6))) ||
			    tree_uses(socks, &a))
				continue;
			addr_format(&a, out, outlen);
		}
	freeifaddrs(list);
	if (!out[0]) {
		util_err("no address of this host to reach the wrapper of "
			 "process %d at: every global address is one its "
			 "sockets are bound to, which the destination will "
			 "have on its lo; add another one and name it with "
			 "--relay-addr", (int)pid);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

int relayaddr_check(pid_t pid, const struct procsock_set *socks,
		    const char *explicit, struct relay_info *ri, char *out,
		    size_t outlen)
{
	char err[512], kind[16];
	int ret = relayfile_read(pid, ri, err, sizeof(err));

	if (ret == -ENOENT)
		return 0;	/* not under a wrapper */
	if (ret) {
		util_err("%s", err);
		return ret;
	}
	for (size_t i = 0; i < ri->nfds; i++) {
		struct relay_fd *f = &ri->fds[i];

		if (procsock_fd_inode(pid, f->fd, kind, sizeof(kind),
				      &f->ino) || strcmp(kind, "socket") != 0) {
			util_err("descriptor %d of process %d is no longer the "
				 "socket its wrapper gave it", f->fd,
				 (int)pid);
			return -EINVAL;
		}
	}
	/* Restored here by an earlier move: the wrapper is where it was. */
	if (ri->addr[0] && !explicit) {
		struct endpoint e;
		bool has_port;

		if (endpoint_parse(ri->addr, &e, &has_port) || has_port ||
		    tree_uses(socks, &e.addr)) {
			util_err("the wrapper's address %s (from the relay file "
				 "of process %d) cannot be used: name one with "
				 "--relay-addr", ri->addr, (int)pid);
			return -EINVAL;
		}
		addr_format(&e.addr, out, outlen);
		return 1;
	}
	ret = pick(pid, socks, explicit, out, outlen);
	return ret < 0 ? ret : 1;
}

