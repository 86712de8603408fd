/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The client side of the classic EDP probe: connect, shut down the write
 * side without sending anything, and read until EOF; the peer is enhanced
 * when the last bytes before EOF are a valid announcement.
 */
#ifndef RACKS_EDP_PROBE_H
#define RACKS_EDP_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "announce.h"

enum edp_probe_verdict {
	EDP_PROBE_ENHANCED,
	EDP_PROBE_ORDINARY,
};

struct edp_probe_opts {
	uint32_t connect_timeout_ms;	/* 0: default 5000 */
	uint32_t min_wait_ms;		/* 0: default 500 */
	uint32_t max_wait_ms;		/* 0: default 10000 */
};

struct edp_probe_result {
	enum edp_probe_verdict verdict;
	const char *reason;	/* "announcement", "eof", "timeout", "reset" */
	uint64_t connect_us;	/* connect() to established */
	uint64_t total_us;	/* connect() start to verdict */
	uint64_t wait_ms;	/* the read timeout derived from connect_us */
	uint64_t bytes;		/* bytes received before EOF */
	char host_id[EDP_HOST_ID_STRLEN];	/* when enhanced */
	/* When enhanced with a version 2 announcement: the host's static
	 * public key (edp/hostid.h), as the server sent it. */
	bool has_host_key;
	uint8_t host_key[EDP_ANNOUNCE_KEY_LEN];
	char peer[ADDR_STRLEN];	/* the address connected to, once connected */
};

/*
 * Probe HOST (name or address) at PORT. Returns 0 with R filled (enhanced
 * or ordinary), or -errno when no connection could be made (R->reason
 * then says why). The read timeout is derived from the connect time:
 * min_wait + 4 x connect time, capped at max_wait.
 */
int edp_probe(const char *host, uint16_t port, const struct edp_probe_opts *o,
	      struct edp_probe_result *r);
/* "enhanced" or "ordinary". */
const char *edp_probe_verdict_str(enum edp_probe_verdict v);

#endif
