// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd/engine/local.c compiled as it is, but for local_source(), which
 * asks the host's routing table: fake.c answers from the fuzzer's routes
 * instead (the real one is kept here, unused). Kept addresses go to the
 * fake lohost_add() / lohost_del().
 */
#include "local.h"

int real_local_source(const struct addr *dst, struct addr *src);

#define local_source real_local_source
#include "../../../rackd/engine/local.c"
