/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rtnetlink listener: link (carrier) and address events, which later
 * drive immediate suspension and reconnection.
 */
#ifndef RACKS_RTNL_H
#define RACKS_RTNL_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"

struct rtnl_link_event {
	uint32_t ifindex;
	const char *name;
	bool up;		/* administratively up */
	bool carrier;		/* IFF_LOWER_UP */
	bool removed;
};

struct rtnl_addr_event {
	uint32_t ifindex;
	struct prefix prefix;
	bool removed;
};

struct rtnl_handlers {
	void (*link)(void *arg, const struct rtnl_link_event *ev);
	void (*addr)(void *arg, const struct rtnl_addr_event *ev);
	void *arg;
};

struct rtnl;

int rtnl_open(struct rtnl **out, const struct rtnl_handlers *h);
void rtnl_close(struct rtnl *r);
int rtnl_fd(const struct rtnl *r);
/* Ask for every current address; they arrive as "added" events. */
int rtnl_dump_addresses(struct rtnl *r);
/* Read and dispatch pending events; call when the fd is readable. */
void rtnl_process(struct rtnl *r);

#endif
