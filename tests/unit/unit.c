// SPDX-License-Identifier: GPL-2.0-only
#include "unit.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static unsigned long unit_passed, unit_failed;
static const char *unit_current = "?";

int unit_run(const struct unit_test *tests, size_t n, const char *suite)
{
	for (size_t i = 0; i < n; i++) {
		unit_current = tests[i].name;
		tests[i].fn();
	}
	printf("%s: %lu passed, %lu failed\n", suite, unit_passed, unit_failed);
	fflush(stdout);
	return unit_failed ? 1 : 0;
}

static bool unit_result(bool ok, const char *file, int line)
{
	if (ok) {
		unit_passed++;
		return true;
	}
	unit_failed++;
	fprintf(stderr, "%s:%d: in %s: ", file, line, unit_current);
	return false;
}

bool unit_check(bool ok, const char *file, int line, const char *expr)
{
	if (!unit_result(ok, file, line))
		fprintf(stderr, "CHECK(%s) failed\n", expr);
	return ok;
}

bool unit_check_int(long long a, long long b, const char *file, int line,
		    const char *ea, const char *eb)
{
	bool ok = a == b;

	if (!unit_result(ok, file, line))
		fprintf(stderr, "%s == %s failed: %lld (0x%llx) != %lld (0x%llx)\n",
			ea, eb, a, (unsigned long long)a, b,
			(unsigned long long)b);
	return ok;
}

bool unit_check_str(const char *a, const char *b, const char *file, int line,
		    const char *ea, const char *eb)
{
	bool ok = a && b ? strcmp(a, b) == 0 : a == b;

	if (!unit_result(ok, file, line))
		fprintf(stderr, "%s == %s failed: \"%s\" != \"%s\"\n", ea, eb,
			a ? a : "(null)", b ? b : "(null)");
	return ok;
}

static void unit_hex(const char *label, const unsigned char *p, size_t len)
{
	fprintf(stderr, "  %s:", label);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, "\n");
}

bool unit_check_mem(const void *a, const void *b, size_t len,
		    const char *file, int line, const char *ea, const char *eb)
{
	bool ok = memcmp(a, b, len) == 0;

	if (!unit_result(ok, file, line)) {
		fprintf(stderr, "%s == %s failed (%zu bytes)\n", ea, eb, len);
		unit_hex(ea, a, len);
		unit_hex(eb, b, len);
	}
	return ok;
}

uint32_t unit_rand(void)
{
	static uint32_t state = 0x2545f491;

	state ^= state << 13;
	state ^= state >> 17;
	state ^= state << 5;
	return state;
}

struct addr unit_addr(const char *text)
{
	struct addr a = { .family = strchr(text, ':') ? AF_INET6 : AF_INET };

	if (!unit_check(inet_pton(a.family, text, a.bytes) == 1, __FILE__,
			__LINE__, "valid test address"))
		fprintf(stderr, "  \"%s\"\n", text);
	return a;
}
