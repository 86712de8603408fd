// SPDX-License-Identifier: GPL-2.0-only
#include "ctl_migrate.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "migrate.h"
#include "rackd.h"
#include "sockdiag.h"
#include "state.h"
#include "track.h"

/* The connections named by REQ's "id" lines, in order (the caller frees
 * the array); with MISSING_OK unknown ids are counted in *gone. */
static int collect(struct rackd *d, const struct proto_msg *req,
		   struct conn ***out, unsigned *n, bool missing_ok,
		   unsigned *gone, char *err, size_t errlen)
{
	struct conn **conns = xcalloc(req->n ? req->n : 1, sizeof(*conns));

	*n = 0;
	if (gone)
		*gone = 0;
	for (size_t i = 0; i < req->n; i++) {
		const char *s = req->kv[i].value;
		struct conn *c;
		uint64_t id;
		char *end;

		if (strcmp(req->kv[i].key, "id"))
			continue;
		errno = 0;
		id = strtoull(s, &end, 10);
		if (!*s || errno || *end || *s == '-') {
			snprintf(err, errlen, "bad connection id '%s'", s);
			goto fail;
		}
		c = conn_find_id(&d->conns, id);
		if (!c && missing_ok) {
			(*gone)++;
			continue;
		}
		if (!c) {
			snprintf(err, errlen, "no connection with id %" PRIu64,
				 id);
			free(conns);
			return -ENOENT;
		}
		for (unsigned j = 0; j < *n; j++)
			if (conns[j] == c) {
				snprintf(err, errlen, "connection %" PRIu64
					 " named twice", id);
				goto fail;
			}
		conns[(*n)++] = c;
	}
	if (*n == 0 && (!gone || *gone == 0)) {
		snprintf(err, errlen, "missing connection id");
		goto fail;
	}
	*out = conns;
	return 0;
fail:
	free(conns);
	return -EINVAL;
}

/* Every one of CONNS in migration step WANT, or an error naming the
 * first that is not. */
static int check_step(struct conn **conns, unsigned n,
		      enum conn_migration want, const char *what, char *err,
		      size_t errlen)
{
	for (unsigned i = 0; i < n; i++) {
		if (conns[i]->migration == want)
			continue;
		snprintf(err, errlen, "connection %" PRIu64 " is not %s "
			 "(migration %s)", conns[i]->id, what,
			 conn_migration_name(conns[i]->migration));
		return -EINVAL;
	}
	return 0;
}

/*
 * Begin (once) and report: each connection's line, with its keys and its
 * socket's sequence numbers now, and whether its peer holds its socket
 * yet. rackckpt asks again until every peer does, so that the numbers
 * it keeps are the ones the checkpoint will have.
 */
int cmd_export(struct rackd *d, const struct proto_msg *req, FILE *out,
	       char *err, size_t errlen)
{
	struct conn **conns;
	unsigned n;
	int ret = collect(d, req, &conns, &n, false, NULL, err, errlen);

	if (ret)
		return ret;
	for (unsigned i = 0; i < n; i++) {
		struct conn *c = conns[i];

		if (!migrate_exportable(c)) {
			snprintf(err, errlen, "connection %" PRIu64 " is not "
				 "managed by racks (state %s, migration %s)",
				 c->id, conn_state_name(c->state),
				 conn_migration_name(c->migration));
			ret = -ENOTCONN;
			goto out;
		}
	}
	for (unsigned i = 0; i < n; i++)
		migrate_export(d, conns[i]);
	for (unsigned i = 0; i < n; i++) {
		char *line = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&line, &len);

		if (!f)
			fatalx(1, "open_memstream: out of memory");
		ret = state_export_conn(f, conns[i]);
		fclose(f);
		if (ret == 0) {
			proto_put(out, "record", "conn");
			proto_put(out, "id", "%" PRIu64, conns[i]->id);
			proto_put(out, "acked", "%s",
				  conns[i]->away_acked ? "true" : "false");
			proto_put(out, "state", "%s", line);
		} else {
			snprintf(err, errlen, "connection %" PRIu64 ": its "
				 "socket is gone", conns[i]->id);
			ret = -ENOENT;
		}
		sodium_memzero(line, len);
		free(line);
		if (ret)
			break;
	}
out:
	free(conns);
	return ret;
}

int cmd_unexport(struct rackd *d, const struct proto_msg *req, FILE *out,
		 char *err, size_t errlen)
{
	struct conn **conns;
	unsigned n;
	int ret = collect(d, req, &conns, &n, false, NULL, err, errlen);

	if (ret)
		return ret;
	ret = check_step(conns, n, MIG_LEAVING, "exported", err, errlen);
	for (unsigned i = 0; !ret && i < n; i++)
		migrate_unexport(d, conns[i]);
	if (!ret)
		proto_put(out, "resumed", "%u", n);
	free(conns);
	return ret;
}

/* Connections already forgotten (their socket went with the checkpoint
 * and a sweep saw it) are counted, not refused. */
int cmd_release(struct rackd *d, const struct proto_msg *req, FILE *out,
		char *err, size_t errlen)
{
	struct conn **conns;
	unsigned n, gone;
	int ret = collect(d, req, &conns, &n, true, &gone, err, errlen);

	if (ret)
		return ret;
	ret = check_step(conns, n, MIG_LEAVING, "exported", err, errlen);
	if (ret)
		ret = check_step(conns, n, MIG_ARRIVING, "exported or imported",
				 err, errlen);
	for (unsigned i = 0; !ret && i < n; i++) {
		if (conns[i]->migration == MIG_LEAVING) {
			migrate_release(d, conns[i]);
		} else {
			/* An import whose restore failed. */
			conn_log(conns[i], "import dropped");
			rackd_forget(d, conns[i]);
		}
	}
	if (!ret) {
		proto_put(out, "released", "%u", n);
		proto_put(out, "gone", "%u", gone);
	}
	free(conns);
	return ret;
}

int cmd_import(struct rackd *d, const struct proto_msg *req, FILE *out,
	       char *err, size_t errlen)
{
	struct conn **conns = xcalloc(req->n ? req->n : 1, sizeof(*conns));
	unsigned n = 0, lineno = 0;
	char lerr[200];
	int ret = 0;

	for (size_t i = 0; i < req->n; i++) {
		char *line;

		if (strcmp(req->kv[i].key, "state"))
			continue;
		lineno++;
		line = xstrdup(req->kv[i].value);
		conns[n] = state_import(d, line, lerr, sizeof(lerr));
		sodium_memzero(line, strlen(line));
		free(line);
		if (!conns[n]) {
			snprintf(err, errlen, "connection %u: %s", lineno,
				 lerr);
			ret = -EINVAL;
			goto undo;
		}
		n++;
	}
	if (n == 0) {
		snprintf(err, errlen, "no state= line to import");
		free(conns);
		return -EINVAL;
	}
	ret = migrate_import(d, conns, n, err, errlen);
	if (ret)
		goto undo;
	for (unsigned i = 0; i < n; i++) {
		proto_put(out, "record", "conn");
		proto_put(out, "id", "%" PRIu64, conns[i]->id);
	}
	free(conns);
	return 0;
undo:
	for (unsigned i = 0; i < n; i++)
		rackd_forget(d, conns[i]);
	free(conns);
	return ret;
}

int cmd_restored(struct rackd *d, const struct proto_msg *req, FILE *out,
		 char *err, size_t errlen)
{
	struct sockdiag_progress pr;
	struct conn **conns;
	unsigned n, done = 0;
	int ret = collect(d, req, &conns, &n, false, NULL, err, errlen);

	if (ret)
		return ret;
	/* All of them or none: each imported (a sweep may have seen its
	 * socket first), and each socket there. */
	for (unsigned i = 0; !ret && i < n; i++) {
		struct conn *c = conns[i];

		if (c->migration == MIG_NONE && c->imported)
			continue;
		if (c->migration != MIG_ARRIVING) {
			snprintf(err, errlen, "connection %" PRIu64 " was not "
				 "imported (migration %s)", c->id,
				 conn_migration_name(c->migration));
			ret = -EINVAL;
		} else if (sockdiag_progress(&c->local, &c->remote, &pr)) {
			snprintf(err, errlen, "connection %" PRIu64 ": no "
				 "such socket here", c->id);
			ret = -ENOENT;
		}
	}
	for (unsigned i = 0; !ret && i < n; i++)
		if (migrate_arrived(d, conns[i]) == 0)
			done++;
	if (!ret)
		proto_put(out, "reconnecting", "%u", done);
	free(conns);
	return ret;
}
