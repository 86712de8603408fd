/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reconnections on the wire: a RECONNECT travels in a SYN and its answer
 * in a SYN-ACK, which rackd crafts (raw sockets, rackd's mark) and the
 * peer rackd consumes, so that every stateful middlebox on the new path
 * (a NAT, a firewall admitting new flows only by a SYN) sees a flow open
 * as flows do. No socket ever sees them.
 *
 *   mover (wire endpoints)                      peer (wire endpoints)
 *   SYN  seq = snd_una - 1 - 36  ------------>  consumed; MAC, counter
 *        options of the original handshake      remembers its source
 *        + marker, payload: RECONNECT (36)      and a random challenge
 *        <----------  SYN-ACK seq = its snd_una - 1 - 52, ack = SYN end
 *                     payload: RECONNECT_ACK (36), challenge (16)
 *   ACK  seq = SYN end, ack = SYN-ACK end  -->  consumed: MAC over the
 *        RECONNECT_CONFIRM (36)                 challenge; splice onto
 *                                               the SYN's source
 *
 * Each SYN ends (seq + 1 + payload) exactly at its sender socket's
 * snd_una, so what the sockets send next continues the flow the
 * middleboxes saw open; only the kernel's address and port rewrites
 * (splice.h) stand between the two. The SYNs carry the original
 * connection's MSS, window scale, SACK-permitted and timestamps options:
 * a window-tracking middlebox then reads the sockets' scaled windows
 * right. Their options always take EDP_RCSYN_OPTLEN bytes, so the message
 * sits at a fixed offset (edp/option.h), where the ruleset finds it even
 * when a middlebox blanked racks' marker option.
 */
#ifndef RACKS_RCSYN_H
#define RACKS_RCSYN_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "keys.h"
#include "option.h"
#include "packet.h"

struct rackd;

/* What a reconnection SYN or SYN-ACK said besides its message. */
struct rcsyn_seen {
	uint32_t end;		/* seq + SYN + payload: its sender's snd_una */
	uint32_t ack;		/* SYN-ACK: the end of the SYN it answers */
	bool has_ts;
	uint32_t tsval;
	/* SYN-ACK: the random bytes the third segment must answer. */
	bool has_challenge;
	uint8_t challenge[EDP_CHALLENGE_LEN];
};

/* Whether incoming P (a SYN or SYN-ACK) is a reconnection: its payload
 * starts with racks' numbered option at the fixed offset, or it carries
 * the marker. Such a segment is never the kernel's business. */
bool rcsyn_carried(const struct packet *p);
/* Its message into M (RECONNECT in a SYN, RECONNECT_ACK in a SYN-ACK)
 * and the rest into S; 0, or -EBADMSG when it is not well formed. */
int rcsyn_parse(const struct packet *p, struct edp_msg *m,
		struct rcsyn_seen *s);
/* RECONNECT with COUNTER in a SYN from C's wire endpoints; 0 or -errno. */
int rcsyn_send_syn(struct rackd *d, struct conn *c, uint32_t counter);
/* RECONNECT_ACK with COUNTER and CHALLENGE (EDP_CHALLENGE_LEN bytes) in
 * a SYN-ACK answering SYN, from WIRE_LOCAL to WIRE_REMOTE (where the SYN
 * came from, which C does not travel between yet); 0 or -errno. */
int rcsyn_send_synack(struct rackd *d, struct conn *c, uint32_t counter,
		      const struct rcsyn_seen *syn,
		      const struct endpoint *wire_local,
		      const struct endpoint *wire_remote,
		      const uint8_t *challenge);
/* The handshake's third segment after SYNACK: a RECONNECT_CONFIRM (the
 * next counter, its MAC over SYNACK's challenge) at exactly the sequence
 * numbers the handshake agreed on, so that conntrack-like middleboxes see
 * the flow established even when the application has nothing to send.
 * 0 or -errno (-EPROTO: the SYN-ACK had no challenge). */
int rcsyn_send_confirm(struct rackd *d, struct conn *c,
		       const struct rcsyn_seen *synack);

#endif
