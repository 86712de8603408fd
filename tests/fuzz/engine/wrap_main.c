// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd/main.c compiled as it is, its main() renamed (libFuzzer has its
 * own): the fuzzer wires the layers with main.c's own wire() and
 * provide_state(), so a subscription, handler or ops entry added there
 * is fuzzed without a change here.
 */
#include <string.h>

#include "wrap.h"

int rackd_main(int argc, char **argv);

#define main rackd_main
#include "../../../rackd/main.c"
#undef main

void fz_wire(struct rackd *d)
{
	static struct channel *channel;

	/* main.c's state is static, zero once per process: zeroed again for
	 * every input, the channel's before wire() registers its handlers
	 * anew (a type registered twice is fatal). */
	if (channel)
		memset(channel, 0, sizeof(*channel));
	provide_state(d);
	memset(d->live, 0, sizeof(*d->live));
	memset(d->reconnect, 0, sizeof(*d->reconnect));
	memset(d->splice, 0, sizeof(*d->splice));
	memset(d->local, 0, sizeof(*d->local));
	memset(d->state, 0, sizeof(*d->state));
	memset(d->migrate, 0, sizeof(*d->migrate));
	memset(d->adopt, 0, sizeof(*d->adopt));
	memset(d->rstguard, 0, sizeof(*d->rstguard));
	memset(d->hosts_file, 0, sizeof(*d->hosts_file));
	wire(d);
	channel = d->channel;
}
