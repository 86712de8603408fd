/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What rackctl's subcommands share (rackctl.c): the options, talking to
 * rackd, and printing its replies. The subcommands of the host's identity
 * and the known hosts are in hosts.c.
 */
#ifndef RACKS_RACKCTL_H
#define RACKS_RACKCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctlclient.h"
#include "proto.h"

struct ctx {
	const char *sock_path;
	bool json;
	bool pin;		/* --pin: hosts add, keyscan --add */
	bool add;		/* --add: keyscan */
};

/* "rackctl: MESSAGE" on stderr, exit 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Send REQUEST (lines without the final blank line) and read the reply;
 * dies with rackd's message when it refuses. */
void transact(struct ctx *ctx, const char *request, struct ctlclient_reply *r);
void reply_free(struct ctlclient_reply *r);

bool is_number(const char *s);
void json_string(const char *s);
/* Print keys [from, to) of the reply as one JSON object. */
void json_object(const struct proto_msg *m, size_t from, size_t to);
/* A flat reply: "key value" lines, or one JSON object. */
void print_object(const struct ctx *ctx, const struct proto_msg *m);
/* Index of the next "record" line at or after I, or m->n. */
size_t next_record(const struct proto_msg *m, size_t i);
/* The value of KEY among keys [from, to) of M, or "-". */
const char *field(const struct proto_msg *m, size_t from, size_t to,
		  const char *key);
/* Split TARGET ("1.2.3.4:80", "[fd00::1]:80", "name:80") into HOST (of
 * size LEN) and PORT; false if it is not of that form. Bare IPv6
 * addresses are refused: in "fd00::1:80" the port is a guess. */
bool parse_target(const char *target, char *host, size_t len,
		  uint16_t *port);

/* hosts.c */
int run_host(struct ctx *ctx, int argc, char **argv);
int run_hosts(struct ctx *ctx, int argc, char **argv);
int run_keyscan(struct ctx *ctx, int argc, char **argv);

#endif
