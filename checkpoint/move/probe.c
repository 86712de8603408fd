// SPDX-License-Identifier: GPL-2.0-only
#include "probe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "criu.h"
#include "loaddr.h"
#include "managed.h"
#include "pinfo.h"
#include "procsock.h"
#include "util.h"

/* MemAvailable of /proc/meminfo, in kB (0 if unknown). */
static uint64_t mem_available(void)
{
	char *text = util_read_file("/proc/meminfo", NULL), *p;
	unsigned long long kb = 0;

	if (text && (p = strstr(text, "MemAvailable:")))
		sscanf(p + 13, "%llu", &kb);
	free(text);
	return kb;
}

static void node(const struct probe_opts *o)
{
	char host[256] = "?", a[ADDR_STRLEN], err[1024];
	struct criu c;
	struct addr addr;

	gethostname(host, sizeof(host) - 1);
	printf("host=%s\n", host);
	if (loaddr_first_global(&addr) == 0)
		printf("addr=%s\n", addr_format(&addr, a, sizeof(a)));
	printf("cpus=%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("mem_available_kb=%" PRIu64 "\n", mem_available());
	if (managed_ping(o->sock, err, sizeof(err)) == 0)
		printf("rackd=ok\n");
	else
		printf("rackd=down %s\n", err);
	if (criu_find(o->criu, &c, err, sizeof(err)) == 0) {
		printf("criu=%s\n", c.version);
		criu_free(&c);
	} else {
		printf("criu=missing %s\n", err);
	}
}

/* A pid a restore here needs is held by someone else. */
static void taken(const struct probe_opts *o)
{
	for (size_t i = 0; i < o->npids; i++) {
		struct pinfo pi;

		/* Where hosts share a pid namespace, the process itself
		 * still runs on its node: its start time says so. */
		if (pinfo_read(o->pids[i].pid, &pi) == 0 &&
		    pi.start != o->pids[i].start)
			printf("taken=%d %s\n", (int)o->pids[i].pid, pi.comm);
	}
}

/* Whether some network connection of A ends at a socket of B. */
static bool linked(const struct procsock_set *a, const struct procsock_set *b)
{
	for (size_t i = 0; i < a->n; i++) {
		if (a->socks[i].kind != PROCSOCK_NETWORK)
			continue;
		for (size_t j = 0; j < b->n; j++)
			if (endpoint_equal(&a->socks[i].remote, &b->socks[j].local) &&
			    endpoint_equal(&a->socks[i].local, &b->socks[j].remote))
				return true;
	}
	return false;
}

static void trees(const struct probe_opts *o)
{
	struct procsock_set *s = xcalloc(o->ntrees ? o->ntrees : 1, sizeof(*s));
	bool *ok = xcalloc(o->ntrees ? o->ntrees : 1, sizeof(*ok));
	char err[512];

	for (size_t i = 0; i < o->ntrees; i++) {
		uint64_t rss = 0;

		if (procsock_scan(o->trees[i], &s[i], err, sizeof(err)) < 0 ||
		    !s[i].npids) {
			printf("gone=%d\n", (int)o->trees[i]);
			continue;
		}
		ok[i] = true;
		for (size_t k = 0; k < s[i].npids; k++) {
			struct pinfo pi;

			if (pinfo_read(s[i].pids[k], &pi) == 0)
				rss += pi.rss_kb;
		}
		printf("tree=%d rss_kb=%" PRIu64 " pids=", (int)o->trees[i], rss);
		for (size_t k = 0; k < s[i].npids; k++) {
			struct pinfo pi;

			if (pinfo_read(s[i].pids[k], &pi) == 0)
				printf("%s%d:%" PRIu64, k ? "," : "",
				       (int)s[i].pids[k], pi.start);
		}
		printf("\n");
	}
	for (size_t i = 0; i < o->ntrees; i++)
		for (size_t j = i + 1; j < o->ntrees; j++)
			if (ok[i] && ok[j] &&
			    (linked(&s[i], &s[j]) || linked(&s[j], &s[i])))
				printf("link=%d %d\n", (int)o->trees[i],
				       (int)o->trees[j]);
	for (size_t i = 0; i < o->ntrees; i++)
		procsock_set_free(&s[i]);
	free(s);
	free(ok);
}

int probe_main(const struct probe_opts *o)
{
	node(o);
	taken(o);
	trees(o);
	return fflush(stdout) == 0 ? 0 : EXIT_REFUSED;
}
