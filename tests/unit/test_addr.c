// SPDX-License-Identifier: GPL-2.0-only
/*
 * common/addr.c: prefix parsing and matching, text forms of addresses,
 * endpoints and prefixes for IPv4 and IPv6.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"
#include "unit.h"

static struct prefix mkprefix(const char *s)
{
	struct prefix p;

	if (!CHECK_EQ_INT(prefix_parse(s, &p), 0))
		fprintf(stderr, "  prefix \"%s\"\n", s);
	return p;
}

TEST(prefix_parse_good)
{
	static const struct {
		const char *in, *out;
		int family;
		unsigned len;
	} cases[] = {
		{ "10.0.0.0/8", "10.0.0.0/8", AF_INET, 8 },
		{ "192.0.2.1", "192.0.2.1/32", AF_INET, 32 },
		{ "192.0.2.1/32", "192.0.2.1/32", AF_INET, 32 },
		{ "0.0.0.0/0", "0.0.0.0/0", AF_INET, 0 },
		{ "172.16.0.0/12", "172.16.0.0/12", AF_INET, 12 },
		{ "10.0.0.0/08", "10.0.0.0/8", AF_INET, 8 },
		{ "fd00::/8", "fd00::/8", AF_INET6, 8 },
		{ "fd00::1", "fd00::1/128", AF_INET6, 128 },
		{ "::/0", "::/0", AF_INET6, 0 },
		{ "2001:DB8::/32", "2001:db8::/32", AF_INET6, 32 },
		{ "::ffff:192.0.2.0/120", "::ffff:192.0.2.0/120", AF_INET6, 120 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct prefix p = mkprefix(cases[i].in);
		char buf[PREFIX_STRLEN];

		CHECK_EQ_INT(p.addr.family, cases[i].family);
		CHECK_EQ_INT(p.len, cases[i].len);
		CHECK_EQ_STR(prefix_format(&p, buf, sizeof(buf)), cases[i].out);
	}
}

TEST(prefix_parse_bad)
{
	static const char *const bad[] = {
		"", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/8x",
		"10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/ 8", "10.0.0.0 /8",
		"10.0.0.0/8/8", "10.1.2.3/8", "10.0.0.1/31", "fd00::1/64",
		"fd00::/129", "fd00::/99999999999999999999", "garbage", "10.0.0",
		"[fd00::1]", "fd00::1%eth0",
		"1111:2222:3333:4444:5555:6666:7777:8888:9999:0000/64",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct prefix p;

		if (!CHECK(prefix_parse(bad[i], &p) != 0))
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
	}
}

TEST(prefix_contains_cases)
{
	static const struct {
		const char *prefix, *addr;
		bool in;
	} cases[] = {
		{ "10.0.0.0/8", "10.255.1.2", true },
		{ "10.0.0.0/8", "11.0.0.0", false },
		{ "10.0.0.0/8", "9.255.255.255", false },
		{ "172.16.0.0/12", "172.31.255.255", true },
		{ "172.16.0.0/12", "172.32.0.0", false },
		{ "172.16.0.0/12", "172.15.0.1", false },
		{ "192.0.2.1", "192.0.2.1", true },
		{ "192.0.2.1", "192.0.2.2", false },
		{ "0.0.0.0/0", "203.0.113.9", true },
		{ "0.0.0.0/0", "::1", false },
		{ "fd00::/8", "fd12:3456::1", true },
		{ "fd00::/8", "fe80::1", false },
		{ "fd00::/8", "253.0.0.0", false },
		{ "2001:db8::/33", "2001:db8:7fff::1", true },
		{ "2001:db8::/33", "2001:db8:8000::", false },
		{ "::/0", "::", true },
		{ "fd00::1", "fd00::1", true },
		{ "fd00::1", "fd00::2", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct prefix p = mkprefix(cases[i].prefix);
		struct addr a = unit_addr(cases[i].addr);

		if (!CHECK_EQ_INT(prefix_contains(&p, &a), cases[i].in))
			fprintf(stderr, "  %s in %s\n", cases[i].addr,
				cases[i].prefix);
	}
}

TEST(endpoint_format_cases)
{
	static const struct {
		const char *addr;
		uint16_t port;
		const char *want;
	} cases[] = {
		{ "192.0.2.1", 443, "192.0.2.1:443" },
		{ "0.0.0.0", 0, "0.0.0.0:0" },
		{ "fd00::1", 80, "[fd00::1]:80" },
		{ "::", 65535, "[::]:65535" },
		{ "2001:db8:1:2:3:4:5:6", 8080, "[2001:db8:1:2:3:4:5:6]:8080" },
	};
	char buf[ENDPOINT_STRLEN];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct endpoint e = { unit_addr(cases[i].addr), cases[i].port };

		CHECK_EQ_STR(endpoint_format(&e, buf, sizeof(buf)),
			     cases[i].want);
	}

	/* The longest form fits ENDPOINT_STRLEN; a short buffer truncates. */
	struct endpoint e = {
		unit_addr("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"), 65535
	};

	endpoint_format(&e, buf, sizeof(buf));
	CHECK(strlen(buf) < sizeof(buf));
	CHECK(buf[strlen(buf) - 1] == '5' && buf[0] == '[');
	e = (struct endpoint){ unit_addr("192.0.2.1"), 443 };
	CHECK_EQ_STR(endpoint_format(&e, buf, 8), "192.0.2");

	struct addr bogus = { .family = 99 };

	CHECK_EQ_STR(addr_format(&bogus, buf, sizeof(buf)), "?");
}

TEST(equality)
{
	struct addr a = unit_addr("192.0.2.1"), b = unit_addr("192.0.2.1");
	struct addr c = unit_addr("::c000:201");	/* 192.0.2.1 at its end */

	b.bytes[8] = 0x55;			/* beyond a v4 address */
	CHECK(addr_equal(&a, &b));
	CHECK(!addr_equal(&a, &c));
	c = a;
	c.family = AF_INET6;
	CHECK(!addr_equal(&a, &c));
	CHECK_EQ_INT(addr_len(&a), 4);
	CHECK_EQ_INT(addr_len(&c), 16);

	struct endpoint e1 = { a, 80 }, e2 = { b, 80 }, e3 = { a, 81 };

	CHECK(endpoint_equal(&e1, &e2));
	CHECK(!endpoint_equal(&e1, &e3));
}

TEST(endpoint_parse_cases)
{
	static const struct {
		const char *in;
		int ret;
		const char *back;	/* endpoint_format of the result */
		bool has_port;
	} cases[] = {
		{ "10.0.0.1", 0, "10.0.0.1:0", false },
		{ "10.0.0.1:8080", 0, "10.0.0.1:8080", true },
		{ "fd00::1", 0, "[fd00::1]:0", false },
		{ "[fd00::1]:22", 0, "[fd00::1]:22", true },
		{ "[fd00::1]", 0, "[fd00::1]:0", false },
		{ "10.0.0.1:0", -EINVAL, NULL, false },
		{ "10.0.0.1:65536", -EINVAL, NULL, false },
		{ "10.0.0.1:", -EINVAL, NULL, false },
		{ "10.0.0.1:+5", -EINVAL, NULL, false },
		{ "[10.0.0.1]:5", -EINVAL, NULL, false },
		{ "[fd00::1]x", -EINVAL, NULL, false },
		{ "[fd00::1", -EINVAL, NULL, false },
		{ "host:22", -EINVAL, NULL, false },
		{ "", -EINVAL, NULL, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct endpoint e;
		char buf[ENDPOINT_STRLEN];
		bool has_port;
		int ret = endpoint_parse(cases[i].in, &e, &has_port);

		if (!CHECK_EQ_INT(ret, cases[i].ret) || ret)
			continue;
		CHECK_EQ_STR(endpoint_format(&e, buf, sizeof(buf)),
			     cases[i].back);
		CHECK_EQ_INT(has_port, cases[i].has_port);
	}
}

static const struct unit_test tests[] = {
	UNIT(prefix_parse_good),
	UNIT(prefix_parse_bad),
	UNIT(prefix_contains_cases),
	UNIT(endpoint_format_cases),
	UNIT(equality),
	UNIT(endpoint_parse_cases),
};

UNIT_MAIN("addr", tests)

