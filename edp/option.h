/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The racks TCP option: an RFC 6994 experimental option (kind 254) with
 * racks' ExID, on the SYN and SYN-ACK (peer detection) and on the
 * zero-length set-up segments the two rackds exchange afterwards.
 *
 *   254 | length | ExID 0x7261 (2) | version << 4 | type | body
 *
 *   type        body                      option length
 *   1 SYN       flags (1), host pair (4), nonce (8)   18
 *   2 SYNACK    flags (1), host pair (4), nonce (8)   18
 *               (a rackd before host keys: flags alone, 6)
 *   3 KEY       X25519 public key (32)    37
 *   4 CONFIRM   MAC (16)                  21
 *   5 DONE      MAC (16)                  21
 *   6 HEARTBEAT    conn id (8), counter (4), MAC (16)   33
 *   7 HB_ACK       conn id (8), counter (4), MAC (16)   33
 *   8 RECONNECT    conn id (8), counter (4), MAC (16)   33
 *   9 RECONNECT_ACK conn id (8), counter (4), MAC (16)  33
 *  10 AWAY         conn id (8), counter (4), MAC (16)   33
 *  11 AWAY_ACK     conn id (8), counter (4), MAC (16)   33
 *  12 ADOPT        x_own (4), x_peer (4), flags (1),
 *                  reserved (7: sent as zero, ignored)   21
 *  13 RECONNECT_CONFIRM conn id (8), counter (4), MAC (16)  33
 *  14 HANDSHAKE    message << 4 | fragment (1), message length (1),
 *                  32 bytes of it (zero after its end)   39
 *
 * SYN and SYN-ACK name the host pair (hostpair.h) whose secret the
 * sender would derive the connection's key from (0: none), and carry a
 * fresh random nonce each: the SYN-ACK echoes the SYN's host pair when
 * it has it too, and the key is then derived at once (setup.h); else the
 * two hosts run a Noise XX handshake, its three messages cut into
 * HANDSHAKE fragments of 32 bytes, numbered from 0.
 *
 * ADOPT starts the late set-up of a connection whose handshake did not
 * carry racks (adopt.h): x_own is the sequence number of the first byte
 * the sender sends on it (its ISN + 1), x_peer the one of the first byte
 * it receives; flag EDP_ADOPT_AGREED says that the sender has heard the
 * receiver's own ADOPT with the same two numbers (so it needs no answer).
 *
 * AWAY says that the sender's end is about to be checkpointed and moved
 * (rackckpt): the receiver holds its socket until a RECONNECT arrives
 * from wherever that end is restored.
 *
 * Types 6 to 11 and 13 are "numbered": they are sent after set-up, possibly on a
 * flow whose addresses the receiver does not know yet (the sender moved),
 * so they name their connection by the id both ends derived from its key;
 * the counter only grows (replays are refused) and the MAC under the key
 * covers it.
 *
 * RECONNECT and RECONNECT_ACK travel in a SYN and a SYN-ACK that the
 * rackds craft and consume (a new flow that every stateful middlebox
 * admits). Their 40 bytes of options carry the original handshake's MSS,
 * window scale, SACK-permitted and timestamps, which leave no room for a
 * 33-byte option, so the message is the segment's payload instead, in
 * exactly the encoding above, and the options end with a 5-byte marker
 * (the header alone, type 8 or 9). The options always take
 * EDP_RCSYN_OPTLEN bytes (NOP-padded), so the payload starts at a fixed
 * offset: a receiver finds the message there even when a middlebox turned
 * the marker into NOPs (nft "reset tcp option 254").
 *
 *   SYN:     seq = snd_nxt - 1 - 36 | MSS | NOP WS | SACKPERM TS |
 *            254 5 0x7261 0x18 NOP NOP NOP | RECONNECT option (36)
 *   SYN-ACK: seq = its snd_nxt - 1 - 52, ack = the SYN's end | same
 *            options, marker 0x19 | RECONNECT_ACK option (36),
 *            challenge (16 random bytes)
 *   ACK:     seq = the SYN's end, ack = the SYN-ACK's end |
 *            RECONNECT_CONFIRM option (33, MAC over the challenge too)
 *
 * The SYN-ACK goes to the address the SYN came from, and only the third
 * segment, from there and proving that it read the challenge, lets the
 * receiver of the SYN follow its sender there (rcsyn.h, reconnect.h):
 * the key's holder cannot move a connection onto someone else's address
 * and port. The receiver then answers with a zero-length RECONNECT_ACK
 * of the confirmation's counter (seq = the SYN-ACK's end, ack = the
 * SYN's end: a window tracker takes it, and scales its window), and
 * only that resumes the sender.
 *
 * ExID 0x7261 ("ra") is not TCP Fast Open's 0xF989, which Linux would
 * read as a TFO cookie. Every option is padded with NOPs to a multiple
 * of four bytes.
 */
#ifndef RACKS_EDP_OPTION_H
#define RACKS_EDP_OPTION_H

#include <stddef.h>
#include <stdint.h>

#define EDP_OPT_KIND 254
#define EDP_EXID 0x7261
#define EDP_VERSION 1
#define EDP_KEY_LEN 32
#define EDP_MAC_LEN 16
#define EDP_NONCE_LEN 8
/* SYN / SYN-ACK body with host pair and nonce. */
#define EDP_OFFER_LONG_BODY (1 + 4 + EDP_NONCE_LEN)
/* The largest SYN / SYN-ACK option, with its padding. */
#define EDP_OFFER_SIZE ((EDP_OPT_HDR_LEN + EDP_OFFER_LONG_BODY + 3) & ~3)
/* A handshake fragment's bytes; a Noise message has at most
 * EDP_HS_MAX_FRAGS of them. */
#define EDP_HS_FRAG 32
#define EDP_HS_MAX_FRAGS 8
#define EDP_OPT_HDR_LEN 5	/* kind, length, ExID, version/type */
#define EDP_OPT_MAX_LEN (EDP_OPT_HDR_LEN + 2 + EDP_HS_FRAG)
/* ADOPT's header and fields; its reserved bytes follow. */
#define EDP_ADOPT_USED (EDP_OPT_HDR_LEN + 4 + 4 + 1)
/* A numbered message's option: 33 bytes, 36 with its padding. */
#define EDP_NUMBERED_LEN (EDP_OPT_HDR_LEN + 8 + 4 + EDP_MAC_LEN)
#define EDP_NUMBERED_SIZE ((EDP_NUMBERED_LEN + 3) & ~3)
/* Reconnection SYN / SYN-ACK: options always this long (data offset 12),
 * then the message: its first four bytes are kind, length, ExID. */
#define EDP_RCSYN_OPTLEN 28
#define EDP_RCSYN_DOFF ((20 + EDP_RCSYN_OPTLEN) / 4)
#define EDP_RCSYN_MAGIC ((uint32_t)EDP_OPT_KIND << 24 | \
			 (uint32_t)EDP_NUMBERED_LEN << 16 | EDP_EXID)
/* The marker option: racks' header alone, padded to 8 bytes. */
#define EDP_MARKER_SIZE 8

enum edp_type {
	EDP_SYN = 1,
	EDP_SYNACK = 2,
	EDP_KEY = 3,
	EDP_CONFIRM = 4,
	EDP_DONE = 5,
	EDP_HEARTBEAT = 6,
	EDP_HEARTBEAT_ACK = 7,
	EDP_RECONNECT = 8,
	EDP_RECONNECT_ACK = 9,
	EDP_AWAY = 10,
	EDP_AWAY_ACK = 11,
	EDP_ADOPT = 12,	/* bytes that carry meaning: EDP_ADOPT_USED */
	EDP_RECONNECT_CONFIRM = 13,
	EDP_HANDSHAKE = 14,
	EDP_TYPE_MAX
};

/* Why an option with racks' ExID was rejected. */
enum edp_error {
	EDP_OK = 0,
	EDP_ERR_NOT_RACKS,	/* kind or ExID of someone else: not an error */
	EDP_ERR_LENGTH,		/* shorter than its header or its type needs */
	EDP_ERR_VERSION,
	EDP_ERR_TYPE,
	EDP_ERR_MAX
};

struct edp_msg {
	uint8_t version;
	uint8_t type;
	uint8_t flags;
	uint8_t key[EDP_KEY_LEN];
	uint8_t mac[EDP_MAC_LEN];
	uint64_t conn_id;	/* numbered messages */
	uint32_t counter;
	uint32_t x_own, x_peer;	/* ADOPT */
	uint8_t has_nonce;	/* SYN, SYNACK: the long form */
	uint32_t hp_id;
	uint8_t nonce[EDP_NONCE_LEN];
	uint8_t hs_msg, hs_frag, hs_len;	/* HANDSHAKE (data in key) */
};

#define EDP_ADOPT_AGREED 0x01
/* SYN, SYN-ACK flag: the sender speaks host keys (always set; the one
 * sign of it in the short form, when a SYN has no room for more). */
#define EDP_OFFER_HOSTKEYS 0x01

/* Heartbeats, reconnections, migrations: conn id, counter and MAC. */
static inline int edp_type_numbered(uint8_t type)
{
	return (type >= EDP_HEARTBEAT && type <= EDP_AWAY_ACK) ||
	       type == EDP_RECONNECT_CONFIRM;
}

/* Parse the option of LEN bytes at OPT (kind and length included). */
enum edp_error edp_option_parse(const uint8_t *opt, size_t len,
				struct edp_msg *m);
/* Write M as an option padded with NOPs into OUT (ROOM bytes); returns
 * the bytes written, or 0 if it does not fit. */
size_t edp_option_build(const struct edp_msg *m, uint8_t *out, size_t room);
/* The marker of TYPE (RECONNECT, RECONNECT_ACK) into OUT (ROOM bytes):
 * EDP_MARKER_SIZE bytes, or 0 if it does not fit. */
size_t edp_marker_build(uint8_t type, uint8_t *out, size_t room);
/* The type a marker option of LEN bytes at OPT names, or 0 if it is not
 * one (kind, length 5, ExID, version). */
uint8_t edp_marker_type(const uint8_t *opt, size_t len);
/* Padded length of a TYPE option in its long form. */
size_t edp_option_size(uint8_t type);
/* Padded length of M's option as edp_option_build() writes it (a SYN or
 * SYN-ACK without a nonce takes the short form). */
size_t edp_msg_option_size(const struct edp_msg *m);
const char *edp_type_name(uint8_t type);
const char *edp_error_name(enum edp_error err);

#endif
