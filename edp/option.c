// SPDX-License-Identifier: GPL-2.0-only
#include "option.h"

#include <string.h>

#define TCP_OPT_NOP 1

/* Body length of each message type; 0 marks an unknown type. SYN and
 * SYN-ACK have two forms: the flags alone (a rackd before host keys),
 * or with the host-pair id and nonce (EDP_OFFER_LONG_BODY). */
static size_t body_len(uint8_t type)
{
	switch (type) {
	case EDP_SYN:
	case EDP_SYNACK:
		return EDP_OFFER_LONG_BODY;
	case EDP_HANDSHAKE:
		return 2 + EDP_HS_FRAG;
	case EDP_KEY:
		return EDP_KEY_LEN;
	case EDP_CONFIRM:
	case EDP_DONE:
		return EDP_MAC_LEN;
	case EDP_HEARTBEAT:
	case EDP_HEARTBEAT_ACK:
	case EDP_RECONNECT:
	case EDP_RECONNECT_ACK:
	case EDP_AWAY:
	case EDP_AWAY_ACK:
	case EDP_RECONNECT_CONFIRM:
		return 8 + 4 + EDP_MAC_LEN;
	case EDP_ADOPT:
		/* Seven reserved bytes (zero): the segment's data offset must
		 * be 11 or more, as every message's (ruleset.c). */
		return 4 + 4 + 1 + 7;
	default:
		return 0;
	}
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

size_t edp_option_size(uint8_t type)
{
	size_t len = EDP_OPT_HDR_LEN + body_len(type);

	return (len + 3) & ~(size_t)3;
}

/* The body length M is written with. */
static size_t msg_body_len(const struct edp_msg *m)
{
	if ((m->type == EDP_SYN || m->type == EDP_SYNACK) && !m->has_nonce)
		return 1;
	return body_len(m->type);
}

size_t edp_msg_option_size(const struct edp_msg *m)
{
	return (EDP_OPT_HDR_LEN + msg_body_len(m) + 3) & ~(size_t)3;
}

enum edp_error edp_option_parse(const uint8_t *opt, size_t len,
				struct edp_msg *m)
{
	size_t want;

	memset(m, 0, sizeof(*m));
	if (len < 4 || opt[0] != EDP_OPT_KIND ||
	    (opt[2] << 8 | opt[3]) != EDP_EXID)
		return EDP_ERR_NOT_RACKS;
	if (opt[1] != len || len < EDP_OPT_HDR_LEN)
		return EDP_ERR_LENGTH;
	m->version = opt[4] >> 4;
	m->type = opt[4] & 0x0f;
	if (m->version != EDP_VERSION)
		return EDP_ERR_VERSION;
	want = body_len(m->type);
	if (want == 0)
		return EDP_ERR_TYPE;
	/* Exact length: a longer option is not a future extension of this
	 * version (that would bump the version), it is malformed. */
	if ((m->type == EDP_SYN || m->type == EDP_SYNACK) &&
	    len == EDP_OPT_HDR_LEN + 1)
		want = 1;
	if (len != EDP_OPT_HDR_LEN + want)
		return EDP_ERR_LENGTH;
	const uint8_t *body = opt + EDP_OPT_HDR_LEN;

	switch (m->type) {
	case EDP_SYN:
	case EDP_SYNACK:
		m->flags = body[0];
		if (want == 1)
			break;
		m->has_nonce = 1;
		m->hp_id = get_u32(body + 1);
		memcpy(m->nonce, body + 5, EDP_NONCE_LEN);
		break;
	case EDP_KEY:
		memcpy(m->key, body, EDP_KEY_LEN);
		break;
	case EDP_HANDSHAKE:
		m->hs_msg = body[0] >> 4;
		m->hs_frag = body[0] & 0x0f;
		m->hs_len = body[1];
		memcpy(m->key, body + 2, EDP_HS_FRAG);
		break;
	case EDP_CONFIRM:
	case EDP_DONE:
		memcpy(m->mac, body, EDP_MAC_LEN);
		break;
	case EDP_ADOPT:
		m->x_own = get_u32(body);
		m->x_peer = get_u32(body + 4);
		m->flags = body[8];
		break;
	default:	/* numbered */
		for (int i = 0; i < 8; i++)
			m->conn_id = m->conn_id << 8 | body[i];
		m->counter = (uint32_t)body[8] << 24 | (uint32_t)body[9] << 16 |
			     (uint32_t)body[10] << 8 | body[11];
		memcpy(m->mac, body + 12, EDP_MAC_LEN);
		break;
	}
	return EDP_OK;
}

size_t edp_option_build(const struct edp_msg *m, uint8_t *out, size_t room)
{
	size_t blen = msg_body_len(m);
	size_t len = EDP_OPT_HDR_LEN + blen;
	size_t padded = (len + 3) & ~(size_t)3;

	if (blen == 0 || padded > room)
		return 0;
	out[0] = EDP_OPT_KIND;
	out[1] = (uint8_t)len;
	out[2] = EDP_EXID >> 8;
	out[3] = EDP_EXID & 0xff;
	out[4] = (uint8_t)(EDP_VERSION << 4 | m->type);
	switch (m->type) {
	case EDP_SYN:
	case EDP_SYNACK:
		out[5] = m->flags;
		if (blen == 1)
			break;
		put_u32(out + 6, m->hp_id);
		memcpy(out + 10, m->nonce, EDP_NONCE_LEN);
		break;
	case EDP_KEY:
		memcpy(out + 5, m->key, EDP_KEY_LEN);
		break;
	case EDP_HANDSHAKE:
		out[5] = (uint8_t)(m->hs_msg << 4 | (m->hs_frag & 0x0f));
		out[6] = m->hs_len;
		memcpy(out + 7, m->key, EDP_HS_FRAG);
		break;
	case EDP_CONFIRM:
	case EDP_DONE:
		memcpy(out + 5, m->mac, EDP_MAC_LEN);
		break;
	case EDP_ADOPT:
		put_u32(out + 5, m->x_own);
		put_u32(out + 9, m->x_peer);
		out[13] = m->flags;
		memset(out + 14, 0, 7);
		break;
	default:	/* numbered */
		for (int i = 0; i < 8; i++)
			out[5 + i] = (uint8_t)(m->conn_id >> (56 - 8 * i));
		for (int i = 0; i < 4; i++)
			out[13 + i] = (uint8_t)(m->counter >> (24 - 8 * i));
		memcpy(out + 17, m->mac, EDP_MAC_LEN);
		break;
	}
	/* Leading NOPs would be prettier; trailing ones keep the option at
	 * a fixed offset from where the caller puts it. */
	memset(out + len, TCP_OPT_NOP, padded - len);
	return padded;
}

size_t edp_marker_build(uint8_t type, uint8_t *out, size_t room)
{
	if (room < EDP_MARKER_SIZE || body_len(type) == 0)
		return 0;
	out[0] = EDP_OPT_KIND;
	out[1] = EDP_OPT_HDR_LEN;
	out[2] = EDP_EXID >> 8;
	out[3] = EDP_EXID & 0xff;
	out[4] = (uint8_t)(EDP_VERSION << 4 | type);
	memset(out + EDP_OPT_HDR_LEN, TCP_OPT_NOP,
	       EDP_MARKER_SIZE - EDP_OPT_HDR_LEN);
	return EDP_MARKER_SIZE;
}

uint8_t edp_marker_type(const uint8_t *opt, size_t len)
{
	if (len != EDP_OPT_HDR_LEN || opt[0] != EDP_OPT_KIND ||
	    opt[1] != EDP_OPT_HDR_LEN || (opt[2] << 8 | opt[3]) != EDP_EXID ||
	    opt[4] >> 4 != EDP_VERSION || body_len(opt[4] & 0x0f) == 0)
		return 0;
	return opt[4] & 0x0f;
}

const char *edp_type_name(uint8_t type)
{
	static const char *const names[EDP_TYPE_MAX] = {
		[EDP_SYN] = "syn", [EDP_SYNACK] = "synack", [EDP_KEY] = "key",
		[EDP_CONFIRM] = "confirm", [EDP_DONE] = "done",
		[EDP_HEARTBEAT] = "heartbeat",
		[EDP_HEARTBEAT_ACK] = "heartbeat_ack",
		[EDP_RECONNECT] = "reconnect",
		[EDP_RECONNECT_ACK] = "reconnect_ack",
		[EDP_AWAY] = "away", [EDP_AWAY_ACK] = "away_ack",
		[EDP_ADOPT] = "adopt",
		[EDP_RECONNECT_CONFIRM] = "reconnect_confirm",
		[EDP_HANDSHAKE] = "handshake",
	};

	return type < EDP_TYPE_MAX && names[type] ? names[type] : "unknown";
}

const char *edp_error_name(enum edp_error err)
{
	static const char *const names[EDP_ERR_MAX] = {
		[EDP_OK] = "ok", [EDP_ERR_NOT_RACKS] = "not_racks",
		[EDP_ERR_LENGTH] = "length", [EDP_ERR_VERSION] = "version",
		[EDP_ERR_TYPE] = "type",
	};

	return (unsigned)err < EDP_ERR_MAX ? names[err] : "unknown";
}
