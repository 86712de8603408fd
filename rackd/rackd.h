/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's state, shared by its modules. There is one instance; the
 * modules receive it explicitly rather than through a global.
 */
#ifndef RACKS_RACKD_H
#define RACKS_RACKD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "conn.h"
#include "packet.h"
#include "ruleset.h"
#include "timer.h"

#define RACKD_VERSION "0.1.0"
#define RACKD_DEFAULT_SOCKET "/run/racks/rackd.sock"

struct loop;
struct queue;
struct rtnl;
struct ctl;

struct rackd_stats {
	uint64_t malformed;		/* sum of malformed_by[] */
	uint64_t malformed_by[PACKET_ERR_MAX];
	uint64_t unexpected;		/* queued but not a SYN or SYN-ACK */
	uint64_t syn;
	uint64_t synack;
	uint64_t syn_retransmit;
	uint64_t synack_unmatched;	/* SYN-ACK without a known SYN */
	uint64_t conns_total;
	uint64_t conns_expired;		/* handshake never completed */
	uint64_t conns_closed;		/* socket gone from the kernel */
	uint64_t conns_refused;		/* table full */
	uint64_t sweeps;
	uint64_t link_events;
	uint64_t addr_events;
	uint64_t ctl_requests;
	uint64_t ctl_errors;
};

struct rackd {
	struct config *cfg;
	const char *config_path;
	const char *sock_path;
	struct loop *loop;
	struct queue *queue;
	enum ruleset_queue queue_mode;
	bool table_installed;
	struct conn_table conns;
	struct rtnl *rtnl;
	struct ctl *ctl;
	struct timer sweep_timer;
	uint64_t last_sweep;		/* monotonic ms */
	bool debug_option;		/* -d given: reloads keep debug on */
	int sigfd;
	time_t started;
	uint64_t started_mono;
	struct rackd_stats stats;
};

/* Re-read the configuration file; keeps the old one if the new is bad. */
int rackd_reload(struct rackd *d, char *err, size_t errlen);

#endif
