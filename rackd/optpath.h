/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which path racks' handshake option takes, chosen once at start
 * (racks.conf kernel_option): the sock_ops program of bpf/ (bpfopt.h),
 * which writes and reads it in the kernel, or rackd's queue (track.c),
 * which every SYN and SYN-ACK then crosses. On the BPF path this wires
 * the program to the engine: its ring of established connections is
 * drained in the event loop into kernelopt_record(), and the host pairs
 * are mirrored into its maps (which host pair a SYN to each address
 * names, which ones a SYN-ACK may echo) whenever they change
 * (host_pairs_notify_fn), at start and at each sweep.
 */
#ifndef RACKS_OPTPATH_H
#define RACKS_OPTPATH_H

#include <stddef.h>

#include "rackd.h"

/* Records handed to the engine per wake-up or round at most. */
#define OPTPATH_BATCH 256
/* After a wake-up, the ring is read in rounds this far apart while
 * records keep coming, rather than at every record (a wake-up per
 * connection costs connect() latency on a busy host: bpf/README.md). */
#define OPTPATH_ROUND_MS 1
/* Rounds go on this many times in a row without a record before records
 * wake the loop again: while connections keep coming, none wakes rackd
 * (each wake-up lands beside the connect() that made the record:
 * bpf/README.md), and an idle rackd runs no timer. */
#define OPTPATH_QUIET_ROUNDS 20

/* Choose the path for d->cfg (after host_pairs_init, before the host
 * pairs are loaded and the ruleset installed): sets d->bpf,
 * d->option_path_reason and d->cfg->bpf_handshakes, says which in the
 * log; exits when kernel_option = bpf and the program cannot be used. */
void optpath_start(struct rackd *d);
/* Hand waiting records to the engine: before queued packets, so that a
 * connection's record comes before its peer's first message. */
void optpath_drain(struct rackd *d);
/* Mirror every host pair into the program's maps (after loading them,
 * after a reload, and at each sweep: host pairs age). */
void optpath_sync(struct rackd *d);
/* A reload's new configuration CFG: the path stays as chosen at start;
 * -EINVAL (ERR says so) when CFG changes kernel_option or bpf_cgroup,
 * which need a restart. */
int optpath_reload(const struct rackd *d, struct config *cfg, char *err,
		   size_t errlen);
/* Detach the program (the kernel's handshakes go plain). */
void optpath_stop(struct rackd *d);
/* "bpf" or "queue". */
const char *optpath_name(const struct rackd *d);

#endif
