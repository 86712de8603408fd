// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd/io/inject.c for its segment builder, inject_build(): fake.c
 * builds every segment rackd sends with it, checks it and puts it on the
 * fuzzer's network. The functions that open raw sockets and send are
 * renamed out of the way (fake.c has its own).
 */
#include "inject.h"

int real_inject_open(struct inject **out, uint32_t mark,
		     uint32_t unspliced_mark);
void real_inject_close(struct inject *inj);
void real_inject_set_mark(struct inject *inj, uint32_t mark,
			  uint32_t unspliced_mark);
int real_inject_send(struct inject *inj, const struct inject_segment *seg);
int real_inject_unreachable(struct inject *inj, const struct endpoint *local,
			    const struct endpoint *remote, uint32_t seq);

#define inject_open real_inject_open
#define inject_close real_inject_close
#define inject_set_mark real_inject_set_mark
#define inject_send real_inject_send
#define inject_unreachable real_inject_unreachable
#include "../../../rackd/io/inject.c"
