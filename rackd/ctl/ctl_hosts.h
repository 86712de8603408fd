/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control commands of the host's identity and of the known hosts
 * (rackctl host, hosts, keyscan --add):
 *
 *   host          our key: fingerprint, public_key, key_file, the known
 *                 hosts' count and file, the default trust policy
 *   hosts         one "record=host" per known host
 *   hosts_add     key=KEY [name=NAME] [pin=true]: a new known host, or
 *                 a known one named and pinned as asked (root only)
 *   hosts_remove  host=KEY|FINGERPRINT (root only)
 *   hosts_pin     host=KEY|FINGERPRINT pinned=true|false (root only)
 *
 * A change is written to the known-hosts file before the reply.
 */
#ifndef RACKS_CTL_HOSTS_H
#define RACKS_CTL_HOSTS_H

#include <stddef.h>
#include <stdio.h>

#include "proto.h"

struct rackd;

int cmd_host(struct rackd *d, const struct proto_msg *req, FILE *out,
	     char *err, size_t errlen);
int cmd_hosts(struct rackd *d, const struct proto_msg *req, FILE *out,
	      char *err, size_t errlen);
int cmd_hosts_add(struct rackd *d, const struct proto_msg *req, FILE *out,
		  char *err, size_t errlen);
int cmd_hosts_remove(struct rackd *d, const struct proto_msg *req, FILE *out,
		     char *err, size_t errlen);
int cmd_hosts_pin(struct rackd *d, const struct proto_msg *req, FILE *out,
		  char *err, size_t errlen);

#endif
