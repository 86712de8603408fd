// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parsers of edp/noise.c and edp/hostpair.c on arbitrary bytes. The
 * first byte picks one:
 *
 *   0  edp_host_key_parse() of the rest as a string: what it accepts
 *      formats back to the same string
 *   1  a responder reads the rest as XX's message 0
 *   2  an initiator that wrote message 0 reads message 1
 *   3  a responder that read message 0 and wrote message 1 reads 2
 *
 * For 2 and 3 the rest is XORed onto the genuine message (cut or
 * lengthened to the rest's length), so that all-zero input is the
 * accepted message and any other a forgery near it. A read returns 0
 * with exactly the payload's length, or -EBADMSG and leaves a state that
 * refuses everything; never anything else.
 */
#include "../../edp/hostid.c"
#include "../../edp/hostpair.c"
#include "../../edp/noise.c"
#include "fuzz.h"

#define ROOM 512

static const uint8_t keys[4][NOISE_KEY_LEN] = {
	{ 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10, 11, 12 },
};

static void start(struct noise_hs *ini, struct noise_hs *res)
{
	static const uint8_t prologue[] = "fuzz";

	noise_hs_init(ini, NOISE_INITIATOR, prologue, 4, keys[0]);
	noise_hs_set_ephemeral(ini, keys[1]);
	noise_hs_init(res, NOISE_RESPONDER, prologue, 4, keys[2]);
	noise_hs_set_ephemeral(res, keys[3]);
}

/* The next message from FROM to TO, as it should be. */
static void pass(struct noise_hs *from, struct noise_hs *to)
{
	uint8_t msg[ROOM], got[ROOM];
	size_t len, got_len;

	INVARIANT(noise_hs_write(from, (const uint8_t *)"pay", 3, msg, ROOM,
				 &len) == 0);
	INVARIANT(noise_hs_read(to, msg, len, got, ROOM, &got_len) == 0);
}

/* Returns whether the message was accepted. */
static bool check_read(struct noise_hs *hs, int index, const uint8_t *msg,
		       size_t len)
{
	static uint8_t got[NOISE_MAX_MSG_LEN + 1];
	size_t got_len = 0;
	int err = noise_hs_read(hs, msg, len, got, sizeof(got), &got_len);

	INVARIANT(err == 0 || err == -EBADMSG);
	if (err == 0) {
		INVARIANT(got_len == len - noise_xx_msg_len(index, 0));
		INVARIANT(noise_hs_done(hs) == (index == 2));
	} else {
		INVARIANT(noise_hs_read(hs, msg, len, got, sizeof(got),
					&got_len) == -EINVAL);
		INVARIANT(noise_hs_remote_static(hs) == NULL);
	}
	return err == 0;
}

static void fuzz_key(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	uint8_t pk[EDP_HOST_KEY_LEN];
	char back[EDP_HOST_KEY_STRLEN];

	memcpy(s, data, size);
	s[size] = '\0';
	if (edp_host_key_parse(s, pk) == 0) {
		edp_host_key_format(pk, back);
		INVARIANT(strcmp(s, back) == 0);
	}
	free(s);
}

/* The genuine message INDEX (after the ones before it) XOR DATA. */
static void fuzz_message(int index, const uint8_t *data, size_t size)
{
	struct noise_hs ini, res;
	uint8_t genuine[ROOM];
	uint8_t *msg = malloc(size ? size : 1);
	size_t len = 0;

	start(&ini, &res);
	if (index >= 1)
		pass(&ini, &res);
	if (index >= 2)
		pass(&res, &ini);
	INVARIANT(noise_hs_write(index == 1 ? &res : &ini,
				 (const uint8_t *)"pay", 3, genuine, ROOM,
				 &len) == 0);
	for (size_t i = 0; i < size; i++)
		msg[i] = data[i] ^ (i < len ? genuine[i] : 0);
	check_read(index == 1 ? &ini : &res, index, msg, size);
	free(msg);
	noise_hs_wipe(&ini);
	noise_hs_wipe(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct noise_hs ini, res;

	if (size < 1 || size > NOISE_MAX_MSG_LEN + 2)
		return 0;
	INVARIANT(sodium_init() >= 0);
	switch (data[0] % 4) {
	case 0:
		fuzz_key(data + 1, size - 1);
		break;
	case 1: {
		uint8_t out[ROOM];
		size_t len;

		/* A first message read is one whose ephemeral is usable: the
		 * answer to it can be written. */
		start(&ini, &res);
		if (check_read(&res, 0, data + 1, size - 1))
			INVARIANT(noise_hs_write(&res, NULL, 0, out, ROOM,
						 &len) == 0);
		noise_hs_wipe(&ini);
		noise_hs_wipe(&res);
		break;
	}
	default:
		fuzz_message(data[0] % 4 - 1, data + 1, size - 1);
	}
	return 0;
}
