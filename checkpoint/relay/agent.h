/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The loopback agent of `rackckpt run --relay-loopback-env NAME`. Some
 * launchers give their child the address of a local server in an
 * environment variable, and the child connects to it by itself (Open
 * MPI's orted: PMIX_SERVER_URI2=JOBID.VPID;tcp4://127.0.0.1:P). A
 * loopback connection cannot follow the child to another host, so the
 * dumped tree gets its own end of it:
 *
 *   server 127.0.0.1:P <--TCP, opened on the first bytes-- wrapper (stays)
 *   wrapper <==socketpair, a relayed descriptor==> agent (tree root,
 *   session leader) listening on 127.0.0.1:Q <--TCP-- command, whose
 *   NAME now says 127.0.0.1:Q
 *
 * Both ends of the command's loopback connection are in the tree, which
 * CRIU restores as a pair; the socketpair is relayed through the bridge
 * like the child's stdio. Each distinct loopback ADDRESS:PORT of the
 * named variables is one channel, and each channel carries the first
 * connection the command makes to it (the agent then stops listening).
 */
#ifndef RACKCKPT_AGENT_H
#define RACKCKPT_AGENT_H

#include <netinet/in.h>
#include <stddef.h>

#define AGENT_MAX_NAMES 16
#define AGENT_MAX_CHANS 8

struct agent_chan {
	int family;			/* AF_INET or AF_INET6 */
	char addr[INET6_ADDRSTRLEN];	/* a loopback address, as written */
	int port;			/* the real server's port */
	int fd;				/* the agent's socketpair end (number) */
};

struct agent_env {
	const char *names[AGENT_MAX_NAMES];	/* variables to rewrite */
	size_t nnames;
	struct agent_chan c[AGENT_MAX_CHANS];
	size_t n;
};

/*
 * Collect the distinct loopback ADDRESS:PORT (127.x.y.z:P, [::1]:P) in
 * the values of E's variables that are set. 0, or -E2BIG with ERR.
 */
int agent_scan(struct agent_env *e, char *err, size_t errlen);

/* In the wrapper: a TCP connection to C's real server, or -errno. */
int agent_dial(const struct agent_chan *c);

/*
 * In the wrapper's forked child, which leads its session and has every
 * channel's socketpair end at C[i].fd: listen on each channel's address
 * (an ephemeral port), run CMD with the variables rewritten to those
 * ports, relay each first connection to its socketpair, forward
 * SIGTERM, SIGINT, SIGHUP and SIGQUIT to CMD, and exit as CMD did.
 */
void agent_run(const struct agent_env *e, char **cmd)
	__attribute__((noreturn));

#endif
