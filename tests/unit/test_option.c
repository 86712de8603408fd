// SPDX-License-Identifier: GPL-2.0-only
/*
 * The racks TCP option (edp/option.c): build/parse round trips with
 * random bodies, exact sizes and NOP padding, and each rejection reason
 * of the parser on hand-made option bytes.
 */
#include <string.h>

#include "option.h"
#include "unit.h"

#define NOP 1

static const uint8_t all_types[] = {
	EDP_SYN, EDP_SYNACK, EDP_KEY, EDP_CONFIRM, EDP_DONE,
	EDP_HEARTBEAT, EDP_HEARTBEAT_ACK, EDP_RECONNECT, EDP_RECONNECT_ACK,
	EDP_AWAY, EDP_AWAY_ACK, EDP_ADOPT, EDP_HANDSHAKE,
};

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)unit_rand();
}

static struct edp_msg random_msg(uint8_t type)
{
	struct edp_msg m = { .version = EDP_VERSION, .type = type };

	m.flags = (uint8_t)unit_rand();
	fill_random(m.key, sizeof(m.key));
	fill_random(m.mac, sizeof(m.mac));
	m.conn_id = (uint64_t)unit_rand() << 32 | (uint32_t)unit_rand();
	m.counter = (uint32_t)unit_rand();
	m.x_own = (uint32_t)unit_rand();
	m.x_peer = (uint32_t)unit_rand();
	m.has_nonce = 1;
	m.hp_id = (uint32_t)unit_rand();
	fill_random(m.nonce, sizeof(m.nonce));
	m.hs_msg = (uint8_t)(1 + unit_rand() % 3);
	m.hs_frag = (uint8_t)(unit_rand() % 8);
	m.hs_len = (uint8_t)unit_rand();
	return m;
}

/* Unpadded option length of a valid type. */
static size_t raw_len(uint8_t type)
{
	switch (type) {
	case EDP_SYN:
	case EDP_SYNACK:
		return EDP_OPT_HDR_LEN + EDP_OFFER_LONG_BODY;
	case EDP_HANDSHAKE:
		return EDP_OPT_HDR_LEN + 2 + EDP_HS_FRAG;
	case EDP_KEY:
		return EDP_OPT_HDR_LEN + EDP_KEY_LEN;
	case EDP_CONFIRM:
	case EDP_DONE:
		return EDP_OPT_HDR_LEN + EDP_MAC_LEN;
	case EDP_ADOPT:
		return EDP_OPT_HDR_LEN + 4 + 4 + 1 + 7;
	default:
		return EDP_OPT_HDR_LEN + 8 + 4 + EDP_MAC_LEN;
	}
}

/* A header with racks' ExID: kind, LEN, ExID, version/type. */
static void put_header(uint8_t *b, uint8_t len, uint8_t version,
		       uint8_t type)
{
	b[0] = EDP_OPT_KIND;
	b[1] = len;
	b[2] = EDP_EXID >> 8;
	b[3] = EDP_EXID & 0xff;
	b[4] = (uint8_t)(version << 4 | type);
}

TEST(round_trip_every_type)
{
	for (int rep = 0; rep < 50; rep++) {
		for (size_t i = 0; i < sizeof(all_types); i++) {
			uint8_t type = all_types[i];
			struct edp_msg m = random_msg(type), back;
			uint8_t buf[64];
			size_t n = edp_option_build(&m, buf, sizeof(buf));

			if (!CHECK_EQ_INT(n, edp_option_size(type)))
				continue;
			if (!CHECK_EQ_INT(edp_option_parse(buf, raw_len(type),
							   &back), EDP_OK))
				continue;
			CHECK_EQ_INT(back.version, EDP_VERSION);
			CHECK_EQ_INT(back.type, type);
			if (type == EDP_SYN || type == EDP_SYNACK) {
				CHECK_EQ_INT(back.flags, m.flags);
				CHECK_EQ_INT(back.has_nonce, 1);
				CHECK(back.hp_id == m.hp_id);
				CHECK_EQ_MEM(back.nonce, m.nonce, EDP_NONCE_LEN);
			} else if (type == EDP_HANDSHAKE) {
				CHECK_EQ_INT(back.hs_msg, m.hs_msg);
				CHECK_EQ_INT(back.hs_frag, m.hs_frag);
				CHECK_EQ_INT(back.hs_len, m.hs_len);
				CHECK_EQ_MEM(back.key, m.key, EDP_HS_FRAG);
			} else if (type == EDP_ADOPT) {
				CHECK_EQ_INT(back.flags, m.flags);
				CHECK(back.x_own == m.x_own);
				CHECK(back.x_peer == m.x_peer);
			} else if (type == EDP_KEY) {
				CHECK_EQ_MEM(back.key, m.key, EDP_KEY_LEN);
				CHECK_EQ_INT(back.flags, 0);
			} else {
				CHECK_EQ_MEM(back.mac, m.mac, EDP_MAC_LEN);
			}
			if (edp_type_numbered(type)) {
				CHECK(back.conn_id == m.conn_id);
				CHECK_EQ_INT(back.counter, m.counter);
			}
		}
	}
}

/* A rackd from before host keys offers the flags alone: still parsed,
 * as an offer without nonce or host pair; built the same way. */
TEST(short_offer_of_an_older_rackd)
{
	const uint8_t syn[] = { EDP_OPT_KIND, 6, EDP_EXID >> 8, EDP_EXID & 0xff,
				EDP_VERSION << 4 | EDP_SYN, 0 };
	struct edp_msg m = { .version = EDP_VERSION, .type = EDP_SYNACK };
	uint8_t buf[16];

	CHECK_EQ_INT(edp_option_parse(syn, sizeof(syn), &m), EDP_OK);
	CHECK_EQ_INT(m.type, EDP_SYN);
	CHECK_EQ_INT(m.has_nonce, 0);
	CHECK(m.hp_id == 0);
	m.type = EDP_SYNACK;
	CHECK_EQ_INT(edp_option_build(&m, buf, sizeof(buf)), 8);
	CHECK_EQ_INT(buf[1], 6);
	/* Neither 6 nor 18: malformed. */
	buf[1] = 7;
	CHECK_EQ_INT(edp_option_parse(buf, 7, &m), EDP_ERR_LENGTH);
}

TEST(exact_bytes_and_padding)
{
	static const struct {
		uint8_t type;
		size_t size, len;
	} want[] = {
		{ EDP_SYN, 20, 18 },	{ EDP_SYNACK, 20, 18 },
		{ EDP_HANDSHAKE, 40, 39 },
		{ EDP_KEY, 40, 37 },	{ EDP_CONFIRM, 24, 21 },
		{ EDP_DONE, 24, 21 },	{ EDP_HEARTBEAT, 36, 33 },
		{ EDP_RECONNECT, 36, 33 }, { EDP_RECONNECT_ACK, 36, 33 },
		{ EDP_AWAY, 36, 33 },	{ EDP_AWAY_ACK, 36, 33 },
		{ EDP_ADOPT, 24, 21 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct edp_msg m = random_msg(want[i].type);
		uint8_t buf[64], hdr[EDP_OPT_HDR_LEN];
		size_t n;

		memset(buf, 0xee, sizeof(buf));
		n = edp_option_build(&m, buf, sizeof(buf));
		CHECK_EQ_INT(edp_option_size(want[i].type), want[i].size);
		if (!CHECK_EQ_INT(n, want[i].size))
			continue;
		put_header(hdr, (uint8_t)want[i].len, EDP_VERSION,
			   want[i].type);
		CHECK_EQ_MEM(buf, hdr, sizeof(hdr));
		if (want[i].type == EDP_KEY)
			CHECK_EQ_MEM(buf + 5, m.key, EDP_KEY_LEN);
		else if (want[i].len == 21 && want[i].type != EDP_ADOPT)
			CHECK_EQ_MEM(buf + 5, m.mac, EDP_MAC_LEN);
		else if (want[i].len == 33) {
			uint8_t id[8] = {
				m.conn_id >> 56, m.conn_id >> 48,
				m.conn_id >> 40, m.conn_id >> 32,
				m.conn_id >> 24, m.conn_id >> 16,
				m.conn_id >> 8, m.conn_id,
			};

			CHECK_EQ_MEM(buf + 5, id, 8);
			CHECK_EQ_INT((uint32_t)buf[13] << 24 | buf[14] << 16 |
				     buf[15] << 8 | buf[16], m.counter);
			CHECK_EQ_MEM(buf + 17, m.mac, EDP_MAC_LEN);
		} else if (want[i].type == EDP_ADOPT) {
			CHECK_EQ_INT((uint32_t)buf[5] << 24 | buf[6] << 16 |
				     buf[7] << 8 | buf[8], m.x_own);
			CHECK_EQ_INT((uint32_t)buf[9] << 24 | buf[10] << 16 |
				     buf[11] << 8 | buf[12], m.x_peer);
			CHECK_EQ_INT(buf[13], m.flags);
		} else if (want[i].type == EDP_HANDSHAKE) {
			CHECK_EQ_INT(buf[5], m.hs_msg << 4 | m.hs_frag);
			CHECK_EQ_INT(buf[6], m.hs_len);
			CHECK_EQ_MEM(buf + 7, m.key, EDP_HS_FRAG);
		} else {
			CHECK_EQ_INT(buf[5], m.flags);
			CHECK_EQ_INT((uint32_t)buf[6] << 24 | buf[7] << 16 |
				     buf[8] << 8 | buf[9], m.hp_id);
			CHECK_EQ_MEM(buf + 10, m.nonce, EDP_NONCE_LEN);
		}
		for (size_t j = want[i].len; j < n; j++)
			CHECK_EQ_INT(buf[j], NOP);
		CHECK_EQ_INT(buf[n], 0xee);	/* nothing past the padding */
	}
	/* The byte-exact SYN option, as it appears on the wire. */
	struct edp_msg syn = { .version = EDP_VERSION, .type = EDP_SYN,
			       .flags = 0x5a };
	uint8_t buf[8];
	static const uint8_t wire[8] = { 254, 6, 0x72, 0x61, 0x11, 0x5a,
					 NOP, NOP };

	if (CHECK_EQ_INT(edp_option_build(&syn, buf, sizeof(buf)), 8))
		CHECK_EQ_MEM(buf, wire, 8);
}

TEST(build_without_room)
{
	for (size_t i = 0; i < sizeof(all_types); i++) {
		struct edp_msg m = random_msg(all_types[i]);
		size_t size = edp_option_size(all_types[i]);
		uint8_t buf[64];

		for (size_t room = 0; room < size; room++) {
			memset(buf, 0xee, sizeof(buf));
			CHECK_EQ_INT(edp_option_build(&m, buf, room), 0);
			CHECK_EQ_INT(buf[0], 0xee);	/* nothing written */
		}
		CHECK_EQ_INT(edp_option_build(&m, buf, size), size);
	}
	/* Unknown types are never built, whatever the room. */
	static const uint8_t bad[] = { 0, EDP_TYPE_MAX, 15, 0xff };

	for (size_t i = 0; i < sizeof(bad); i++) {
		struct edp_msg m = random_msg(bad[i]);
		uint8_t buf[64];

		CHECK_EQ_INT(edp_option_build(&m, buf, sizeof(buf)), 0);
	}
}

TEST(parse_not_racks)
{
	uint8_t b[8];
	struct edp_msg m;

	put_header(b, 6, EDP_VERSION, EDP_SYN);
	b[5] = 0;
	b[0] = 253;				/* the other experimental kind */
	CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_NOT_RACKS);
	b[0] = 30;				/* MPTCP */
	CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_NOT_RACKS);

	put_header(b, 4, EDP_VERSION, EDP_SYN);
	b[2] = 0xf9;				/* TCP Fast Open's ExID */
	b[3] = 0x89;
	CHECK_EQ_INT(edp_option_parse(b, 4, &m), EDP_ERR_NOT_RACKS);
	put_header(b, 6, EDP_VERSION, EDP_SYN);
	b[3] = 0x62;				/* one bit off */
	CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_NOT_RACKS);
	b[2] = 0x61;				/* byte-swapped */
	b[3] = 0x72;
	CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_NOT_RACKS);

	/* Too short to hold an ExID at all. */
	put_header(b, 3, EDP_VERSION, EDP_SYN);
	for (size_t len = 0; len < 4; len++)
		CHECK_EQ_INT(edp_option_parse(b, len, &m), EDP_ERR_NOT_RACKS);
}

TEST(parse_length)
{
	uint8_t b[64];
	struct edp_msg m;

	for (size_t i = 0; i < sizeof(all_types); i++) {
		uint8_t type = all_types[i];
		size_t len = raw_len(type);

		memset(b, NOP, sizeof(b));
		put_header(b, (uint8_t)len, EDP_VERSION, type);
		CHECK_EQ_INT(edp_option_parse(b, len, &m), EDP_OK);
		/* The length byte disagrees with the length given. */
		CHECK_EQ_INT(edp_option_parse(b, len + 1, &m), EDP_ERR_LENGTH);
		CHECK_EQ_INT(edp_option_parse(b, len - 1, &m), EDP_ERR_LENGTH);
		/* Consistent, but the body is too short / too long. */
		b[1] = (uint8_t)(len - 1);
		CHECK_EQ_INT(edp_option_parse(b, len - 1, &m), EDP_ERR_LENGTH);
		b[1] = (uint8_t)(len + 1);
		CHECK_EQ_INT(edp_option_parse(b, len + 1, &m), EDP_ERR_LENGTH);
		b[1] = EDP_OPT_HDR_LEN;			/* header only */
		CHECK_EQ_INT(edp_option_parse(b, EDP_OPT_HDR_LEN, &m),
			     EDP_ERR_LENGTH);
	}
	/* Too short for its own header: ExID but no version/type byte. */
	put_header(b, 4, EDP_VERSION, EDP_SYN);
	CHECK_EQ_INT(edp_option_parse(b, 4, &m), EDP_ERR_LENGTH);
	/* A SYN body with the length of a KEY, and the other way round. */
	put_header(b, 37, EDP_VERSION, EDP_SYN);
	CHECK_EQ_INT(edp_option_parse(b, 37, &m), EDP_ERR_LENGTH);
	put_header(b, 6, EDP_VERSION, EDP_KEY);
	CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_LENGTH);
	put_header(b, 21, EDP_VERSION, EDP_KEY);
	CHECK_EQ_INT(edp_option_parse(b, 21, &m), EDP_ERR_LENGTH);
	/* Padding NOPs are not part of the option. */
	put_header(b, 6, EDP_VERSION, EDP_SYN);
	CHECK_EQ_INT(edp_option_parse(b, 8, &m), EDP_ERR_LENGTH);
}

TEST(parse_version_and_type)
{
	static const uint8_t versions[] = { 0, 2, 15 };
	static const uint8_t types[] = { 0, EDP_TYPE_MAX, 15 };
	uint8_t b[8];
	struct edp_msg m;

	for (size_t i = 0; i < sizeof(versions); i++) {
		put_header(b, 6, versions[i], EDP_SYN);
		b[5] = 0x01;
		CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_VERSION);
	}
	for (size_t i = 0; i < sizeof(types); i++) {
		put_header(b, 6, EDP_VERSION, types[i]);
		b[5] = 0x01;
		CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_TYPE);
	}
	/* A bad version is reported before an unknown type. */
	put_header(b, 6, 2, 6);
	CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_ERR_VERSION);
}

TEST(parse_clears_message)
{
	uint8_t b[8];
	struct edp_msg m;

	memset(&m, 0xaa, sizeof(m));
	put_header(b, 6, EDP_VERSION, EDP_SYNACK);
	b[5] = 0x42;
	if (!CHECK_EQ_INT(edp_option_parse(b, 6, &m), EDP_OK))
		return;
	CHECK_EQ_INT(m.flags, 0x42);
	CHECK_EQ_INT(m.type, EDP_SYNACK);
	static const uint8_t zero[EDP_KEY_LEN];

	CHECK_EQ_MEM(m.key, zero, EDP_KEY_LEN);
	CHECK_EQ_MEM(m.mac, zero, EDP_MAC_LEN);
}

TEST(names)
{
	for (int i = EDP_SYN; i < EDP_TYPE_MAX; i++) {
		const char *name = edp_type_name((uint8_t)i);

		if (!CHECK(name != NULL))
			continue;
		CHECK(name[0] != '\0');
		CHECK(strcmp(name, "unknown") != 0);
		for (int j = EDP_SYN; j < i; j++)
			CHECK(strcmp(name, edp_type_name((uint8_t)j)) != 0);
	}
	CHECK_EQ_STR(edp_type_name(EDP_SYN), "syn");
	CHECK_EQ_STR(edp_type_name(0), "unknown");
	CHECK_EQ_STR(edp_type_name(EDP_TYPE_MAX), "unknown");
	CHECK_EQ_STR(edp_type_name(0xff), "unknown");

	for (int i = 0; i < EDP_ERR_MAX; i++) {
		const char *name = edp_error_name((enum edp_error)i);

		if (!CHECK(name != NULL))
			continue;
		CHECK(name[0] != '\0');
		CHECK(strcmp(name, "unknown") != 0);
		for (int j = 0; j < i; j++)
			CHECK(strcmp(name, edp_error_name((enum edp_error)j)) !=
			      0);
	}
	CHECK_EQ_STR(edp_error_name(EDP_OK), "ok");
	CHECK_EQ_STR(edp_error_name(EDP_ERR_MAX), "unknown");
	CHECK_EQ_STR(edp_error_name((enum edp_error)-1), "unknown");
}

TEST(marker)
{
	static const uint8_t want[EDP_MARKER_SIZE] = { 254, 5, 0x72, 0x61,
						       0x18, 1, 1, 1 };
	uint8_t out[EDP_MARKER_SIZE];
	struct edp_msg m;

	CHECK_EQ_INT(edp_marker_build(EDP_RECONNECT, out, sizeof(out)),
		     EDP_MARKER_SIZE);
	CHECK_EQ_MEM(out, want, sizeof(want));
	CHECK_EQ_INT(edp_marker_type(out, 5), EDP_RECONNECT);
	CHECK_EQ_INT(edp_marker_build(EDP_RECONNECT_ACK, out, 7), 0);
	CHECK_EQ_INT(edp_marker_build(EDP_TYPE_MAX, out, sizeof(out)), 0);
	/* Not a marker: another length, version, type, or ExID. */
	CHECK_EQ_INT(edp_marker_type(out, 6), 0);
	out[4] = 0x28;
	CHECK_EQ_INT(edp_marker_type(out, 5), 0);
	out[4] = 0x1f;
	CHECK_EQ_INT(edp_marker_type(out, 5), 0);
	out[4] = 0x18;
	out[3] = 0x62;
	CHECK_EQ_INT(edp_marker_type(out, 5), 0);
	/* A message parser never takes a marker for a message. */
	CHECK_EQ_INT(edp_option_parse(want, 5, &m), EDP_ERR_LENGTH);
	/* The magic the ruleset matches is a numbered option's start. */
	CHECK_EQ_INT(EDP_NUMBERED_LEN, 33);
	CHECK_EQ_INT(EDP_RCSYN_MAGIC, 0xfe217261u);
	CHECK_EQ_INT(EDP_RCSYN_DOFF, 12);
}

static const struct unit_test tests[] = {
	UNIT(marker),
	UNIT(round_trip_every_type),
	UNIT(short_offer_of_an_older_rackd),
	UNIT(exact_bytes_and_padding),
	UNIT(build_without_room),
	UNIT(parse_not_racks),
	UNIT(parse_length),
	UNIT(parse_version_and_type),
	UNIT(parse_clears_message),
	UNIT(names),
};

UNIT_MAIN("option", tests)
