// SPDX-License-Identifier: GPL-2.0-only
/*
 * nfqfloor: the least any design that carries an option exchange in the
 * TCP handshake through NFQUEUE can cost. It diverts every SYN and
 * SYN-ACK the host sends or receives (not on loopback) to queue NUM and
 * accepts each one unmodified at once: one trip through user space per
 * handshake segment and host, with no work in it. Run on both hosts of a
 * connection, a handshake makes the four trips racks' own offer and answer
 * need (SYN out, SYN in, SYN-ACK out, SYN-ACK in), so connect() under
 * nfqfloor is the floor for racks <-> racks set-up on this kernel.
 *
 * Usage: nfqfloor NUM
 *	Installs the table inet racks_floor (replacing a stale one), binds
 *	queue NUM with the same settings as rackd (rackd/io/queue.c, the xt
 *	NFQUEUE target of nft/xt_queue.c where nft has no queue statement),
 *	prints READY, and serves the queue until SIGTERM or SIGINT, then
 *	removes its table. Errors go to stderr with exit status 1.
 */
#include <errno.h>
#include <linux/netfilter.h>
#include <nftables/libnftables.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>

#include "log.h"
#include "queue.h"
#include "xt_queue.h"

#define FLOOR_TABLE "racks_floor"

static const char *const table_script =
	"add table inet " FLOOR_TABLE "\n"
	"delete table inet " FLOOR_TABLE "\n"
	"table inet " FLOOR_TABLE " {\n"
	"\tchain divert {\n\t}\n"
	"\tchain output {\n\t\ttype filter hook output priority -160; "
	"policy accept;\n\t\ttcp flags & (fin | syn | rst) == syn "
	"meta oiftype != loopback goto divert\n\t}\n"
	"\tchain input {\n\t\ttype filter hook input priority -160; "
	"policy accept;\n\t\ttcp flags & (fin | syn | rst) == syn "
	"meta iiftype != loopback goto divert\n\t}\n"
	"}\n";

static int nft_run(const char *script)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int ret;

	if (!ctx)
		fatalx(1, "libnftables: out of memory");
	ret = nft_run_cmd_from_buffer(ctx, script);
	nft_ctx_free(ctx);
	return ret;
}

static void accept_packet(void *arg, struct queue *q,
			  const struct queue_packet *pkt)
{
	(void)arg;
	queue_verdict(q, pkt->id, NF_ACCEPT);
}

int main(int argc, char **argv)
{
	struct queue *q = NULL;
	struct pollfd pfd[2];
	sigset_t stop;
	char *end;
	long num;
	int ret;

	log_init("nfqfloor", true, false);
	if (argc != 2)
		fatalx(1, "usage: nfqfloor NUM");
	errno = 0;
	num = strtol(argv[1], &end, 10);
	if (errno || *end || num < 0 || num > 65535)
		fatalx(1, "invalid queue number '%s'", argv[1]);
	if (nft_run(table_script))
		fatalx(1, "installing table inet %s failed", FLOOR_TABLE);
	ret = xt_queue_add_rule(FLOOR_TABLE, "divert", (uint16_t)num, true);
	if (ret == 0)
		ret = queue_open(&q, (uint16_t)num, 4096, true, accept_packet,
				 NULL);
	if (ret) {
		nft_run("delete table inet " FLOOR_TABLE "\n");
		fatalx(1, "queue %ld: %s", num, strerror(-ret));
	}
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	pfd[0] = (struct pollfd){ .fd = queue_fd(q), .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = signalfd(-1, &stop, SFD_CLOEXEC),
				  .events = POLLIN };
	if (pfd[1].fd < 0)
		fatal(1, "signalfd");
	printf("READY\n");
	fflush(stdout);
	while (!(pfd[1].revents & POLLIN)) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			fatal(1, "poll");
		if (pfd[0].revents & POLLIN)
			queue_process(q);
	}
	queue_close(q);
	if (nft_run("delete table inet " FLOOR_TABLE "\n"))
		fatalx(1, "removing table inet %s failed", FLOOR_TABLE);
	return 0;
}
