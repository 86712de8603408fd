// SPDX-License-Identifier: GPL-2.0-only
#include "plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Each line of OUT to FN. */
static void each_line(const char *out, void (*fn)(const char *, void *),
		      void *arg)
{
	char *copy = xstrdup(out), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		fn(l, arg);
	free(copy);
}

static void copy(char *dst, const char *v)
{
	snprintf(dst, PLAN_TEXT, "%s", v);
}

static void node_line(const char *l, void *arg)
{
	struct plan_node *p = arg;
	const char *eq = strchr(l, '=');
	unsigned long long v;

	if (!eq)
		return;
	p->answered = true;
	if (!strncmp(l, "host=", 5))
		copy(p->host, eq + 1);
	else if (!strncmp(l, "addr=", 5))
		copy(p->addr, eq + 1);
	else if (!strncmp(l, "cpus=", 5))
		p->cpus = atoi(eq + 1);
	else if (!strncmp(l, "mem_available_kb=", 17) &&
		 sscanf(eq + 1, "%llu", &v) == 1)
		p->mem_kb = v;
	else if (!strncmp(l, "rackd=", 6)) {
		p->rackd_ok = !strcmp(eq + 1, "ok");
		if (!p->rackd_ok)
			copy(p->rackd_why, eq + 1 + strcspn(eq + 1, " ") +
			     (eq[1 + strcspn(eq + 1, " ")] ? 1 : 0));
	} else if (!strncmp(l, "criu=", 5)) {
		p->criu_ok = strncmp(eq + 1, "missing", 7) != 0;
		if (!p->criu_ok)
			copy(p->criu_why, eq + 1 + 7 + (eq[8] == ' '));
	} else if (!strncmp(l, "taken=", 6)) {
		size_t len = strlen(p->taken);

		snprintf(p->taken + len, PLAN_TEXT - len, "%s%s",
			 len ? ", " : "", eq + 1);
	}
}

void plan_parse_node(const char *out, struct plan_node *p)
{
	memset(p, 0, sizeof(*p));
	each_line(out, node_line, p);
}

static struct plan_tree *tree(struct plan_source *s, long root)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].root == root)
			return &s->t[i];
	return NULL;
}

static void source_line(const char *l, void *arg)
{
	struct plan_source *s = arg;
	unsigned long long rss;
	long a, b;
	struct plan_tree *t;
	int at;

	if (sscanf(l, "tree=%ld rss_kb=%llu pids=%n", &a, &rss, &at) == 2 &&
	    (t = tree(s, a))) {
		t->rss_kb = rss;
		snprintf(t->pids, sizeof(t->pids), "%s", l + at);
	} else if (sscanf(l, "gone=%ld", &a) == 1 && (t = tree(s, a))) {
		t->gone = true;
	} else if (sscanf(l, "link=%ld %ld", &a, &b) == 2 && tree(s, a) &&
		   tree(s, b)) {
		s->links = xrealloc(s->links, (s->nlinks + 1) * sizeof(*s->links));
		s->links[s->nlinks][0] = (size_t)(tree(s, a) - s->t);
		s->links[s->nlinks++][1] = (size_t)(tree(s, b) - s->t);
	}
}

void plan_parse_source(const char *out, struct plan_source *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->t[i].gone = false;
	each_line(out, source_line, s);
	/* A tree the probe did not describe is not there. */
	for (size_t i = 0; i < s->n; i++)
		if (!s->t[i].pids[0])
			s->t[i].gone = true;
}

void plan_source_free(struct plan_source *s)
{
	free(s->t);
	free(s->links);
	s->t = NULL;
	s->links = NULL;
	s->n = s->nlinks = 0;
}

static size_t find(struct plan_source *s, size_t i)
{
	while (s->t[i].group != i)
		i = s->t[i].group = s->t[s->t[i].group].group;
	return i;
}

void plan_groups(struct plan_source *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->t[i].group = i;
	for (size_t k = 0; k < s->nlinks; k++) {
		size_t a = find(s, s->links[k][0]), b = find(s, s->links[k][1]);

		/* The lower index leads: groups keep the trees' order. */
		if (a < b)
			s->t[b].group = a;
		else if (b < a)
			s->t[a].group = b;
	}
	for (size_t i = 0; i < s->n; i++)
		s->t[i].group = find(s, i);
}

uint64_t plan_need_kb(uint64_t rss_kb)
{
	/* CRIU maps the images while it restores: a tenth more, and room
	 * for CRIU itself. */
	return rss_kb + rss_kb / 10 + 16 * 1024;
}

int plan_room(const struct plan_node *p, int slots, size_t used, size_t n,
	      uint64_t need_kb, char *why, size_t len)
{
	size_t have = slots > 0 ? (size_t)slots : (size_t)(p->cpus > 0 ? p->cpus : 1);

	if (!p->answered) {
		snprintf(why, len, "it did not answer");
		return -EHOSTUNREACH;
	}
	if (!p->rackd_ok) {
		snprintf(why, len, "no rackd runs there (%s)", p->rackd_why);
		return -ECONNREFUSED;
	}
	if (!p->criu_ok) {
		snprintf(why, len, "no usable CRIU there (%s)", p->criu_why);
		return -ENOENT;
	}
	if (used + n > have) {
		snprintf(why, len, "no room: %zu rank(s) to place, %zu of its "
			 "%zu slot(s) free%s", n, have - (used < have ? used : have),
			 have, slots > 0 ? "" : " (one per CPU)");
		return -ENOSPC;
	}
	if (p->mem_kb < need_kb) {
		snprintf(why, len, "no room: %" PRIu64 " MiB of memory needed, "
			 "%" PRIu64 " MiB available", need_kb / 1024,
			 p->mem_kb / 1024);
		return -ENOMEM;
	}
	if (p->taken[0]) {
		snprintf(why, len, "no room: pid(s) that CRIU must restore are "
			 "taken there: %s", p->taken);
		return -EEXIST;
	}
	return 0;
}
