// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bytes a dumped unix socket had not read, from CRIU's images
 * (checkpoint/state/skqueue.c): images built here as CRIU writes them
 * (magics, length-prefixed protobuf entries, packet data after its
 * entry); the socket found by inode in files.img, only its packets
 * taken, in order; a truncated image refused.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "skqueue.h"
#include "unit.h"

struct img {
	unsigned char b[1024];
	size_t n;
};

static void put_u32(struct img *m, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		m->b[m->n++] = (unsigned char)(v >> (8 * i));
}

static void put_varint(unsigned char *b, size_t *n, uint64_t v)
{
	do {
		b[(*n)++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void start(struct img *m, uint32_t magic)
{
	m->n = 0;
	put_u32(m, 0x54564319u);
	put_u32(m, magic);
}

/* A file_entry of TYPE; for a unix socket (5) its usk with ID and INO
 * (and a name field, skipped), after an inet field it must skip. */
static void file_entry(struct img *m, unsigned type, unsigned id,
		       unsigned long ino)
{
	unsigned char msg[128], usk[64];
	size_t n = 0, u = 0;

	put_varint(usk, &u, 1 << 3);		/* id */
	put_varint(usk, &u, id);
	put_varint(usk, &u, 2 << 3);		/* ino */
	put_varint(usk, &u, ino);
	put_varint(usk, &u, 11 << 3 | 2);	/* name: empty bytes */
	put_varint(usk, &u, 0);
	put_varint(msg, &n, 1 << 3);		/* type */
	put_varint(msg, &n, type);
	put_varint(msg, &n, 2 << 3);		/* id */
	put_varint(msg, &n, id);
	put_varint(msg, &n, 4 << 3 | 2);	/* isk: 3 bytes, skipped */
	put_varint(msg, &n, 3);
	memcpy(msg + n, "\x08\x01\x10", 3);
	n += 3;
	if (type == 5) {
		put_varint(msg, &n, 16 << 3 | 2);
		put_varint(msg, &n, u);
		memcpy(msg + n, usk, u);
		n += u;
	}
	put_u32(m, (uint32_t)n);
	memcpy(m->b + m->n, msg, n);
	m->n += n;
}

static void packet(struct img *m, unsigned id_for, const char *data)
{
	unsigned char msg[32];
	size_t n = 0, len = strlen(data);

	put_varint(msg, &n, 1 << 3);
	put_varint(msg, &n, id_for);
	put_varint(msg, &n, 2 << 3);
	put_varint(msg, &n, len);
	put_u32(m, (uint32_t)n);
	memcpy(m->b + m->n, msg, n);
	m->n += n;
	memcpy(m->b + m->n, data, len);
	m->n += len;
}

static struct img files, queues;

static void build(void)
{
	start(&files, 0x56303138u);
	file_entry(&files, 1, 3, 0);		/* a regular file */
	file_entry(&files, 5, 7, 4242);		/* another socket */
	file_entry(&files, 5, 9, 300000);	/* ours: a 3-byte varint */
	start(&queues, 0x56264026u);
	packet(&queues, 9, "first ");
	packet(&queues, 7, "not ours ");
	packet(&queues, 9, "then this");
}

TEST(the_sockets_packets_in_order)
{
	char err[128], *data;
	size_t len;

	build();
	CHECK_EQ_INT(skqueue_parse(files.b, files.n, queues.b, queues.n,
				   300000, &data, &len, err, sizeof(err)), 0);
	CHECK_EQ_INT(len, strlen("first then this"));
	CHECK_EQ_MEM(data, "first then this", len);
	free(data);
	CHECK_EQ_INT(skqueue_parse(files.b, files.n, queues.b, queues.n,
				   4242, &data, &len, err, sizeof(err)), 0);
	CHECK_EQ_MEM(data, "not ours ", len);
	free(data);
}

TEST(nothing_queued)
{
	char err[128], *data;
	size_t len;

	build();
	/* No sk-queues.img: no socket had bytes to read. */
	CHECK_EQ_INT(skqueue_parse(files.b, files.n, NULL, 0, 300000, &data,
				   &len, err, sizeof(err)), 0);
	CHECK(!data && len == 0);
	/* A socket the images do not hold. */
	CHECK_EQ_INT(skqueue_parse(files.b, files.n, queues.b, queues.n, 5,
				   &data, &len, err, sizeof(err)), 0);
	CHECK(!data && len == 0);
}

TEST(malformed_images_refused)
{
	char err[128], *data;
	size_t len;

	build();
	CHECK_EQ_INT(skqueue_parse(files.b, files.n, queues.b, queues.n - 1,
				   300000, &data, &len, err, sizeof(err)),
		     -EINVAL);
	CHECK(!data && len == 0);
	CHECK_EQ_STR(err, "sk-queues.img does not parse");
	CHECK_EQ_INT(skqueue_parse(files.b, files.n - 2, queues.b, queues.n,
				   300000, &data, &len, err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_STR(err, "files.img does not parse");
	files.b[4] ^= 1;	/* the wrong magic */
	CHECK_EQ_INT(skqueue_parse(files.b, files.n, queues.b, queues.n,
				   300000, &data, &len, err, sizeof(err)),
		     -EINVAL);
}

static const struct unit_test tests[] = {
	UNIT(the_sockets_packets_in_order), UNIT(nothing_queued),
	UNIT(malformed_images_refused),
};

UNIT_MAIN("skqueue", tests)
