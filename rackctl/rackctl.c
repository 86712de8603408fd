// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackctl: the command-line client of rackd's control socket. One
 * function per subcommand; human-readable output by default, --json for
 * programs.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "ctlclient.h"
#include "probe.h"
#include "proto.h"
#include "rackctl.h"

#define RACKCTL_VERSION "0.1.0"
#define DEFAULT_SOCKET "/run/racks/rackd.sock"

struct subcommand {
	const char *name;
	const char *args;
	const char *help;
	int min_args, max_args;
	int (*run)(struct ctx *ctx, int argc, char **argv);
};

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rackctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The shared client (common/ctlclient.c) reports; rackctl exits. */
static int connect_daemon(const char *path)
{
	char err[512];
	int fd = ctlclient_connect(path, err, sizeof(err));

	if (fd < 0)
		die("%s", err);
	return fd;
}

static void send_all(int fd, const char *buf, size_t len)
{
	char err[512];

	if (ctlclient_send_all(fd, buf, len, err, sizeof(err)))
		die("%s", err);
}

void transact(struct ctx *ctx, const char *request,
		     struct ctlclient_reply *r)
{
	char err[512];
	int refused;

	if (ctlclient_transact(ctx->sock_path, request, r, err, sizeof(err),
			       &refused))
		die("%s", err);
}

void reply_free(struct ctlclient_reply *r)
{
	ctlclient_reply_free(r);
}

bool is_number(const char *s)
{
	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Hex identifiers and names stay strings even when all their digits
 * are decimal. */
static bool is_hex_key(const char *key)
{
	return strcmp(key, "conn_id") == 0 ||
	       strcmp(key, "key_fingerprint") == 0 ||
	       strcmp(key, "name") == 0;
}

static void json_value(const char *key, const char *v)
{
	if (!is_hex_key(key) && (is_number(v) || strcmp(v, "true") == 0 ||
				 strcmp(v, "false") == 0))
		fputs(v, stdout);
	else
		json_string(v);
}

void json_object(const struct proto_msg *m, size_t from, size_t to)
{
	bool first = true;

	putchar('{');
	for (size_t i = from; i < to; i++) {
		if (strcmp(m->kv[i].key, "errno") == 0)
			continue;
		printf(first ? "" : ", ");
		json_string(m->kv[i].key);
		printf(": ");
		json_value(m->kv[i].key, m->kv[i].value);
		first = false;
	}
	putchar('}');
}

size_t next_record(const struct proto_msg *m, size_t i)
{
	return ctlclient_next_record(m, i);
}

void print_object(const struct ctx *ctx, const struct proto_msg *m)
{
	if (ctx->json) {
		json_object(m, 0, m->n);
		putchar('\n');
		return;
	}
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->kv[i].key, "errno") != 0)
			printf("%-22s %s\n", m->kv[i].key, m->kv[i].value);
}

static int run_status(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;

	(void)argc, (void)argv;
	transact(ctx, "cmd=status\nversion=1\n", &r);
	print_object(ctx, &r.msg);
	reply_free(&r);
	return 0;
}

const char *field(const struct proto_msg *m, size_t from, size_t to,
			 const char *key)
{
	for (size_t i = from; i < to; i++)
		if (strcmp(m->kv[i].key, key) == 0)
			return m->kv[i].value;
	return "-";
}

static int run_list(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;
	size_t i;
	bool first = true;

	(void)argc, (void)argv;
	transact(ctx, "cmd=list\nversion=1\n", &r);
	if (ctx->json)
		putchar('[');
	else
		printf("%-6s %-10s %-7s %-6s %-9s %-26s %-26s %-8s %-12s %s\n",
		       "ID", "STATE", "SINCE", "MOVES", "DIR", "LOCAL", "REMOTE",
		       "PEER", "TCP", "AGE");
	for (i = next_record(&r.msg, 0); i < r.msg.n;) {
		size_t end = next_record(&r.msg, i + 1);
		const struct proto_msg *m = &r.msg;

		if (ctx->json) {
			printf(first ? "\n  " : ",\n  ");
			json_object(m, i + 1, end);
		} else {
			char since[24];

			snprintf(since, sizeof(since), "%ss",
				 field(m, i, end, "since"));
			printf("%-6s %-10s %-7s %-6s %-9s %-26s %-26s %-8s %-12s "
			       "%ss\n", field(m, i, end, "id"),
			       field(m, i, end, "state"), since,
			       field(m, i, end, "reconnections"),
			       field(m, i, end, "direction"),
			       field(m, i, end, "local"),
			       field(m, i, end, "remote"),
			       field(m, i, end, "peer"),
			       field(m, i, end, "tcp_state"),
			       field(m, i, end, "age"));
		}
		first = false;
		i = end;
	}
	if (ctx->json)
		printf(first ? "]\n" : "\n]\n");
	reply_free(&r);
	return 0;
}

static int run_show(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;
	char req[128];

	(void)argc;
	if (!argv[0][0] || strspn(argv[0], "0123456789") != strlen(argv[0])) {
		fprintf(stderr, "rackctl: connection id must be a number, not '%s'\n",
			argv[0]);
		exit(2);
	}
	snprintf(req, sizeof(req), "cmd=show\nversion=1\nid=%s\n", argv[0]);
	transact(ctx, req, &r);
	print_object(ctx, &r.msg);
	reply_free(&r);
	return 0;
}

/* Both ends moved: where connection ID's peer is now. */
static int run_peer(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;
	char req[256];
	struct endpoint ep;
	bool has_port;

	(void)argc;
	if (!argv[0][0] || strspn(argv[0], "0123456789") != strlen(argv[0])) {
		fprintf(stderr, "rackctl: connection id must be a number, not '%s'\n",
			argv[0]);
		exit(2);
	}
	if (strlen(argv[1]) > 64 || endpoint_parse(argv[1], &ep, &has_port)) {
		fprintf(stderr, "rackctl: '%s' is not ADDR, ADDR:PORT or "
			"[ADDR6]:PORT\n", argv[1]);
		exit(2);
	}
	snprintf(req, sizeof(req), "cmd=peer\nversion=1\nid=%s\npeer=%s\n",
		 argv[0], argv[1]);
	transact(ctx, req, &r);
	if (ctx->json)
		print_object(ctx, &r.msg);
	else
		printf("%s connection(s) moved to %s; reconnecting\n",
		       field(&r.msg, 0, r.msg.n, "moved"), argv[1]);
	reply_free(&r);
	return 0;
}

static int run_reload(struct ctx *ctx, int argc, char **argv)
{
	struct ctlclient_reply r;

	(void)argc, (void)argv;
	transact(ctx, "cmd=reload\nversion=1\n", &r);
	if (ctx->json)
		printf("{\"reloaded\": true}\n");
	else
		printf("configuration reloaded\n");
	reply_free(&r);
	return 0;
}

bool parse_target(const char *target, char *host, size_t len,
			 uint16_t *port)
{
	const char *colon = strrchr(target, ':'), *begin = target, *end;
	unsigned long n;

	if (!colon || !is_number(colon + 1) || strlen(colon + 1) > 5)
		return false;
	n = strtoul(colon + 1, NULL, 10);
	if (n == 0 || n > 65535)
		return false;
	end = colon;
	if (target[0] == '[') {
		begin++;
		end--;
		if (end < begin || *end != ']')
			return false;
	}
	if (end == begin || (size_t)(end - begin) >= len ||
	    memchr(begin, target[0] == '[' ? ']' : ':', (size_t)(end - begin)))
		return false;
	memcpy(host, begin, (size_t)(end - begin));
	host[end - begin] = '\0';
	*port = (uint16_t)n;
	return true;
}

static void print_probe_json(const char *target,
			     const struct edp_probe_result *r)
{
	printf("{\"target\": ");
	json_string(target);
	printf(", \"result\": \"%s\", \"reason\": ",
	       edp_probe_verdict_str(r->verdict));
	json_string(r->reason);
	printf(", \"connect_ms\": %.3f, \"total_ms\": %.3f, \"wait_ms\": %llu, "
	       "\"bytes\": %llu", r->connect_us / 1000.0, r->total_us / 1000.0,
	       (unsigned long long)r->wait_ms, (unsigned long long)r->bytes);
	if (r->verdict == EDP_PROBE_ENHANCED)
		printf(", \"host_id\": \"%s\"", r->host_id);
	printf("}\n");
}

static void print_probe(const char *target, const struct edp_probe_result *r)
{
	printf("%s: %s (", target, edp_probe_verdict_str(r->verdict));
	if (r->verdict == EDP_PROBE_ENHANCED)
		printf("host %s", r->host_id);
	else
		printf("%s after %llu byte%s", r->reason,
		       (unsigned long long)r->bytes, r->bytes == 1 ? "" : "s");
	printf(") in %.2f ms (connect %.2f ms, waited up to %llu ms)\n",
	       r->total_us / 1000.0, r->connect_us / 1000.0,
	       (unsigned long long)r->wait_ms);
}

/* Unlike the other commands, probe does not involve rackd: it is the
 * client side of EDP, runnable on any host. */
static int run_probe(struct ctx *ctx, int argc, char **argv)
{
	struct edp_probe_result r;
	char host[256];
	uint16_t port;
	int ret;

	(void)argc;
	if (!parse_target(argv[0], host, sizeof(host), &port)) {
		fprintf(stderr, "rackctl: target must be HOST:PORT or "
			"[ADDRESS]:PORT with a port from 1 to 65535, not '%s'\n",
			argv[0]);
		exit(2);
	}
	ret = edp_probe(host, port, NULL, &r);
	if (ret < 0)
		die("cannot probe %s: %s", argv[0], r.reason);
	if (ctx->json)
		print_probe_json(argv[0], &r);
	else
		print_probe(argv[0], &r);
	return 0;
}

/*
 * Stream events: one JSON object per line, flushed as it arrives, until
 * rackd goes away (exit 1) or the user interrupts.
 */
static int run_events(struct ctx *ctx, int argc, char **argv)
{
	static const char req[] = "cmd=events\nversion=1\n\n";
	int fd = connect_daemon(ctx->sock_path);
	size_t len = 0, cap = 65536, mlen;
	char *buf = malloc(cap);
	bool subscribed = false;

	(void)argc, (void)argv;
	if (!buf)
		die("out of memory");
	send_all(fd, req, sizeof(req) - 1);
	for (;;) {
		while ((mlen = proto_message_len(buf, len)) > 0) {
			struct proto_msg m;

			if (proto_parse(buf, mlen, &m))
				die("malformed event from rackd");
			if (!subscribed) {
				const char *e = proto_get(&m, "errno");

				if (!e || atoi(e))
					die("rackd refused the subscription");
				subscribed = true;
			} else {
				json_object(&m, 0, m.n);
				putchar('\n');
				fflush(stdout);
			}
			proto_msg_free(&m);
			memmove(buf, buf + mlen, len - mlen);
			len -= mlen;
		}
		if (len == cap)
			die("event from rackd too long");
		ssize_t n = recv(fd, buf + len, cap - len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("rackd closed the event stream");
		len += (size_t)n;
	}
}

static int run_help(struct ctx *ctx, int argc, char **argv);

/* Where the help of a command continues on the next line. */
#define HELP_INDENT "                          "

static const struct subcommand subcommands[] = {
	{ "status", "", "daemon version, queue mode, uptime and counters",
	  0, 0, run_status },
	{ "list", "", "one line per tracked connection", 0, 0, run_list },
	{ "show", "ID", "everything rackd knows about one connection",
	  1, 1, run_show },
	{ "reload", "", "re-read the configuration (root only)", 0, 0,
	  run_reload },
	{ "events", "", "stream connection events as JSON lines", 0, 0,
	  run_events },
	{ "peer", "ID ADDR[:PORT]",
	  "the peer of ID (and, without PORT, of every\n"
	  HELP_INDENT "connection to its host) is now at ADDR: reconnect\n"
	  HELP_INDENT "there (root only)",
	  2, 2, run_peer },
	{ "probe", "HOST:PORT", "ask whether a server runs racks (no rackd needed)",
	  1, 1, run_probe },
	{ "host", "", "this host's key: fingerprint, public key, its file",
	  0, 0, run_host },
	{ "hosts", "[ACTION]", "the known hosts; ACTION: add KEY [NAME] [--pin],\n"
	  HELP_INDENT "remove HOST, pin HOST or unpin HOST (root only);\n"
	  HELP_INDENT "HOST: a key or its fingerprint", 0, 3, run_hosts },
	{ "keyscan", "HOST[:PORT]", "the host key of the rackd answering probes\n"
	  HELP_INDENT "at HOST:PORT (22 by default); --add [NAME] [--pin]:\n"
	  HELP_INDENT "add it to the known hosts (root only)", 1, 2,
	  run_keyscan },
	{ "help", "", "this text", 0, 0, run_help },
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: rackctl [-S PATH] [--json] COMMAND [ARGS]\n\n"
		   "options (before or after the command):\n"
		   "  -S, --socket PATH  control socket (default "
		   DEFAULT_SOCKET ")\n"
		   "  -j, --json         machine-readable output\n"
		   "  --pin              hosts add, keyscan --add: pin the key\n"
		   "  --add              keyscan: add the key to the known hosts\n"
		   "  -h, --help         this text\n"
		   "  -V, --version      print the version\n\ncommands:\n");
	for (size_t i = 0; i < NSUBCOMMANDS; i++)
		fprintf(f, "  %-7s %-15s %s\n", subcommands[i].name,
			subcommands[i].args, subcommands[i].help);
}

static int run_help(struct ctx *ctx, int argc, char **argv)
{
	(void)ctx, (void)argc, (void)argv;
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "pin", no_argument, NULL, 'P' },
		{ "add", no_argument, NULL, 'A' },
		{ 0 }
	};
	struct ctx ctx = { .sock_path = DEFAULT_SOCKET };
	int c;

	/* Options may come before or after the command (GNU permutation);
	 * a leading '-' in ID arguments is not possible (ids are numbers). */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":S:jhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			ctx.sock_path = optarg;
			break;
		case 'j':
			ctx.json = true;
			break;
		case 'P':
			ctx.pin = true;
			break;
		case 'A':
			ctx.add = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rackctl %s\n", RACKCTL_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "rackctl: option needs an argument\n");
			return 2;
		default:
			fprintf(stderr, "rackctl: unknown option '%s'\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[optind++];
	char *args[8];
	int nargs = 0;

	if ((ctx.pin || ctx.add) && strcmp(name, "hosts") &&
	    strcmp(name, "keyscan")) {
		fprintf(stderr, "rackctl: --pin and --add are options of hosts "
			"add and keyscan only\n");
		return 2;
	}

	for (; optind < argc; optind++) {
		if (nargs < 8)
			args[nargs++] = argv[optind];
		else
			nargs++;
	}
	for (size_t i = 0; i < NSUBCOMMANDS; i++) {
		const struct subcommand *s = &subcommands[i];

		if (strcmp(s->name, name) != 0)
			continue;
		if (nargs < s->min_args || nargs > s->max_args) {
			fprintf(stderr, "rackctl: usage: rackctl %s %s\n",
				s->name, s->args);
			return 2;
		}
		return s->run(&ctx, nargs, args);
	}
	fprintf(stderr, "rackctl: unknown command '%s' (see rackctl help)\n",
		name);
	return 2;
}
