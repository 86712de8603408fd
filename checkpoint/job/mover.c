// SPDX-License-Identifier: GPL-2.0-only
#include "mover.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobclient.h"
#include "plan.h"
#include "remote.h"
#include "util.h"

/* Probes answer at once; a dump or restore takes a second or so. */
#define PROBE_TIMEOUT 30.0
#define ABORT_TIMEOUT 30.0

struct target {
	char name[JOB_NAME];
	int slots;			/* from --to NAME:SLOTS or the host list */
	struct plan_node probe;
	char why[MOVER_TEXT];		/* why it cannot be used at all */
	size_t used;			/* ranks of the job there, and placed */
	bool probed;
};

struct move {
	const struct mover_opts *o;
	const struct mover_ops *ops;
	struct mover_report *rep;
	struct job_info j;
	pid_t self;
	struct target *t;
	size_t nt;
	long stamp;			/* names this run's directories */
};

/* One member of a group: a tree of the source probe, and its result. */
struct member {
	struct plan_tree *tree;
	struct mover_result *res;
	char *dir;
	bool committed, connected;
};

static void say(struct move *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(struct move *m, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (m->ops && m->ops->progress)
		m->ops->progress(line, m->ops->arg);
}

static struct mover_result *result(struct move *m, int rank)
{
	for (size_t i = 0; i < m->rep->n; i++)
		if (m->rep->r[i].rank == rank)
			return &m->rep->r[i];
	return NULL;
}

static void fail(struct mover_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(struct mover_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->error[0])
		return;		/* the first reason is the one */
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->ok = false;
}

/* What a failed command said: its "rackckpt: " lines, joined. */
static const char *why(const struct remote_result *res, char *buf, size_t len)
{
	char *copy = xstrdup(res->err ? res->err : ""), *save = NULL, st[64];
	size_t used = 0;

	buf[0] = '\0';
	for (char *l = strtok_r(copy, "\n", &save); l && used < len - 1;
	     l = strtok_r(NULL, "\n", &save)) {
		const char *text = !strncmp(l, "rackckpt: ", 10) ? l + 10 :
				   !strncmp(l, "nsrsh: ", 7) || !strncmp(l, "ssh: ", 5) ?
				   l : NULL;

		if (!text || strstr(text, "nothing changed") ||
		    strstr(text, "nothing of it is left") ||
		    !strncmp(text, "--- last lines", 14))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 used ? "; " : "", text);
	}
	free(copy);
	if (!buf[0])
		snprintf(buf, len, "it %s without a word",
			 remote_status_str(res, st, sizeof(st)));
	return buf;
}

/* rackckpt WORDS... on NODE, through the job's remote shell. */
static int on_node(struct move *m, const char *node, const char *const *args,
		   double timeout, remote_line_fn fn, void *arg,
		   struct remote_result *res)
{
	char *words[64];
	size_t n = 0;
	int ret;

	words[n++] = m->j.rackckpt;
	for (size_t i = 0; args[i] && n < 63; i++)
		words[n++] = (char *)args[i];
	words[n] = NULL;
	ret = remote_run(m->j.rsh, node, words, timeout, fn, arg, res);
	if (ret) {
		res->status = -1;
		if (!res->err)
			res->err = xstrdup("");
	}
	return ret;
}

/* --- what the nodes say --------------------------------------------- */

/* Every running rank of the job on NODE, probed there. */
static int probe_source(struct move *m, const char *node, struct plan_source *s)
{
	struct remote_result res;
	char why_buf[MOVER_TEXT], *roots = xstrdup("");
	const char *args[] = { "probe", "--trees", NULL, NULL };

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < m->j.nranks; i++) {
		const struct job_rank *k = &m->j.ranks[i];
		char *more;

		if (k->state == RANK_ENDED || strcmp(k->node, node))
			continue;
		s->t = xrealloc(s->t, (s->n + 1) * sizeof(*s->t));
		memset(&s->t[s->n], 0, sizeof(s->t[s->n]));
		s->t[s->n].root = k->root;
		s->t[s->n++].rank = k->rank;
		more = xasprintf("%s%s%d", roots, *roots ? "," : "", (int)k->root);
		free(roots);
		roots = more;
	}
	args[2] = roots;
	on_node(m, node, args, PROBE_TIMEOUT, NULL, NULL, &res);
	free(roots);
	if (!remote_ok(&res)) {
		say(m, "node %s does not answer: %s", node,
		    why(&res, why_buf, sizeof(why_buf)));
		for (size_t i = 0; i < s->n; i++)
			fail(result(m, s->t[i].rank), "its node %s does not "
			     "answer: %s", node, why_buf);
		remote_result_free(&res);
		return -EHOSTUNREACH;
	}
	plan_parse_source(res.out, s);
	plan_groups(s);
	remote_result_free(&res);
	return 0;
}

static void probe_target(struct move *m, struct target *t, const char *pids)
{
	struct remote_result res;
	const char *args[] = { "probe", "--pids", pids, NULL };
	char why_buf[MOVER_TEXT];

	if (!*pids)
		args[1] = NULL;
	on_node(m, t->name, args, PROBE_TIMEOUT, NULL, NULL, &res);
	plan_parse_node(remote_ok(&res) ? res.out : "", &t->probe);
	if (!t->probe.answered)
		snprintf(t->why, sizeof(t->why), "it does not answer (%s)",
			 why(&res, why_buf, sizeof(why_buf)));
	t->probed = true;
	remote_result_free(&res);
}

/* --- one group: dump, restore, or back ------------------------------ */

static void dumped_line(const char *line, void *arg)
{
	struct member *mb = arg;
	double t;
	size_t conns;
	int pid, at = 0;

	if (sscanf(line, "dumped process %d into %*s %zu connection(s) "
		   "exported, in %lf s%n", &pid, &conns, &t, &at) == 3 && at) {
		mb->res->dump_s = t;
		mb->res->conns = conns;
	}
}

struct restore_read {
	struct member *mb;
	size_t n;
	struct move *m;
	const char *node;
};

static struct member *by_root(struct restore_read *rr, int pid)
{
	for (size_t i = 0; i < rr->n; i++)
		if (rr->mb[i].tree->root == pid)
			return &rr->mb[i];
	return NULL;
}

/* restore's lines (restore.h): committed, then connected again. */
static void restore_line(const char *line, void *arg)
{
	struct restore_read *rr = arg;
	struct member *mb;
	double a, b;
	size_t conns;
	int pid;

	if (sscanf(line, "process %d restored from %*s in %lf s", &pid, &a) == 2 &&
	    (mb = by_root(rr, pid))) {
		mb->committed = true;
		mb->res->restore_s = a;
		say(rr->m, "rank %d: restored on %s in %.3f s", mb->res->rank,
		    rr->node, a);
	} else if (sscanf(line, "process %d: %zu connection(s) connected again "
			  "%lf s after the dump started (restore took %lf s)",
			  &pid, &conns, &a, &b) == 4 && (mb = by_root(rr, pid))) {
		mb->connected = true;
		mb->res->downtime_s = a;
		say(rr->m, "rank %d: %zu connection(s) connected again %.3f s "
		    "after its dump started", mb->res->rank, conns, a);
	} else if (sscanf(line, "process %d: no racks connections (restore "
			  "took %lf s)", &pid, &b) == 2 && (mb = by_root(rr, pid))) {
		mb->connected = true;
		mb->res->downtime_s = mb->res->dump_s + b;
	}
}

/* rackckpt restore DIR... of the members on NODE: 0 if all connected. */
static int restore_on(struct move *m, const char *node, struct member *mb,
		      size_t n, struct remote_result *res)
{
	const char *args[40] = { "restore" };
	struct restore_read rr = { mb, n, m, node };
	size_t k = 1;

	for (size_t i = 0; i < n && k < 38; i++) {
		mb[i].committed = mb[i].connected = false;
		args[k++] = mb[i].dir;
	}
	args[k] = NULL;
	on_node(m, node, args, m->o->timeout, restore_line, &rr, res);
	return remote_ok(res) ? 0 : -EIO;
}

static void set_node(struct move *m, struct member *mb, const char *node,
		     const char *addr)
{
	char err[512];

	snprintf(mb->res->node, sizeof(mb->res->node), "%s", node);
	if (jobclient_moved(m->j.id, m->self, mb->res->rank, node, addr,
			    mb->res->downtime_s, err, sizeof(err)))
		say(m, "rank %d: the job's controller did not note where it "
		    "runs: %s", mb->res->rank, err);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* The group failed on TARGET before it committed: nothing of it there,
 * then back where it was. */
static void back_to_source(struct move *m, const char *src, const char *dst,
			   struct member *mb, size_t n)
{
	const char *args[40] = { "abort" };
	struct remote_result res;
	char why_buf[MOVER_TEXT], st[64];
	size_t k = 1;

	for (size_t i = 0; i < n && k < 38; i++)
		args[k++] = mb[i].dir;
	args[k] = NULL;
	if (dst) {
		/* Its host may be gone: then so is anything it restored. */
		on_node(m, dst, args, ABORT_TIMEOUT, NULL, NULL, &res);
		if (!remote_ok(&res))
			say(m, "cleaning up on %s: %s (%s)", dst,
			    remote_status_str(&res, st, sizeof(st)),
			    why(&res, why_buf, sizeof(why_buf)));
		remote_result_free(&res);
	}
	say(m, "restoring rank(s) on %s, where they ran", src);
	if (restore_on(m, src, mb, n, &res) == 0) {
		for (size_t i = 0; i < n; i++) {
			snprintf(mb[i].res->node, sizeof(mb[i].res->node),
				 "%s", src);
			say(m, "rank %d: runs on %s again (stopped for %.3f s)",
			    mb[i].res->rank, src, mb[i].res->downtime_s);
		}
	} else {
		why(&res, why_buf, sizeof(why_buf));
		for (size_t i = 0; i < n; i++) {
			if (mb[i].committed) {
				snprintf(mb[i].res->node, sizeof(mb[i].res->node),
					 "%s", src);
				continue;
			}
			mb[i].res->stopped = true;
			snprintf(mb[i].res->node, sizeof(mb[i].res->node), "-");
			say(m, "rank %d: restoring it on %s failed too (%s): it "
			    "is stopped; its checkpoint is %s", mb[i].res->rank,
			    src, why_buf, mb[i].dir);
		}
	}
	remote_result_free(&res);
}

static int dump_all(struct move *m, const char *src, struct member *mb,
		    size_t n, size_t *done)
{
	char why_buf[MOVER_TEXT];

	for (*done = 0; *done < n; (*done)++) {
		struct member *x = &mb[*done];
		char root[16], *with = xstrdup("");
		const char *args[8] = { "dump" };
		struct remote_result res;
		size_t k = 1;
		int ret;

		for (size_t i = 0; i < n; i++) {
			char *more;

			if (i == *done)
				continue;
			more = xasprintf("%s%s%d", with, *with ? "," : "",
					 (int)mb[i].tree->root);
			free(with);
			with = more;
		}
		if (*with) {
			args[k++] = "--with";
			args[k++] = with;
		}
		snprintf(root, sizeof(root), "%d", (int)x->tree->root);
		args[k++] = root;
		args[k++] = x->dir;
		args[k] = NULL;
		on_node(m, src, args, m->o->timeout, dumped_line, x, &res);
		free(with);
		ret = remote_ok(&res) ? 0 : -EIO;
		if (ret) {
			why(&res, why_buf, sizeof(why_buf));
			for (size_t i = 0; i < n; i++)
				fail(mb[i].res, "%srank %d's dump on %s failed: %s",
				     i == *done ? "" : "with it, ", x->res->rank,
				     src, why_buf);
			say(m, "rank %d: dump on %s failed: %s", x->res->rank, src,
			    why_buf);
		} else {
			say(m, "rank %d: checkpointed on %s in %.3f s (%zu "
			    "connection(s))", x->res->rank, src, x->res->dump_s,
			    x->res->conns);
		}
		remote_result_free(&res);
		if (ret)
			return ret;
	}
	return 0;
}

static void move_group(struct move *m, const char *src, struct target *t,
		       struct member *mb, size_t n)
{
	struct remote_result res;
	char why_buf[MOVER_TEXT], st[64];
	size_t dumped;
	bool all_committed = true;

	if (dump_all(m, src, mb, n, &dumped)) {
		/* Those dumped before the failure go back; the others
		 * never stopped. */
		if (dumped)
			back_to_source(m, src, NULL, mb, dumped);
		return;
	}
	if (restore_on(m, t->name, mb, n, &res) == 0) {
		for (size_t i = 0; i < n; i++) {
			mb[i].res->ok = true;
			set_node(m, &mb[i], t->name, t->probe.addr);
			say(m, "rank %d: now on %s (downtime %.3f s)",
			    mb[i].res->rank, t->name, mb[i].res->downtime_s);
		}
		remote_result_free(&res);
		if (n > 1) {
			const char *args[40] = { "unlock" };
			size_t k = 1;

			for (size_t i = 0; i < n && k < 38; i++)
				args[k++] = mb[i].dir;
			args[k] = NULL;
			on_node(m, src, args, PROBE_TIMEOUT, NULL, NULL, &res);
			if (!remote_ok(&res))
				say(m, "removing CRIU's locks on %s: %s", src,
				    why(&res, why_buf, sizeof(why_buf)));
			remote_result_free(&res);
		}
		for (size_t i = 0; i < n && !m->o->keep; i++)
			nftw(mb[i].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return;
	}
	why(&res, why_buf, sizeof(why_buf));
	for (size_t i = 0; i < n; i++)
		all_committed &= mb[i].committed;
	if (all_committed) {
		/* It runs there: its connections are late, or lost. */
		for (size_t i = 0; i < n; i++) {
			set_node(m, &mb[i], t->name, t->probe.addr);
			fail(mb[i].res, "restored on %s, but: %s", t->name,
			     why_buf);
		}
		say(m, "restored on %s, but: %s", t->name, why_buf);
		remote_result_free(&res);
		return;
	}
	remote_status_str(&res, st, sizeof(st));
	for (size_t i = 0; i < n; i++)
		fail(mb[i].res, "restore on %s failed (%s)%s%s", t->name, st,
		     strstr(why_buf, " without a word") ? "" : ": ",
		     strstr(why_buf, " without a word") ? "" : why_buf);
	say(m, "restore on %s failed (%s)%s%s", t->name, st,
	    strstr(why_buf, " without a word") ? "" : ": ",
	    strstr(why_buf, " without a word") ? "" : why_buf);
	remote_result_free(&res);
	back_to_source(m, src, t->name, mb, n);
}

/* --- choosing ------------------------------------------------------- */

/* --to NAME[:SLOTS]; a name the job's host list gives slots to has them. */
static int parse_targets(struct move *m, char *err, size_t errlen)
{
	m->t = xcalloc(m->o->nto, sizeof(*m->t));
	for (size_t i = 0; i < m->o->nto; i++) {
		struct target *t = &m->t[m->nt];
		const char *arg = m->o->to[i], *colon = strrchr(arg, ':');
		const struct job_node *jn;
		long slots = 0;

		if (colon && strchr(arg, ':') == colon &&
		    util_parse_long(colon + 1, 1, 1 << 20, &slots))
			snprintf(t->name, sizeof(t->name), "%.*s",
				 (int)(colon - arg), arg);
		else
			snprintf(t->name, sizeof(t->name), "%s", arg);
		if (!t->name[0] || t->name[0] == '-') {
			snprintf(err, errlen, "bad destination '%s'", arg);
			return -EINVAL;
		}
		jn = jobinfo_node(&m->j, t->name);
		t->slots = slots ? (int)slots : jn ? jn->slots : 0;
		t->used = m->o->busy ? m->o->busy[i] : 0;
		for (size_t k = 0; k < m->nt; k++)
			if (!strcmp(m->t[k].name, t->name)) {
				snprintf(err, errlen, "destination %s named twice",
					 t->name);
				return -EINVAL;
			}
		m->nt++;
	}
	return 0;
}

/* The ranks to move, each with a result entry. */
static int select_ranks(struct move *m, char *err, size_t errlen)
{
	const struct mover_opts *o = m->o;

	for (size_t i = 0; i < m->j.nranks; i++) {
		const struct job_rank *k = &m->j.ranks[i];
		bool want = false;

		if (o->from)
			want = !strcmp(k->node, o->from) && k->state != RANK_ENDED;
		for (size_t x = 0; x < o->nranks; x++)
			want |= o->ranks[x] == k->rank;
		if (!want)
			continue;
		if (k->state == RANK_ENDED) {
			snprintf(err, errlen, "rank %d of job %d has ended",
				 k->rank, m->j.id);
			return -ESRCH;
		}
		m->rep->r = xrealloc(m->rep->r, (m->rep->n + 1) * sizeof(*m->rep->r));
		memset(&m->rep->r[m->rep->n], 0, sizeof(*m->rep->r));
		m->rep->r[m->rep->n].rank = k->rank;
		snprintf(m->rep->r[m->rep->n].from, JOB_NAME, "%s", k->node);
		snprintf(m->rep->r[m->rep->n].node, JOB_NAME, "%s", k->node);
		m->rep->n++;
	}
	for (size_t x = 0; x < o->nranks; x++)
		if (!result(m, o->ranks[x])) {
			snprintf(err, errlen, "job %d has no rank %d (rackckpt "
				 "jobs lists them)", m->j.id, o->ranks[x]);
			return -ENOENT;
		}
	return 0;
}

/* A destination cannot be a node the job's ranks run on: the ranks'
 * connections would have both ends on one host. */
static int check_targets(struct move *m, char *err, size_t errlen)
{
	for (size_t i = 0; i < m->nt; i++) {
		struct target *t = &m->t[i];

		for (size_t k = 0; k < m->j.nranks; k++) {
			const struct job_rank *r = &m->j.ranks[k];

			if (r->state == RANK_ENDED || strcmp(r->node, t->name))
				continue;
			if (result(m, r->rank))
				snprintf(err, errlen, "rank %d already runs on %s",
					 r->rank, t->name);
			else
				snprintf(err, errlen, "%s runs rank %d of job %d: "
					 "a rank cannot join a node where ranks "
					 "it talks to run (their connections "
					 "would have both ends on one host)",
					 t->name, r->rank, m->j.id);
			return -EINVAL;
		}
	}
	return 0;
}

static int lock(struct move *m, bool on, char *err, size_t errlen)
{
	int *ranks = xcalloc(m->rep->n ? m->rep->n : 1, sizeof(*ranks));
	int ret;

	for (size_t i = 0; i < m->rep->n; i++)
		ranks[i] = m->rep->r[i].rank;
	ret = on ? jobclient_lock(m->j.id, m->self, ranks, m->rep->n, err, errlen) :
	      jobclient_unlock(m->j.id, m->self, ranks, m->rep->n, err, errlen);
	free(ranks);
	return ret;
}

/* The destination with room for N ranks needing NEED_KB (the emptiest
 * first), or NULL with every refusal in WHY. */
static struct target *choose(struct move *m, size_t n, uint64_t need_kb,
			     char *why, size_t len)
{
	struct target *best = NULL;
	size_t used = 0, best_free = 0;

	why[0] = '\0';
	for (size_t i = 0; i < m->nt; i++) {
		struct target *t = &m->t[i];
		char r[MOVER_TEXT];
		size_t have = t->slots > 0 ? (size_t)t->slots :
			      (size_t)(t->probe.cpus > 0 ? t->probe.cpus : 1);

		if (t->why[0])
			snprintf(r, sizeof(r), "%s", t->why);
		else if (plan_room(&t->probe, t->slots, t->used, n, need_kb, r,
				   sizeof(r)) == 0 &&
			 (!best || have - t->used > best_free)) {
			best = t;
			best_free = have - t->used;
			continue;
		} else if (!r[0]) {
			continue;
		}
		used += (size_t)snprintf(why + used, len > used ? len - used : 0,
					 "%s%s: %s", used ? "; " : "", t->name, r);
	}
	return best;
}

/* Every group of the source node S whose ranks are to move. */
static void move_node(struct move *m, const char *src)
{
	struct plan_source s;
	char *pids = xstrdup("");

	say(m, "job %d: on %s: looking at its ranks", m->j.id, src);
	if (probe_source(m, src, &s)) {
		free(pids);
		plan_source_free(&s);
		return;
	}
	for (size_t i = 0; i < s.n; i++) {
		char *more;

		if (!result(m, s.t[i].rank) || s.t[i].gone)
			continue;
		more = xasprintf("%s%s%s", pids, *pids ? "," : "", s.t[i].pids);
		free(pids);
		pids = more;
	}
	for (size_t i = 0; i < m->nt; i++)
		probe_target(m, &m->t[i], pids);
	free(pids);
	for (size_t g = 0; g < s.n; g++) {
		struct member mb[64];
		size_t n = 0;
		uint64_t rss = 0;
		bool partial = false;
		char why_buf[MOVER_TEXT], names[256] = "";
		struct target *t;

		if (s.t[g].group != g)
			continue;
		for (size_t i = g; i < s.n && n < 64; i++) {
			struct mover_result *r;

			if (s.t[i].group != g)
				continue;
			r = result(m, s.t[i].rank);
			partial |= !r;
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 "%s%d", *names ? ", " : "", s.t[i].rank);
			if (!r)
				continue;
			if (s.t[i].gone) {
				fail(r, "its process %d is not on %s",
				     (int)s.t[i].root, src);
				continue;
			}
			mb[n].tree = &s.t[i];
			mb[n].res = r;
			mb[n].dir = xasprintf("%s/job-%d/rank-%d.%ld", m->j.ckpt_dir,
					      m->j.id, r->rank, m->stamp);
			rss += s.t[i].rss_kb;
			n++;
		}
		if (!n)
			continue;
		if (partial)
			for (size_t i = 0; i < n; i++)
				fail(mb[i].res, "ranks %s are connected through "
				     "%s itself, which racks cannot carry "
				     "between hosts: they move together "
				     "(rackckpt migrate %d %s --to NODE, or "
				     "rackckpt evacuate %s)", names, src,
				     m->j.id, names, src);
		t = partial ? NULL : choose(m, n, plan_need_kb(rss), why_buf,
					    sizeof(why_buf));
		if (!partial && !t)
			for (size_t i = 0; i < n; i++)
				fail(mb[i].res, "no destination takes rank(s) %s "
				     "(from %s): %s", names, src, why_buf);
		if (t) {
			t->used += n;
			for (size_t i = 0; i < n; i++)
				snprintf(mb[i].res->to, JOB_NAME, "%s", t->name);
			say(m, "rank(s) %s: %s -> %s", names, src, t->name);
			move_group(m, src, t, mb, n);
		} else {
			say(m, "rank(s) %s stay on %s: %s", names, src,
			    mb[0].res->error);
		}
		for (size_t i = 0; i < n; i++)
			free(mb[i].dir);
	}
	plan_source_free(&s);
}

int mover_run(const struct mover_opts *o, const struct mover_ops *ops,
	      struct mover_report *rep, char *err, size_t errlen)
{
	struct move m = { .o = o, .ops = ops, .rep = rep, .self = getpid() };
	int ret;

	memset(rep, 0, sizeof(*rep));
	rep->job = o->job;
	m.stamp = (long)time(NULL);
	ret = jobclient_get(o->job, &m.j, err, errlen);
	if (ret)
		return ret;
	if (m.j.ended) {
		snprintf(err, errlen, "job %d has ended", o->job);
		ret = -ESRCH;
		goto out;
	}
	ret = parse_targets(&m, err, errlen);
	if (!ret)
		ret = select_ranks(&m, err, errlen);
	if (!ret && !rep->n) {
		say(&m, "job %d has no rank on %s: nothing to move", m.j.id,
		    o->from);
		goto out;
	}
	if (!ret)
		ret = check_targets(&m, err, errlen);
	if (!ret)
		ret = lock(&m, true, err, errlen);
	if (ret)
		goto out;
	for (size_t i = 0; i < rep->n; i++) {
		bool first = true;

		/* Node by node, in the order of their first rank. */
		for (size_t k = 0; k < i; k++)
			first &= strcmp(rep->r[k].from, rep->r[i].from) != 0;
		if (first)
			move_node(&m, rep->r[i].from);
	}
	if (lock(&m, false, err, errlen))
		say(&m, "the job's controller did not unlock the ranks: %s", err);
	err[0] = '\0';
	for (size_t i = 0; i < rep->n; i++)
		if (!rep->r[i].ok)
			ret = -EAGAIN;
out:
	/* Refused before any was tried: that is each rank's reason too. */
	for (size_t i = 0; ret && err[0] && i < rep->n; i++)
		if (!rep->r[i].ok && !rep->r[i].error[0])
			snprintf(rep->r[i].error, sizeof(rep->r[i].error), "%s", err);
	free(m.t);
	jobinfo_free(&m.j);
	return ret;
}

void mover_report_free(struct mover_report *rep)
{
	free(rep->r);
	rep->r = NULL;
	rep->n = 0;
}
