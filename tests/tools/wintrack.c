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
 */
#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libmnl/libmnl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <nftables/libnftables.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "wintrack.h"
#include "xt_queue.h"

#define COPY_RANGE 256
#define QUEUE_MAXLEN 8192
#define RECV_BUF (64 * 1024)
#define VERDICT_BUF (64 * 1024)
#define SOCK_RCVBUF (16 * 1024 * 1024)
#define BURST 256

struct wintrack {
	struct mnl_socket *nl;
	uint32_t portid;
	uint16_t num;
	struct mnl_nlmsg_batch *batch;
	char *verdict_buf;
	struct wtrack *track;
	FILE *log;
	const char *stats_path;
	const char *mode;
	uint64_t generation, received, unparsed, recv_errors, enobufs;
};

/* --- the rule that feeds the queue ------------------------------------ */

static int nft_script(const char *script)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int ret;

	if (!ctx)
		errx(1, "libnftables: out of memory");
	nft_ctx_buffer_error(ctx);
	ret = nft_run_cmd_from_buffer(ctx, script);
	nft_ctx_free(ctx);
	return ret;
}

static const char *rule_add(const char *table, const char *chain,
			    uint16_t num)
{
	char script[512];
	int ret;

	snprintf(script, sizeof(script),
		 "add rule inet %s %s counter queue num %u\n", table, chain,
		 num);
	if (nft_script(script) == 0)
		return "native";
	/* The kernels of the test machines lack the native queue
	 * statement. No bypass: a dead middlebox drops, as a real one. */
	ret = xt_queue_add_rule(table, chain, num, false);
	if (ret)
		errx(1, "adding the queue rule to inet %s %s: %s", table, chain,
		     strerror(-ret));
	return "xt";
}

/* --- the queue ---------------------------------------------------------- */

static void queue_bind(struct wintrack *w)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	/* GSO packets whole; no fail-open: an overflow drops, and shows. */
	uint32_t flags = NFQA_CFG_F_GSO;
	int rcvbuf = SOCK_RCVBUF, ret;

	w->nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!w->nl || mnl_socket_bind(w->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		err(1, "netlink socket");
	w->portid = mnl_socket_get_portid(w->nl);
	if (setsockopt(mnl_socket_get_fd(w->nl), SOL_SOCKET, SO_RCVBUFFORCE,
		       &rcvbuf, sizeof(rcvbuf)) < 0)
		warn("SO_RCVBUFFORCE");
	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, w->num);
	nlh->nlmsg_flags |= NLM_F_ACK;
	nfq_nlmsg_cfg_put_cmd(nlh, AF_UNSPEC, NFQNL_CFG_CMD_BIND);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, COPY_RANGE);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, QUEUE_MAXLEN);
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(flags));
	if (mnl_socket_sendto(w->nl, nlh, nlh->nlmsg_len) < 0)
		err(1, "binding queue %u", w->num);
	ret = (int)mnl_socket_recvfrom(w->nl, buf, sizeof(buf));
	if (ret < 0 || mnl_cb_run(buf, (size_t)ret, nlh->nlmsg_seq, w->portid,
				  NULL, NULL) < 0)
		err(1, "binding queue %u", w->num);
	w->verdict_buf = calloc(1, VERDICT_BUF);
	if (!w->verdict_buf)
		err(1, "calloc");
	w->batch = mnl_nlmsg_batch_start(w->verdict_buf, VERDICT_BUF / 2);
}

static void verdicts_flush(struct wintrack *w)
{
	size_t len = mnl_nlmsg_batch_size(w->batch);

	if (len && mnl_socket_sendto(w->nl, mnl_nlmsg_batch_head(w->batch),
				     len) < 0)
		warn("sending verdicts");
	mnl_nlmsg_batch_reset(w->batch);
}

static void verdict(struct wintrack *w, uint32_t id, bool accept)
{
	struct nlmsghdr *nlh = nfq_nlmsg_put(mnl_nlmsg_batch_current(w->batch),
					     NFQNL_MSG_VERDICT, w->num);

	nfq_nlmsg_verdict_put(nlh, (int)id, accept ? NF_ACCEPT : NF_DROP);
	if (!mnl_nlmsg_batch_next(w->batch))
		verdicts_flush(w);
}

/* --- parsing a forwarded segment --------------------------------------- */

/* The window-scale shift of a SYN (0x80 | shift, at most 14) and whether
 * the segment carries racks' option 254. */
static int parse_options(const uint8_t *opt, size_t len,
			 struct wtrack_segment *s)
{
	size_t i = 0;

	while (i < len) {
		uint8_t kind = opt[i];

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 2 > len || opt[i + 1] < 2 || i + opt[i + 1] > len)
			return -EINVAL;
		if (kind == 3 && opt[i + 1] == 3 && (s->flags & 0x02))
			s->wscale = 0x80 | (opt[i + 2] > 14 ? 14 : opt[i + 2]);
		if (kind == 254)
			s->racks = true;
		/* ExID 0x7261, then version and type (edp/option.c). */
		if (kind == 254 && opt[i + 1] >= 5 && opt[i + 2] == 0x72 &&
		    opt[i + 3] == 0x61)
			s->racks_type = opt[i + 4] & 0x0f;
		i += opt[i + 1];
	}
	return 0;
}

static int parse_tcp(const uint8_t *p, size_t caplen, size_t off,
		     size_t l4len, struct wtrack_segment *s)
{
	size_t doff;

	if (caplen < off + 20)
		return -EINVAL;
	p += off;
	doff = (size_t)(p[12] >> 4) * 4;
	if (doff < 20 || doff > l4len || caplen < off + doff)
		return -EINVAL;
	s->sport = (uint16_t)(p[0] << 8 | p[1]);
	s->dport = (uint16_t)(p[2] << 8 | p[3]);
	s->seq = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 |
		 (uint32_t)p[6] << 8 | p[7];
	s->ack = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 |
		 (uint32_t)p[10] << 8 | p[11];
	s->flags = p[13] & 0x3f;
	s->win = (uint16_t)(p[14] << 8 | p[15]);
	s->len = (uint32_t)(l4len - doff);
	return parse_options(p + 20, doff - 20, s);
}

/* The IP and TCP headers of a queued packet (CAPLEN bytes copied of
 * WIRELEN). Returns 0, 1 for a packet that is not judged (a fragment or
 * no TCP), or -EINVAL. */
static int parse_packet(const uint8_t *p, size_t caplen, size_t wirelen,
			struct wtrack_segment *s)
{
	memset(s, 0, sizeof(*s));
	if (caplen < 1)
		return -EINVAL;
	if (p[0] >> 4 == 4) {
		size_t ihl = (size_t)(p[0] & 0xf) * 4;
		size_t tot = (size_t)(p[2] << 8 | p[3]);

		if (caplen < 20 || ihl < 20 || caplen < ihl)
			return -EINVAL;
		if (tot == 0)		/* a BIG TCP super-packet */
			tot = wirelen;
		if (p[9] != 6 || (p[6] & 0x3f) || p[7])
			return 1;
		if (tot < ihl)
			return -EINVAL;
		s->family = 4;
		memcpy(s->saddr, p + 12, 4);
		memcpy(s->daddr, p + 16, 4);
		return parse_tcp(p, caplen, ihl, tot - ihl, s);
	}
	if (p[0] >> 4 == 6) {
		size_t off = 40, plen = (size_t)(p[4] << 8 | p[5]);
		uint8_t next = p[6];

		if (caplen < 40)
			return -EINVAL;
		plen = plen ? plen : wirelen - 40;	/* jumbogram */
		/* Hop-by-hop, routing and destination options. */
		while (next == 0 || next == 43 || next == 60) {
			size_t hlen;

			if (caplen < off + 2)
				return -EINVAL;
			hlen = ((size_t)p[off + 1] + 1) * 8;
			next = p[off];
			off += hlen;
		}
		if (next != 6)
			return 1;
		if (off - 40 > plen)
			return -EINVAL;
		s->family = 6;
		memcpy(s->saddr, p + 8, 16);
		memcpy(s->daddr, p + 24, 16);
		return parse_tcp(p, caplen, off, plen - (off - 40), s);
	}
	return -EINVAL;
}

static int packet_cb(const struct nlmsghdr *nlh, void *data)
{
	struct wintrack *w = data;
	struct nlattr *attr[NFQA_MAX + 1] = { 0 };
	struct nfqnl_msg_packet_hdr *ph;
	struct wtrack_segment seg;
	const uint8_t *payload = NULL;
	size_t caplen = 0, wirelen;
	int ret;

	if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR])
		return MNL_CB_OK;
	ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
	if (attr[NFQA_PAYLOAD]) {
		payload = mnl_attr_get_payload(attr[NFQA_PAYLOAD]);
		caplen = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
	}
	wirelen = attr[NFQA_CAP_LEN] ?
		ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN])) : caplen;
	w->received++;
	ret = payload ? parse_packet(payload, caplen, wirelen, &seg) : -EINVAL;
	if (ret == 0) {
		enum wtrack_verdict v = wtrack_segment(w->track, &seg, w->log);

		verdict(w, ntohl(ph->packet_id), wtrack_verdict_accepts(v));
	} else {
		/* Not pf's business (fragments), or unreadable: passed,
		 * and counted so that a test sees it. */
		w->unparsed++;
		verdict(w, ntohl(ph->packet_id), true);
	}
	return MNL_CB_OK;
}

static void queue_drain(struct wintrack *w, char *buf)
{
	int fd = mnl_socket_get_fd(w->nl);

	for (int i = 0; i < BURST; i++) {
		ssize_t n = recv(fd, buf, RECV_BUF, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == ENOBUFS) {
				/* The kernel dropped packets: counted in
				 * the stats (user_dropped) too. */
				w->enobufs++;
				continue;
			}
			if (errno != EAGAIN && errno != EINTR) {
				w->recv_errors++;
				warn("recv");
			}
			break;
		}
		if (mnl_cb_run(buf, (size_t)n, 0, w->portid, packet_cb, w) < 0)
			w->recv_errors++;
	}
	verdicts_flush(w);
}

/* --- statistics ----------------------------------------------------------- */

/* The kernel's own counters of the queue: packets it dropped because the
 * queue was full or our socket's buffer overflowed. */
static void kernel_counters(uint16_t num, unsigned *queued, unsigned *full,
			    unsigned *user)
{
	FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
	unsigned q, portid, total, mode, range, drop, udrop;

	*queued = *full = *user = 0;
	if (!f)
		return;
	while (fscanf(f, "%u %u %u %u %u %u %u %*u %*d", &q, &portid, &total,
		      &mode, &range, &drop, &udrop) == 7) {
		if (q == num) {
			*queued = total;
			*full = drop;
			*user = udrop;
		}
	}
	fclose(f);
}

static void stats_write(struct wintrack *w)
{
	const struct wtrack_stats *st = wtrack_stats(w->track);
	char tmp[4096];
	unsigned queued, full, user;
	uint64_t accepted = 0, dropped = 0;
	FILE *f;

	if (!w->stats_path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", w->stats_path);
	f = fopen(tmp, "w");
	if (!f) {
		warn("%s", tmp);
		return;
	}
	for (int v = 0; v < WT_MAX; v++)
		*(wtrack_verdict_accepts(v) ? &accepted : &dropped) +=
			st->verdicts[v];
	kernel_counters(w->num, &queued, &full, &user);
	fprintf(f, "{\"generation\": %" PRIu64 ", \"mode\": \"%s\", "
		"\"received\": %" PRIu64 ", \"accepted\": %" PRIu64
		", \"dropped\": %" PRIu64 ", \"not_judged\": %" PRIu64
		", \"racks_accepted\": %" PRIu64 ", \"racks_dropped\": %" PRIu64
		", \"flows_created\": %" PRIu64 ", \"flows_reused\": %" PRIu64
		", \"bytes\": %" PRIu64 ", \"gso_packets\": %" PRIu64
		", \"max_len\": %" PRIu64 ", \"recv_errors\": %" PRIu64
		", \"enobufs\": %" PRIu64 ", \"kernel_queued\": %u"
		", \"kernel_queue_full_drops\": %u"
		", \"kernel_user_drops\": %u, \"verdicts\": {",
		++w->generation, w->mode, w->received, accepted + w->unparsed,
		dropped, w->unparsed, st->racks_accepted, st->racks_dropped,
		st->flows, st->flows_reused, st->bytes, st->gso, st->max_len,
		w->recv_errors, w->enobufs, queued, full, user);
	for (int v = 0; v < WT_MAX; v++)
		fprintf(f, "%s\"%s\": %" PRIu64, v ? ", " : "",
			wtrack_verdict_name(v), st->verdicts[v]);
	fputs("}, \"flows\": ", f);
	wtrack_flows_json(w->track, f, 1000);
	fputs("}\n", f);
	if (fclose(f) != 0 || rename(tmp, w->stats_path) != 0)
		warn("%s", w->stats_path);
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
	struct wintrack w = { 0 };
	const char *log_path = NULL, *how;
	struct pollfd pfd[2];
	bool strict = false, done = false;
	char *buf;
	sigset_t sigs;

	options(argc, argv, &w, &strict, &log_path);
	w.mode = strict ? "strict" : "pf";
	w.log = log_path ? fopen(log_path, "a") : stderr;
	if (!w.log)
		err(1, "%s", log_path);
	w.track = wtrack_new(strict);
	buf = malloc(RECV_BUF);
	if (!buf)
		err(1, "malloc");
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	pfd[1] = (struct pollfd){ .fd = signalfd(-1, &sigs, SFD_CLOEXEC),
				  .events = POLLIN };
	if (pfd[1].fd < 0)
		err(1, "signalfd");
	/* Bind before the rule exists: no packet meets a queue without a
	 * listener (which, without bypass, would drop it). */
	queue_bind(&w);
	how = rule_add(argv[optind], argv[optind + 1], w.num);
	pfd[0] = (struct pollfd){ .fd = mnl_socket_get_fd(w.nl),
				  .events = POLLIN };
	stats_write(&w);
	printf("READY %s %s\n", how, w.mode);
	fflush(stdout);
	while (!done) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		if (pfd[0].revents & POLLIN)
			queue_drain(&w, buf);
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(pfd[1].fd, &si, sizeof(si)) != sizeof(si))
				continue;
			done = si.ssi_signo != SIGUSR1;
			stats_write(&w);
		}
	}
	mnl_socket_close(w.nl);
	free(w.verdict_buf);
	free(buf);
	wtrack_free(w.track);
	if (w.log != stderr)
		fclose(w.log);
	return 0;
}
