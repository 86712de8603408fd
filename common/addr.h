/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Addresses and endpoints shared by rackd and rackctl: one representation
 * for IPv4 and IPv6, and the "addr:port" / "[addr]:port" text forms used
 * in logs, the control protocol and JSON.
 */
#ifndef RACKS_ADDR_H
#define RACKS_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct addr {
	uint8_t family;			/* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t bytes[16];	/* v4 uses the first 4 bytes */
	};
};

struct endpoint {
	struct addr addr;
	uint16_t port;			/* host byte order */
};

struct prefix {
	struct addr addr;
	uint8_t len;			/* prefix length in bits */
};

/* Longest text forms, including the terminating NUL. */
#define ADDR_STRLEN INET6_ADDRSTRLEN
#define ENDPOINT_STRLEN (INET6_ADDRSTRLEN + 8)
#define PREFIX_STRLEN (INET6_ADDRSTRLEN + 4)

size_t addr_len(const struct addr *a);
bool addr_equal(const struct addr *a, const struct addr *b);
bool endpoint_equal(const struct endpoint *a, const struct endpoint *b);

const char *addr_format(const struct addr *a, char *buf, size_t size);
const char *endpoint_format(const struct endpoint *e, char *buf, size_t size);
const char *prefix_format(const struct prefix *p, char *buf, size_t size);

/* Parse "10.0.0.0/8", "fd00::/8" or a bare address (full-length prefix). */
int prefix_parse(const char *s, struct prefix *p);
/* Parse "ADDR", "ADDR:PORT" or "[ADDR6]:PORT" (port 1-65535). */
int endpoint_parse(const char *s, struct endpoint *e, bool *has_port);
bool prefix_contains(const struct prefix *p, const struct addr *a);

#endif
