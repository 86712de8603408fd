/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control protocol between rackctl and rackd, modelled on
 * WireGuard's UAPI: a message is "key=value" lines ended by a blank line.
 *
 *   request:  cmd=NAME, optional version=N and arguments
 *   reply:    key=value lines; "record=KIND" starts a new record (one
 *             connection in a list); last comes "errno=N" (0 on success,
 *             else preceded by "error=MESSAGE"), then the blank line.
 */
#ifndef RACKS_PROTO_H
#define RACKS_PROTO_H

#include <stddef.h>
#include <stdio.h>

#define PROTO_VERSION 1
#define PROTO_MAX_MESSAGE (4 * 1024 * 1024)

struct proto_kv {
	const char *key;
	const char *value;
};

struct proto_msg {
	struct proto_kv *kv;
	size_t n;
};

/* Length of the first complete message in BUF (through its blank line),
 * or 0 if the message is not complete yet. */
size_t proto_message_len(const char *buf, size_t len);
/* Parse one message of LEN bytes in place (BUF is modified and must
 * outlive MSG). Returns 0, or -EINVAL for a line without '=' or a last
 * line without its '\n'. */
int proto_parse(char *buf, size_t len, struct proto_msg *msg);
void proto_msg_free(struct proto_msg *msg);
const char *proto_get(const struct proto_msg *msg, const char *key);

/* Write "key=value\n", replacing any newline in VALUE by a space. */
void proto_put(FILE *f, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
