// SPDX-License-Identifier: GPL-2.0-only
#include "restore.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "criu.h"
#include "managed.h"
#include "nftable.h"
#include "util.h"

struct restore {
	const struct restore_opts *o;
	struct criu criu;
	struct ckpt *c;
	size_t n;
	char guard[48];		/* the fence's table, while it stands */
	double t0;
};

static void put_rule(FILE *f, const struct endpoint *from,
		     const struct endpoint *to)
{
	char a[ADDR_STRLEN], b[ADDR_STRLEN];
	const char *ip = from->addr.family == AF_INET ? "ip" : "ip6";

	fprintf(f, "\t\t%s saddr %s %s daddr %s tcp sport %u tcp dport %u "
		"counter drop\n", ip, addr_format(&from->addr, a, sizeof(a)),
		ip, addr_format(&to->addr, b, sizeof(b)), from->port, to->port);
}

/*
 * The connections between the group's trees (conn=... along in their
 * info) carry nothing until every tree is back: a segment from a tree
 * restored first to one not yet restored would draw a reset from this
 * host. Dropped segments are merely retransmitted.
 */
static int fence(struct restore *r)
{
	struct endpoint l, rem;
	size_t len, rules = 0;
	char *text, err[512];
	FILE *f = open_memstream(&text, &len);
	int ret = 0;

	if (!f)
		util_fatal("out of memory");
	snprintf(r->guard, sizeof(r->guard), "inet rackckpt-fence-%d",
		 (int)getpid());
	fprintf(f, "table %s {\n\tchain out {\n\t\ttype filter hook output "
		"priority -350; policy accept;\n", r->guard);
	for (size_t i = 0; i < r->n && !ret; i++) {
		size_t pos = 0;

		while ((ret = image_next_along(&r->c[i].info, &pos, &l, &rem)) > 0) {
			put_rule(f, &l, &rem);
			put_rule(f, &rem, &l);
			rules++;
		}
	}
	fprintf(f, "\t}\n}\n");
	if (fclose(f))
		util_fatal("out of memory");
	if (ret < 0)
		util_err("a bad conn line in %s", IMAGE_INFO);
	else if (rules && (ret = nftable_load(text, err, sizeof(err))) < 0)
		util_err("cannot fence the group's own connections: %s", err);
	if (ret || !rules)
		r->guard[0] = '\0';
	else
		util_debug("%zu connection(s) inside the group fenced off "
			   "(table %s)", rules, r->guard);
	free(text);
	return ret < 0 ? ret : 0;
}

static void unfence(struct restore *r)
{
	char err[256];

	if (r->guard[0] && nftable_delete(r->guard, err, sizeof(err)))
		util_err("could not delete table %s: %s", r->guard, err);
	r->guard[0] = '\0';
}

/* Read every directory and check that each tree could be restored. */
static int check(struct restore *r)
{
	double deadline = util_mono() + 3;
	int ret = 0;

	for (size_t i = 0; i < r->n && !ret; i++) {
		ret = ckpt_load(&r->c[i], r->o->dirs[i], r->o->sock);
		r->c[i].group = r->c;
		r->c[i].ngroup = r->n;
		for (size_t j = 0; !ret && j < i; j++)
			if (r->c[j].root == r->c[i].root) {
				util_err("%s and %s hold the same process",
					 r->o->dirs[j], r->o->dirs[i]);
				ret = -EINVAL;
			}
	}
	for (size_t i = 0; i < r->n && !ret; i++)
		ret = ckpt_pids_free(&r->c[i], deadline);
	for (size_t i = 0; i < r->n && !ret; i++) {
		char err[512];

		if (!r->c[i].has_relay)
			continue;
		ret = bridge_connect(&r->c[i].bridge, err, sizeof(err));
		if (!ret) {
			char *images = image_path(r->c[i].dir, IMAGE_IMAGES);

			ret = bridge_refill(&r->c[i].bridge, images, err,
					    sizeof(err));
			free(images);
		}
		if (ret)
			util_err("%s", err);
	}
	return ret;
}

static enum ckpt_mode mode(const struct restore *r, const struct ckpt *c)
{
	if (r->o->wait)
		return CKPT_WAIT;
	return c->has_relay ? CKPT_DETACHED : CKPT_PLAIN;
}

/* Everything up to the trees running; undone whole on failure. */
static int bring_back(struct restore *r)
{
	int ret = 0;

	for (size_t i = 0; i < r->n && !ret; i++) {
		ret = ckpt_import(&r->c[i]);
		if (!ret)
			ret = ckpt_add_addresses(&r->c[i]);
		if (!ret)
			ckpt_drop_lock(&r->c[i]);
	}
	if (!ret)
		ret = fence(r);
	for (size_t i = 0; i < r->n && !ret; i++)
		ret = ckpt_run_criu(&r->c[i], &r->criu, mode(r, &r->c[i]));
	if (ret) {
		for (size_t i = 0; i < r->n; i++) {
			ckpt_kill(&r->c[i]);
			ckpt_undo(&r->c[i]);
		}
		unfence(r);
		return ret;
	}
	unfence(r);
	/* Committed: from here on the trees run here. */
	for (size_t i = 0; i < r->n; i++) {
		printf("process %d restored from %s in %.3f s\n",
		       (int)r->c[i].root, r->c[i].dir, r->c[i].took);
		bridge_close_child_ends(&r->c[i].bridge);
	}
	fflush(stdout);
	return 0;
}

int restore_main(const struct restore_opts *o)
{
	struct restore r = { .o = o, .n = o->ndirs };
	char err[1024];
	int ret, code = 0;

	r.t0 = util_mono();
	r.c = xcalloc(o->ndirs, sizeof(*r.c));
	ret = criu_find(o->criu, &r.criu, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = managed_ping(o->sock, err, sizeof(err));
	if (ret) {
		util_err("%s", err);
		goto refuse;
	}
	ret = check(&r);
	if (ret)
		goto refuse;
	ret = bring_back(&r);
	if (ret) {
		util_err("restore failed; nothing of it is left running");
		goto out;
	}
	for (size_t i = 0; i < r.n && !ret; i++)
		ret = ckpt_reconnect(&r.c[i]);
	for (size_t i = 0; i < r.n && !ret; i++)
		ret = ckpt_wait_connected(&r.c[i], o->timeout, r.t0);
	if (!ret && o->wait)
		code = ckpt_keep(&r.c[0]);
	goto out;
refuse:
	util_err("restore refused; nothing changed");
out:
	for (size_t i = 0; i < r.n; i++)
		ckpt_free(&r.c[i]);
	free(r.c);
	criu_free(&r.criu);
	return ret ? EXIT_REFUSED : code;
}
