// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reconnection SYNs alone: rcsyn.c linked with fake kernel I/O (fake.h),
 * the channel's MAC stubbed. What it sends is rebuilt into an IPv4 packet
 * and read back with the real parser: sequence numbers ending at the
 * socket's snd_una, the original handshake's options in 28 bytes, the
 * marker, the message as payload at the fixed offset; a blanked marker or
 * a cut message; the SYN-ACK's challenge, to the claimed source; the
 * third segment's numbers and confirmation.
 */
#include "../../rackd/engine/rcsyn.c"

#include <string.h>

#include "fake.h"
#include "sockdiag.h"
#include "unit.h"

void channel_numbered_msg(struct conn *c, uint8_t type, uint32_t counter,
			  struct edp_msg *m)
{
	*m = (struct edp_msg){ .version = EDP_VERSION, .type = type,
			       .conn_id = c->edp->conn_id, .counter = counter };
	memset(m->mac, 0xab, sizeof(m->mac));
}

/* The challenge the confirmation's MAC was made over, its first byte. */
static uint8_t confirmed_over;

void channel_confirm_msg(struct conn *c, uint32_t counter,
			 const uint8_t *challenge, struct edp_msg *m)
{
	*m = (struct edp_msg){ .version = EDP_VERSION,
			       .type = EDP_RECONNECT_CONFIRM,
			       .conn_id = c->edp->conn_id, .counter = counter };
	confirmed_over = challenge[0];
	memset(m->mac, 0xcd, sizeof(m->mac));
}

/* The socket's numbers straight from the fake kernel, and the plain
 * send: the channel's cache and counters are not under test here. */
bool channel_snd_una(struct conn *c, uint32_t *snd_una)
{
	struct sockdiag_progress pr;
	uint32_t rcv_nxt;

	if (sockdiag_progress(&c->local, &c->remote, &pr))
		return false;
	conn_seq_progress(c, &pr, snd_una, &rcv_nxt);
	return true;
}

int channel_inject(struct rackd *d, const struct inject_segment *seg)
{
	return inject_send(d->inject, seg);
}

static struct rackd d;
static uint8_t pkt[20 + 60 + 64];

/* The last segment sent, as the IPv4 packet the raw socket would carry
 * (checksums left zero: the parser does not read them). */
static size_t rebuild(const struct fake_segment *f)
{
	size_t tcp = 20 + 20 + f->optlen, len = tcp + f->paylen;

	memset(pkt, 0, sizeof(pkt));
	pkt[0] = 0x45;
	pkt[2] = (uint8_t)(len >> 8);
	pkt[3] = (uint8_t)len;
	pkt[8] = 64;
	pkt[9] = IPPROTO_TCP;
	memcpy(pkt + 12, &f->src.addr.v4, 4);
	memcpy(pkt + 16, &f->dst.addr.v4, 4);
	pkt[20] = (uint8_t)(f->src.port >> 8);
	pkt[21] = (uint8_t)f->src.port;
	pkt[22] = (uint8_t)(f->dst.port >> 8);
	pkt[23] = (uint8_t)f->dst.port;
	wr32(pkt + 24, f->seq);
	wr32(pkt + 28, f->ack);
	pkt[32] = (uint8_t)(((20 + f->optlen) / 4) << 4);
	pkt[33] = f->flags;
	pkt[34] = 0xff;
	pkt[35] = 0xff;
	memcpy(pkt + 40, f->options, f->optlen);
	memcpy(pkt + tcp, f->payload, f->paylen);
	return len;
}

static struct conn *setup(void)
{
	struct conn *c;

	fake_rackd(&d);
	c = fake_conn(&d, "10.0.0.1:40000", "10.0.0.2:22", true);
	c->lend = (struct conn_end){ .seen = true, .isn = 1000, .has_mss = true,
				     .mss = 1460, .has_wscale = true,
				     .wscale = 7, .sack_permitted = true,
				     .has_timestamp = true };
	c->rend = c->lend;
	c->rend.isn = 2000;
	c->rend.wscale = 9;
	/* It moved: its segments leave from 10.0.9.1 now. */
	c->wire_local.addr = unit_addr("10.0.9.1");
	/* The kernel acknowledged 5000 bytes (snd_una 6000). */
	fake_progress.bytes_acked = 5000;
	return c;
}

TEST(test_syn_continues_the_connection)
{
	struct conn *c = setup();
	struct packet p;
	struct edp_msg m;
	struct rcsyn_seen s;

	CHECK_EQ_INT(rcsyn_send_syn(&d, c, 7), 0);
	CHECK_EQ_INT(fake_nsent, 1);
	const struct fake_segment *f = &fake_sent[0];

	CHECK(addr_equal(&f->src.addr, &c->wire_local.addr));
	CHECK_EQ_INT(f->src.port, 40000);
	CHECK_EQ_INT(f->flags, TCP_FLAG_SYN);
	CHECK_EQ_INT(f->optlen, EDP_RCSYN_OPTLEN);
	CHECK_EQ_INT(f->paylen, EDP_NUMBERED_SIZE);
	/* seq + SYN + payload = snd_una. */
	CHECK_EQ_INT(f->seq + 1 + EDP_NUMBERED_SIZE, 6000);
	CHECK_EQ_INT(packet_parse(pkt, rebuild(f), &p), PACKET_OK);
	/* Our own end's options: its MSS and shift; SACK, timestamps. */
	CHECK(p.opt.has_mss && p.opt.mss == 1460);
	CHECK(p.opt.has_wscale && p.opt.wscale == 7);
	CHECK(p.opt.sack_permitted && p.opt.has_timestamp);
	CHECK_EQ_INT(p.opt.tsecr, 0);
	CHECK_EQ_INT(edp_marker_type(p.data + p.opt.racks_off,
				     p.opt.racks_len), EDP_RECONNECT);
	CHECK(rcsyn_carried(&p));
	CHECK_EQ_INT(rcsyn_parse(&p, &m, &s), 0);
	CHECK_EQ_INT(m.type, EDP_RECONNECT);
	CHECK_EQ_INT(m.counter, 7);
	CHECK(m.conn_id == c->edp->conn_id);
	CHECK_EQ_INT(s.end, 6000);
	CHECK(s.has_ts);
	fake_rackd_free(&d);
}

TEST(test_synack_and_third_segment)
{
	struct conn *c = setup();
	struct rcsyn_seen syn = { .end = 9000, .has_ts = true, .tsval = 77 };
	struct endpoint claimed = c->wire_remote;
	uint8_t challenge[EDP_CHALLENGE_LEN];
	struct packet p;
	struct edp_msg m;
	struct rcsyn_seen s;

	memset(challenge, 0x5a, sizeof(challenge));
	claimed.port = 6000;
	c->dir = CONN_INCOMING;
	fake_progress.bytes_acked = 300;	/* snd_una 1301 */
	CHECK_EQ_INT(rcsyn_send_synack(&d, c, 7, &syn, &c->wire_local,
				       &claimed, challenge), 0);
	const struct fake_segment *f = &fake_sent[0];

	/* To where the SYN came from, not where the connection is. */
	CHECK_EQ_INT(f->dst.port, 6000);
	CHECK_EQ_INT(f->flags, TCP_FLAG_SYN | TCP_FLAG_ACK);
	CHECK_EQ_INT(f->ack, 9000);
	CHECK_EQ_INT(f->paylen, EDP_NUMBERED_SIZE + EDP_CHALLENGE_LEN);
	CHECK_EQ_INT(packet_parse(pkt, rebuild(f), &p), PACKET_OK);
	CHECK_EQ_INT(p.opt.tsecr, 77);
	CHECK_EQ_INT(rcsyn_parse(&p, &m, &s), 0);
	CHECK_EQ_INT(m.type, EDP_RECONNECT_ACK);
	CHECK_EQ_INT(s.end, 1301);	/* challenge included: still snd_una */
	CHECK_EQ_INT(s.ack, 9000);
	CHECK(s.has_challenge);
	CHECK(!memcmp(s.challenge, challenge, sizeof(challenge)));
	/* The mover's third segment: exactly both ends, its MAC over the
	 * challenge. */
	c->edp->hb_out = 7;
	CHECK_EQ_INT(rcsyn_send_confirm(&d, c, &s), 0);
	f = &fake_sent[1];
	CHECK_EQ_INT(f->flags, TCP_FLAG_ACK);
	CHECK_EQ_INT(f->seq, 9000);
	CHECK_EQ_INT(f->ack, 1301);
	CHECK_EQ_INT(f->paylen, 0);
	CHECK_EQ_INT(c->edp->hb_out, 8);
	CHECK_EQ_INT(f->options[4], EDP_VERSION << 4 | EDP_RECONNECT_CONFIRM);
	CHECK_EQ_INT(confirmed_over, 0x5a);
	/* A SYN-ACK without a challenge (an older rackd) gets no third
	 * segment: nothing to prove where we are. */
	s.has_challenge = false;
	CHECK_EQ_INT(rcsyn_send_confirm(&d, c, &s), -EPROTO);
	CHECK_EQ_INT(fake_nsent, 2);
	CHECK_EQ_INT(c->edp->hb_out, 8);
	fake_rackd_free(&d);
}

TEST(test_options_not_negotiated_are_nops)
{
	struct conn *c = setup();
	struct packet p;

	c->rend.has_wscale = false;
	c->rend.has_timestamp = false;
	c->rend.sack_permitted = false;
	rcsyn_send_syn(&d, c, 1);
	CHECK_EQ_INT(fake_sent[0].optlen, EDP_RCSYN_OPTLEN);
	CHECK_EQ_INT(packet_parse(pkt, rebuild(&fake_sent[0]), &p), PACKET_OK);
	CHECK(p.opt.has_mss && !p.opt.has_wscale && !p.opt.has_timestamp &&
	      !p.opt.sack_permitted);
	CHECK(rcsyn_carried(&p));
	fake_rackd_free(&d);
}

TEST(test_blanked_marker_and_short_message)
{
	struct conn *c = setup();
	struct fake_segment f;
	struct packet p;
	struct edp_msg m;
	struct rcsyn_seen s;

	rcsyn_send_syn(&d, c, 1);
	f = fake_sent[0];
	/* A middlebox turned the marker into NOPs: found by its payload. */
	memset(f.options + 20, TCP_OPT_NOP, 8);
	CHECK_EQ_INT(packet_parse(pkt, rebuild(&f), &p), PACKET_OK);
	CHECK_EQ_INT(p.opt.racks_len, 0);
	CHECK(rcsyn_carried(&p));
	CHECK_EQ_INT(rcsyn_parse(&p, &m, &s), 0);
	/* A message cut short: carried (never the kernel's), not valid. */
	f = fake_sent[0];
	f.paylen = 20;
	CHECK_EQ_INT(packet_parse(pkt, rebuild(&f), &p), PACKET_OK);
	CHECK(rcsyn_carried(&p));
	CHECK_EQ_INT(rcsyn_parse(&p, &m, &s), -EBADMSG);
	/* A SYN-ACK must carry the answer, a SYN the request. */
	f = fake_sent[0];
	f.flags |= TCP_FLAG_ACK;
	CHECK_EQ_INT(packet_parse(pkt, rebuild(&f), &p), PACKET_OK);
	CHECK_EQ_INT(rcsyn_parse(&p, &m, &s), -EBADMSG);
	/* Neither marker nor message: an ordinary SYN. */
	f = fake_sent[0];
	memset(f.options + 20, TCP_OPT_NOP, 8);
	f.paylen = 0;
	CHECK_EQ_INT(packet_parse(pkt, rebuild(&f), &p), PACKET_OK);
	CHECK(!rcsyn_carried(&p));
	fake_rackd_free(&d);
}

TEST(test_no_socket_falls_back)
{
	struct conn *c = setup();

	/* No socket to ask (checkpointed): the first byte. */
	fake_progress_err = ENOENT;
	rcsyn_send_syn(&d, c, 1);
	CHECK_EQ_INT(fake_sent[0].seq + 1 + EDP_NUMBERED_SIZE, 1001);
	fake_rackd_free(&d);
}

static const struct unit_test tests[] = {
	UNIT(test_syn_continues_the_connection),
	UNIT(test_synack_and_third_segment),
	UNIT(test_options_not_negotiated_are_nops),
	UNIT(test_blanked_marker_and_short_message),
	UNIT(test_no_socket_falls_back),
};

UNIT_MAIN("rcsyn", tests)
