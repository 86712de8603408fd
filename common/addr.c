// SPDX-License-Identifier: GPL-2.0-only
#include "addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

size_t addr_len(const struct addr *a)
{
	return a->family == AF_INET ? 4 : 16;
}

bool addr_equal(const struct addr *a, const struct addr *b)
{
	return a->family == b->family &&
	       memcmp(a->bytes, b->bytes, addr_len(a)) == 0;
}

bool endpoint_equal(const struct endpoint *a, const struct endpoint *b)
{
	return a->port == b->port && addr_equal(&a->addr, &b->addr);
}

const char *addr_format(const struct addr *a, char *buf, size_t size)
{
	if (!inet_ntop(a->family, a->bytes, buf, (socklen_t)size))
		snprintf(buf, size, "?");
	return buf;
}

const char *endpoint_format(const struct endpoint *e, char *buf, size_t size)
{
	char a[ADDR_STRLEN];

	addr_format(&e->addr, a, sizeof(a));
	if (e->addr.family == AF_INET6)
		snprintf(buf, size, "[%s]:%u", a, e->port);
	else
		snprintf(buf, size, "%s:%u", a, e->port);
	return buf;
}

const char *prefix_format(const struct prefix *p, char *buf, size_t size)
{
	char a[ADDR_STRLEN];

	snprintf(buf, size, "%s/%u", addr_format(&p->addr, a, sizeof(a)),
		 p->len);
	return buf;
}

int prefix_parse(const char *s, struct prefix *p)
{
	char tmp[PREFIX_STRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);

	if (alen == 0 || alen >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, alen);
	tmp[alen] = '\0';

	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, tmp, p->addr.bytes) == 1)
		p->addr.family = AF_INET;
	else if (inet_pton(AF_INET6, tmp, p->addr.bytes) == 1)
		p->addr.family = AF_INET6;
	else
		return -EINVAL;

	unsigned max = p->addr.family == AF_INET ? 32 : 128;
	p->len = (uint8_t)max;
	if (slash) {
		char *end;
		unsigned long len;

		if (slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (errno || *end || len > max)
			return -EINVAL;
		p->len = (uint8_t)len;
	}
	/* Host bits must be zero: "10.1.2.3/8" is almost always a typo. */
	for (unsigned bit = p->len; bit < max; bit++)
		if (p->addr.bytes[bit / 8] & (0x80 >> (bit % 8)))
			return -EINVAL;
	return 0;
}

bool prefix_contains(const struct prefix *p, const struct addr *a)
{
	if (p->addr.family != a->family)
		return false;
	unsigned full = p->len / 8, rest = p->len % 8;

	if (memcmp(p->addr.bytes, a->bytes, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));

	return (p->addr.bytes[full] & mask) == (a->bytes[full] & mask);
}

static int addr_parse(const char *s, size_t n, struct addr *a)
{
	char tmp[ADDR_STRLEN];

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, tmp, a->bytes) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, tmp, a->bytes) == 1)
		a->family = AF_INET6;
	else
		return -EINVAL;
	return 0;
}

int endpoint_parse(const char *s, struct endpoint *e, bool *has_port)
{
	const char *port = NULL, *colon = strrchr(s, ':');
	size_t alen;
	int ret;

	*has_port = false;
	e->port = 0;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || (close[1] && close[1] != ':'))
			return -EINVAL;
		alen = (size_t)(close - s - 1);
		ret = addr_parse(s + 1, alen, &e->addr);
		if (ret || e->addr.family != AF_INET6)
			return -EINVAL;
		port = close[1] ? close + 2 : NULL;
	} else if (colon && strchr(s, ':') == colon) {
		/* One colon: IPv4 with a port. A bare IPv6 has several. */
		ret = addr_parse(s, (size_t)(colon - s), &e->addr);
		if (ret || e->addr.family != AF_INET)
			return -EINVAL;
		port = colon + 1;
	} else {
		ret = addr_parse(s, strlen(s), &e->addr);
		if (ret)
			return ret;
	}
	if (port) {
		char *end;
		unsigned long v;

		if (*port < '0' || *port > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(port, &end, 10);
		if (errno || *end || v == 0 || v > 65535)
			return -EINVAL;
		e->port = (uint16_t)v;
		*has_port = true;
	}
	return 0;
}
