/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Answering classic EDP probes on the ports rackd manages. A probe is a
 * client that connects and shuts down its write side without sending a
 * byte, with its packets marked DSCP LE (EDP_PROBE_TOS): only its FIN is
 * diverted. rackd sends the host's announcement and a FIN in the server's
 * name, then lets the probe's FIN through: the application sees exactly
 * what the probe did, a client that half-closed without sending anything.
 * Whatever it sends afterwards overlaps the announcement the client
 * already has and is ignored there; the kernel retires that socket as
 * any socket whose peer is gone. Any other client, including an ordinary
 * one that half-closes first, is never diverted. A probe is answered only
 * once its handshake is complete (its address proved), once per
 * connection and at most ANSWER_RATE a second, so that the answer is
 * never aimed at a host that did not ask (see worth_answer()).
 */
#ifndef RACKS_ANSWER_H
#define RACKS_ANSWER_H

#include <stdint.h>

#include "conn.h"
#include "packet.h"

struct rackd;

/* Probes answered per second at most (and at once). */
#define ANSWER_RATE 100

/* The rate limit starts full. */
void answer_init(struct rackd *d);
/* The FIN P of connection C (NULL if unknown); returns the verdict. */
uint32_t answer_probe(struct rackd *d, struct conn *c, const struct packet *p);

#endif
