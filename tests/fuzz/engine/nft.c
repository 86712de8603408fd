// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fake nftables for the stateful fuzzer: the scripts rackd's real
 * writers produce (nft/ruleset.c, splicemap.c, adoptset.c, flowset.c)
 * are interpreted into the table's sets, maps and chain flags, with the
 * kernel's rules that matter to rackd:
 *  - a script is one transaction: all of it or nothing;
 *  - deleting an element that is not there (or expired) fails it with
 *    ENOENT, adding a map element with another value with EBUSY;
 *  - flow-set elements expire by themselves after their timeout.
 * The network (net.c) then diverts and rewrites segments as the rules in
 * force would, and the invariants compare the sets with rackd's books.
 * Failures are injected on demand (fz_nft_fail()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "flowset.h"
#include "log.h"
#include "ruleset.h"
#include "wrap.h"

#define NFT_MAX_ELEMS 384
#define NFT_KEY_MAX 112
#define NFT_VAL_MAX 48

struct elem {
	uint32_t hash;		/* of set and key: most lookups stop there */
	char set[16];
	char key[NFT_KEY_MAX];
	char val[NFT_VAL_MAX];
	uint64_t expires;	/* monotonic ms, 0: never */
};

struct table {
	bool present;
	struct fz_chains chains;
	unsigned n;
	struct elem e[NFT_MAX_ELEMS];
};

bool fz_nft_failed;
struct fz_chains fz_chains;
bool fz_table;
struct fz_rules fz_rules;

static struct table tbl, work;
static unsigned fail_kinds, fail_count;
static char errbuf[256];

void fz_nft_fail(unsigned kinds, unsigned count)
{
	fail_kinds = kinds;
	fail_count = count;
}

static bool failing(unsigned kind)
{
	if (!(fail_kinds & kind) || !fail_count)
		return false;
	fail_count--;
	fz_nft_failed = true;
	fz_trace("nft: injected failure (kind %u)", kind);
	return true;
}

static void publish(void)
{
	fz_chains = tbl.chains;
	fz_table = tbl.present;
}

/* ---- elements ---- */

static bool live(const struct elem *e)
{
	return !e->expires || e->expires > fz_now;
}

static uint32_t hash_of(const char *set, const char *key)
{
	uint32_t h = 2166136261u;

	for (; *set; set++)
		h = (h ^ (uint8_t)*set) * 16777619u;
	for (; *key; key++)
		h = (h ^ (uint8_t)*key) * 16777619u;
	return h;
}

static struct elem *find(struct table *t, const char *set, const char *key)
{
	uint32_t h = hash_of(set, key);

	for (unsigned i = 0; i < t->n; i++)
		if (t->e[i].hash == h && !strcmp(t->e[i].set, set) &&
		    !strcmp(t->e[i].key, key))
			return &t->e[i];
	return NULL;
}

static void drop_elem(struct table *t, struct elem *e)
{
	*e = t->e[--t->n];
}

static int add_elem(struct table *t, const char *set, const char *key,
		    const char *val, uint64_t timeout)
{
	struct elem *e = find(t, set, key);

	if (e && live(e) && strcmp(e->val, val))
		return -EBUSY;
	if (!e) {
		FZ_CHECK(t->n < NFT_MAX_ELEMS, "fake nft: table full");
		e = &t->e[t->n++];
		snprintf(e->set, sizeof(e->set), "%s", set);
		snprintf(e->key, sizeof(e->key), "%s", key);
		e->hash = hash_of(e->set, e->key);
	} else if (live(e)) {
		return 0;	/* "add" keeps an element that is there */
	}
	snprintf(e->val, sizeof(e->val), "%s", val);
	e->expires = timeout ? fz_now + timeout : 0;
	return 0;
}

static int del_elem(struct table *t, const char *set, const char *key)
{
	struct elem *e = find(t, set, key);

	if (!e || !live(e))
		return -ENOENT;
	drop_elem(t, e);
	return 0;
}

static void key_of(char *buf, size_t size, const struct endpoint *a,
		   const struct endpoint *b)
{
	char x[ADDR_STRLEN], y[ADDR_STRLEN];

	snprintf(buf, size, "%s . %u . %s . %u",
		 addr_format(&a->addr, x, sizeof(x)), a->port,
		 addr_format(&b->addr, y, sizeof(y)), b->port);
}

static const char *lookup(const char *set, const char *key)
{
	struct elem *e = find(&tbl, set, key);

	return e && live(e) ? e->val : NULL;
}

static bool has_flow(const char *name, const struct endpoint *local,
		     const struct endpoint *remote)
{
	char set[16], key[NFT_KEY_MAX];

	snprintf(set, sizeof(set), "%s%c", name,
		 local->addr.family == AF_INET6 ? '6' : '4');
	key_of(key, sizeof(key), local, remote);
	return lookup(set, key) != NULL;
}

/* ---- scripts ---- */

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

/* "{ a, b : c, d timeout 10000ms }" after "add|delete element inet racks
 * NAME": each element added or deleted. */
static int elements(struct table *t, bool add, char *rest)
{
	char *name = strtok_r(rest, " ", &rest), *open, *close, *one, *save;
	int ret = 0;

	open = strchr(rest, '{');
	close = strrchr(rest, '}');
	if (!name || !open || !close || close < open)
		return -EINVAL;
	*close = '\0';
	for (one = strtok_r(open + 1, ",", &save); one && !ret;
	     one = strtok_r(NULL, ",", &save)) {
		char *val = strstr(one, " : "), *timeout = strstr(one, " timeout ");
		uint64_t ms = 0;

		if (val) {
			*val = '\0';
			val += 3;
		}
		if (timeout) {
			*timeout = '\0';
			ms = strtoull(timeout + 9, NULL, 10);
		}
		one = trim(one);
		ret = add ? add_elem(t, name, one, val ? trim(val) : "", ms)
			  : del_elem(t, name, one);
	}
	return ret;
}

static void rule(struct table *t, const char *chain, const char *rest)
{
	struct fz_chains *c = &t->chains;

	if (!strcmp(chain, "output")) {
		c->held_out |= strstr(rest, "@held") != NULL;
		c->adopt_out |= strstr(rest, "@adopt") != NULL;
	} else if (!strcmp(chain, "prerouting")) {
		c->held_in |= strstr(rest, "@held") != NULL;
		c->splice_in |= strstr(rest, "@in4_laddr") != NULL;
	} else if (!strcmp(chain, "splice_out")) {
		c->splice_out |= strstr(rest, "@out4_rport") != NULL;
	}
}

static void flush(struct table *t, const char *chain)
{
	struct fz_chains *c = &t->chains;

	if (!strcmp(chain, "output"))
		c->held_out = c->adopt_out = false;
	else if (!strcmp(chain, "prerouting"))
		c->held_in = c->splice_in = false;
	else if (!strcmp(chain, "splice_out"))
		c->splice_out = false;
}

#define TABLE " inet racks"

/* Whether *L starts with PREFIX; if so *L moves past it. */
static bool starts(char **l, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(*l, prefix, n))
		return false;
	*l += n;
	return true;
}

static int line(struct table *t, char *l)
{
	l = trim(l);
	if (!*l)
		return 0;
	if (!strcmp(l, "add table" TABLE)) {
		t->present = true;
		return 0;
	}
	if (!strcmp(l, "delete table" TABLE)) {
		if (!t->present)
			return -ENOENT;
		memset(t, 0, sizeof(*t));
		return 0;
	}
	if (!t->present)
		return -ENOENT;
	if (starts(&l, "flush chain" TABLE " ")) {
		flush(t, l);
		return 0;
	}
	if (starts(&l, "add rule" TABLE " ")) {
		char *chain = strtok_r(l, " ", &l);

		if (!chain || !l)
			return -EINVAL;
		rule(t, chain, l);
		return 0;
	}
	if (starts(&l, "add element" TABLE " "))
		return elements(t, true, l);
	if (starts(&l, "delete element" TABLE " "))
		return elements(t, false, l);
	FZ_CHECK(false, "fake nft cannot read: %s", l);
	return -EINVAL;
}

/* One transaction: applied to a copy, kept only if every line is. */
static int run(struct table *base, const char *script)
{
	char *copy = xstrdup(script), *save, *l;
	int ret = 0;

	work = *base;
	for (l = strtok_r(copy, "\n", &save); l && !ret;
	     l = strtok_r(NULL, "\n", &save)) {
		char text[160];

		snprintf(text, sizeof(text), "%s", l);
		ret = line(&work, l);
		if (ret)
			snprintf(errbuf, sizeof(errbuf), "Error: Could not "
				 "process rule: %s: %s", strerror(-ret), text);
	}
	if (!ret)
		*base = work;
	free(copy);
	return ret;
}

/* ---- libnftables, as wrap_nft.c's ruleset.c calls it ---- */

struct nft_ctx {
	int unused;
};
static struct nft_ctx the_ctx;

struct nft_ctx *fz_nft_ctx_new(uint32_t flags)
{
	(void)flags;
	errbuf[0] = '\0';
	return &the_ctx;
}

void fz_nft_ctx_free(struct nft_ctx *ctx)
{
	(void)ctx;
}

int fz_nft_ctx_buffer_output(struct nft_ctx *ctx)
{
	(void)ctx;
	return 0;
}

int fz_nft_ctx_buffer_error(struct nft_ctx *ctx)
{
	(void)ctx;
	return 0;
}

const char *fz_nft_ctx_get_output_buffer(struct nft_ctx *ctx)
{
	(void)ctx;
	return "";
}

const char *fz_nft_ctx_get_error_buffer(struct nft_ctx *ctx)
{
	(void)ctx;
	return errbuf;
}

int fz_nft_run_cmd_from_buffer(struct nft_ctx *ctx, const char *buf)
{
	int ret;

	(void)ctx;
	if (failing(FZ_NFT_RUN)) {
		snprintf(errbuf, sizeof(errbuf), "Error: injected failure");
		return -1;
	}
	ret = run(&tbl, buf);
	fz_trace("nft: script %s\n%s", ret ? "FAILED" : "ok", buf);
	publish();
	return ret ? -1 : 0;
}

/* A new table, with STATE in its transaction (reload and start-up); the
 * table script itself is the golden test's. */
int ruleset_install(const struct config *cfg, enum queue_mode mode,
		    const char *state, enum queue_mode *used,
		    bool *replaced, char *err, size_t errlen)
{
	struct table fresh = { .present = true };

	char *script = ruleset_script(cfg, true);

	/* The base chains' rules come from ruleset_chains_write(), which
	 * this interprets; of the table script's own, the network needs
	 * two facts. */
	fz_rules.strict = strstr(script, "chain divert_strict") != NULL;
	fz_rules.probe_fin_marked =
		strstr(script, "== fin meta mark != ") != NULL;
	free(script);
	if (failing(FZ_NFT_INSTALL)) {
		snprintf(err, errlen, "injected failure");
		return -EINVAL;
	}
	if (state && run(&fresh, state)) {
		snprintf(err, errlen, "%s", errbuf);
		return -EINVAL;
	}
	*replaced = tbl.present;
	*used = mode == QUEUE_MODE_XT ? QUEUE_MODE_XT : QUEUE_MODE_NATIVE;
	tbl = fresh;
	publish();
	return 0;
}

/* ---- the flow sets (offered, adopt): element messages ---- */

static uint8_t the_flowset;

int flowset_open(struct flowset **fs)
{
	*fs = (struct flowset *)&the_flowset;
	return 0;
}

void flowset_close(struct flowset *fs)
{
	(void)fs;
}

int flowset_update(struct flowset *fs, const char *name,
		   const struct flowset_flow *flows, unsigned n,
		   uint32_t timeout_ms, bool add)
{
	int ret = 0;

	(void)fs;
	if (failing(strcmp(name, "offered") ? FZ_NFT_ADOPT : FZ_NFT_OFFER))
		return -EIO;
	if (!tbl.present)
		return -ENOENT;
	for (unsigned i = 0; i < n; i++) {
		char set[16], key[NFT_KEY_MAX];
		int r;

		snprintf(set, sizeof(set), "%s%c", name,
			 flows[i].local.addr.family == AF_INET6 ? '6' : '4');
		key_of(key, sizeof(key), &flows[i].local, &flows[i].remote);
		/* Deletions go on past an expired element (flowset.c). */
		r = add ? add_elem(&tbl, set, key, "", timeout_ms)
			: del_elem(&tbl, set, key);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

/* ---- what the network and the invariants ask ---- */

bool fz_nft_held(const struct endpoint *local, const struct endpoint *remote)
{
	return has_flow("held", local, remote);
}

bool fz_nft_adopting(const struct endpoint *local,
		     const struct endpoint *remote)
{
	return has_flow("adopt", local, remote);
}

bool fz_nft_offered(const struct endpoint *local,
		    const struct endpoint *remote)
{
	return has_flow("offered", local, remote);
}

unsigned fz_nft_held_count(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < tbl.n; i++)
		n += !strncmp(tbl.e[i].set, "held", 4);
	return n;
}

static bool parse_addr(const char *s, int family, struct addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = (uint8_t)family;
	return inet_pton(family, s, a->bytes) == 1;
}

/* One step of a splice: the map's value for KEY, an address or a port. */
static const char *step(const char *map, int fam, const struct addr *a,
			uint16_t ap, const struct addr *b, uint16_t bp)
{
	char set[16], key[NFT_KEY_MAX];
	struct endpoint x = { *a, ap }, y = { *b, bp };

	snprintf(set, sizeof(set), map, fam == AF_INET6 ? '6' : '4');
	key_of(key, sizeof(key), &x, &y);
	return lookup(set, key);
}

/* Outgoing, as the rules of splice_out do it (splicemap.h). */
bool fz_nft_splice_out(struct endpoint *src, struct endpoint *dst)
{
	int fam = src->addr.family;
	const char *v;

	if (!tbl.chains.splice_out)
		return false;
	v = step("out%c_rport", fam, &src->addr, src->port, &dst->addr,
		 dst->port);
	if (!v)
		return false;
	dst->port = (uint16_t)strtoul(v, NULL, 10);
	v = step("out%c_raddr", fam, &src->addr, src->port, &dst->addr,
		 dst->port);
	if (v)
		FZ_CHECK(parse_addr(v, fam, &dst->addr), "map value %s", v);
	v = step("out%c_laddr", fam, &src->addr, src->port, &dst->addr,
		 dst->port);
	if (v)
		FZ_CHECK(parse_addr(v, fam, &src->addr), "map value %s", v);
	return true;
}

/* Incoming, as the prerouting rules do it: the wire's tuple, remote end
 * first, back to the socket's. */
bool fz_nft_splice_in(struct endpoint *src, struct endpoint *dst)
{
	int fam = src->addr.family;
	const char *v;

	if (!tbl.chains.splice_in)
		return false;
	v = step("in%c_laddr", fam, &src->addr, src->port, &dst->addr,
		 dst->port);
	if (!v)
		return false;
	FZ_CHECK(parse_addr(v, fam, &dst->addr), "map value %s", v);
	v = step("in%c_raddr", fam, &src->addr, src->port, &dst->addr,
		 dst->port);
	if (v)
		FZ_CHECK(parse_addr(v, fam, &src->addr), "map value %s", v);
	v = step("in%c_rport", fam, &src->addr, src->port, &dst->addr,
		 dst->port);
	if (v)
		src->port = (uint16_t)strtoul(v, NULL, 10);
	return true;
}

bool fz_nft_spliced(const struct endpoint *local, const struct endpoint *remote,
		    struct endpoint *wire_local, struct endpoint *wire_remote)
{
	struct fz_chains saved = tbl.chains;
	bool found;

	*wire_local = *local;
	*wire_remote = *remote;
	tbl.chains.splice_out = true;	/* the maps, rules or not */
	found = fz_nft_splice_out(wire_local, wire_remote);
	tbl.chains = saved;
	return found;
}

unsigned fz_nft_splice_count(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < tbl.n; i++)
		n += !strncmp(tbl.e[i].set, "out", 3) &&
		     strstr(tbl.e[i].set, "_rport") != NULL;
	return n;
}

void fz_nft_reset(void)
{
	memset(&tbl, 0, sizeof(tbl));
	fail_kinds = fail_count = 0;
	fz_nft_failed = false;
	publish();
}
