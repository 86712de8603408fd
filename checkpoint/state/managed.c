// SPDX-License-Identifier: GPL-2.0-only
#include "managed.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlclient.h"
#include "util.h"

/* A request, with what rackd said when it refused it. */
static int transact(const char *sock, const char *req,
		    struct ctlclient_reply *r, char *err, size_t errlen)
{
	char why[512];
	int refused;
	int ret = ctlclient_transact(sock, req, r, why, sizeof(why), &refused);

	if (!ret)
		return 0;
	if (refused && ret == -EOPNOTSUPP)
		snprintf(err, errlen, "rackd at %s does not know this request "
			 "(%s): it is older than rackckpt", sock, why);
	else if (refused)
		snprintf(err, errlen, "rackd refused: %s", why);
	else
		snprintf(err, errlen, "%s", why);
	return ret;
}

int managed_ping(const char *sock, char *err, size_t errlen)
{
	struct ctlclient_reply r;
	int ret = transact(sock, "cmd=status\nversion=1\n", &r, err, errlen);

	if (!ret)
		ctlclient_reply_free(&r);
	return ret;
}

static bool parse_ep(const char *s, struct endpoint *e)
{
	bool has_port;

	return s && endpoint_parse(s, e, &has_port) == 0;
}

static bool parse_id(const char *s, uint64_t *id)
{
	char *end;

	if (!s || !util_is_uint(s))
		return false;
	errno = 0;
	*id = strtoull(s, &end, 10);
	return !errno && !*end;
}

int managed_list(const char *sock, struct managed_list *l, char *err,
		 size_t errlen)
{
	struct ctlclient_reply r;
	const struct proto_msg *m = &r.msg;
	int ret = transact(sock, "cmd=list\nversion=1\n", &r, err, errlen);

	memset(l, 0, sizeof(*l));
	if (ret)
		return ret;
	for (size_t i = ctlclient_next_record(m, 0); i < m->n;) {
		size_t end = ctlclient_next_record(m, i + 1);
		struct managed_conn c = { 0 };
		const char *st = ctlclient_field(m, i, end, "state");
		const char *peer = ctlclient_field(m, i, end, "peer");

		if (parse_id(ctlclient_field(m, i, end, "id"), &c.id) &&
		    parse_ep(ctlclient_field(m, i, end, "local"), &c.local) &&
		    parse_ep(ctlclient_field(m, i, end, "remote"), &c.remote)) {
			snprintf(c.state, sizeof(c.state), "%s", st ? st : "?");
			snprintf(c.peer, sizeof(c.peer), "%s", peer ? peer : "?");
			l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
			l->v[l->n++] = c;
		}
		i = end;
	}
	ctlclient_reply_free(&r);
	return 0;
}

void managed_list_free(struct managed_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

bool managed_is_managed(const struct managed_conn *c)
{
	return strcmp(c->peer, "racks") == 0 &&
	       (strcmp(c->state, "connected") == 0 ||
		strcmp(c->state, "suspended") == 0);
}

const struct managed_conn *managed_find(const struct managed_list *l,
					const struct endpoint *local,
					const struct endpoint *remote)
{
	for (size_t i = 0; i < l->n; i++)
		if (endpoint_equal(&l->v[i].local, local) &&
		    endpoint_equal(&l->v[i].remote, remote))
			return &l->v[i];
	return NULL;
}

/* "cmd=CMD\nversion=1\nid=A\nid=B\n" */
static char *ids_request(const char *cmd, const uint64_t *ids, size_t n)
{
	char *req;
	size_t len;
	FILE *f = open_memstream(&req, &len);

	if (!f)
		util_fatal("out of memory");
	fprintf(f, "cmd=%s\nversion=1\n", cmd);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "id=%" PRIu64 "\n", ids[i]);
	if (fclose(f))
		util_fatal("out of memory");
	return req;
}

/* Free a line that holds keys. */
static void line_free(char *line)
{
	if (line) {
		memset(line, 0, strlen(line));
		free(line);
	}
}

int managed_export(const char *sock, const uint64_t *ids, size_t n,
		   char **lines, size_t *unacked, char *err, size_t errlen)
{
	char *req = ids_request("export", ids, n);
	struct ctlclient_reply r;
	const struct proto_msg *m = &r.msg;
	int ret = transact(sock, req, &r, err, errlen);

	free(req);
	for (size_t k = 0; k < n; k++) {
		line_free(lines[k]);
		lines[k] = NULL;
	}
	*unacked = 0;
	if (ret)
		return ret;
	for (size_t i = ctlclient_next_record(m, 0); i < m->n;) {
		size_t end = ctlclient_next_record(m, i + 1);
		const char *st = ctlclient_field(m, i, end, "state");
		const char *acked = ctlclient_field(m, i, end, "acked");
		uint64_t id;

		if (parse_id(ctlclient_field(m, i, end, "id"), &id) && st &&
		    strncmp(st, "conn ", 5) == 0)
			for (size_t k = 0; k < n; k++)
				if (ids[k] == id && !lines[k]) {
					lines[k] = xstrdup(st);
					if (!acked || strcmp(acked, "true"))
						(*unacked)++;
				}
		i = end;
	}
	ctlclient_reply_free(&r);
	for (size_t k = 0; k < n; k++)
		if (!lines[k]) {
			snprintf(err, errlen, "rackd's export reply lacks the "
				 "state of connection %" PRIu64, ids[k]);
			ret = -EPROTO;
		}
	return ret;
}

int managed_ids(const char *sock, const char *cmd, const uint64_t *ids,
		size_t n, char *err, size_t errlen)
{
	char *req = ids_request(cmd, ids, n);
	struct ctlclient_reply r;
	int ret = transact(sock, req, &r, err, errlen);

	free(req);
	if (!ret)
		ctlclient_reply_free(&r);
	return ret;
}

static int import_batch(const char *sock, char *const *lines, size_t n,
			uint64_t *ids, char *err, size_t errlen)
{
	struct ctlclient_reply r;
	const struct proto_msg *m = &r.msg;
	size_t len, k = 0;
	char *req;
	FILE *f = open_memstream(&req, &len);
	int ret;

	if (!f)
		util_fatal("out of memory");
	fprintf(f, "cmd=import\nversion=1\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "state=%s\n", lines[i]);
	if (fclose(f))
		util_fatal("out of memory");
	ret = transact(sock, req, &r, err, errlen);
	free(req);
	if (ret)
		return ret;
	/* One record per line, in the order of the lines. */
	for (size_t i = ctlclient_next_record(m, 0); i < m->n && k < n;) {
		size_t end = ctlclient_next_record(m, i + 1);

		if (!parse_id(ctlclient_field(m, i, end, "id"), &ids[k]))
			break;
		k++;
		i = end;
	}
	ctlclient_reply_free(&r);
	if (k != n) {
		snprintf(err, errlen, "rackd's import reply names %zu of %zu "
			 "connections", k, n);
		return -EPROTO;
	}
	return 0;
}

int managed_show(const char *sock, uint64_t id, char *state, size_t len,
		 bool *confirmed, char *err, size_t errlen)
{
	struct ctlclient_reply r;
	char req[96];
	const char *v;
	int ret;

	snprintf(req, sizeof(req), "cmd=show\nversion=1\nid=%" PRIu64 "\n", id);
	ret = transact(sock, req, &r, err, errlen);
	if (ret)
		return ret;
	v = proto_get(&r.msg, "state");
	snprintf(state, len, "%s", v ? v : "?");
	v = proto_get(&r.msg, "peer_confirmed");
	*confirmed = v && strcmp(v, "true") == 0;
	ctlclient_reply_free(&r);
	return 0;
}

int managed_import(const char *sock, char *const *lines, size_t n,
		   uint64_t *ids, char *err, size_t errlen)
{
	char why[512];

	for (size_t done = 0; done < n; done += MANAGED_IMPORT_BATCH) {
		size_t k = n - done < MANAGED_IMPORT_BATCH ?
			   n - done : MANAGED_IMPORT_BATCH;
		int ret = import_batch(sock, lines + done, k, ids + done, err,
				       errlen);

		if (ret) {
			if (done && managed_ids(sock, "release", ids, done, why,
						sizeof(why)))
				util_err("rackd did not release the %zu "
					 "connection(s) imported before: %s",
					 done, why);
			return ret;
		}
	}
	return 0;
}
