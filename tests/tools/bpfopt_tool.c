// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpfopt_tool: rackd/io/bpfopt.c alone, for tests/test_bpfopt.py. Run
 * inside a network namespace, it attaches the sock_ops program to a
 * cgroup v2 directory for that namespace's sockets, fills the offer maps
 * from its arguments, and prints one JSON line per ring buffer record
 * until SIGTERM, when it drains, prints its counters and detaches.
 *
 *   bpfopt_tool --cgroup DIR [--offer ADDR=ID]... [--known ID]...
 *               [--flags N] [--ringbuf BYTES] [--batch N] [--debug]
 *   bpfopt_tool --probe [--cgroup DIR]
 *   bpfopt_tool --parse HEX
 *
 * Lines on stdout: {"event": "ready", ...} once attached; {"event":
 * "record", ...} per connection; {"event": "counters", ...} on SIGUSR1
 * and at the end; {"event": "probe", "ok": ..., "why": ...} for --probe;
 * for --parse, what edp_option_parse() makes of the option HEX (kind and
 * length included) and what edp_option_build() writes from that, so
 * that a test checks captured bytes with the project's own code.
 * Exit 0, or 1 with the reason on stderr (and in the probe line).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "addr.h"
#include "bpfopt.h"
#include "log.h"
#include "option.h"

static void json_hex(const char *name, const uint8_t *p, size_t n)
{
	printf("\"%s\": \"", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
	printf("\"");
}

static void print_record(void *arg, const struct bpfopt_record *r)
{
	char la[ADDR_STRLEN], ra[ADDR_STRLEN];

	(void)arg;
	printf("{\"event\": \"record\", \"kind\": \"%s\", \"side\": \"%s\", "
	       "\"family\": %d, \"local_addr\": \"%s\", \"local_port\": %u, "
	       "\"remote_addr\": \"%s\", \"remote_port\": %u, "
	       "\"local_isn\": %" PRIu32 ", \"remote_isn\": %" PRIu32 ", "
	       "\"peer_flags\": %u, \"peer_long\": %s, \"local_long\": %s, "
	       "\"hp_sent\": %" PRIu32 ", \"hp_peer\": %" PRIu32 ", ",
	       r->racks ? "racks" : "plain", r->active ? "active" : "passive",
	       r->local.addr.family == AF_INET ? 4 : 6,
	       addr_format(&r->local.addr, la, sizeof(la)), r->local.port,
	       addr_format(&r->remote.addr, ra, sizeof(ra)), r->remote.port,
	       r->local_isn, r->remote_isn, r->peer_flags,
	       r->peer_long ? "true" : "false",
	       r->local_long ? "true" : "false", r->hp_sent, r->hp_peer);
	json_hex("nonce_local", r->nonce_local, sizeof(r->nonce_local));
	printf(", ");
	json_hex("nonce_peer", r->nonce_peer, sizeof(r->nonce_peer));
	printf("}\n");
}

static void print_counters(const struct bpfopt *b)
{
	struct bpfopt_counters c;
	int err = bpfopt_counters(b, &c);

	printf("{\"event\": \"counters\", \"error\": %d", err);
	for (unsigned i = 0; i < RACKS_BPF_CNT_MAX; i++)
		printf(", \"%s\": %" PRIu64, bpfopt_counter_name(i), c.v[i]);
	printf("}\n");
	fflush(stdout);
}

static void json_string_line(const char *event, bool ok, int err,
			     const char *why)
{
	printf("{\"event\": \"%s\", \"ok\": %s, \"errno\": %d, \"why\": \"",
	       event, ok ? "true" : "false", -err);
	for (const char *p = why; *p; p++) {
		if (*p == '"' || *p == '\\')
			putchar('\\');
		putchar((unsigned char)*p < 0x20 ? ' ' : *p);
	}
	printf("\"}\n");
	fflush(stdout);
}

/* "ADDR=ID" into the offer map. */
static int offer_arg(struct bpfopt *b, char *arg)
{
	char *eq = strrchr(arg, '=');
	struct prefix p;

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	if (prefix_parse(arg, &p) < 0)
		return -EINVAL;
	return bpfopt_offer_set(b, &p.addr, (uint32_t)strtoul(eq + 1, NULL, 0));
}

static int parse_hex(const char *hex)
{
	uint8_t opt[64], out[64];
	size_t n = strlen(hex) / 2, built;
	enum edp_error err;
	struct edp_msg m;
	unsigned byte;

	if (strlen(hex) % 2 || n > sizeof(opt))
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return 1;
		opt[i] = (uint8_t)byte;
	}
	err = edp_option_parse(opt, n, &m);
	printf("{\"event\": \"parsed\", \"error\": \"%s\", \"type\": "
	       "\"%s\", \"version\": %u, \"flags\": %u, \"has_nonce\": %s, "
	       "\"hp_id\": %" PRIu32 ", ", edp_error_name(err),
	       edp_type_name(m.type), m.version, m.flags,
	       m.has_nonce ? "true" : "false", m.hp_id);
	json_hex("nonce", m.nonce, sizeof(m.nonce));
	built = err ? 0 : edp_option_build(&m, out, sizeof(out));
	printf(", ");
	json_hex("built", out, built);
	printf("}\n");
	return err ? 1 : 0;
}

static noreturn void usage(void)
{
	fprintf(stderr, "usage: bpfopt_tool --cgroup DIR [--offer ADDR=ID]... "
		"[--known ID]... [--flags N] [--ringbuf BYTES] [--batch N] "
		"[--debug]\n       bpfopt_tool --probe [--cgroup DIR]\n"
		"       bpfopt_tool --parse HEX\n");
	exit(EXIT_USAGE);
}

/* Until SIGTERM or SIGINT: records as they come, counters on SIGUSR1. */
static int serve(struct bpfopt *b, unsigned batch)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct signalfd_siginfo si;
	sigset_t set;
	int ep, sfd, n;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0)
		fatal(1, "signalfd/epoll");
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.fd = bpfopt_fd(b);
	epoll_ctl(ep, EPOLL_CTL_ADD, bpfopt_fd(b), &ev);
	for (;;) {
		if (epoll_wait(ep, &ev, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			fatal(1, "epoll_wait");
		}
		if (ev.data.fd != sfd) {
			/* One batch per wake-up, as rackd's loop would: the
			 * level-triggered fd wakes us again for the rest. */
			n = bpfopt_drain(b, batch, print_record, NULL);
			if (n < 0)
				log_warnx("drain: %s", strerror(-n));
			fflush(stdout);
			continue;
		}
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGUSR1) {
			print_counters(b);
			continue;
		}
		while (bpfopt_drain(b, batch, print_record, NULL) > 0)
			;
		print_counters(b);
		break;
	}
	close(ep);
	close(sfd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "offer", required_argument, NULL, 'o' },
		{ "known", required_argument, NULL, 'k' },
		{ "flags", required_argument, NULL, 'f' },
		{ "ringbuf", required_argument, NULL, 'r' },
		{ "batch", required_argument, NULL, 'b' },
		{ "probe", no_argument, NULL, 'p' },
		{ "parse", required_argument, NULL, 'P' },
		{ "debug", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	struct bpfopt_params params = { 0 };
	char *offers[64], why[512] = "";
	uint32_t known[64];
	unsigned noffers = 0, nknown = 0, batch = 64;
	int flags = -1, c, err;
	bool probe = false, debug = false;
	struct bpfopt *b;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': params.cgroup = optarg; break;
		case 'o':
			if (noffers == 64)
				usage();
			offers[noffers++] = optarg;
			break;
		case 'k':
			if (nknown == 64)
				usage();
			known[nknown++] = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'f': flags = (int)strtol(optarg, NULL, 0); break;
		case 'r':
			params.ringbuf_bytes = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'b': batch = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'p': probe = true; break;
		case 'P': return parse_hex(optarg);
		case 'd': debug = true; break;
		default: usage();
		}
	}
	if (optind != argc || (!probe && !params.cgroup) || !batch)
		usage();
	log_init("bpfopt_tool", true, debug);
	if (probe) {
		err = bpfopt_probe(params.cgroup, why, sizeof(why));
		json_string_line("probe", err == 0, err, err ? why : "");
		return err ? 1 : 0;
	}
	err = bpfopt_open(&params, &b, why, sizeof(why));
	if (err < 0) {
		json_string_line("error", false, err, why);
		fprintf(stderr, "bpfopt_tool: %s\n", why);
		return 1;
	}
	for (unsigned i = 0; i < noffers; i++)
		if ((err = offer_arg(b, offers[i])) < 0)
			fatalx(EXIT_USAGE, "--offer %s: %s", offers[i],
			       strerror(-err));
	for (unsigned i = 0; i < nknown; i++)
		if ((err = bpfopt_known_set(b, known[i], true)) < 0)
			fatalx(1, "--known: %s", strerror(-err));
	if (flags >= 0)
		bpfopt_flags_set(b, (uint8_t)flags);
	printf("{\"event\": \"ready\", \"cookie\": %" PRIu64 ", \"cgroup\": "
	       "\"%s\", \"pid\": %d}\n", bpfopt_netns_cookie(b),
	       bpfopt_cgroup(b), (int)getpid());
	fflush(stdout);
	serve(b, batch);
	bpfopt_free(b);
	printf("{\"event\": \"detached\"}\n");
	fflush(stdout);
	return 0;
}
