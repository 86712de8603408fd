// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control protocol parser on arbitrary bytes: framing with
 * proto_message_len() and parsing with proto_parse() the way rackd and
 * rackctl do, then whole inputs, then a proto_put() round trip.
 */
#include "../../common/proto.c"
#include "fuzz.h"

#include <stdbool.h>
#include <stdint.h>

static void check_msg(const struct proto_msg *msg, const char *buf,
		      size_t len)
{
	for (size_t i = 0; i < msg->n; i++) {
		const char *k = msg->kv[i].key, *v = msg->kv[i].value;

		INVARIANT(k >= buf && k < buf + len);
		INVARIANT(v > k && v <= buf + len);
		INVARIANT(k[0] != '\0');
		INVARIANT(!strchr(k, '=') && !strchr(k, '\n'));
		INVARIANT(!strchr(v, '\n'));
		INVARIANT(proto_get(msg, k) != NULL);
	}
}

/* Writing the pairs back with proto_put gives a message that parses to
 * the same pairs (values are short and have no '\r' to rewrite). */
static void check_put_round_trip(const struct proto_msg *msg)
{
	char *text = NULL;
	size_t len = 0;
	struct proto_msg back;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	for (size_t i = 0; i < msg->n; i++) {
		const char *v = msg->kv[i].value;

		if (strlen(v) < 1000 && !strchr(v, '\r'))
			proto_put(f, msg->kv[i].key, "%s", v);
	}
	fputc('\n', f);
	fclose(f);
	INVARIANT(proto_message_len(text, len) == len);
	INVARIANT(proto_parse(text, len, &back) == 0);
	for (size_t i = 0, j = 0; i < msg->n; i++) {
		const char *v = msg->kv[i].value;

		if (strlen(v) >= 1000 || strchr(v, '\r'))
			continue;
		INVARIANT(j < back.n);
		INVARIANT(strcmp(back.kv[j].key, msg->kv[i].key) == 0);
		INVARIANT(strcmp(back.kv[j].value, v) == 0);
		j++;
	}
	proto_msg_free(&back);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg msg;
	size_t mlen = proto_message_len((const char *)data, size);

	INVARIANT(mlen <= size);
	if (mlen) {
		/* As the callers do: exactly the first complete message. */
		char *buf = malloc(mlen);

		INVARIANT(data[mlen - 1] == '\n');
		memcpy(buf, data, mlen);
		if (proto_parse(buf, mlen, &msg) == 0) {
			check_msg(&msg, buf, mlen);
			check_put_round_trip(&msg);
			proto_msg_free(&msg);
		}
		free(buf);
	}

	/* The whole input, complete or not, in a buffer of exactly its size:
	 * ASan catches any write past it. */
	char *all = malloc(size ? size : 1);

	memcpy(all, data, size);
	if (proto_parse(all, size, &msg) == 0) {
		check_msg(&msg, all, size);
		proto_msg_free(&msg);
	}
	free(all);
	return 0;
}
