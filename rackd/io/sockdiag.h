/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's own view of TCP sockets (NETLINK_SOCK_DIAG, inet_diag):
 * lets rackd notice a closed connection without diverting its FIN/RST.
 */
#ifndef RACKS_SOCKDIAG_H
#define RACKS_SOCKDIAG_H

#include <stdint.h>

#include "addr.h"

struct sockdiag_entry {
	struct endpoint local, remote;
	uint8_t state;		/* TCP_ESTABLISHED, ... */
	uint32_t inode;
	/* Retransmission timeouts in a row, unanswered (tcp_info's
	 * tcpi_retransmits; 0 where the kernel sent no tcp_info). */
	uint8_t retransmits;
};

typedef void (*sockdiag_fn)(void *arg, const struct sockdiag_entry *e);

/* Call FN for every non-listening TCP socket (IPv4 and IPv6) of this
 * network namespace. Returns 0 only when both dumps completed. */
int sockdiag_dump(sockdiag_fn fn, void *arg);

/* What the kernel's TCP has acknowledged so far on one socket. */
struct sockdiag_progress {
	uint8_t state;
	uint64_t bytes_acked;		/* snd_una - ISN - 1 */
	uint64_t bytes_received;	/* rcv_nxt - peer ISN - 1 */
	uint32_t snd_wscale, rcv_wscale;
	/* The most it advertises (its receive window never exceeds it)
	 * and the peer's advertised window, in bytes. */
	uint32_t rcv_ssthresh, snd_wnd;
	uint32_t unacked;		/* segments in flight */
	uint32_t backoff;		/* RTO backoff steps */
	uint32_t retransmits;		/* RTO retransmissions unanswered */
	/* Payload bytes sent, retransmissions included, and those
	 * retransmitted (Linux >= 4.19): snd_nxt - ISN - 1 is their
	 * difference (adopt.c learns the ISN back from it). */
	uint64_t bytes_sent, bytes_retrans;
	/* What the handshake negotiated (SOCKDIAG_OPT_*), our MSS and the
	 * peer's as we send. */
	uint32_t options, advmss, snd_mss;
};

/* tcpi_options bits (the kernel's TCPI_OPT_*). */
#define SOCKDIAG_OPT_TIMESTAMPS 1
#define SOCKDIAG_OPT_SACK 2
#define SOCKDIAG_OPT_WSCALE 4

/* The kernel's TCP states (include/net/tcp_states.h), as sockdiag_state()
 * and the dumps report them. */
enum tcp_state {
	TCP_STATE_ESTABLISHED = 1,
	TCP_STATE_SYN_SENT = 2,
	TCP_STATE_SYN_RECV = 3,
	TCP_STATE_FIN_WAIT1 = 4,
	TCP_STATE_FIN_WAIT2 = 5,
	TCP_STATE_TIME_WAIT = 6,
	TCP_STATE_CLOSE = 7,
	TCP_STATE_CLOSE_WAIT = 8,
	TCP_STATE_LAST_ACK = 9,
	TCP_STATE_LISTEN = 10,
	TCP_STATE_CLOSING = 11,
	TCP_STATE_NEW_SYN_RECV = 12,
};

/* Look up the socket LOCAL <-> REMOTE and read its tcp_info. */
int sockdiag_progress(const struct endpoint *local,
		      const struct endpoint *remote,
		      struct sockdiag_progress *out);

/* The state of the socket LOCAL <-> REMOTE (TCP_ESTABLISHED, ...,
 * TIME_WAIT and request sockets included), or -ENOENT when there is none
 * (a listener on LOCAL is none), or another -errno. */
int sockdiag_state(const struct endpoint *local, const struct endpoint *remote);

#endif
