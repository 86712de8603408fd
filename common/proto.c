// SPDX-License-Identifier: GPL-2.0-only
#include "proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

size_t proto_message_len(const char *buf, size_t len)
{
	if (len >= 1 && buf[0] == '\n')
		return 1;
	for (size_t i = 1; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\n')
			return i + 1;
	return 0;
}

int proto_parse(char *buf, size_t len, struct proto_msg *msg)
{
	size_t cap = 16;
	char *p = buf, *end = buf + len;

	msg->n = 0;
	msg->kv = malloc(cap * sizeof(*msg->kv));
	if (!msg->kv)
		return -ENOMEM;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *eq;

		/* Every line ends in '\n' (also the terminating blank one):
		 * a line without it is incomplete, and there would be no byte
		 * of ours to put its terminating NUL in. */
		if (!nl) {
			proto_msg_free(msg);
			return -EINVAL;
		}
		*nl = '\0';
		if (*p == '\0')
			break;		/* the blank line ends the message */
		eq = strchr(p, '=');
		if (!eq || eq == p) {
			proto_msg_free(msg);
			return -EINVAL;
		}
		*eq = '\0';
		if (msg->n == cap) {
			struct proto_kv *kv = realloc(msg->kv,
						      2 * cap * sizeof(*kv));
			if (!kv) {
				proto_msg_free(msg);
				return -ENOMEM;
			}
			msg->kv = kv;
			cap *= 2;
		}
		msg->kv[msg->n++] = (struct proto_kv){ p, eq + 1 };
		p = nl + 1;
	}
	return 0;
}

void proto_msg_free(struct proto_msg *msg)
{
	free(msg->kv);
	msg->kv = NULL;
	msg->n = 0;
}

const char *proto_get(const struct proto_msg *msg, const char *key)
{
	for (size_t i = 0; i < msg->n; i++)
		if (strcmp(msg->kv[i].key, key) == 0)
			return msg->kv[i].value;
	return NULL;
}

void proto_put(FILE *f, const char *key, const char *fmt, ...)
{
	char value[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	for (char *c = value; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	fprintf(f, "%s=%s\n", key, value);
}
