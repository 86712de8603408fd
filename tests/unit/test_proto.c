// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control protocol: message framing, in-place parsing, lookup and
 * proto_put's escaping of line breaks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "unit.h"

/* Parse a NUL-terminated TEXT (a writable copy) into MSG; the copy is
 * returned for the caller to free after MSG. */
static char *parse(const char *text, struct proto_msg *msg, int *ret)
{
	char *buf = strdup(text);

	if (!buf)
		abort();
	*ret = proto_parse(buf, strlen(buf), msg);
	return buf;
}

static void check_kv(const struct proto_msg *msg, size_t i, const char *key,
		     const char *value)
{
	if (!CHECK(i < msg->n))
		return;
	CHECK_EQ_STR(msg->kv[i].key, key);
	CHECK_EQ_STR(msg->kv[i].value, value);
}

/* What proto_put writes for one call. */
static char *put_text(const char *key, const char *value)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	proto_put(f, key, "%s", value);
	fclose(f);
	return text;
}

TEST(message_len)
{
	static const struct {
		const char *buf;
		size_t want;
	} cases[] = {
		{ "", 0 },
		{ "\n", 1 },
		{ "\n\n", 1 },
		{ "a", 0 },
		{ "a=1\n", 0 },
		{ "a=1\n\n", 5 },
		{ "a=1\nb=2\n", 0 },
		{ "a=1\nb=2\n\n", 9 },
		{ "a=1\n\nb=2\n\n", 5 },
		{ "cmd=list\nversion=1\n\nleftover", 20 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!CHECK_EQ_INT(proto_message_len(cases[i].buf,
						    strlen(cases[i].buf)),
				  cases[i].want))
			fprintf(stderr, "  case %zu\n", i);
	/* Only LEN bytes are looked at. */
	CHECK_EQ_INT(proto_message_len("a=1\n\n", 4), 0);
	CHECK_EQ_INT(proto_message_len("\n", 0), 0);
}

TEST(parse_in_place)
{
	struct proto_msg msg;
	int ret;
	char *buf = parse("cmd=list\nversion=1\nfilter=a=b\nempty=\n\n", &msg,
			  &ret);

	if (CHECK_EQ_INT(ret, 0) && CHECK_EQ_INT(msg.n, 4)) {
		check_kv(&msg, 0, "cmd", "list");
		check_kv(&msg, 1, "version", "1");
		check_kv(&msg, 2, "filter", "a=b");	/* first '=' splits */
		check_kv(&msg, 3, "empty", "");
		/* In place: the strings point into the buffer. */
		CHECK(msg.kv[0].key == buf);
		CHECK(msg.kv[0].value == buf + 4);
		CHECK(msg.kv[1].key == buf + 9);
	}
	proto_msg_free(&msg);
	CHECK(msg.kv == NULL);
	CHECK_EQ_INT(msg.n, 0);
	proto_msg_free(&msg);		/* twice is harmless */
	free(buf);
}

TEST(parse_stops_at_blank_line)
{
	struct proto_msg msg;
	int ret;
	char *buf = parse("a=1\n\nb=2\n\n", &msg, &ret);

	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(msg.n, 1);
	check_kv(&msg, 0, "a", "1");
	proto_msg_free(&msg);
	free(buf);

	buf = parse("\n", &msg, &ret);
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(msg.n, 0);
	proto_msg_free(&msg);
	free(buf);
}

TEST(parse_many_keys)
{
	char text[2048] = "", line[32];
	struct proto_msg msg;
	int ret;

	for (int i = 0; i < 100; i++) {
		snprintf(line, sizeof(line), "k%d=v%d\n", i, i * i);
		strcat(text, line);
	}
	strcat(text, "\n");
	char *buf = parse(text, &msg, &ret);

	if (CHECK_EQ_INT(ret, 0) && CHECK_EQ_INT(msg.n, 100)) {
		check_kv(&msg, 0, "k0", "v0");
		check_kv(&msg, 16, "k16", "v256");	/* first realloc */
		check_kv(&msg, 99, "k99", "v9801");
		CHECK_EQ_STR(proto_get(&msg, "k57"), "v3249");
	}
	proto_msg_free(&msg);
	free(buf);
}

TEST(parse_rejects)
{
	static const char *const bad[] = {
		"cmd=list\nbogus\n\n",
		"bogus\n\n",
		"=value\n\n",
		"cmd=list\n=x\n\n",
		" \n\n",
		"cmd=list",		/* last line without its newline */
		"cmd=list\nid=4",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct proto_msg msg = { (struct proto_kv *)1, 99 };
		int ret;
		char *buf = parse(bad[i], &msg, &ret);

		if (!CHECK_EQ_INT(ret, -EINVAL))
			fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
		CHECK(msg.kv == NULL);
		CHECK_EQ_INT(msg.n, 0);
		free(buf);
	}
}

TEST(get)
{
	struct proto_msg msg;
	int ret;
	char *buf = parse("cmd=show\nkey=first\nkey=second\nKEY=upper\n\n",
			  &msg, &ret);

	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_STR(proto_get(&msg, "cmd"), "show");
	CHECK_EQ_STR(proto_get(&msg, "key"), "first");
	CHECK_EQ_STR(proto_get(&msg, "KEY"), "upper");
	CHECK(proto_get(&msg, "missing") == NULL);
	CHECK(proto_get(&msg, "") == NULL);
	CHECK(proto_get(&msg, "cm") == NULL);
	proto_msg_free(&msg);
	CHECK(proto_get(&msg, "cmd") == NULL);
	free(buf);
}

TEST(put)
{
	static const struct {
		const char *key, *value, *want;
	} cases[] = {
		{ "errno", "0", "errno=0\n" },
		{ "error", "line1\nline2", "error=line1 line2\n" },
		{ "error", "a\r\nb\n", "error=a  b \n" },
		{ "empty", "", "empty=\n" },
		{ "eq", "a=b", "eq=a=b\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = put_text(cases[i].key, cases[i].value);

		CHECK_EQ_STR(text, cases[i].want);
		free(text);
	}

	/* Formatting, and a value longer than the internal buffer. */
	char *text = NULL, big[3000];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!CHECK(f != NULL))
		return;
	proto_put(f, "n", "%d-%s", 42, "x");
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	proto_put(f, "big", "%s", big);
	fclose(f);
	CHECK(strncmp(text, "n=42-x\nbig=vvv", 14) == 0);
	CHECK_EQ_INT(len, strlen("n=42-x\n") + strlen("big=") + 1023 + 1);
	CHECK(text[len - 1] == '\n');
	free(text);
}

TEST(put_then_parse)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct proto_msg msg;

	if (!CHECK(f != NULL))
		return;
	proto_put(f, "cmd", "%s", "list");
	proto_put(f, "error", "%s", "multi\nline\n\nmessage");
	fputc('\n', f);
	fclose(f);
	CHECK_EQ_INT(proto_message_len(text, len), len);
	if (CHECK_EQ_INT(proto_parse(text, len, &msg), 0)) {
		CHECK_EQ_INT(msg.n, 2);
		CHECK_EQ_STR(proto_get(&msg, "error"), "multi line  message");
	}
	proto_msg_free(&msg);
	free(text);
}

static const struct unit_test tests[] = {
	UNIT(message_len),
	UNIT(parse_in_place),
	UNIT(parse_stops_at_blank_line),
	UNIT(parse_many_keys),
	UNIT(parse_rejects),
	UNIT(get),
	UNIT(put),
	UNIT(put_then_parse),
};

UNIT_MAIN("proto", tests)
