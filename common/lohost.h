/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An address as a host route on "lo" (/32 or /128): how rackd keeps a
 * removed address usable for the sockets still bound to it, and how
 * rackckpt makes a restored process's old addresses local. Added with
 * racks' address protocol, so that "ip address" shows who added it.
 */
#ifndef RACKS_LOHOST_H
#define RACKS_LOHOST_H

#include "addr.h"

#define LOHOST_IFA_PROTO 0x72	/* 'r' */

/* Add A to lo: 0, -EEXIST if it is there already, or -errno. */
int lohost_add(const struct addr *a);
int lohost_del(const struct addr *a);

#endif
