/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared by the libFuzzer targets. Each target #includes the .c files it
 * tests (the fuzz rule links only the pkg-config libraries), so helpers
 * live here as macros and static functions.
 */
#ifndef RACKS_FUZZ_H
#define RACKS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the code under test must keep: abort so libFuzzer reports
 * the input. */
#define INVARIANT(cond)                                                  \
	do {                                                             \
		if (!(cond)) {                                           \
			fprintf(stderr, "invariant failed: %s\n", #cond); \
			abort();                                         \
		}                                                        \
	} while (0)

#endif
