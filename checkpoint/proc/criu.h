/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Finding and running CRIU. rackckpt needs CRIU >= 4.2: older ones cannot
 * run on kernels from 6.13 on (3.17) or dump TCP sockets on kernels from
 * 6.16 on (4.1). packaging/build-criu.sh builds 4.2.1 into a private
 * prefix, which is searched in this order: --criu PATH, $RACKS_CRIU,
 * DIR/criu/sbin/criu next to the rackckpt binary (build/criu for
 * build/rackckpt), /usr/lib/racks/criu/sbin/criu,
 * /usr/local/lib/racks/criu/sbin/criu.
 */
#ifndef RACKCKPT_CRIU_H
#define RACKCKPT_CRIU_H

#include <stddef.h>
#include <sys/types.h>

#define CRIU_MIN_MAJOR 4
#define CRIU_MIN_MINOR 2

struct criu {
	char *path;
	char version[32];
};

/* Find a usable CRIU (EXPLICIT: --criu, or NULL). 0, or -errno with a
 * message in ERR that says how to get one. */
int criu_find(const char *explicit, struct criu *c, char *err, size_t errlen);
void criu_free(struct criu *c);

/*
 * Run CRIU with ARGV (argv[0] is ignored; NULL-terminated), stdin from
 * /dev/null, stdout and stderr appended to LOG. The descriptors in KEEP
 * stay open in CRIU (--inherit-fd); every other one of ours is
 * close-on-exec. Returns CRIU's wait status in *STATUS; 0 or -errno.
 */
int criu_run(const struct criu *c, char **argv, const char *log,
	     const int *keep, size_t nkeep, int *status);

/* The arguments every run of ours starts with: "criu ACTION -D IMAGES
 * -o LOG -v4 --tcp-established"; returns how many were put in ARGV. */
int criu_args(char **argv, const char *action, char *images, char *log);

/* "exited 1", "killed by signal 9": a wait status for messages. */
const char *criu_status_str(int status, char *buf, size_t len);

#endif
