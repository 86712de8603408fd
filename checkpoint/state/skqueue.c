// SPDX-License-Identifier: GPL-2.0-only
#include "skqueue.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "util.h"

/* criu/include/magic.h */
#define CRIU_COMMON_MAGIC 0x54564319u
#define CRIU_FILES_MAGIC 0x56303138u
#define CRIU_SK_QUEUES_MAGIC 0x56264026u

#define FD_TYPE_UNIXSK 5	/* images/fdinfo.proto, enum fd_types */
#define FILE_ENTRY_TYPE 1	/* file_entry.type */
#define FILE_ENTRY_USK 16	/* file_entry.usk: a unix_sk_entry */
#define USK_ID 1		/* unix_sk_entry.id */
#define USK_INO 2		/* unix_sk_entry.ino */
#define PACKET_ID_FOR 1		/* sk_packet_entry.id_for */
#define PACKET_LENGTH 2		/* sk_packet_entry.length */

/* A protobuf message or an image file, read from its start. */
struct cursor {
	const unsigned char *p, *end;
};

static bool get_u32le(struct cursor *c, uint32_t *v)
{
	if (c->end - c->p < 4)
		return false;
	*v = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8 |
	     (uint32_t)c->p[2] << 16 | (uint32_t)c->p[3] << 24;
	c->p += 4;
	return true;
}

static bool get_varint(struct cursor *c, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (c->p == c->end)
			return false;
		*v |= (uint64_t)(*c->p & 0x7f) << shift;
		if (!(*c->p++ & 0x80))
			return true;
	}
	return false;
}

/*
 * The next field of a message: its number, and a varint's value or a
 * length-delimited field's bytes (*sub); other wire types are skipped.
 * False at the end or on a malformed field (*bad).
 */
static bool next_field(struct cursor *c, unsigned *field, uint64_t *value,
		       struct cursor *sub, bool *bad)
{
	uint64_t key, len;

	*bad = false;
	if (c->p == c->end)
		return false;
	if (!get_varint(c, &key))
		goto bad;
	*field = (unsigned)(key >> 3);
	switch (key & 7) {
	case 0:
		if (!get_varint(c, value))
			goto bad;
		return true;
	case 1:
	case 5:
		len = (key & 7) == 1 ? 8 : 4;
		break;
	case 2:
		if (!get_varint(c, &len))
			goto bad;
		break;
	default:
		goto bad;
	}
	if ((uint64_t)(c->end - c->p) < len)
		goto bad;
	sub->p = c->p;
	sub->end = c->p + len;
	c->p += len;
	*value = 0;
	return true;
bad:
	*bad = true;
	return false;
}

/* Past an image file's two magics, the second of which must be MAGIC. */
static bool image_start(struct cursor *c, uint32_t magic)
{
	uint32_t first, second;

	return get_u32le(c, &first) && first == CRIU_COMMON_MAGIC &&
	       get_u32le(c, &second) && second == magic;
}

/* The next entry of an image: its message. */
static bool next_entry(struct cursor *c, struct cursor *msg, bool *bad)
{
	uint32_t len;

	*bad = false;
	if (c->p == c->end)
		return false;
	if (!get_u32le(c, &len) || (size_t)(c->end - c->p) < len) {
		*bad = true;
		return false;
	}
	msg->p = c->p;
	msg->end = c->p + len;
	c->p += len;
	return true;
}

/* The CRIU id of the unix socket of inode INO in files.img: 1 found, 0
 * not there, -1 malformed. */
static int unix_id(struct cursor img, unsigned long ino, uint32_t *id)
{
	struct cursor msg, f, usk;
	bool bad;

	if (!image_start(&img, CRIU_FILES_MAGIC))
		return -1;
	while (next_entry(&img, &msg, &bad)) {
		uint64_t v, type = 0, sk_id = 0, sk_ino = 0;
		unsigned field;
		bool have_usk = false;

		while (next_field(&msg, &field, &v, &f, &bad)) {
			if (field == FILE_ENTRY_TYPE)
				type = v;
			else if (field == FILE_ENTRY_USK) {
				usk = f;
				have_usk = true;
			}
		}
		if (bad)
			return -1;
		if (type != FD_TYPE_UNIXSK || !have_usk)
			continue;
		while (next_field(&usk, &field, &v, &f, &bad)) {
			if (field == USK_ID)
				sk_id = v;
			else if (field == USK_INO)
				sk_ino = v;
		}
		if (bad)
			return -1;
		if (sk_ino == ino) {
			*id = (uint32_t)sk_id;
			return 1;
		}
	}
	return bad ? -1 : 0;
}

int skqueue_parse(const unsigned char *files, size_t files_len,
		  const unsigned char *queues, size_t queues_len,
		  unsigned long ino, char **data, size_t *len, char *err,
		  size_t errlen)
{
	struct cursor img = { queues, queues + queues_len }, msg, f;
	uint32_t id;
	bool bad;
	int found;

	*data = NULL;
	*len = 0;
	found = unix_id((struct cursor){ files, files + files_len }, ino, &id);
	if (found < 0) {
		snprintf(err, errlen, "files.img does not parse");
		return -EINVAL;
	}
	if (!found || !queues)
		return 0;
	if (!image_start(&img, CRIU_SK_QUEUES_MAGIC)) {
		snprintf(err, errlen, "sk-queues.img does not parse");
		return -EINVAL;
	}
	while (next_entry(&img, &msg, &bad)) {
		uint64_t v, id_for = UINT64_MAX, length = UINT64_MAX;
		unsigned field;
		char *more;

		while (next_field(&msg, &field, &v, &f, &bad)) {
			if (field == PACKET_ID_FOR)
				id_for = v;
			else if (field == PACKET_LENGTH)
				length = v;
		}
		/* The packet's bytes follow its entry. */
		if (bad || length == UINT64_MAX ||
		    (uint64_t)(img.end - img.p) < length)
			break;
		if (id_for == id && length) {
			more = realloc(*data, *len + length);
			if (!more) {
				free(*data);
				*data = NULL;
				*len = 0;
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			*data = more;
			memcpy(*data + *len, img.p, length);
			*len += length;
		}
		img.p += length;
	}
	if (img.p != img.end) {
		free(*data);
		*data = NULL;
		*len = 0;
		snprintf(err, errlen, "sk-queues.img does not parse");
		return -EINVAL;
	}
	return 0;
}

int skqueue_read(const char *images, unsigned long ino, char **data,
		 size_t *len, char *err, size_t errlen)
{
	char *files_path = image_path(images, "files.img");
	char *queues_path = image_path(images, "sk-queues.img");
	size_t files_len = 0, queues_len = 0;
	char *files = util_read_file(files_path, &files_len);
	char *queues = util_read_file(queues_path, &queues_len);
	int ret;

	if (!files) {
		snprintf(err, errlen, "cannot read %s", files_path);
		ret = -ENOENT;
	} else {
		/* No sk-queues.img: no socket of the tree had bytes to read. */
		ret = skqueue_parse((const unsigned char *)files, files_len,
				    (const unsigned char *)queues, queues_len,
				    ino, data, len, err, errlen);
	}
	free(files);
	free(queues);
	free(files_path);
	free(queues_path);
	return ret;
}
