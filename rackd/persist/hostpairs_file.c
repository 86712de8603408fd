// SPDX-License-Identifier: GPL-2.0-only
#include "hostpairs_file.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "syncdir.h"

int hostpairs_file_path(const char *dir_of, char *out, size_t size)
{
	const char *slash = strrchr(dir_of, '/');
	int n = slash ? snprintf(out, size, "%.*s/hostpairs",
				 (int)(slash - dir_of), dir_of)
		      : snprintf(out, size, "hostpairs");

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void put_hex(FILE *f, const char *name, const uint8_t *b, size_t n)
{
	fprintf(f, " %s=", name);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
}

struct save_ctx {
	const struct host_pairs *hp;
	const uint8_t *self;
};

static int write_pairs(FILE *f, void *arg)
{
	const struct save_ctx *w = arg;
	char a[ADDR_STRLEN];

	fprintf(f, "# racks host pairs: secrets, root only (rackd(8))\nself ");
	for (size_t i = 0; i < 32; i++)
		fprintf(f, "%02x", w->self[i]);
	fputc('\n', f);
	for (const struct host_pair *h = w->hp->head; h; h = h->next) {
		fprintf(f, "pair id=%08" PRIx32, h->id);
		put_hex(f, "peer", h->peer_pk, sizeof(h->peer_pk));
		put_hex(f, "secret", h->secret, sizeof(h->secret));
		fprintf(f, " created=%lld conns=%" PRIu64 " retired=%d",
			(long long)h->created, h->conns, h->retired);
		if (h->have_addr)
			fprintf(f, " addr=%s",
				addr_format(&h->peer_addr, a, sizeof(a)));
		fputc('\n', f);
	}
	return 0;
}

int hostpairs_file_save(const char *path, struct host_pairs *hp,
			const uint8_t self[32])
{
	struct save_ctx w = { .hp = hp, .self = self };
	int ret = file_replace(path, 0600, write_pairs, &w);

	if (!ret)
		hp->dirty = hp->counts_unsaved = false;
	return ret;
}

static bool parse_hex(const char *v, uint8_t *out, size_t n)
{
	size_t len;

	return !sodium_hex2bin(out, n, v, strlen(v), NULL, &len, NULL) &&
	       len == n && strlen(v) == 2 * n;
}

/* One "pair" line's fields (after "pair "), split in place. */
static bool parse_pair(char *line, struct host_pair *h)
{
	unsigned seen = 0;

	for (char *tok = strtok(line, " \n"); tok; tok = strtok(NULL, " \n")) {
		char *eq = strchr(tok, '='), *end;
		struct prefix p;

		if (!eq)
			return false;
		*eq++ = '\0';
		errno = 0;
		if (!strcmp(tok, "id")) {
			h->id = (uint32_t)strtoul(eq, &end, 16);
			seen |= 1;
		} else if (!strcmp(tok, "peer")) {
			if (!parse_hex(eq, h->peer_pk, sizeof(h->peer_pk)))
				return false;
			seen |= 2;
			continue;
		} else if (!strcmp(tok, "secret")) {
			if (!parse_hex(eq, h->secret, sizeof(h->secret)))
				return false;
			seen |= 4;
			continue;
		} else if (!strcmp(tok, "created")) {
			h->created = strtoll(eq, &end, 10);
			seen |= 8;
		} else if (!strcmp(tok, "conns")) {
			h->conns = strtoull(eq, &end, 10);
			seen |= 16;
		} else if (!strcmp(tok, "retired")) {
			h->retired = strtoul(eq, &end, 10) != 0;
			seen |= 32;
		} else if (!strcmp(tok, "addr")) {
			if (prefix_parse(eq, &p) ||
			    p.len != 8 * addr_len(&p.addr))
				return false;
			h->peer_addr = p.addr;
			h->have_addr = true;
			continue;
		} else {
			return false;
		}
		if (errno || end == eq || *end)
			return false;
	}
	return seen == 63;
}

int hostpairs_file_load(const char *path, struct host_pairs *hp,
			const uint8_t self[32], char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[512];
	unsigned lineno = 0;
	int ret = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct host_pair h = { 0 }, *added;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!strncmp(line, "self ", 5)) {
			uint8_t was[32];

			line[strcspn(line, "\n")] = '\0';
			if (!parse_hex(line + 5, was, sizeof(was))) {
				snprintf(err, errlen, "%s:%u: not a host key",
					 path, lineno);
				ret = -EINVAL;
				break;
			}
			if (sodium_memcmp(was, self, sizeof(was))) {
				ret = -ESTALE;
				break;
			}
			continue;
		}
		if (strncmp(line, "pair ", 5) || !parse_pair(line + 5, &h)) {
			snprintf(err, errlen, "%s:%u: not a host pair line",
				 path, lineno);
			ret = -EINVAL;
			break;
		}
		/* Oldest last in the file: added in reverse keeps order. */
		added = host_pairs_add_loaded(hp, &h);
		(void)added;
		sodium_memzero(&h, sizeof(h));
	}
	fclose(f);
	if (ret)
		host_pairs_clear(hp);
	hp->dirty = false;
	return ret;
}
