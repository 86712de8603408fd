// SPDX-License-Identifier: GPL-2.0-only
#include "mover.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobclient.h"
#include "plan.h"
#include "step.h"
#include "util.h"

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
		if (!step_result(m, o->ranks[x])) {
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
			if (step_result(m, r->rank))
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

	step_say(m, "job %d: on %s: looking at its ranks", m->j.id, src);
	if (step_probe_source(m, src, &s)) {
		free(pids);
		plan_source_free(&s);
		return;
	}
	for (size_t i = 0; i < s.n; i++) {
		char *more;

		if (!step_result(m, s.t[i].rank) || s.t[i].gone)
			continue;
		more = xasprintf("%s%s%s", pids, *pids ? "," : "", s.t[i].pids);
		free(pids);
		pids = more;
	}
	for (size_t i = 0; i < m->nt; i++)
		step_probe_target(m, &m->t[i], pids);
	free(pids);
	for (size_t g = 0; g < s.n; g++) {
		struct member *mb;
		size_t n = 0;
		uint64_t rss = 0;
		bool partial = false;
		char why_buf[MOVER_TEXT], names[256] = "", list[256] = "";
		struct target *t;

		if (s.t[g].group != g)
			continue;
		mb = xcalloc(s.n, sizeof(*mb));
		for (size_t i = g; i < s.n; i++) {
			struct mover_result *r;

			if (s.t[i].group != g)
				continue;
			r = step_result(m, s.t[i].rank);
			partial |= !r;
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 "%s%d", *names ? ", " : "", s.t[i].rank);
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%d", *list ? "," : "", s.t[i].rank);
			if (!r)
				continue;
			if (s.t[i].gone) {
				step_fail(r, "its process %d is not on %s",
				     (int)s.t[i].root, src);
				continue;
			}
			mb[n].tree = &s.t[i];
			mb[n].res = r;
			mb[n].dir = xasprintf("%s/job-%d/rank-%d.%ld-%d",
					      m->j.ckpt_dir, m->j.id, r->rank,
					      m->stamp, (int)m->self);
			rss += s.t[i].rss_kb;
			n++;
		}
		if (!n) {
			free(mb);
			continue;
		}
		if (partial)
			for (size_t i = 0; i < n; i++)
				step_fail(mb[i].res, "ranks %s are connected through "
				     "%s itself, which racks cannot carry "
				     "between hosts: they move together "
				     "(rackckpt migrate %d %s --to NODE, or "
				     "rackckpt evacuate %s)", names, src,
				     m->j.id, list, src);
		t = partial ? NULL : choose(m, n, plan_need_kb(rss), why_buf,
					    sizeof(why_buf));
		if (!partial && !t)
			for (size_t i = 0; i < n; i++)
				step_fail(mb[i].res, "no destination takes rank(s) %s "
				     "(from %s): %s", names, src, why_buf);
		if (t) {
			t->used += n;
			for (size_t i = 0; i < n; i++)
				snprintf(mb[i].res->to, JOB_NAME, "%s", t->name);
			step_say(m, "rank(s) %s: %s -> %s", names, src, t->name);
			step_move_group(m, src, t, mb, n);
		} else {
			step_say(m, "rank(s) %s stay on %s: %s", names, src,
			    mb[0].res->error);
		}
		for (size_t i = 0; i < n; i++)
			free(mb[i].dir);
		free(mb);
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
		step_say(&m, "job %d has no rank on %s: nothing to move", m.j.id,
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
		step_say(&m, "the job's controller did not unlock the ranks: %s", err);
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
