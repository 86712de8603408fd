// SPDX-License-Identifier: GPL-2.0-only
#include "ruleset.h"

#include <errno.h>
#include <nftables/libnftables.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adoptset.h"
#include "announce.h"
#include "conn.h"
#include "log.h"
#include "offerset.h"
#include "option.h"
#include "splicemap.h"
#include "xt_queue.h"

/* Before the usual mangle (-150) and filter (0) chains of other tables,
 * after conntrack (-200), so SYNs are seen as they leave and arrive. */
#define RULESET_PRIORITY "-160"
/* After defragmentation (-400), before conntrack (-200). */
#define PREROUTING_PRIORITY "-350"

struct script {
	char *buf;
	size_t len;
	FILE *f;
};

static void port_elements(FILE *f, const struct config *cfg)
{
	for (size_t i = 0; i < cfg->nports; i++) {
		const struct port_range *p = &cfg->ports[i];

		fprintf(f, "%s%u", i ? ", " : "", p->first);
		if (p->last != p->first)
			fprintf(f, "-%u", p->last);
	}
}

static void exclude_set(FILE *f, const struct config *cfg, const char *name,
			const char *type, int family)
{
	bool first = true;

	fprintf(f, "\tset %s {\n\t\ttype %s\n\t\tflags interval\n"
		   "\t\tauto-merge\n", name, type);
	for (size_t i = 0; i < cfg->nexclude; i++) {
		char buf[PREFIX_STRLEN];

		if (cfg->exclude[i].addr.family != family)
			continue;
		fprintf(f, "%s%s", first ? "\t\telements = { " : ", ",
			prefix_format(&cfg->exclude[i], buf, sizeof(buf)));
		first = false;
	}
	fprintf(f, "%s\t}\n", first ? "" : " }\n");
}

/* The per-direction chain that decides which SYNs are diverted. */
static void syn_chain(FILE *f, const struct config *cfg, const char *name,
		      const char *peer)
{
	fprintf(f, "\tchain %s {\n", name);
	fprintf(f, "\t\tip %s @exclude4 return\n", peer);
	fprintf(f, "\t\tip6 %s @exclude6 return\n", peer);
	if (cfg->all_ports) {
		fprintf(f, "\t\tgoto divert\n");
	} else {
		/* The server's port: destination of a SYN, source of a
		 * SYN-ACK, whichever end is local. */
		fprintf(f, "\t\ttcp flags & ack == 0 tcp dport @server_ports "
			   "goto divert\n");
		fprintf(f, "\t\ttcp flags & ack == ack tcp sport @server_ports "
			   "goto divert\n");
	}
	fprintf(f, "\t}\n");
}

#define ADD_RULE "add rule " RULESET_FAMILY " " RULESET_TABLE " "

/*
 * The handshake decisions, behind one test of the flags in the base
 * chains (output_syn, input_ctl), so that a data segment fails the first
 * rule and meets no other while nothing is held or spliced.
 *
 * Out: every SYN (racks offers itself on it); a SYN-ACK only when it
 * answers a racks client (offerset.h), so that a plain client's handshake
 * with this host never leaves the kernel.
 * In: every SYN-ACK (a SYN we offered racks on is answered by it, or not);
 * a SYN only when it carries racks' option (RFC 6994 ExID at option offset
 * 2): a plain client's SYN is none of rackd's business. With probes
 * answered, the SYN and FIN of a classic EDP probe too.
 */
static void handshake_chains(FILE *f, const struct config *cfg)
{
	fprintf(f, "\tchain output {\n\t\ttype filter hook output priority "
		   "%s; policy accept;\n\t}\n", RULESET_PRIORITY);
	fprintf(f, "\tchain output_syn {\n");
	fprintf(f, "\t\ttcp flags & ack == 0 goto syn_out\n");
	for (int v6 = 0; v6 < 2; v6++)
		fprintf(f, "\t\tip%s saddr . tcp sport . ip%s daddr . "
			   "tcp dport @offered%c goto divert\n",
			v6 ? "6" : "", v6 ? "6" : "", v6 ? '6' : '4');
	fprintf(f, "\t}\n");

	fprintf(f, "\tchain input_ctl {\n");
	/* With the sock_ops program (cfg->bpf_handshakes) the kernel writes
	 * and reads racks' option itself: no handshake comes here. */
	if (!cfg->bpf_handshakes) {
		fprintf(f, "\t\ttcp flags & (fin | syn | rst | ack) == syn | "
			   "ack meta mark != 0x%08x jump syn_in\n", cfg->mark);
		fprintf(f, "\t\ttcp flags & (fin | syn | rst | ack) == syn tcp "
			   "option @%d,16,16 0x%04x meta mark != 0x%08x jump "
			   "syn_in\n", EDP_OPT_KIND, EDP_EXID, cfg->mark);
	}
	/* Every reset: few, and a managed connection's may not be its
	 * peer's (rstguard.h). */
	fprintf(f, "\t\ttcp flags & (syn | rst) == rst meta mark != 0x%08x "
		   "goto divert\n", cfg->mark);
	/* Classic EDP probes mark themselves DSCP LE: their SYN (whose
	 * sequence number tells a probe's FIN from a client's) and their
	 * FIN, which is answered. */
	for (int v6 = 0; cfg->answer_probes && v6 < 2; v6++)
		fprintf(f, "\t\tip%s dscp 0x%02x tcp flags & (fin | syn | rst | "
			   "ack) == syn meta mark != 0x%08x jump syn_in\n"
			   "\t\tip%s dscp 0x%02x tcp flags & (fin | syn | rst) "
			   "== fin meta mark != 0x%08x jump probe_in\n",
			v6 ? "6" : "", EDP_PROBE_DSCP, cfg->mark,
			v6 ? "6" : "", EDP_PROBE_DSCP, cfg->mark);
	fprintf(f, "\t}\n");
}

/* Divert segments of held flows from CHAIN; LOCAL / REMOTE say which of
 * the header's source ("s") and destination ("d") is the local end. */
static void held_rules(FILE *f, const struct config *cfg, const char *chain,
		       const char *local, const char *remote)
{
	for (int v6 = 0; v6 < 2; v6++)
		fprintf(f, ADD_RULE "%s meta mark != { 0x%08x, 0x%08x } ip%s "
			   "%saddr . tcp %sport . ip%s %saddr . tcp %sport "
			   "@held%c goto divert_strict\n", chain, cfg->mark,
			config_unspliced_mark(cfg), v6 ? "6" : "", local,
			local, v6 ? "6" : "", remote, remote,
			v6 ? '6' : '4');
}

/*
 * Reconnections travel in SYNs and SYN-ACKs (edp/option.h), taken at step
 * 1 with the messages: before the splicing rules, so that rackd sees the
 * endpoints they really came from, and whatever their destination port
 * (a listener's included), so that no socket ever sees one. Two rules,
 * either enough: the message at the fixed data offset rackd's SYNs have,
 * which survives a middlebox that blanks unknown options ("reset tcp
 * option 254" leaves NOPs and the data offset as they were), and the
 * marker option, which survives one that moved the payload. A data
 * segment fails both at their first comparison. Only those addressed to
 * this host: a rackd on a router leaves the reconnections it forwards
 * alone.
 */
static void reconnect_rules(FILE *f, const struct config *cfg)
{
	fprintf(f, ADD_RULE RULESET_PREROUTING " tcp flags & (fin | syn | rst) "
		   "== syn tcp doff %d @th,%d,32 0x%08x meta mark != 0x%08x "
		   "meta iiftype != loopback fib daddr type local goto "
		   "divert_strict\n", EDP_RCSYN_DOFF,
		EDP_RCSYN_DOFF * 32, EDP_RCSYN_MAGIC, cfg->mark);
	fprintf(f, ADD_RULE RULESET_PREROUTING " tcp flags & (fin | syn | rst) "
		   "== syn tcp option @%d,8,32 { 0x%02x%04x%02x, 0x%02x%04x%02x }"
		   " meta mark != 0x%08x meta iiftype != loopback fib daddr type "
		   "local goto divert_strict\n", EDP_OPT_KIND, EDP_OPT_HDR_LEN,
		EDP_EXID,
		EDP_VERSION << 4 | EDP_RECONNECT, EDP_OPT_HDR_LEN, EDP_EXID,
		EDP_VERSION << 4 | EDP_RECONNECT_ACK, cfg->mark);
}

/*
 * The base chains' rules, rewritten whole (flush, then add, in the
 * caller's transaction) whenever the first connection is held or spliced
 * and after the last. Two base chains carry everything but the outgoing
 * splice (a route chain of its own, splicemap.h), because every base chain
 * costs every packet of the host a hook call, rules or not (the chains
 * figure of make bench measures it), and base chains cannot come and go:
 * unregistering a hook makes the kernel drop every packet waiting in the
 * queue, handshakes included.
 *
 * output: the handshake rule; with HELD, the segments of held sockets,
 * which rackd answers instead.
 *
 * prerouting, in this order:
 *  1. the peer rackd's messages (racks' option on a segment without SYN;
 *     reconnection SYNs and SYN-ACKs, reconnect_rules()), taken before
 *     anything rewrites them, so that a reconnection shows where it
 *     really came from. A message rackd does not consume comes
 *     back with NF_REPEAT and rackd's mark, which every diverting rule
 *     here lets by, and goes on through the rest of the chain;
 *  2. with SPLICED, the splicing rules, wire tuple to socket tuple;
 *  3. the handshake rule, for segments to this host only (prerouting also
 *     sees forwarded ones);
 *  4. with HELD, the peer's segments to held sockets, by socket tuple.
 * A segment diverted at one step and accepted continues at the next hook,
 * having passed the steps before it: nothing after step 1 rewrites.
 */
void ruleset_chains_write(FILE *f, const struct config *cfg, bool spliced,
			  bool held, bool adopting)
{
	fprintf(f, "flush chain %s %s output\n", RULESET_FAMILY, RULESET_TABLE);
	/* The BPF path: SYNs and SYN-ACKs leave with racks' option written
	 * by the kernel (cfg->bpf_handshakes), none is diverted. */
	if (!cfg->bpf_handshakes)
		fprintf(f, ADD_RULE "output tcp flags & (fin | syn | rst) == syn "
			   "meta mark != { 0x%08x, 0x%08x } meta oiftype != "
			   "loopback jump output_syn\n", cfg->mark,
			config_unspliced_mark(cfg));
	if (held)
		held_rules(f, cfg, "output", "s", "d");
	if (adopting)
		adoptset_rules(f, cfg, "output");

	fprintf(f, "flush chain %s %s %s\n", RULESET_FAMILY, RULESET_TABLE,
		RULESET_PREROUTING);
	/* A racks message has a data offset of 11 (44 bytes) or more; an
	 * ordinary segment, with timestamps, has 8: the cheap test first.
	 * Only those addressed to this host: a rackd on a router or a
	 * container host leaves the messages of the hosts behind it alone. */
	fprintf(f, ADD_RULE RULESET_PREROUTING " tcp flags & syn == 0 tcp doff "
		   "> 10 tcp option @%d,16,16 0x%04x meta mark != 0x%08x meta "
		   "iiftype != loopback fib daddr type local goto divert_strict\n",
		EDP_OPT_KIND, EDP_EXID, cfg->mark);
	reconnect_rules(f, cfg);
	splicemap_rules(f, RULESET_PREROUTING, false, spliced, 0);
	fprintf(f, ADD_RULE RULESET_PREROUTING " tcp flags & (fin | syn | rst) "
		   "!= 0 meta iiftype != loopback fib daddr type local jump "
		   "input_ctl\n");
	if (held)
		held_rules(f, cfg, RULESET_PREROUTING, "d", "s");
	splicemap_rules(f, "splice_out", true, spliced,
			config_unspliced_mark(cfg));
}

/*
 * The base chains of a table that no rackd serves any more, left for the
 * next one (daemon.c): only the splices' rewrites. A racks message or
 * reconnection segment arriving meanwhile is then rewritten like the
 * rest of its flow and meets its socket, which takes it for an old or
 * out-of-place segment (a duplicate or challenge ACK at most). Diverted
 * to a queue nobody reads, it would pass unrewritten (bypass) to a kernel
 * without a socket for it, whose RST goes back to the peer: answering a
 * reconnection SYN-ACK, whose ack is exactly our snd_una, that RST
 * carries exactly the sequence number the peer's socket expects, and
 * resets it.
 */
void ruleset_unserved_write(FILE *f, bool spliced)
{
	fprintf(f, "flush chain %s %s output\n", RULESET_FAMILY, RULESET_TABLE);
	fprintf(f, "flush chain %s %s %s\n", RULESET_FAMILY, RULESET_TABLE,
		RULESET_PREROUTING);
	splicemap_rules(f, RULESET_PREROUTING, false, spliced, 0);
	splicemap_rules(f, "splice_out", true, spliced, 0);
}

/* Probes are answered on the server ports rackd considers. */
static void probe_chain(FILE *f, const struct config *cfg)
{
	fprintf(f, "\tchain probe_in {\n");
	fprintf(f, "\t\tip saddr @exclude4 return\n");
	fprintf(f, "\t\tip6 saddr @exclude6 return\n");
	fprintf(f, cfg->all_ports ? "\t\tgoto divert\n"
				  : "\t\ttcp dport @server_ports goto divert\n");
	fprintf(f, "\t}\n");
}

char *ruleset_script(const struct config *cfg, bool native_queue)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	/* "add" then "delete" makes the delete valid whether or not a stale
	 * table exists; the whole script is one transaction. */
	fprintf(f, "add table %s %s\n", RULESET_FAMILY, RULESET_TABLE);
	fprintf(f, "delete table %s %s\n", RULESET_FAMILY, RULESET_TABLE);
	fprintf(f, "table %s %s {\n", RULESET_FAMILY, RULESET_TABLE);
	fprintf(f, "\tcomment \"managed by rackd: do not edit\"\n");
	if (!cfg->all_ports) {
		fprintf(f, "\tset server_ports {\n\t\ttype inet_service\n"
			   "\t\tflags interval\n\t\tauto-merge\n"
			   "\t\telements = { ");
		port_elements(f, cfg);
		fprintf(f, " }\n\t}\n");
	}
	exclude_set(f, cfg, "exclude4", "ipv4_addr", AF_INET);
	exclude_set(f, cfg, "exclude6", "ipv6_addr", AF_INET6);
	/* Suspended connections, by local and remote endpoint. */
	fprintf(f, "\tset held4 {\n\t\ttype ipv4_addr . inet_service . "
		   "ipv4_addr . inet_service\n\t}\n");
	fprintf(f, "\tset held6 {\n\t\ttype ipv6_addr . inet_service . "
		   "ipv6_addr . inet_service\n\t}\n");
	offerset_declare(f);
	adoptset_declare(f);
	splicemap_declare(f);
	fprintf(f, "\tchain divert {\n");
	if (native_queue)
		fprintf(f, "\t\tcounter queue num %u bypass\n", cfg->queue_num);
	fprintf(f, "\t}\n");
	/* racks' messages and the segments of held connections: never past
	 * rackd, even when its queue is full or nobody reads it (daemon.c):
	 * a held socket's segment that got by would reach a peer that has
	 * not followed a move yet, whose kernel answers with a RST. */
	fprintf(f, "\tchain divert_strict {\n");
	/* The xt rule comes in a second transaction, before the drop that
	 * stands in for it meanwhile: strict from the first moment. */
	if (native_queue)
		fprintf(f, "\t\tcounter queue num %u\n",
			config_strict_queue(cfg));
	else
		fprintf(f, "\t\tdrop\n");
	fprintf(f, "\t}\n");
	syn_chain(f, cfg, "syn_out", "daddr");
	syn_chain(f, cfg, "syn_in", "saddr");
	if (cfg->answer_probes)
		probe_chain(f, cfg);
	handshake_chains(f, cfg);
	fprintf(f, "\tchain %s {\n\t\ttype filter hook prerouting priority "
		   "%s; policy accept;\n\t}\n", RULESET_PREROUTING,
		PREROUTING_PRIORITY);
	splicemap_chains(f);
	fprintf(f, "}\n");
	ruleset_chains_write(f, cfg, false, false, false);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	return buf;
}

/*
 * One libnftables context for every script rackd runs. Freeing one closes
 * its netlink socket, and that close waits in the kernel for nf_tables'
 * clean-up (an RCU grace period, 12 ms measured on the test machines): a
 * context per script made every resumption of a held connection cost as
 * much, and thousands of them took minutes.
 */
static struct nft_ctx *run_ctx;

/* Run an nft script; on failure copy the first error line into err. */
int ruleset_run(const char *script, char *err, size_t errlen)
{
	const char *msg;
	int ret;

	if (!run_ctx) {
		run_ctx = nft_ctx_new(NFT_CTX_DEFAULT);
		if (!run_ctx)
			fatalx(EXIT_NOMEM, "out of memory");
		nft_ctx_buffer_output(run_ctx);
		nft_ctx_buffer_error(run_ctx);
	}
	ret = nft_run_cmd_from_buffer(run_ctx, script);
	/* Reading a buffer empties it for the next script. */
	(void)nft_ctx_get_output_buffer(run_ctx);
	msg = nft_ctx_get_error_buffer(run_ctx);
	if (ret && err) {
		size_t n = msg ? strcspn(msg, "\n") : 0;

		snprintf(err, errlen, "%.*s", (int)n, msg ? msg : "");
	}
	return ret ? -EINVAL : 0;
}

void ruleset_close(void)
{
	if (run_ctx)
		nft_ctx_free(run_ctx);
	run_ctx = NULL;
}

/* "list tables" rather than "list table": listing the rules of a table
 * with compat expressions makes libnftables initialise (and leak) xtables. */
static bool ruleset_present(void)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	const char *out;
	bool found = false;

	if (!ctx)
		fatalx(EXIT_NOMEM, "out of memory");
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	if (nft_run_cmd_from_buffer(ctx, "list tables " RULESET_FAMILY) == 0) {
		out = nft_ctx_get_output_buffer(ctx);
		found = out && strstr(out, "table " RULESET_FAMILY " "
					   RULESET_TABLE "\n");
	}
	nft_ctx_free(ctx);
	return found;
}

/* The table for CFG followed by STATE (element commands), so that the
 * running connections' holds and splices never miss a packet. */
static int install_table(const struct config *cfg, bool native,
			 const char *state, char *err, size_t errlen)
{
	char *table = ruleset_script(cfg, native), *script;
	int ret;

	if (asprintf(&script, "%s%s", table, state ? state : "") < 0)
		fatalx(EXIT_NOMEM, "out of memory");
	ret = ruleset_run(script, err, errlen);
	free(script);
	free(table);
	return ret;
}

static int install_native(const struct config *cfg, const char *state,
			  char *err, size_t errlen)
{
	return install_table(cfg, true, state, err, errlen);
}

static int install_xt(const struct config *cfg, const char *state, char *err,
		      size_t errlen)
{
	int ret = install_table(cfg, false, state, err, errlen);

	if (ret)
		return ret;
	/* Second transaction: until it commits the table diverts nothing,
	 * which is exactly the bypass behaviour, never a blackhole. */
	ret = xt_queue_add_rule(RULESET_TABLE, "divert", cfg->queue_num, true);
	if (ret == 0)
		ret = xt_queue_insert_rule(RULESET_TABLE, "divert_strict",
					   config_strict_queue(cfg), false);
	if (ret) {
		snprintf(err, errlen, "adding the xt NFQUEUE rule: %s",
			 strerror(-ret));
		ruleset_remove(NULL, 0);
	}
	return ret;
}

int ruleset_install(const struct config *cfg, enum queue_mode mode,
		    const char *state, enum queue_mode *used,
		    bool *replaced, char *err, size_t errlen)
{
	char native_err[256] = "";
	int ret;

	*replaced = ruleset_present();
	if (mode != QUEUE_MODE_XT) {
		ret = install_native(cfg, state, native_err, sizeof(native_err));
		if (ret == 0) {
			*used = QUEUE_MODE_NATIVE;
			return 0;
		}
		if (mode == QUEUE_MODE_NATIVE) {
			/* The kernel answers ENOENT for an unknown expression. */
			if (strstr(native_err, strerror(ENOENT))) {
				snprintf(err, errlen,
					 "queue_mode = native, but the kernel lacks "
					 "CONFIG_NFT_QUEUE (%s)", native_err);
				return -ENOTSUP;
			}
			snprintf(err, errlen, "native nft queue: %s",
				 native_err);
			return ret;
		}
		log_info("native nft queue unavailable (%s); using the xt "
			 "NFQUEUE target", native_err);
	}
	ret = install_xt(cfg, state, err, errlen);
	if (ret == 0) {
		*used = QUEUE_MODE_XT;
		return 0;
	}
	if (ret == -ENOENT || ret == -EOPNOTSUPP) {
		snprintf(err, errlen,
			 "no way to queue packets: the kernel has neither "
			 "CONFIG_NFT_QUEUE nor CONFIG_NFT_COMPAT with "
			 "CONFIG_NETFILTER_XT_TARGET_NFQUEUE");
		return -ENOTSUP;
	}
	return ret;
}

void ruleset_held_write(FILE *f, struct conn *const *conns, unsigned n,
			bool add)
{
	for (int fam = 0; fam < 2; fam++) {
		int family = fam ? AF_INET6 : AF_INET;
		bool first = true;

		for (unsigned i = 0; i < n; i++) {
			const struct conn *c = conns[i];
			char l[ADDR_STRLEN], r[ADDR_STRLEN];

			if (c->local.addr.family != family)
				continue;
			if (first)
				fprintf(f, "%s element inet racks held%c { ",
					add ? "add" : "delete", fam ? '6' : '4');
			fprintf(f, "%s%s . %u . %s . %u", first ? "" : ", ",
				addr_format(&c->local.addr, l, sizeof(l)),
				c->local.port,
				addr_format(&c->remote.addr, r, sizeof(r)),
				c->remote.port);
			first = false;
		}
		if (!first)
			fprintf(f, " }\n");
	}
}

int ruleset_held(const struct config *cfg, struct conn *const *conns,
		 unsigned n, bool add, bool chains, bool spliced, bool adopting,
		 char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int ret = 0;

	if (n == 0 && !chains)
		return 0;
	f = open_memstream(&buf, &len);
	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	if (chains && add)
		ruleset_chains_write(f, cfg, spliced, true, adopting);
	ruleset_held_write(f, conns, n, add);
	if (chains && !add)
		ruleset_chains_write(f, cfg, spliced, false, adopting);
	fputc('\0', f);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	if (buf[0])
		ret = ruleset_run(buf, err, errlen);
	free(buf);
	return ret;
}

int ruleset_remove(char *err, size_t errlen)
{
	/* "destroy" needs nft 1.0.8; add-then-delete never fails on absence. */
	return ruleset_run("add table " RULESET_FAMILY " " RULESET_TABLE "\n"
		       "delete table " RULESET_FAMILY " " RULESET_TABLE "\n",
		       err, errlen);
}
