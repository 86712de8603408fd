/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Adoption: the late set-up of an established connection whose handshake
 * did not carry racks, when both ends run rackd. It covers a handshake
 * that ended plain (the offering SYN was lost or dropped, a middlebox
 * stripped the option, set-up timed out), connections that existed
 * before rackd started, and those a rackd restarted without its state
 * file no longer knows.
 *
 * Set-up (setup.h) needs what a handshake gives: each byte stream's first
 * sequence number X (ISN + 1), for the key transcript and for the live
 * sequence numbers (conn_seq_progress(): snd_una and rcv_nxt from the
 * kernel's byte counters). An end that saw the handshake has them. One
 * that did not learns them from the socket itself:
 *
 *  1. the flow joins the adopt sets (adoptset.h): what its socket sends
 *     comes to rackd, which reads it and lets it go unchanged;
 *  2. rackd injects a SYN into the socket in the peer's name, which an
 *     established socket answers with a challenge ACK (RFC 5961; at most
 *     one per net.ipv4.tcp_invalid_ratelimit, 500 ms): seq = snd_nxt,
 *     ack = rcv_nxt. Right after it reads tcp_info:
 *        X_rcv = ack - bytes_received
 *        X_snd = end of the segment's data - (bytes_sent - bytes_retrans)
 *     Bytes that arrive or leave between the segment's making and the
 *     read make both too low, never too high: rackd keeps the largest
 *     over every segment seen, and trusts it once two rounds (550 ms
 *     apart) reached it. The socket's other segments are samples too;
 *  3. whether the socket opened actively (its bytes_acked counts its
 *     SYN) shows in a sample with nothing in flight: bytes_acked -
 *     (bytes_sent - bytes_retrans) is 1 then, 0 for a passive opener.
 *     Without one, rackd assumes active, which puts snd_una one byte low,
 *     never high.
 *
 * Then both ends agree, with ADOPT messages (option.h), on the two
 * numbers; each takes the larger of its own and the peer's (both are
 * lower bounds), and the end whose own X is smaller becomes set-up's
 * client (a tie is refused). The connection takes virtual ISNs X - 1
 * (equal to the real ones) and its byte counters' bases, so set-up runs
 * exactly as after a handshake: its key transcript is the handshake one,
 * bound to the live connection's sequence numbers.
 *
 * An end sends at most ADOPT_SENDS ADOPTs of its own accord (then only
 * answers): a peer without rackd sees that many zero-length segments,
 * never data, never a changed sequence number, and the connection stays
 * unmanaged (adoption_unanswered), never asked again.
 */
#ifndef RACKS_ADOPT_H
#define RACKS_ADOPT_H

#include <stdint.h>
#include <stdio.h>

#include "adopt_learn.h"
#include "conn.h"
#include "event.h"
#include "packet.h"
#include "timer.h"

/* After a plain handshake: the last ACK of it goes first. */
#define ADOPT_FIRST_MS 100
/* ADOPTs sent unanswered over a connection's life, and the wait after
 * each (the last one's is the final wait). */
#define ADOPT_SENDS 3
#define ADOPT_WAIT1_MS 1000
#define ADOPT_WAIT2_MS 3000
#define ADOPT_WAIT3_MS 4000
/* Answers to a peer that keeps disagreeing, and adoptions (restarts when
 * the peer asks again) per connection. */
#define ADOPT_REPLIES 4
/* The most a peer's ADOPT may raise a number we learnt (adopt.c). */
#define ADOPT_RAISE_MAX (1u << 20)
#define ADOPT_TRIES 3

struct rackd;


/* What adoption needs from the packet path (installed by main.c). */
struct adopt_ops {
	/* A new connection in the table, as the tracker makes them. */
	struct conn *(*new_conn)(struct rackd *d, const struct endpoint *local,
				 const struct endpoint *remote,
				 enum conn_dir dir);
	/* Room in the table for one more, from SRC, half-open entries
	 * making way if they must; whether there is. */
	bool (*make_room)(struct rackd *d, const struct addr *src);
};


void adopt_set_ops(struct rackd *d, const struct adopt_ops *ops);
/* ADOPT goes to adoption (channel.h, unchecked); 0 or -errno. */
int adopt_handle_messages(struct rackd *d);
/* Once the loop and the table are up: opens the set writer and scans,
 * at once, for established connections the table does not know. */
void adopt_init(struct rackd *d);
void adopt_close(struct rackd *d);

/* The flows being learnt, as element commands: a new table (reload)
 * starts with empty sets. */
void adopt_write_state(struct rackd *d, FILE *f);
/* C was just released (or its set-up timed out): adopt it if a later
 * set-up can help. */
void adopt_released(struct rackd *d, struct conn *c);
/* C's kernel socket finished the handshake (or set-up's) without racks
 * (a SYN-ACK we needed never came by, the peer's handshake ended plain):
 * released as unseen and adopted; WHY is logged. False, C unchanged, when
 * C is past its handshake and set-up or has used its adoptions. */
bool adopt_unfinished(struct rackd *d, struct conn *c, const char *why);
/* C starts afresh (a new handshake on its endpoints). */
void adopt_reset(struct rackd *d, struct conn *c);
/* A segment C's socket sends while adoption learns (c->adoption ==
 * ADOPTION_LEARNING); returns the verdict (always accept). */
uint32_t adopt_segment(struct rackd *d, struct conn *c, const struct packet *p);

/* Subscriber (ARG: the rackd): set-up completed, the connection went. */
#define ADOPT_EVENTS (EVENT_BIT(EVENT_CONNECTED) | EVENT_BIT(EVENT_GONE))
void adopt_event(void *arg, enum event_type type, struct conn *c,
		 const char *reason);

#endif
