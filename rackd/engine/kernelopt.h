/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF path's engine side: connections whose handshake the kernel's
 * sock_ops program saw (bpf/, bpfopt.h) rather than rackd's queue. The
 * program writes racks' option in SYNs and SYN-ACKs and reads the peer's;
 * once a connection is established, its record (both ISNs, both nonces,
 * the host pairs named each way) does here what the SYN and SYN-ACK do
 * on the queue path (track.c): a connection table entry, marked offered
 * and its peer racks, whose set-up then runs over racks' messages exactly
 * as there (setup_begin: derived keys, host handshakes, anonymous
 * exchanges, trust). A plain record of ours (the peer answered without
 * racks) is released and adopted later, as a plain SYN-ACK is.
 *
 * The program offers to everyone: which peers are considered (ports,
 * exclude), which host pair a client names and which a server echoes
 * stays the engine's decision (kernelopt_offer(), and the checks here
 * when the record comes).
 */
#ifndef RACKS_KERNELOPT_H
#define RACKS_KERNELOPT_H

#include <stdbool.h>
#include <stdint.h>

#include "bpfopt.h"
#include "rackd.h"

/* One established connection's record (bpfopt_drain()'s callback,
 * installed by daemon.c). */
void kernelopt_record(struct rackd *d, const struct bpfopt_record *r);

/*
 * The host pair a client's SYN to ADDR names now (the program's offer
 * map), 0 for none: the newest one confirmed there, while it may still
 * key connections (hostpair_lifetime, hostpair_max_connections) and its
 * peer's key is trusted there. The queue path's offer_pair() decides per
 * SYN and lets one connection renew a used-up host pair while the
 * others go on naming it; the map holds one answer per address, so a
 * used-up host pair is named no more and the next connection renews it
 * (the ones opened meanwhile wait for it, setup.c).
 */
uint32_t kernelopt_offer(struct rackd *d, const struct addr *addr);

#endif
