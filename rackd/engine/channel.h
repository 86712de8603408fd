/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * racks' message channel: every message between two rackds is a
 * zero-length segment of its connection carrying only racks' option,
 * with a keepalive's sequence numbers (inside the window, see
 * channel_send). The channel
 * sends them, numbers and authenticates the ones that follow set-up
 * (heartbeats, reconnections, migration), and checks what arrives before
 * handing it to the module that registered its type: it knows none of
 * them. Which module handles which type is main.c's business (each
 * module's *_handle_messages()).
 */
#ifndef RACKS_CHANNEL_H
#define RACKS_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "inject.h"
#include "option.h"
#include "packet.h"

struct rackd;

/* A message M for C (keyed or being set up), carried by segment P;
 * returns the verdict for P. */
typedef uint32_t (*channel_fn)(struct rackd *d, struct conn *c,
			       const struct packet *p,
			       const struct edp_msg *m);

struct channel {
	channel_fn handlers[EDP_TYPE_MAX];
	/* Types that may concern a connection this end does not know or
	 * has released (adoption): their handler gets C possibly NULL,
	 * without the channel's sequence number check, and checks itself. */
	channel_fn unchecked[EDP_TYPE_MAX];
	/* The numbers of the set-up messages sent for HINT_CONN until the
	 * hint is cleared, known without asking the kernel (channel_hint);
	 * never dereferenced: a handler may forget its connection. */
	const struct conn *hint_conn;
	uint32_t hint_seq, hint_ack;
};

/* Messages of TYPE go to FN from now on; -EINVAL for a type that is
 * not a message (SYN, SYN-ACK), -EEXIST if it has a handler already. */
int channel_handle(struct rackd *d, uint8_t type, channel_fn fn);
/* Whether P's sequence numbers belong to C, as channel_input() checks
 * them (for an unchecked type's handler, once C's numbers are known). */
bool channel_seq_plausible(struct conn *c, const struct packet *p);
/* The same for the numbers SEQ and ACK of a segment seen earlier. */
bool channel_numbers_plausible(struct conn *c, uint32_t seq, uint32_t ack);
/* Messages of TYPE go to FN whatever connection they name, known or not
 * (struct channel, unchecked); same errors as channel_handle(). */
int channel_handle_unchecked(struct rackd *d, uint8_t type, channel_fn fn);
/* A message for C (NULL when no connection matches: accepted, it goes on
 * as any segment), carried by P; returns the verdict for P. */
uint32_t channel_input(struct rackd *d, struct conn *c, const struct packet *p,
		       const struct edp_msg *m);
/* Send M as a zero-length segment of C carrying only racks' option,
 * counted (edp msgs_out, send_errors); returns 0 or -errno: for a
 * heartbeat or its answer on a connection whose socket is gone, nothing
 * sent nor counted, -ENOENT when the kernel said it has no open socket
 * of it, -ENOTCONN when it could not be asked. */
int channel_send(struct rackd *d, struct conn *c, const struct edp_msg *m);
/* Send SEG, a segment crafted otherwise that carries a racks message
 * (reconnection SYNs, rcsyn.h), counted as channel_send() counts. */
int channel_inject(struct rackd *d, const struct inject_segment *seg);
/* Where C's socket has been acknowledged up to (snd_una), as the
 * channel's messages number themselves: the kernel's count now (true),
 * else where the socket was last seen established (false, *SND_UNA
 * set), else nothing known (false, *SND_UNA untouched). */
bool channel_snd_una(struct conn *c, uint32_t *snd_una);
/* The set-up messages sent for C until channel_hint_clear() carry SEQ
 * and ACK, without asking the kernel where its socket is: answers
 * (channel_input sets it around a handler) and the first KEY after the
 * handshake, whose first numbers are its current ones. */
void channel_hint(struct rackd *d, const struct conn *c, uint32_t seq,
		  uint32_t ack);
void channel_hint_clear(struct rackd *d);
/* Fill M with a numbered message of TYPE from C with COUNTER and its MAC
 * under C's key, for a sender that carries it otherwise (reconnection
 * SYNs, rcsyn.h). */
void channel_numbered_msg(struct conn *c, uint8_t type, uint32_t counter,
			  struct edp_msg *m);
/* A numbered message (heartbeat, reconnection, migration) of TYPE with
 * COUNTER, its MAC under C's key; returns 0 or -errno. */
int channel_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			  uint32_t counter);
/* The same, numbered SEQ and ACK instead of where C's socket is. */
int channel_send_numbered_at(struct rackd *d, struct conn *c, uint8_t type,
			     uint32_t counter, uint32_t seq, uint32_t ack);
/* Whether M's MAC proves that C's peer sent it (counted when not); never
 * for a RECONNECT_CONFIRM, whose MAC covers its challenge. */
bool channel_numbered_valid(struct rackd *d, struct conn *c,
			    const struct edp_msg *m);
/* A RECONNECT_CONFIRM from C with COUNTER answering CHALLENGE
 * (EDP_CHALLENGE_LEN bytes), its MAC under C's key. */
void channel_confirm_msg(struct conn *c, uint32_t counter,
			 const uint8_t *challenge, struct edp_msg *m);
/* Whether M is a RECONNECT_CONFIRM that C's peer made for CHALLENGE
 * (counted in bad_mac when not). */
bool channel_confirm_valid(struct rackd *d, struct conn *c,
			   const struct edp_msg *m, const uint8_t *challenge);

#endif
