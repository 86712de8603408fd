/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Least privilege after start-up. Everything that needs more than
 * networking is done by then (the control socket bound, the queue bound,
 * the table installed); from then on rackd keeps CAP_NET_ADMIN (nftables,
 * NFQUEUE verdicts, addresses on lo, SO_MARK, sock_diag) and CAP_NET_RAW
 * (its raw sockets), in its effective and permitted sets and in its
 * bounding set, with no_new_privs set, so that neither it nor anything it
 * could run ever regains the rest. It stays uid 0: its files (state file,
 * control socket) are root's, which needs no capability.
 */
#ifndef RACKS_CAPS_H
#define RACKS_CAPS_H

/* 0, or -errno (nothing is half dropped that matters: the caller exits). */
int caps_drop(void);

#endif
