/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * racks.conf: "key = value" lines, '#' comments. Every key is documented
 * in man/racks.conf.5. Parsing fills a fresh struct so that a reload can
 * swap configurations only when the new one is valid.
 */
#ifndef RACKS_CONFIG_H
#define RACKS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"

#define CONFIG_DEFAULT_PATH "/etc/racks/racks.conf"

enum queue_mode {
	QUEUE_MODE_AUTO,	/* native nft queue if the kernel has it, else xt */
	QUEUE_MODE_NATIVE,
	QUEUE_MODE_XT,
};

/* Which path racks' handshake option takes (kernel_option): the sock_ops
 * program (bpf/, bpfopt.h) where it can be loaded, else the queue (auto);
 * the program or no start (bpf); the queue always (queue, the default
 * while the BPF path is a preview: issue 23). */
enum kernel_option {
	KERNEL_OPTION_AUTO,
	KERNEL_OPTION_BPF,
	KERNEL_OPTION_QUEUE,
};

#define CONFIG_PATH_MAX 256

struct port_range {
	uint16_t first, last;
};

/*
 * How far rackd trusts a peer host's static key (rackd/core/knownhosts.h
 * has the rules): keys seen first are remembered and trusted after
 * (accept-new), only keys pinned by the administrator are (pinned), or
 * connections are keyed without host keys (anonymous: opt-in and weaker,
 * an active attacker at set-up can take the connection's key).
 */
enum trust_policy {
	TRUST_ACCEPT_NEW,
	TRUST_PINNED,
	TRUST_ANONYMOUS,
	TRUST_POLICIES
};

/* A remote prefix with its own policy (trust_accept_new, trust_pinned,
 * trust_anonymous keys). */
struct trust_prefix {
	struct prefix prefix;
	enum trust_policy policy;
};

struct config {
	uint16_t queue_num;
	enum queue_mode queue_mode;
	uint32_t queue_maxlen;
	uint32_t mark;			/* carried by rackd's own packets */
	bool all_ports;
	struct port_range *ports;	/* server ports considered */
	size_t nports;
	struct prefix *exclude;		/* remote prefixes never considered */
	size_t nexclude;
	uint64_t syn_timeout_ms;	/* forget a handshake not completed */
	uint64_t setup_timeout_ms;	/* racks set-up must finish by then */
	uint64_t suspend_after_ms;	/* silence that suspends a connection */
	uint64_t max_suspend_ms;	/* longest hold before a deliberate abort */
	uint64_t retry_interval_ms;	/* longest wait between reconnection tries */
	/* A path silent this long tries less often: the wait between its
	 * tries doubles up to retry_interval_max (liveness.c). */
	uint64_t retry_backoff_after_ms;
	uint64_t retry_interval_max_ms;
	bool reopen;			/* suspended paths re-open with SYNs */
	bool answer_probes;		/* answer classic EDP probes */
	uint64_t sweep_interval_ms;	/* check the table against the kernel */
	uint32_t max_connections;
	/* Entries made by SYNs whose sender has not proved its address yet
	 * (halfopen.h), in all and per source prefix. */
	uint32_t max_half_open, max_half_open_per_prefix;
	/* Reconnection SYNs a second at most, all connections together. */
	uint32_t reconnect_rate;
	enum trust_policy trust;		/* for peers no trust_* prefix names */
	struct trust_prefix *trust_prefixes;	/* in the order given */
	size_t ntrust;
	/* Host pairs' keys (the engine's): renewed after this long, and
	 * after this many connections. */
	uint64_t hostpair_lifetime_ms;
	uint32_t hostpair_max_connections;
	bool debug;
	enum kernel_option kernel_option;
	/* The cgroup v2 directory the program is attached to; empty: the
	 * cgroup2 mount (bpfopt.h). */
	char bpf_cgroup[CONFIG_PATH_MAX];
	/* Not a key: set by daemon.c once the path is chosen at start (a
	 * reload carries it over). With it, the ruleset diverts no SYN or
	 * SYN-ACK for racks' option (ruleset.c): the program handles it. */
	bool bpf_handshakes;
};

/* The strict queue: racks' own messages and the segments of held
 * connections, never passed when it is full or unread; the one after
 * CFG's queue (ruleset.c, daemon.c). */
static inline uint16_t config_strict_queue(const struct config *cfg)
{
	return (uint16_t)(cfg->queue_num + 1);
}

/* The mark of the segments rackd sends past its splices: the one after
 * CFG's mark (inject.h, ruleset.c). */
static inline uint32_t config_unspliced_mark(const struct config *cfg)
{
	return cfg->mark + 1;
}

/*
 * Load PATH into a new config. A missing file yields the built-in defaults
 * (*missing set to true). On error returns -EINVAL and writes a one-line
 * message "PATH:LINE: problem" into err.
 */
int config_load(const char *path, struct config **out, bool *missing,
		char *err, size_t errlen);
struct config *config_defaults(void);
void config_free(struct config *cfg);

/* Write the effective configuration as racks.conf lines. */
void config_dump(const struct config *cfg, FILE *f);

/* Parse a duration with unit (ms, s, m, h, d; bare number = seconds). */
int config_parse_duration(const char *s, uint64_t *ms);
const char *config_queue_mode_name(enum queue_mode mode);
/* "auto", "bpf" or "queue". */
const char *config_kernel_option_name(enum kernel_option k);

/* The policy for PEER: that of the longest trust_* prefix holding it (the
 * one given first of equally long ones), else CFG's trust. */
enum trust_policy config_trust_for(const struct config *cfg,
				   const struct addr *peer);
/* "accept-new", "pinned" or "anonymous". */
const char *trust_policy_name(enum trust_policy policy);

#endif
