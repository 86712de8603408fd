// SPDX-License-Identifier: GPL-2.0-only
#include "step.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobclient.h"
#include "util.h"

/* Probes answer at once; a dump or restore takes a second or so. */
#define PROBE_TIMEOUT 30.0
#define ABORT_TIMEOUT 30.0

void step_say(struct move *m, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (m->ops && m->ops->progress)
		m->ops->progress(line, m->ops->arg);
}

struct mover_result *step_result(struct move *m, int rank)
{
	for (size_t i = 0; i < m->rep->n; i++)
		if (m->rep->r[i].rank == rank)
			return &m->rep->r[i];
	return NULL;
}

void step_fail(struct mover_result *r, const char *fmt, ...)
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
const char *step_why(const struct remote_result *res, char *buf, size_t len)
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
int step_on_node(struct move *m, const char *node, const char *const *args,
		   double timeout, remote_line_fn fn, void *arg,
		   struct remote_result *res)
{
	size_t n = 0, count = 0;
	char **words;
	int ret;

	while (args[count])
		count++;
	words = xcalloc(count + 2, sizeof(*words));
	words[n++] = m->j.rackckpt;
	for (size_t i = 0; args[i]; i++)
		words[n++] = (char *)args[i];
	ret = remote_run(m->j.rsh, node, words, timeout, fn, arg, res);
	free(words);
	if (ret) {
		res->status = -1;
		if (!res->err)
			res->err = xstrdup("");
	}
	return ret;
}

/* CMD DIR... of the members: free() it (not the strings). */
static const char **dir_args(const char *cmd, const struct member *mb, size_t n)
{
	const char **args = xcalloc(n + 2, sizeof(*args));

	args[0] = cmd;
	for (size_t i = 0; i < n; i++)
		args[i + 1] = mb[i].dir;
	return args;
}

/* --- what the nodes say --------------------------------------------- */

/* Every running rank of the job on NODE, probed there. */
int step_probe_source(struct move *m, const char *node, struct plan_source *s)
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
	step_on_node(m, node, args, PROBE_TIMEOUT, NULL, NULL, &res);
	free(roots);
	if (!remote_ok(&res)) {
		step_say(m, "node %s does not answer: %s", node,
		    step_why(&res, why_buf, sizeof(why_buf)));
		for (size_t i = 0; i < s->n; i++)
			step_fail(step_result(m, s->t[i].rank), "its node %s does not "
			     "answer: %s", node, why_buf);
		remote_result_free(&res);
		return -EHOSTUNREACH;
	}
	plan_parse_source(res.out, s);
	plan_groups(s);
	remote_result_free(&res);
	return 0;
}

void step_probe_target(struct move *m, struct target *t, const char *pids)
{
	struct remote_result res;
	const char *args[] = { "probe", "--pids", pids, NULL };
	char why_buf[MOVER_TEXT];

	if (!*pids)
		args[1] = NULL;
	step_on_node(m, t->name, args, PROBE_TIMEOUT, NULL, NULL, &res);
	plan_parse_node(remote_ok(&res) ? res.out : "", &t->probe);
	if (!t->probe.answered)
		snprintf(t->why, sizeof(t->why), "it does not answer (%s)",
			 step_why(&res, why_buf, sizeof(why_buf)));
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
		step_say(rr->m, "rank %d: restored on %s in %.3f s", mb->res->rank,
		    rr->node, a);
	} else if (sscanf(line, "process %d: %zu connection(s) connected again "
			  "%lf s after the dump started (restore took %lf s)",
			  &pid, &conns, &a, &b) == 4 && (mb = by_root(rr, pid))) {
		mb->connected = true;
		mb->res->downtime_s = a;
		step_say(rr->m, "rank %d: %zu connection(s) connected again %.3f s "
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
	const char **args = dir_args("restore", mb, n);
	struct restore_read rr = { mb, n, m, node };

	for (size_t i = 0; i < n; i++)
		mb[i].committed = mb[i].connected = false;
	step_on_node(m, node, args, m->o->timeout, restore_line, &rr, res);
	free(args);
	return remote_ok(res) ? 0 : -EIO;
}

static void set_node(struct move *m, struct member *mb, const char *node,
		     const char *addr)
{
	char err[512];

	snprintf(mb->res->node, sizeof(mb->res->node), "%s", node);
	if (jobclient_moved(m->j.id, m->self, mb->res->rank, node, addr,
			    mb->res->downtime_s, err, sizeof(err)))
		step_say(m, "rank %d: the job's controller did not note where it "
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
	const char **args = dir_args("abort", mb, n);
	struct remote_result res;
	char why_buf[MOVER_TEXT], st[64];

	if (dst) {
		/* Its host may be gone: then so is anything it restored. */
		step_on_node(m, dst, args, ABORT_TIMEOUT, NULL, NULL, &res);
		if (!remote_ok(&res))
			step_say(m, "cleaning up on %s: %s (%s)", dst,
			    remote_status_str(&res, st, sizeof(st)),
			    step_why(&res, why_buf, sizeof(why_buf)));
		remote_result_free(&res);
	}
	free(args);
	step_say(m, "restoring rank(s) on %s, where they ran", src);
	if (restore_on(m, src, mb, n, &res) == 0) {
		for (size_t i = 0; i < n; i++) {
			snprintf(mb[i].res->node, sizeof(mb[i].res->node),
				 "%s", src);
			step_say(m, "rank %d: runs on %s again (stopped for %.3f s)",
			    mb[i].res->rank, src, mb[i].res->downtime_s);
		}
	} else {
		step_why(&res, why_buf, sizeof(why_buf));
		for (size_t i = 0; i < n; i++) {
			if (mb[i].committed) {
				snprintf(mb[i].res->node, sizeof(mb[i].res->node),
					 "%s", src);
				continue;
			}
			mb[i].res->stopped = true;
			snprintf(mb[i].res->node, sizeof(mb[i].res->node), "-");
			step_say(m, "rank %d: restoring it on %s failed too (%s): it "
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
		step_on_node(m, src, args, m->o->timeout, dumped_line, x, &res);
		free(with);
		ret = remote_ok(&res) ? 0 : -EIO;
		if (ret) {
			step_why(&res, why_buf, sizeof(why_buf));
			for (size_t i = 0; i < n; i++)
				step_fail(mb[i].res, "%srank %d's dump on %s failed: %s",
				     i == *done ? "" : "with it, ", x->res->rank,
				     src, why_buf);
			step_say(m, "rank %d: dump on %s failed: %s", x->res->rank, src,
			    why_buf);
		} else {
			step_say(m, "rank %d: checkpointed on %s in %.3f s (%zu "
			    "connection(s))", x->res->rank, src, x->res->dump_s,
			    x->res->conns);
		}
		remote_result_free(&res);
		if (ret)
			return ret;
	}
	return 0;
}

void step_move_group(struct move *m, const char *src, struct target *t,
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
			step_say(m, "rank %d: now on %s (downtime %.3f s)",
			    mb[i].res->rank, t->name, mb[i].res->downtime_s);
		}
		remote_result_free(&res);
		if (n > 1) {
			const char **args = dir_args("unlock", mb, n);

			step_on_node(m, src, args, PROBE_TIMEOUT, NULL, NULL, &res);
			free(args);
			if (!remote_ok(&res))
				step_say(m, "removing CRIU's locks on %s: %s", src,
				    step_why(&res, why_buf, sizeof(why_buf)));
			remote_result_free(&res);
		}
		for (size_t i = 0; i < n && !m->o->keep; i++)
			nftw(mb[i].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return;
	}
	step_why(&res, why_buf, sizeof(why_buf));
	for (size_t i = 0; i < n; i++)
		all_committed &= mb[i].committed;
	if (all_committed) {
		/* It runs there: its connections are late, or lost. */
		for (size_t i = 0; i < n; i++) {
			set_node(m, &mb[i], t->name, t->probe.addr);
			step_fail(mb[i].res, "restored on %s, but: %s", t->name,
			     why_buf);
		}
		step_say(m, "restored on %s, but: %s", t->name, why_buf);
		remote_result_free(&res);
		return;
	}
	remote_status_str(&res, st, sizeof(st));
	for (size_t i = 0; i < n; i++)
		step_fail(mb[i].res, "restore on %s failed (%s)%s%s", t->name, st,
		     strstr(why_buf, " without a word") ? "" : ": ",
		     strstr(why_buf, " without a word") ? "" : why_buf);
	step_say(m, "restore on %s failed (%s)%s%s", t->name, st,
	    strstr(why_buf, " without a word") ? "" : ": ",
	    strstr(why_buf, " without a word") ? "" : why_buf);
	remote_result_free(&res);
	back_to_source(m, src, t->name, mb, n);
}
