// SPDX-License-Identifier: GPL-2.0-only
#include "jobclient.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctlclient.h"
#include "jobdir.h"
#include "proto.h"
#include "util.h"

/* REQUEST to job ID; its reply in *R (ctlclient_reply_free). */
static int transact(int id, const char *request, struct ctlclient_reply *r,
		    char *err, size_t errlen)
{
	char *path = jobdir_file(id, ".sock"), why[512];
	int refused, ret;

	if (access(path, F_OK) < 0) {
		snprintf(err, errlen, "no job %d (rackckpt jobs lists them)", id);
		free(path);
		return -ENOENT;
	}
	ret = ctlclient_transact(path, request, r, why, sizeof(why), &refused);
	free(path);
	if (ret && refused)
		snprintf(err, errlen, "%s", why);
	else if (ret)
		snprintf(err, errlen, "job %d's controller does not answer "
			 "(%s)", id, strerror(-ret));
	return ret;
}

static void copy(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v ? v : "");
}

static int num(const char *v)
{
	return v ? atoi(v) : 0;
}

static void parse_rank(struct job_rank *k, const struct proto_msg *m,
		       size_t from, size_t to)
{
	const char *st = ctlclient_field(m, from, to, "state");
	const char *dt = ctlclient_field(m, from, to, "downtime");

	k->rank = num(ctlclient_field(m, from, to, "rank"));
	k->root = num(ctlclient_field(m, from, to, "root"));
	k->owner = num(ctlclient_field(m, from, to, "owner"));
	k->status = num(ctlclient_field(m, from, to, "status"));
	k->moves = (unsigned)num(ctlclient_field(m, from, to, "moves"));
	k->downtime = dt ? strtod(dt, NULL) : 0;
	copy(k->node, sizeof(k->node), ctlclient_field(m, from, to, "node"));
	copy(k->addr, sizeof(k->addr), ctlclient_field(m, from, to, "addr"));
	copy(k->origin, sizeof(k->origin),
	     ctlclient_field(m, from, to, "origin"));
	copy(k->host, sizeof(k->host), ctlclient_field(m, from, to, "host"));
	k->state = st && !strcmp(st, "moving") ? RANK_MOVING :
		   st && !strcmp(st, "ended") ? RANK_ENDED : RANK_RUNNING;
}

int jobclient_get(int id, struct job_info *j, char *err, size_t errlen)
{
	struct ctlclient_reply r;
	const struct proto_msg *m = &r.msg;
	const char *v;
	size_t first;
	int ret = transact(id, "cmd=job\nversion=1\n", &r, err, errlen);

	memset(j, 0, sizeof(*j));
	if (ret)
		return ret;
	first = ctlclient_next_record(m, 0);
	j->id = num(ctlclient_field(m, 0, first, "job"));
	v = ctlclient_field(m, 0, first, "state");
	j->ended = v && !strcmp(v, "ended");
	j->mpirun = num(ctlclient_field(m, 0, first, "mpirun_pid"));
	v = ctlclient_field(m, 0, first, "started");
	j->started = v ? strtod(v, NULL) : 0;
	j->np = num(ctlclient_field(m, 0, first, "np"));
	copy(j->command, sizeof(j->command),
	     ctlclient_field(m, 0, first, "command"));
	copy(j->rsh, sizeof(j->rsh), ctlclient_field(m, 0, first, "rsh"));
	copy(j->ckpt_dir, sizeof(j->ckpt_dir),
	     ctlclient_field(m, 0, first, "ckpt_dir"));
	copy(j->rackckpt, sizeof(j->rackckpt),
	     ctlclient_field(m, 0, first, "rackckpt"));
	for (size_t i = first; i < m->n;) {
		size_t end = ctlclient_next_record(m, i + 1);

		if (!strcmp(m->kv[i].value, "node")) {
			j->nodes = xrealloc(j->nodes, (j->nnodes + 1) *
					    sizeof(*j->nodes));
			copy(j->nodes[j->nnodes].name, JOB_NAME,
			     ctlclient_field(m, i, end, "name"));
			j->nodes[j->nnodes++].slots =
				num(ctlclient_field(m, i, end, "slots"));
		} else if (!strcmp(m->kv[i].value, "rank")) {
			j->ranks = xrealloc(j->ranks, (j->nranks + 1) *
					    sizeof(*j->ranks));
			parse_rank(&j->ranks[j->nranks++], m, i, end);
		}
		i = end;
	}
	ctlclient_reply_free(&r);
	return 0;
}

static int ranks_request(int id, const char *cmd, pid_t owner,
			 const int *ranks, size_t n, const char *extra,
			 char *err, size_t errlen)
{
	struct ctlclient_reply r;
	char *req;
	size_t len;
	FILE *f = open_memstream(&req, &len);
	int ret;

	if (!f)
		util_fatal("out of memory");
	fprintf(f, "cmd=%s\nversion=1\nowner=%d\n", cmd, (int)owner);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "rank=%d\n", ranks[i]);
	fputs(extra, f);
	if (fclose(f))
		util_fatal("out of memory");
	ret = transact(id, req, &r, err, errlen);
	free(req);
	if (!ret)
		ctlclient_reply_free(&r);
	return ret;
}

int jobclient_lock(int id, pid_t owner, const int *ranks, size_t n,
		   char *err, size_t errlen)
{
	return ranks_request(id, "lock", owner, ranks, n, "", err, errlen);
}

int jobclient_unlock(int id, pid_t owner, const int *ranks, size_t n,
		     char *err, size_t errlen)
{
	return ranks_request(id, "unlock", owner, ranks, n, "", err, errlen);
}

int jobclient_moved(int id, pid_t owner, int rank, const char *node,
		    const char *addr, double downtime, char *err,
		    size_t errlen)
{
	char *extra = xasprintf("node=%s\naddr=%s\ndowntime=%.3f\n", node,
				addr, downtime);
	int ret = ranks_request(id, "moved", owner, &rank, 1, extra, err,
				errlen);

	free(extra);
	return ret;
}
