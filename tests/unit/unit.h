/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A tiny unit-test framework. Each test file defines its test functions
 * with TEST(name), lists them in an array of UNIT(name) entries and ends
 * with UNIT_MAIN("suite", tests). Checks are expressions that return
 * whether they passed, so a test can stop early:
 *
 *	if (!CHECK_EQ_INT(err, PACKET_OK))
 *		return;
 *
 * A failed check prints "file:line: expression" (and both values) to
 * stderr; at exit the binary prints "<suite>: N passed, N failed" (counted
 * in checks) and exits non-zero if any check failed.
 */
#ifndef RACKS_UNIT_H
#define RACKS_UNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

struct unit_test {
	const char *name;
	void (*fn)(void);
};

#define TEST(name) static void name(void)
#define UNIT(name) { #name, name }
#define UNIT_MAIN(suite, tests)                                          \
	int main(void)                                                   \
	{                                                                \
		return unit_run(tests, sizeof(tests) / sizeof(tests[0]), \
				suite);                                  \
	}

int unit_run(const struct unit_test *tests, size_t n, const char *suite);

bool unit_check(bool ok, const char *file, int line, const char *expr);
bool unit_check_int(long long a, long long b, const char *file, int line,
		    const char *ea, const char *eb);
bool unit_check_str(const char *a, const char *b, const char *file, int line,
		    const char *ea, const char *eb);
bool unit_check_mem(const void *a, const void *b, size_t len,
		    const char *file, int line, const char *ea, const char *eb);

/* Deterministic pseudo-random numbers (xorshift32, fixed seed). */
uint32_t unit_rand(void);
/* An IPv4 or IPv6 address from its text form (a failed check if bad). */
struct addr unit_addr(const char *text);

#define CHECK(cond) unit_check(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ_INT(a, b) \
	unit_check_int((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
#define CHECK_EQ_STR(a, b) unit_check_str(a, b, __FILE__, __LINE__, #a, #b)
#define CHECK_EQ_MEM(a, b, len) \
	unit_check_mem(a, b, len, __FILE__, __LINE__, #a, #b)

#endif
