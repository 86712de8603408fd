/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The client side of rackd's control socket (protocol in proto.h), shared
 * by rackctl and rackckpt. Functions return 0 or -errno and, on failure,
 * put a message meant for the user in ERR; they never exit.
 */
#ifndef RACKS_CTLCLIENT_H
#define RACKS_CTLCLIENT_H

#include <stddef.h>

#include "proto.h"

struct ctlclient_reply {
	char *buf;		/* the reply's bytes; msg points into them */
	struct proto_msg msg;
};

/* A connected stream socket to PATH (close-on-exec), or -errno. */
int ctlclient_connect(const char *path, char *err, size_t errlen);
int ctlclient_send_all(int fd, const char *buf, size_t len, char *err,
		       size_t errlen);
/*
 * Send REQUEST (its lines, without the blank line that ends it) and read
 * the reply. On success R holds the reply (free with ctlclient_reply_free).
 * When rackd answers with an error, returns -ERRNO (rackd's) with rackd's
 * message in ERR and *rackd_refused set (R is left empty); transport
 * problems leave *rackd_refused false.
 */
int ctlclient_transact(const char *path, const char *request,
		       struct ctlclient_reply *r, char *err, size_t errlen,
		       int *rackd_refused);
void ctlclient_reply_free(struct ctlclient_reply *r);

/* Index of the next "record" key at or after I in M, or M->n. */
size_t ctlclient_next_record(const struct proto_msg *m, size_t i);
/* Value of KEY among keys [from, to) of M, or NULL. */
const char *ctlclient_field(const struct proto_msg *m, size_t from, size_t to,
			    const char *key);

#endif
