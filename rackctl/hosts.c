// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackctl's subcommands of host identity: host (this host's key), hosts
 * (the known hosts, and changing them through rackd) and keyscan (a
 * server's key learnt through the classic probe, as ssh-keyscan does).
 * Arguments are checked here before they go into a request line.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostid.h"
#include "probe.h"
#include "rackctl.h"

#define KEYSCAN_DEFAULT_PORT 22
/* The known hosts' names: rackd/core/knownhosts.h. */
#define NAME_MAX_LEN 63

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* A bad command line: "rackctl: MESSAGE", exit 2. */
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rackctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void check_key(const char *s)
{
	uint8_t pk[EDP_HOST_KEY_LEN];

	if (edp_host_key_parse(s, pk))
		usage_error("'%.80s' is not a host key (racks-x25519: and 44 "
			    "base64 characters, as rackctl host shows)", s);
}

/* A key or a fingerprint. */
static void check_host(const char *s)
{
	if (!strncmp(s, EDP_HOST_FP_PREFIX, strlen(EDP_HOST_FP_PREFIX))) {
		if (!edp_host_fp_valid(s))
			usage_error("'%.80s' is not a fingerprint (SHA256: and "
				    "43 base64 characters)", s);
		return;
	}
	check_key(s);
}

static void check_name(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			n = 0;
	if (n == 0 || n > NAME_MAX_LEN)
		usage_error("bad name '%.80s': up to 63 printable characters, "
			    "no blanks", s);
}

int run_host(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;

	(void)argc, (void)argv;
	transact(ctx, "cmd=host\nversion=1\n", &r);
	print_object(ctx, &r.msg);
	reply_free(&r);
	return 0;
}

static int hosts_list(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;
	const struct proto_msg *m = &r.msg;
	bool first = true;

	(void)argc, (void)argv;
	transact(ctx, "cmd=hosts\nversion=1\n", &r);
	if (ctx->json)
		putchar('[');
	else
		printf("%-50s %-6s %-16s %-20s %-20s %s\n", "FINGERPRINT",
		       "STATE", "NAME", "FIRST SEEN", "LAST SEEN", "ADDRESSES");
	for (size_t i = next_record(m, 0), end; i < m->n; i = end) {
		const char *name, *addrs;

		end = next_record(m, i + 1);
		if (ctx->json) {
			printf(first ? "\n  " : ",\n  ");
			json_object(m, i + 1, end);
			first = false;
			continue;
		}
		name = field(m, i, end, "name");
		addrs = field(m, i, end, "addresses");
		printf("%-50s %-6s %-16s %-20s %-20s %s\n",
		       field(m, i, end, "fingerprint"),
		       field(m, i, end, "state"), *name ? name : "-",
		       field(m, i, end, "first_seen"),
		       field(m, i, end, "last_seen"), *addrs ? addrs : "-");
	}
	if (ctx->json)
		printf(first ? "]\n" : "\n]\n");
	reply_free(&r);
	return 0;
}

/* Ask rackd to add KEY (NAME may be NULL); R holds its reply. */
static void add_key(struct ctx *ctx, const char *key, const char *name,
		    struct ctlclient_reply *r)
{
	char req[512];

	snprintf(req, sizeof(req), "cmd=hosts_add\nversion=1\nkey=%s\n%s%s%s"
		 "pin=%s\n", key, name ? "name=" : "", name ? name : "",
		 name ? "\n" : "", ctx->pin ? "true" : "false");
	transact(ctx, req, r);
}

static int hosts_add(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;
	const struct proto_msg *m = &r.msg;

	check_key(argv[0]);
	if (argc > 1)
		check_name(argv[1]);
	add_key(ctx, argv[0], argc > 1 ? argv[1] : NULL, &r);
	if (ctx->json)
		print_object(ctx, m);
	else if (!strcmp(field(m, 0, m->n, "added"), "true"))
		printf("added %s (%s)\n", field(m, 0, m->n, "fingerprint"),
		       field(m, 0, m->n, "state"));
	else
		printf("%s was known already (%s)\n",
		       field(m, 0, m->n, "fingerprint"),
		       field(m, 0, m->n, "state"));
	reply_free(&r);
	return 0;
}

static int hosts_remove(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;
	char req[256];

	(void)argc;
	check_host(argv[0]);
	snprintf(req, sizeof(req), "cmd=hosts_remove\nversion=1\nhost=%s\n",
		 argv[0]);
	transact(ctx, req, &r);
	if (ctx->json)
		print_object(ctx, &r.msg);
	else
		printf("removed %s\n", field(&r.msg, 0, r.msg.n, "removed"));
	reply_free(&r);
	return 0;
}

static int hosts_set_pin(struct ctx *ctx, const char *host, bool pinned)
{
	struct ctlclient_reply r;
	char req[256];

	check_host(host);
	snprintf(req, sizeof(req), "cmd=hosts_pin\nversion=1\nhost=%s\n"
		 "pinned=%s\n", host, pinned ? "true" : "false");
	transact(ctx, req, &r);
	if (ctx->json)
		print_object(ctx, &r.msg);
	else
		printf("%s %s\n", field(&r.msg, 0, r.msg.n, "fingerprint"),
		       field(&r.msg, 0, r.msg.n, "state"));
	reply_free(&r);
	return 0;
}

static int hosts_pin(struct ctx *ctx, int argc, char **argv)
{
	(void)argc;
	return hosts_set_pin(ctx, argv[0], true);
}

static int hosts_unpin(struct ctx *ctx, int argc, char **argv)
{
	(void)argc;
	return hosts_set_pin(ctx, argv[0], false);
}

int run_hosts(struct ctx *ctx, int argc, char **argv)
{
	static const struct {
		const char *name, *args;
		int min, max;
		int (*run)(struct ctx *ctx, int argc, char **argv);
	} actions[] = {
		{ "list", "", 0, 0, hosts_list },
		{ "add", " KEY [NAME] [--pin]", 1, 2, hosts_add },
		{ "remove", " HOST", 1, 1, hosts_remove },
		{ "pin", " HOST", 1, 1, hosts_pin },
		{ "unpin", " HOST", 1, 1, hosts_unpin },
	};
	const char *what = argc ? argv[0] : "list";
	int nargs = argc ? argc - 1 : 0;

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (strcmp(actions[i].name, what))
			continue;
		if (nargs < actions[i].min || nargs > actions[i].max) {
			fprintf(stderr, "rackctl: usage: rackctl hosts %s%s\n",
				actions[i].name, actions[i].args);
			return 2;
		}
		if (ctx->add || (ctx->pin && actions[i].run != hosts_add))
			usage_error("%s: --pin goes with hosts add only, --add "
				    "with keyscan", what);
		return actions[i].run(ctx, nargs, argv + (argc > 0));
	}
	usage_error("unknown hosts action '%.40s' (list, add, remove, pin, "
		    "unpin)", what);
}

/* HOST[:PORT], [ADDR6][:PORT] or a bare IPv6 address (an IPv6 address
 * with a port needs its brackets); false if it is none of them. */
static bool keyscan_target(const char *t, char *host, size_t len,
			   uint16_t *port)
{
	struct in6_addr a6;
	size_t n = strlen(t);

	if (parse_target(t, host, len, port))
		return true;
	*port = KEYSCAN_DEFAULT_PORT;
	if (t[0] == '[' && n > 2 && t[n - 1] == ']') {
		t++;
		n -= 2;
	}
	if (n == 0 || n >= len)
		return false;
	memcpy(host, t, n);
	host[n] = '\0';
	return inet_pton(AF_INET6, host, &a6) == 1 || !strchr(host, ':');
}

static void print_keyscan_json(const char *target,
			       const struct edp_probe_result *r,
			       const char *key, const char *fp,
			       const struct ctlclient_reply *added)
{
	printf("{\"host\": ");
	json_string(target);
	printf(", \"address\": ");
	json_string(r->peer);
	printf(", \"key\": \"%s\", \"fingerprint\": \"%s\"", key, fp);
	if (added)
		printf(", \"added\": %s, \"state\": \"%s\"",
		       field(&added->msg, 0, added->msg.n, "added"),
		       field(&added->msg, 0, added->msg.n, "state"));
	printf("}\n");
}

int run_keyscan(struct ctx *ctx, int argc, char **argv)
{
	char host[256], key[EDP_HOST_KEY_STRLEN], fp[EDP_HOST_FP_STRLEN];
	struct ctlclient_reply added;
	struct edp_probe_result r;
	uint16_t port;

	if (!keyscan_target(argv[0], host, sizeof(host), &port))
		usage_error("'%.80s' is not HOST, HOST:PORT, an IPv6 address "
			    "or [ADDRESS]:PORT", argv[0]);
	if (argc > 1 && !ctx->add)
		usage_error("a NAME (%s) goes with --add only", argv[1]);
	if (ctx->pin && !ctx->add)
		usage_error("--pin goes with --add");
	if (argc > 1)
		check_name(argv[1]);
	if (edp_probe(host, port, NULL, &r) < 0)
		die("cannot probe %s port %u: %s", host, port, r.reason);
	if (r.verdict != EDP_PROBE_ENHANCED)
		die("%s port %u: no rackd answered the probe (%s after %llu "
		    "bytes): keyscan needs the port of a server, on a host "
		    "that runs rackd", host, port, r.reason,
		    (unsigned long long)r.bytes);
	if (!r.has_host_key)
		die("%s port %u: its rackd announces no host key (an older "
		    "version)", host, port);
	edp_host_key_format(r.host_key, key);
	edp_host_fingerprint(r.host_key, fp);
	if (ctx->add)
		add_key(ctx, key, argc > 1 ? argv[1] : NULL, &added);
	if (ctx->json) {
		print_keyscan_json(argv[0], &r, key, fp,
				   ctx->add ? &added : NULL);
	} else {
		printf("%s %s %s\n", argv[0], key, fp);
		if (ctx->add)
			fprintf(stderr, "rackctl: %s %s the known hosts (%s)\n",
				fp, strcmp(field(&added.msg, 0, added.msg.n,
						 "added"), "true") ?
				"was in" : "added to",
				field(&added.msg, 0, added.msg.n, "state"));
	}
	if (ctx->add)
		reply_free(&added);
	return 0;
}
