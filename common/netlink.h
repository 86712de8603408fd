/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One netlink request and its one reply, on a socket of its own: for the
 * synchronous questions rackd asks the kernel now and then (a socket's
 * progress, adding an address), never on a packet's fast path.
 */
#ifndef RACKS_NETLINK_H
#define RACKS_NETLINK_H

#include <libmnl/libmnl.h>
#include <stddef.h>

/*
 * Send the request NLH (built at the start of BUF, BUFLEN bytes) on netlink
 * BUS, receive the reply into BUF and run CB (may be NULL: an ACK is
 * enough) on it. Returns 0, or -errno (also the kernel's error for the
 * request).
 */
int netlink_transact(int bus, struct nlmsghdr *nlh, char *buf, size_t buflen,
		     mnl_cb_t cb, void *data);

#endif
