/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host-pair handshake: Noise_XX_25519_ChaChaPoly_BLAKE2b between the
 * two rackds' static host keys (noise.h), the first time two racks hosts
 * meet (or when their host pair has aged, hostpairs.h). Its three
 * messages (32, 96 and 64 bytes) ride on the connection that needed
 * them, cut into HANDSHAKE fragments (option.h), each a zero-length
 * segment that the peer rackd consumes:
 *
 *   client (initiator)                      server (responder)
 *   1: e                   ------------->
 *                          <-------------   2: e, ee, s, es
 *   3: s, se               ------------->
 *
 * The prologue binds it to this connection: both ISNs and both nonces
 * of its SYN and SYN-ACK. Each end learns the other's static key from
 * it (the client at message 2, the server at message 3) and judges it
 * against the trust store (knownhosts.h) before anything is keyed. The
 * result is the host pair's secret; set-up (setup.h) derives the
 * connection's key from it as for any later connection.
 *
 * A host whose key was rotated (rackd --rotate-host-key) proves it in
 * its message's payload: its old public key and a MAC under the X25519
 * of its old secret and the verifier's key (edp_rotation_proof), which
 * a peer that knew the old key accepts without a prompt.
 *
 * Retransmission is set-up's: the client resends its last message until
 * the server's next one completes; the server answers every complete
 * copy of message 1 with the message 2 it made for it. A message that
 * fails to decrypt is dropped: the genuine one comes again.
 */
#ifndef RACKS_HOSTAUTH_H
#define RACKS_HOSTAUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "noise.h"
#include "option.h"

/* Message 2 or 3 may carry a rotation proof: the old host key and a MAC. */
#define HOSTAUTH_ROTATION_LEN (32 + 16)

struct hs_state {
	bool pending;		/* counted in host_pairs' pending table */
	struct noise_hs noise;
	/* The peer's message being put together. */
	uint8_t in[EDP_HS_MAX_FRAGS * EDP_HS_FRAG];
	uint8_t in_msg, in_len, in_have;	/* in_have: fragment bitmap */
	/* Our last message, for retransmission. */
	uint8_t out[EDP_HS_MAX_FRAGS * EDP_HS_FRAG];
	uint8_t out_msg, out_len;
	uint8_t expect;		/* the peer message it waits for: 1 to 3 */
	bool done;
};

enum hostauth_result {
	HOSTAUTH_MORE,		/* nothing new, a message in part, or one
				 * that failed to decrypt (dropped) */
	HOSTAUTH_ANSWERED,	/* a message came and ours went back */
	HOSTAUTH_DONE,		/* finished: the host pair is made */
	HOSTAUTH_REFUSED,	/* the peer's host key is not trusted */
	HOSTAUTH_FAILED,	/* ours could not be written */
};

struct rackd;

/* The client: begin with message 1. */
void hostauth_start(struct rackd *d, struct conn *c);
/* Our last message again (retransmission). */
void hostauth_resend(struct rackd *d, struct conn *c);
/*
 * A HANDSHAKE fragment M for C in set-up. DONE leaves the new host pair's
 * secret in c->edp->hp (and the peer's host key in c->edp->peer_host);
 * REFUSED sets c->unmanaged to why (the log says it all).
 */
enum hostauth_result hostauth_input(struct rackd *d, struct conn *c,
				    const struct edp_msg *m);
/* Wipe and free C's handshake state. */
void hostauth_free(struct conn *c);

#endif
