// SPDX-License-Identifier: GPL-2.0-only
/*
 * wintrack: a window-tracking middlebox for the test-bed's router. It
 * serves an NFQUEUE that the router's forward chain feeds every TCP
 * segment to and judges each one as OpenBSD pf's state tracking does
 * (wintrack_track.c): a flow exists only once its SYN was seen, and a
 * segment whose sequence or acknowledgment number lies outside the window
 * seen so far is dropped. Tests prove with it that a TCP flow, and racks'
 * messages riding on it, pass a firewall that tracks windows.
 *
 * Usage: wintrack [--strict] [--queue NUM] [--log FILE] [--stats FILE]
 *		   TABLE CHAIN
 *	Appends "counter queue num NUM" (default 7) to chain CHAIN of table
 *	inet TABLE, which the caller made, natively or as the xt NFQUEUE
 *	target, and WITHOUT bypass: were wintrack to die or hang, the flows
 *	stall, so a test fails closed rather than passing unjudged. Prints
 *	READY, then serves the queue until SIGTERM or SIGINT. Each drop is
 *	one line on FILE (default stderr): why, flow, flags, seq, ack, len,
 *	window, "racks" when the segment carries option 254, and both ends'
 *	tracking state. SIGUSR1 and the exit write the counters as JSON to
 *	the stats FILE (atomically: written aside, then renamed), with a
 *	"generation" that counts the writes. --strict also checks the
 *	sequence numbers of segments without data, which pf lets by. The
 *	rule stays after exit: the table's owner removes it.
 *
 * The queue copies headers only (256 bytes) and takes GSO packets whole
 * (NFQA_CFG_F_GSO), so a bulk transfer costs one trip per super-packet.
 * The queue's plumbing is nfqbox.c's, shared with disorder.c.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "nfqbox.h"
#include "wintrack.h"

#define COPY_RANGE 256

struct wintrack {
	struct nfqbox *queue;
	struct wtrack *track;
	FILE *log;
	const char *stats_path;
	const char *mode;
	uint16_t num;
	uint64_t generation, unparsed;
};

static void packet(void *arg, uint32_t id, const uint8_t *pkt, size_t caplen,
		   size_t wirelen, const struct nfqbox_segment *seg)
{
	struct wintrack *w = arg;

	(void)pkt, (void)caplen, (void)wirelen;
	if (seg) {
		enum wtrack_verdict v = wtrack_segment(w->track, seg, w->log);

		nfqbox_verdict(w->queue, id, wtrack_verdict_accepts(v));
	} else {
		/* Not pf's business (fragments), or unreadable: passed,
		 * and counted so that a test sees it. */
		w->unparsed++;
		nfqbox_verdict(w->queue, id, true);
	}
}

/* --- statistics ----------------------------------------------------------- */

static void stats_write(void *arg)
{
	struct wintrack *w = arg;
	const struct wtrack_stats *st = wtrack_stats(w->track);
	uint64_t accepted = 0, dropped = 0;
	FILE *f;

	if (!w->stats_path || !(f = nfqbox_stats_open(w->stats_path)))
		return;
	for (int v = 0; v < WT_MAX; v++)
		*(wtrack_verdict_accepts(v) ? &accepted : &dropped) +=
			st->verdicts[v];
	fprintf(f, "{\"generation\": %" PRIu64 ", \"mode\": \"%s\", ",
		++w->generation, w->mode);
	nfqbox_counters_json(w->queue, f);
	fprintf(f, ", \"accepted\": %" PRIu64
		", \"dropped\": %" PRIu64 ", \"not_judged\": %" PRIu64
		", \"racks_accepted\": %" PRIu64 ", \"racks_dropped\": %" PRIu64
		", \"flows_created\": %" PRIu64 ", \"flows_reused\": %" PRIu64
		", \"bytes\": %" PRIu64 ", \"gso_packets\": %" PRIu64
		", \"max_len\": %" PRIu64 ", \"verdicts\": {",
		accepted + w->unparsed, dropped, w->unparsed,
		st->racks_accepted, st->racks_dropped, st->flows,
		st->flows_reused, st->bytes, st->gso, st->max_len);
	for (int v = 0; v < WT_MAX; v++)
		fprintf(f, "%s\"%s\": %" PRIu64, v ? ", " : "",
			wtrack_verdict_name(v), st->verdicts[v]);
	fputs("}, \"flows\": ", f);
	wtrack_flows_json(w->track, f, 1000);
	fputs("}\n", f);
	nfqbox_stats_close(f, w->stats_path);
}

/* --- main ---------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: wintrack [--strict] [--queue NUM] [--log FILE] "
		"[--stats FILE] TABLE CHAIN\n");
	exit(1);
}

static void options(int argc, char **argv, struct wintrack *w, bool *strict,
		    const char **log_path)
{
	static const struct option longopts[] = {
		{ "strict", no_argument, NULL, 's' },
		{ "queue", required_argument, NULL, 'q' },
		{ "log", required_argument, NULL, 'l' },
		{ "stats", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long num;
	int c;

	w->num = 7;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			*strict = true;
			break;
		case 'q':
			errno = 0;
			num = strtol(optarg, &end, 10);
			if (errno || *end || num < 0 || num > 65535)
				errx(1, "invalid queue number '%s'", optarg);
			w->num = (uint16_t)num;
			break;
		case 'l':
			*log_path = optarg;
			break;
		case 'o':
			w->stats_path = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
}

int main(int argc, char **argv)
{
	static const struct nfqbox_ops ops = {
		.packet = packet,
		.stats = stats_write,
	};
	struct wintrack w = { 0 };
	const char *log_path = NULL, *how;
	bool strict = false;

	options(argc, argv, &w, &strict, &log_path);
	w.mode = strict ? "strict" : "pf";
	w.log = log_path ? fopen(log_path, "a") : stderr;
	if (!w.log)
		err(1, "%s", log_path);
	w.track = wtrack_new(strict);
	/* Bind before the rule exists: no packet meets a queue without a
	 * listener (which, without bypass, would drop it). */
	w.queue = nfqbox_open(w.num, COPY_RANGE, true);
	how = nfqbox_rule_add(w.queue, argv[optind], argv[optind + 1]);
	stats_write(&w);
	printf("READY %s %s\n", how, w.mode);
	fflush(stdout);
	nfqbox_run(w.queue, &ops, &w);
	nfqbox_free(w.queue);
	wtrack_free(w.track);
	if (w.log != stderr)
		fclose(w.log);
	return 0;
}
