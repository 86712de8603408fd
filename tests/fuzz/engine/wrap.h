/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fuzzer's seams into rackd's sources, none of them a change to
 * those sources: a few files are compiled here (wrap_*.c) with names
 * redirected by the preprocessor, so that what they would ask of the
 * real kernel or of libnftables is asked of the fakes instead, and the
 * rest of each file runs as it is:
 *
 *   wrap_main.c     rackd/main.c: its wire() and provide_state(), so the
 *                   layers are wired exactly as the daemon wires them
 *   wrap_daemon.c   rackd/daemon.c: start, reload and stop as they are,
 *                   without blocking the fuzzer's signals
 *   wrap_local.c    rackd/engine/local.c: routes from the fake's table
 *   wrap_inject.c   rackd/io/inject.c: the real segment builder only
 *   wrap_nft.c      nft/ruleset.c: the real script writers, run by the
 *                   fake nft (nft.c)
 *   wrap_flowset.c  nft/flowset.c: its script writers, not its socket
 */
#ifndef RACKS_FUZZ_WRAP_H
#define RACKS_FUZZ_WRAP_H

#include <signal.h>
#include <stdint.h>

#include "rackd.h"

/* wrap_main.c: main.c's provide_state() and wire(), once per input. */
void fz_wire(struct rackd *d);

/* wrap_daemon.c's signal calls. */
int fz_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int fz_signalfd(int fd, const sigset_t *mask, int flags);

/* wrap_nft.c's libnftables calls (nft.c interprets the scripts). */
struct nft_ctx;
struct nft_ctx *fz_nft_ctx_new(uint32_t flags);
void fz_nft_ctx_free(struct nft_ctx *ctx);
int fz_nft_ctx_buffer_output(struct nft_ctx *ctx);
int fz_nft_ctx_buffer_error(struct nft_ctx *ctx);
const char *fz_nft_ctx_get_output_buffer(struct nft_ctx *ctx);
const char *fz_nft_ctx_get_error_buffer(struct nft_ctx *ctx);
int fz_nft_run_cmd_from_buffer(struct nft_ctx *ctx, const char *buf);

#endif
