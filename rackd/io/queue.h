/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The NFQUEUE socket (libmnl + libnetfilter_queue's nlmsg helpers):
 * binds one queue with GSO, a copy range of 0xffff, an explicit queue
 * length and, if asked, fail-open (a full queue lets packets pass rather
 * than drop them); drains it in bursts and returns verdicts in batches,
 * several per sendmsg.
 */
#ifndef RACKS_QUEUE_H
#define RACKS_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct queue_packet {
	uint32_t id;
	uint8_t hook;		/* NF_INET_LOCAL_IN, NF_INET_LOCAL_OUT, ... */
	const uint8_t *data;
	size_t len;		/* bytes copied to us */
	size_t orig_len;	/* length on the wire (> len if truncated) */
	uint32_t mark;
	uint32_t skbinfo;	/* NFQA_SKB_* flags */
	uint32_t indev, outdev;
};

struct queue_stats {
	uint64_t received;
	uint64_t verdicts;
	uint64_t truncated;
	uint64_t rewritten;
	uint64_t recv_errors;
	uint64_t send_errors;
};

struct queue;
typedef void (*queue_fn)(void *arg, struct queue *q,
			 const struct queue_packet *pkt);

/* Bind queue NUM (MAXLEN packets waiting at most, FAIL_OPEN: accepted
 * beyond that, else dropped); FN decides each packet by calling
 * queue_verdict(). */
int queue_open(struct queue **out, uint16_t num, uint32_t maxlen,
	       bool fail_open, queue_fn fn, void *arg);
void queue_close(struct queue *q);
int queue_fd(const struct queue *q);
/* Drain the socket; call from the event loop when it is readable. */
void queue_process(struct queue *q);
/* Queue a verdict (NF_ACCEPT, NF_DROP) for packet ID; sent in batches. */
void queue_verdict(struct queue *q, uint32_t id, uint32_t verdict);
/* Send packet ID through its hook's chain again, marked MARK (so that the
 * rule that diverted it lets it by, and the rules after it apply). */
void queue_verdict_repeat(struct queue *q, uint32_t id, uint32_t mark);
/* Send the verdicts batched so far now, before slower work that would
 * otherwise hold their packets back. */
void queue_flush(struct queue *q);
/* Accept packet ID with its contents replaced by DATA (LEN bytes). */
void queue_verdict_replace(struct queue *q, uint32_t id, const uint8_t *data,
			   size_t len);
const struct queue_stats *queue_stats(const struct queue *q);

#endif
