// SPDX-License-Identifier: GPL-2.0-only
/*
 * disorder: a middlebox for the test-bed's router that delays, duplicates
 * and reorders chosen TCP segments (the test machines' kernel has no
 * netem). It serves an NFQUEUE that the router's forward chain feeds TCP
 * segments to (nfqbox.c: no bypass, a dead disorder stalls every flow).
 *
 * Usage: disorder [--queue NUM] [--seed N] [--log FILE] [--stats FILE]
 *		   --rule SPEC [--rule SPEC ...] TABLE CHAIN
 *
 * Each segment is of one kind:
 *	syn_opt	   a SYN carrying option 254 (racks' offer, a reconnection)
 *	syn	   a plain SYN
 *	synack_opt a SYN-ACK carrying option 254
 *	synack	   a plain SYN-ACK
 *	ack	   the handshake's third segment (plain, zero-length, acking
 *		   the SYN-ACK: the first such of its flow)
 *	setup	   racks' set-up messages (KEY, CONFIRM, DONE: zero-length
 *		   segments with option 254)
 *	message	   any other zero-length segment with option 254
 *		   (heartbeats, ADOPT, ...)
 *	data	   a segment with payload
 *	other	   the rest (pure ACKs, FINs, RSTs)
 * and the aliases: handshake (syn_opt syn synack_opt synack ack), racks
 * (setup message), all.
 *
 * A rule, "key=value" pairs separated by commas, picks segments and says
 * what happens to them:
 *	kinds=K[+K...]	the kinds it looks at (required)
 *	prob=P		picks each with probability P % (default 100)
 *	every=N		picks every Nth it looks at (default 1)...
 *	skip=K		...after the first K (default 0)
 *	count=M		picks M at the most (default: no limit)
 *	delay=MS	holds the segment MS ms (its verdict waits; segments
 *			behind it overtake it: a reordering)
 *	jitter=MS	plus 0 to MS ms at random, for the segment and its
 *			copies alike
 *	dup=N		sends N copies of it besides (raw sockets in R, so
 *			they cross R's output hooks, not its forward chain)
 *	dup_delay=MS	the copies leave MS ms after the segment came
 *			(default 0: right after it)
 *	next=before|after  holds the segment (delay= at the most) until
 *			the next segment of its direction comes, then lets
 *			it go just ahead of that one, or just behind it:
 *			two segments side by side, in a chosen order (one
 *			such segment a direction at a time; another is
 *			only delayed)
 * A segment goes through the rules in order: each rule that looks at its
 * kind counts it (matched), and the first that picks it acts (acted).
 * Segments held leave in order of due time, then arrival; nothing is
 * dropped. --seed makes prob and jitter repeatable (default 1).
 *
 * Appends "counter queue num NUM" (default 8) to chain CHAIN of table
 * inet TABLE, which the caller made; prints READY and serves until
 * SIGTERM or SIGINT, then lets what it holds go. SIGUSR1 and the exit
 * write the counters as JSON to the stats FILE (atomically, with a
 * "generation" that counts the writes): per kind, the segments seen,
 * passed at once, delayed, duplicated (copies sent) and reordered (left
 * after a later segment of their direction); per rule, matched and
 * acted. --log gets one line per segment it acted on.
 *
 * The queue copies whole packets, and GSO packets come segmented, with
 * their checksums complete: a copy is a valid packet.
 */
#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "disorder.h"
#include "nfqbox.h"

#define COPY_RANGE 0xffff
#define MAX_RULES 16
#define MAX_FLOWS 65536
#define MAX_DUP 16

/* racks' set-up messages (edp/option.h): KEY, CONFIRM, DONE. */
#define EDP_KEY 3
#define EDP_DONE 5

static const char *const kind_names[DK_MAX] = {
	[DK_SYN_OPT] = "syn_opt", [DK_SYN] = "syn",
	[DK_SYNACK_OPT] = "synack_opt", [DK_SYNACK] = "synack",
	[DK_ACK] = "ack", [DK_SETUP] = "setup", [DK_MESSAGE] = "message",
	[DK_DATA] = "data", [DK_OTHER] = "other",
};

static const struct {
	const char *name;
	uint32_t kinds;
} kind_aliases[] = {
	{ "handshake", 1u << DK_SYN_OPT | 1u << DK_SYN | 1u << DK_SYNACK_OPT |
		       1u << DK_SYNACK | 1u << DK_ACK },
	{ "racks", 1u << DK_SETUP | 1u << DK_MESSAGE },
	{ "all", (1u << DK_MAX) - 1 },
};

struct rule {
	char spec[256];
	uint32_t kinds;
	double prob;
	uint64_t every, skip, count;
	uint32_t delay, jitter, dup, dup_delay;
	enum dis_next next;
	uint64_t matched, acted;
};

struct kind_stats {
	uint64_t seen, passed, delayed, duplicated, reordered;
};

struct disorder {
	struct nfqbox *queue;
	struct dhold *hold;
	struct rule rules[MAX_RULES];
	size_t nrules;
	struct kind_stats kinds[DK_MAX];
	FILE *log;
	const char *stats_path;
	uint16_t num;
	int raw4, raw6;
	uint64_t seed, rng, arrivals, generation, not_tcp, held_max,
		 inject_errors;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* xorshift64*: repeatable choices for a given --seed. */
static uint64_t rnd(struct disorder *d)
{
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return d->rng * 0x2545f4914f6cdd1dull;
}

/* --- what a segment is ------------------------------------------------- */

static bool handshake_ack(const struct dflow *f, int from,
			  const struct nfqbox_segment *s)
{
	return f && from == 0 && s->len == 0 && !s->racks &&
	       (s->flags & (TH_SYN | TH_ACK | TH_RST | TH_FIN)) == TH_ACK &&
	       (f->seen & (DF_SYN | DF_SYNACK | DF_ACK)) ==
	       (DF_SYN | DF_SYNACK) && s->seq == f->isn[0] + 1 &&
	       s->ack == f->isn[1] + 1;
}

/* S's kind; its flow learns the handshake. */
static enum dis_kind classify(struct dflow *f, int from,
			      const struct nfqbox_segment *s)
{
	uint8_t synack = s->flags & (TH_SYN | TH_ACK | TH_RST);

	if (synack == TH_SYN || synack == (TH_SYN | TH_ACK)) {
		bool is_synack = synack != TH_SYN;

		/* End 0 is the SYN's sender when the SYN came first. */
		if (f && from == (is_synack ? 1 : 0)) {
			f->isn[from] = s->seq;
			f->seen |= is_synack ? DF_SYNACK : DF_SYN;
		}
		if (is_synack)
			return s->racks ? DK_SYNACK_OPT : DK_SYNACK;
		return s->racks ? DK_SYN_OPT : DK_SYN;
	}
	if (s->racks && s->len == 0)
		return s->racks_type >= EDP_KEY && s->racks_type <= EDP_DONE ?
			DK_SETUP : DK_MESSAGE;
	if (handshake_ack(f, from, s)) {
		f->seen |= DF_ACK;
		return DK_ACK;
	}
	return s->len ? DK_DATA : DK_OTHER;
}

/* --- rules --------------------------------------------------------------- */

static int parse_kinds(char *val, uint32_t *kinds)
{
	char *save, *k;

	*kinds = 0;
	for (k = strtok_r(val, "+", &save); k; k = strtok_r(NULL, "+", &save)) {
		uint32_t bit = 0;

		for (int i = 0; i < DK_MAX; i++)
			if (!strcmp(k, kind_names[i]))
				bit = 1u << i;
		for (size_t i = 0; i < sizeof(kind_aliases) /
		     sizeof(kind_aliases[0]); i++)
			if (!strcmp(k, kind_aliases[i].name))
				bit = kind_aliases[i].kinds;
		if (!bit)
			return -EINVAL;
		*kinds |= bit;
	}
	return *kinds ? 0 : -EINVAL;
}

static int parse_number(const char *val, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(val, &end);
	return errno || *end || end == val || *out < 0 || *out > max ?
		-EINVAL : 0;
}

static void rule_parse(struct rule *r, const char *spec)
{
	static const struct {
		const char *key;
		size_t off;
		double max;
	} fields[] = {
		{ "every", offsetof(struct rule, every), 1e9 },
		{ "skip", offsetof(struct rule, skip), 1e9 },
		{ "count", offsetof(struct rule, count), 1e9 },
		{ "delay", offsetof(struct rule, delay), 600000 },
		{ "jitter", offsetof(struct rule, jitter), 600000 },
		{ "dup", offsetof(struct rule, dup), MAX_DUP },
		{ "dup_delay", offsetof(struct rule, dup_delay), 600000 },
	};
	char buf[256], *save, *item;

	if (snprintf(r->spec, sizeof(r->spec), "%s", spec) >=
	    (int)sizeof(r->spec))
		errx(1, "rule too long: %s", spec);
	memcpy(buf, r->spec, sizeof(buf));
	r->prob = 100;
	r->every = 1;
	for (item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *val = strchr(item, '=');
		bool known = false;
		double v;

		if (!val)
			errx(1, "rule '%s': '%s' is no key=value", spec, item);
		*val++ = '\0';
		if (!strcmp(item, "kinds")) {
			if (parse_kinds(val, &r->kinds))
				errx(1, "rule '%s': unknown kind", spec);
			continue;
		}
		if (!strcmp(item, "next")) {
			if (!strcmp(val, "before"))
				r->next = DN_BEFORE;
			else if (!strcmp(val, "after"))
				r->next = DN_AFTER;
			else
				errx(1, "rule '%s': next is before or after",
				     spec);
			continue;
		}
		if (!strcmp(item, "prob")) {
			if (parse_number(val, 100, &r->prob))
				errx(1, "rule '%s': prob is a percentage", spec);
			continue;
		}
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			if (strcmp(item, fields[i].key))
				continue;
			if (parse_number(val, fields[i].max, &v) ||
			    v != (double)(uint64_t)v)
				errx(1, "rule '%s': %s takes a whole number up "
				     "to %g", spec, item, fields[i].max);
			if (fields[i].off == offsetof(struct rule, every) ||
			    fields[i].off == offsetof(struct rule, skip) ||
			    fields[i].off == offsetof(struct rule, count))
				*(uint64_t *)((char *)r + fields[i].off) =
					(uint64_t)v;
			else
				*(uint32_t *)((char *)r + fields[i].off) =
					(uint32_t)v;
			known = true;
		}
		if (!known)
			errx(1, "rule '%s': unknown key '%s'", spec, item);
	}
	if (!r->kinds)
		errx(1, "rule '%s': kinds= is required", spec);
	if (!r->every)
		errx(1, "rule '%s': every is at least 1", spec);
	if (!r->delay && !r->jitter && !r->dup)
		errx(1, "rule '%s' does nothing: give delay, jitter or dup",
		     spec);
	if (r->next && !r->delay)
		errx(1, "rule '%s': next= needs delay= (the longest hold)",
		     spec);
}

/* Whether rule R, which looks at this segment's kind, picks it. */
static bool rule_picks(struct disorder *d, struct rule *r)
{
	uint64_t i = r->matched++;

	if (i < r->skip || (i - r->skip) % r->every)
		return false;
	if (r->count && r->acted >= r->count)
		return false;
	if (r->prob < 100 && (double)(rnd(d) % 1000000) >= r->prob * 10000)
		return false;
	r->acted++;
	return true;
}

/* --- releasing and injecting ------------------------------------------------ */

/* An original leaves: overtaken if a later one of its direction left
 * before it. */
static void release(struct disorder *d, const struct dheld *e)
{
	nfqbox_verdict(d->queue, e->id, true);
	if (!e->flow)
		return;
	if (e->arrival + 1 < e->flow->released[e->from])
		d->kinds[e->kind].reordered++;
	else
		e->flow->released[e->from] = e->arrival + 1;
}

static void inject(struct disorder *d, const struct dheld *e)
{
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} to = { 0 };
	socklen_t tolen;
	int fd;

	if (e->pkt[0] >> 4 == 4) {
		to.v4.sin_family = AF_INET;
		memcpy(&to.v4.sin_addr, e->pkt + 16, 4);
		tolen = sizeof(to.v4);
		fd = d->raw4;
	} else {
		to.v6.sin6_family = AF_INET6;
		memcpy(&to.v6.sin6_addr, e->pkt + 24, 16);
		tolen = sizeof(to.v6);
		fd = d->raw6;
	}
	if (sendto(fd, e->pkt, e->len, 0, (struct sockaddr *)&to, tolen) !=
	    (ssize_t)e->len) {
		d->inject_errors++;
		warn("injecting a copy of a %s", kind_names[e->kind]);
	}
}

static void hold(struct disorder *d, const struct dheld *e)
{
	/* Out of memory, a test tool stops: its flows stall, and show. */
	if (dhold_push(d->hold, e))
		errx(1, "no memory to hold a segment");
	if (dhold_count(d->hold) > d->held_max)
		d->held_max = dhold_count(d->hold);
}

static void log_action(struct disorder *d, const struct nfqbox_segment *s,
		       enum dis_kind kind, const struct rule *r,
		       uint32_t extra)
{
	static const char *const next[] = { "", " or next", " or after next" };
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	int af = s->family == 4 ? AF_INET : AF_INET6;

	if (!d->log)
		return;
	inet_ntop(af, s->saddr, a, sizeof(a));
	inet_ntop(af, s->daddr, b, sizeof(b));
	fprintf(d->log, "%" PRIu64 " %s %s%s%s:%u > %s%s%s:%u seq %u ack %u "
		"len %u delay %u%s dup %u dup_delay %u\n", now_ms(),
		kind_names[kind], af == AF_INET6 ? "[" : "", a,
		af == AF_INET6 ? "]" : "", s->sport, af == AF_INET6 ? "[" : "",
		b, af == AF_INET6 ? "]" : "", s->dport, s->seq, s->ack, s->len,
		r->delay + extra, next[r->next], r->dup, r->dup_delay + extra);
	fflush(d->log);
}

/* Rule R acts on a segment: it is held, copied, or both. */
static void act(struct disorder *d, const struct rule *r, struct dheld *e,
		const uint8_t *pkt, size_t len, const struct nfqbox_segment *s)
{
	uint32_t extra = r->jitter ? (uint32_t)(rnd(d) % (r->jitter + 1)) : 0;
	uint64_t now = e->due_ms;

	log_action(d, s, e->kind, r, extra);
	for (uint32_t i = 0; i < r->dup; i++) {
		struct dheld copy = *e;

		copy.due_ms = now + r->dup_delay + extra;
		copy.pkt = malloc(len);
		copy.len = len;
		if (!copy.pkt)
			err(1, "malloc");
		memcpy(copy.pkt, pkt, len);
		d->kinds[e->kind].duplicated++;
		hold(d, &copy);
	}
	if (r->delay + extra) {
		e->due_ms = now + r->delay + extra;
		d->kinds[e->kind].delayed++;
		if (r->next && e->flow && !e->flow->waiting[e->from]) {
			e->next = r->next;
			e->flow->waiter[e->from] = *e;
			e->flow->waiting[e->from] = true;
		}
		hold(d, e);
	} else {
		d->kinds[e->kind].passed++;
		release(d, e);
	}
}

/* A segment through the rules: the first that picks it acts. */
static void judge(struct disorder *d, struct dheld *e, const uint8_t *pkt,
		  size_t len, const struct nfqbox_segment *s)
{
	for (size_t i = 0; i < d->nrules; i++) {
		struct rule *r = &d->rules[i];

		if ((r->kinds & 1u << e->kind) && rule_picks(d, r)) {
			act(d, r, e, pkt, len, s);
			return;
		}
	}
	d->kinds[e->kind].passed++;
	release(d, e);
}

/* The segment that waited for the next one of its direction leaves (its
 * deadline in the heap then finds it gone). */
static void release_waiter(struct disorder *d, struct dflow *f, int from)
{
	f->waiting[from] = false;
	release(d, &f->waiter[from]);
}

static void packet(void *arg, uint32_t id, const uint8_t *pkt, size_t caplen,
		   size_t wirelen, const struct nfqbox_segment *s)
{
	struct disorder *d = arg;
	struct dheld e = { .id = id, .due_ms = now_ms() };
	enum dis_next waiter = DN_NONE;

	if (!s || caplen < wirelen) {
		/* No TCP segment (a fragment), or not whole: passed. */
		d->not_tcp++;
		nfqbox_verdict(d->queue, id, true);
		return;
	}
	e.arrival = d->arrivals++;
	e.flow = dhold_flow(d->hold, s, &e.from);
	e.kind = classify(e.flow, e.from, s);
	d->kinds[e.kind].seen++;
	if (e.flow && e.flow->waiting[e.from])
		waiter = e.flow->waiter[e.from].next;
	if (waiter == DN_BEFORE)
		release_waiter(d, e.flow, e.from);
	judge(d, &e, pkt, caplen, s);
	if (waiter == DN_AFTER)
		release_waiter(d, e.flow, e.from);
}

static int timeout(void *arg)
{
	struct disorder *d = arg;
	uint64_t due, now;

	if (!dhold_next(d->hold, &due))
		return -1;
	now = now_ms();
	return due <= now ? 0 : (int)(due - now);
}

static void due(void *arg)
{
	struct disorder *d = arg;
	uint64_t now = now_ms();
	struct dheld e;

	while (dhold_pop(d->hold, now, &e)) {
		if (e.pkt) {
			inject(d, &e);
			free(e.pkt);
		} else if (!e.next) {
			release(d, &e);
		} else if (e.flow->waiting[e.from] &&
			   e.flow->waiter[e.from].arrival == e.arrival) {
			/* No next segment came in time. */
			release_waiter(d, e.flow, e.from);
		}
	}
}

/* --- statistics ----------------------------------------------------------- */

static void stats_write(void *arg)
{
	struct disorder *d = arg;
	uint64_t untracked;
	size_t flows = dhold_flows(d->hold, &untracked);
	FILE *f;

	if (!d->stats_path || !(f = nfqbox_stats_open(d->stats_path)))
		return;
	fprintf(f, "{\"generation\": %" PRIu64 ", \"seed\": %" PRIu64 ", ",
		++d->generation, d->seed);
	nfqbox_counters_json(d->queue, f);
	fprintf(f, ", \"not_tcp\": %" PRIu64 ", \"held\": %zu, \"held_max\": %"
		PRIu64 ", \"inject_errors\": %" PRIu64 ", \"flows\": %zu, \"flows_untracked\": %" PRIu64
		", \"kinds\": {", d->not_tcp, dhold_count(d->hold),
		d->held_max, d->inject_errors, flows, untracked);
	for (int k = 0; k < DK_MAX; k++) {
		const struct kind_stats *ks = &d->kinds[k];

		fprintf(f, "%s\"%s\": {\"seen\": %" PRIu64 ", \"passed\": %"
			PRIu64 ", \"delayed\": %" PRIu64 ", \"duplicated\": %"
			PRIu64 ", \"reordered\": %" PRIu64 "}", k ? ", " : "",
			kind_names[k], ks->seen, ks->passed, ks->delayed,
			ks->duplicated, ks->reordered);
	}
	fputs("}, \"rules\": [", f);
	for (size_t i = 0; i < d->nrules; i++)
		fprintf(f, "%s{\"rule\": \"%s\", \"matched\": %" PRIu64
			", \"acted\": %" PRIu64 "}", i ? ", " : "",
			d->rules[i].spec, d->rules[i].matched,
			d->rules[i].acted);
	fputs("]}\n", f);
	nfqbox_stats_close(f, d->stats_path);
}

/* --- main ---------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: disorder [--queue NUM] [--seed N] [--log FILE] "
		"[--stats FILE] --rule SPEC [--rule SPEC ...] TABLE CHAIN\n");
	exit(1);
}

static long whole(const char *val, long max, const char *what)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(val, &end, 10);
	if (errno || *end || end == val || n < 0 || n > max)
		errx(1, "invalid %s '%s'", what, val);
	return n;
}

static void options(int argc, char **argv, struct disorder *d,
		    const char **log_path)
{
	static const struct option longopts[] = {
		{ "queue", required_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 's' },
		{ "log", required_argument, NULL, 'l' },
		{ "stats", required_argument, NULL, 'o' },
		{ "rule", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	d->num = 8;
	d->seed = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			d->num = (uint16_t)whole(optarg, 65535, "queue number");
			break;
		case 's':
			d->seed = (uint64_t)whole(optarg, 0x7fffffffL, "seed");
			break;
		case 'l':
			*log_path = optarg;
			break;
		case 'o':
			d->stats_path = optarg;
			break;
		case 'r':
			if (d->nrules == MAX_RULES)
				errx(1, "at most %d rules", MAX_RULES);
			rule_parse(&d->rules[d->nrules++], optarg);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2 || !d->nrules)
		usage();
	/* xorshift must not start at zero. */
	d->rng = d->seed * 0x9e3779b97f4a7c15ull + 1;
}

int main(int argc, char **argv)
{
	static const struct nfqbox_ops ops = {
		.packet = packet,
		.timeout = timeout,
		.due = due,
		.stats = stats_write,
	};
	struct disorder d = { 0 };
	const char *log_path = NULL, *how;
	struct dheld e;

	options(argc, argv, &d, &log_path);
	if (log_path && !(d.log = fopen(log_path, "a")))
		err(1, "%s", log_path);
	d.raw4 = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	d.raw6 = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (d.raw4 < 0 || d.raw6 < 0)
		err(1, "raw sockets");
	d.hold = dhold_new(MAX_FLOWS);
	/* Bind before the rule exists: no packet meets a queue without a
	 * listener (which, without bypass, would drop it). */
	d.queue = nfqbox_open(d.num, COPY_RANGE, false);
	how = nfqbox_rule_add(d.queue, argv[optind], argv[optind + 1]);
	stats_write(&d);
	printf("READY %s\n", how);
	fflush(stdout);
	nfqbox_run(d.queue, &ops, &d);
	/* Let go what is held: the originals pass, copies are not sent. */
	while (dhold_pop(d.hold, UINT64_MAX, &e)) {
		if (e.pkt)
			free(e.pkt);
		else if (!e.next || (e.flow->waiting[e.from] &&
				     e.flow->waiter[e.from].arrival ==
				     e.arrival))
			nfqbox_verdict(d.queue, e.id, true);
	}
	nfqbox_free(d.queue);
	dhold_free(d.hold);
	close(d.raw4);
	close(d.raw6);
	if (d.log)
		fclose(d.log);
	return 0;
}
