// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd/daemon.c compiled as it is, but for its signal calls: blocking
 * SIGINT and SIGTERM in the fuzzer would keep libFuzzer (and whoever
 * runs it) from stopping it. The fake signalfd is a descriptor that
 * never becomes readable.
 */
#include <signal.h>
#include <sys/signalfd.h>

#include "wrap.h"

#define sigprocmask fz_sigprocmask
#define signalfd fz_signalfd
#include "../../../rackd/daemon.c"
