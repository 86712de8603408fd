// SPDX-License-Identifier: GPL-2.0-only
/*
 * noise_peer: one end of a Noise XX handshake (edp/noise.c) over stdin
 * and stdout, for tests/test_noise.py, which plays the other end with an
 * independent implementation.
 *
 *   noise_peer initiator|responder S_SK E_SK PROLOGUE PAYLOAD...
 *
 * All arguments are hex (an empty string for nothing): the static and
 * the ephemeral X25519 secrets, the prologue, and one payload for each
 * message this end writes (the initiator's 0 and 2, the responder's 1).
 * Each line it prints is a word and hex:
 *
 *   msg HEX       a message it wrote, for the peer
 *   payload HEX   the payload of a message it read
 *   remote HEX    at the end: the peer's static key,
 *   h HEX         the handshake hash,
 *   k1 HEX        and Split()'s keys
 *   k2 HEX
 *
 * It reads each of the peer's messages as one line of hex on stdin. On
 * a refused message it prints "error EBADMSG" (or the errno's name) and
 * exits 1; exit 2 is a usage error.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noise.h"

#define ROOM NOISE_MAX_MSG_LEN

static uint8_t buf[ROOM], out[ROOM];

_Noreturn static void usage(void)
{
	fprintf(stderr, "usage: noise_peer initiator|responder S_SK E_SK "
		"PROLOGUE PAYLOAD...\n");
	exit(2);
}

/* HEX into BIN (ROOM bytes): its length, or exit 2. */
static size_t unhex(const char *hex, uint8_t *bin, size_t room)
{
	size_t len;
	const char *end;

	if (sodium_hex2bin(bin, room, hex, strlen(hex), NULL, &len,
			   &end) != 0 || *end != '\0') {
		fprintf(stderr, "noise_peer: not hex: %.40s\n", hex);
		exit(2);
	}
	return len;
}

static void print_hex(const char *word, const uint8_t *bin, size_t len)
{
	static char hex[2 * ROOM + 1];

	sodium_bin2hex(hex, sizeof(hex), bin, len);
	printf("%s %s\n", word, hex);
	fflush(stdout);
}

_Noreturn static void refused(int err)
{
	printf("error %s\n", err == -EBADMSG ? "EBADMSG" :
	       err == -EINVAL ? "EINVAL" : err == -EMSGSIZE ? "EMSGSIZE" :
	       "other");
	exit(1);
}

static void read_message(struct noise_hs *hs)
{
	char *line = NULL;
	size_t cap = 0, len, got;
	ssize_t n = getline(&line, &cap, stdin);
	int err;

	if (n < 0) {
		fprintf(stderr, "noise_peer: no message on stdin\n");
		exit(2);
	}
	line[strcspn(line, "\r\n")] = '\0';
	len = unhex(line, buf, sizeof(buf));
	free(line);
	err = noise_hs_read(hs, buf, len, out, sizeof(out), &got);
	if (err)
		refused(err);
	print_hex("payload", out, got);
}

int main(int argc, char **argv)
{
	uint8_t s_sk[NOISE_KEY_LEN], e_sk[NOISE_KEY_LEN], h[NOISE_HASH_LEN];
	uint8_t k1[NOISE_KEY_LEN], k2[NOISE_KEY_LEN];
	static uint8_t prologue[ROOM];
	enum noise_role role;
	struct noise_hs hs;
	size_t prologue_len;
	int next = 5;

	if (argc < 5 || sodium_init() < 0)
		usage();
	if (strcmp(argv[1], "initiator") == 0)
		role = NOISE_INITIATOR;
	else if (strcmp(argv[1], "responder") == 0)
		role = NOISE_RESPONDER;
	else
		usage();
	if (argc != 5 + (role == NOISE_INITIATOR ? 2 : 1) ||
	    unhex(argv[2], s_sk, sizeof(s_sk)) != NOISE_KEY_LEN ||
	    unhex(argv[3], e_sk, sizeof(e_sk)) != NOISE_KEY_LEN)
		usage();
	prologue_len = unhex(argv[4], prologue, sizeof(prologue));

	noise_hs_init(&hs, role, prologue, prologue_len, s_sk);
	noise_hs_set_ephemeral(&hs, e_sk);
	for (int i = 0; i < 3; i++) {
		bool ours = (i % 2 == 0) == (role == NOISE_INITIATOR);
		size_t len, plen;
		int err;

		if (!ours) {
			read_message(&hs);
			continue;
		}
		plen = unhex(argv[next++], buf, sizeof(buf));
		err = noise_hs_write(&hs, buf, plen, out, sizeof(out), &len);
		if (err)
			refused(err);
		print_hex("msg", out, len);
	}
	noise_hs_result(&hs, h, k1, k2);
	print_hex("remote", noise_hs_remote_static(&hs), NOISE_KEY_LEN);
	print_hex("h", h, sizeof(h));
	print_hex("k1", k1, sizeof(k1));
	print_hex("k2", k2, sizeof(k2));
	noise_hs_wipe(&hs);
	sodium_memzero(s_sk, sizeof(s_sk));
	sodium_memzero(e_sk, sizeof(e_sk));
	return 0;
}
