// SPDX-License-Identifier: GPL-2.0-only
/*
 * nft/ruleset.c compiled as it is, its scripts run by the fake nft
 * (nft.c) through libnftables' calls renamed: ruleset_run(),
 * ruleset_held() and ruleset_remove() are the real ones. Only
 * ruleset_install() is the fake's (nft.c), which starts a new table and
 * runs the state script rackd gives it: the table script itself is the
 * golden test's business (tests/golden).
 */
#include <nftables/libnftables.h>

#include "ruleset.h"
#include "wrap.h"

int real_ruleset_install(const struct config *cfg, enum queue_mode mode,
			 const char *state, enum queue_mode *used,
			 bool *replaced, char *err, size_t errlen);

#define nft_ctx_new fz_nft_ctx_new
#define nft_ctx_free fz_nft_ctx_free
#define nft_ctx_buffer_output fz_nft_ctx_buffer_output
#define nft_ctx_buffer_error fz_nft_ctx_buffer_error
#define nft_ctx_get_output_buffer fz_nft_ctx_get_output_buffer
#define nft_ctx_get_error_buffer fz_nft_ctx_get_error_buffer
#define nft_run_cmd_from_buffer fz_nft_run_cmd_from_buffer
#define ruleset_install real_ruleset_install
#include "../../../nft/ruleset.c"
