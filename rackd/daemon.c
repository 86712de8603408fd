// SPDX-License-Identifier: GPL-2.0-only
/*
 * rackd's life: start-up, reload and shutdown, the signals and the
 * descriptors the event loop watches. main.c wires the layers together
 * before daemon_start() and decides when to stop.
 *
 * Start-up order: read the host key (made if there is none) and the known
 * hosts, open the privileged resources (NFQUEUE, rtnetlink,
 * control socket), take over the connections of the state file, install
 * the ruleset (the queue is bound first so no diverted packet finds it
 * missing). Shutdown removes the table and the socket, or leaves the
 * table to the next rackd while it holds or splices connections.
 */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "ctl.h"
#include "inject.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "adopt.h"
#include "answer.h"
#include "hostid.h"
#include "hostkey_file.h"
#include "knownhosts_file.h"
#include "notify.h"
#include "offerset.h"
#include "optpath.h"
#include "queue.h"
#include "reconnect.h"
#include "rstguard.h"
#include "rtnl.h"
#include "ruleset.h"
#include "setup.h"
#include "splice.h"
#include "state.h"
#include "track.h"

/* A new table starts with empty sets and maps: the held flows and the
 * splices of running connections go back in, in the same transaction. */
static char *state_script(struct rackd *d, const struct config *cfg)
{
	char *buf = NULL;
	size_t len = 0, n = 0;
	struct conn **held = xcalloc(d->conns.count + 1, sizeof(*held));
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	for (struct conn *c = d->conns.head; c; c = c->next)
		if (c->hold)
			held[n++] = c;
	if (n || d->splice->mapped || d->adopt_rules)
		ruleset_chains_write(f, cfg, d->splice->mapped > 0, n > 0,
				     d->adopt_rules);
	ruleset_held_write(f, held, (unsigned)n, true);
	splice_write_state(d, f);
	adopt_write_state(d, f);
	free(held);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	return buf;
}

/* "auto" was resolved at start; a reload does not probe the kernel again. */
static enum queue_mode reload_mode(const struct rackd *d,
				   const struct config *cfg)
{
	if (cfg->queue_mode != QUEUE_MODE_AUTO)
		return cfg->queue_mode;
	return d->queue_mode;
}

/* The line `systemctl status` shows. */
const char *daemon_status(const struct rackd *d, char *buf, size_t len)
{
	snprintf(buf, len, "queue %u (%s), option path %s, connections: %zu",
		 d->cfg->queue_num, config_queue_mode_name(d->queue_mode),
		 optpath_name(d), d->conns.count);
	return buf;
}

static int reload(struct rackd *d, char *err, size_t errlen)
{
	struct config *cfg;
	enum queue_mode used;
	bool missing, replaced;
	char *state;
	int ret;

	ret = config_load(d->config_path, &cfg, &missing, err, errlen);
	if (ret) {
		log_warnx("reload refused, keeping the running configuration: %s",
			  err);
		return ret;
	}
	if (cfg->queue_num != d->cfg->queue_num ||
	    cfg->queue_maxlen != d->cfg->queue_maxlen) {
		snprintf(err, errlen, "changing queue or queue_maxlen needs a "
			 "restart");
		log_warnx("reload refused: %s", err);
		config_free(cfg);
		return -EINVAL;
	}
	if (optpath_reload(d, cfg, err, errlen)) {
		log_warnx("reload refused: %s", err);
		config_free(cfg);
		return -EINVAL;
	}
	state = state_script(d, cfg);
	ret = ruleset_install(cfg, reload_mode(d, cfg), state, &used,
			      &replaced, err, errlen);
	if (ret) {
		char again[256];

		config_free(cfg);
		free(state);
		/* The failed transaction may have replaced the table: put the
		 * running configuration's ruleset back. */
		state = state_script(d, d->cfg);
		if (ruleset_install(d->cfg, reload_mode(d, d->cfg), state,
				    &used, &replaced, again, sizeof(again)))
			log_warnx("reload failed (%s) and the running ruleset "
				  "could not be restored: %s", err, again);
		else
			log_warnx("reload refused, running ruleset kept: %s",
				  err);
		free(state);
		return ret;
	}
	free(state);
	config_free(d->cfg);
	d->cfg = cfg;
	d->queue_mode = used;
	inject_set_mark(d->inject, cfg->mark, config_unspliced_mark(cfg));
	reconnect_configure(d);
	/* Trust may have changed: which host pair each SYN names too. */
	optpath_sync(d);
	log_set_debug(cfg->debug || d->debug_option);
	log_info("configuration reloaded from %s%s", d->config_path,
		 missing ? " (missing: built-in defaults)" : "");
	return 0;
}

/* The service manager sees every reload begin and end, refused or not. */
int daemon_reload(struct rackd *d, char *err, size_t errlen)
{
	char status[128];
	int ret;

	notify_reloading();
	ret = reload(d, err, errlen);
	notify_ready(daemon_status(d, status, sizeof(status)));
	return ret;
}

static void on_signal(void *arg, uint32_t events)
{
	struct rackd *d = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		char err[256];

		switch (si.ssi_signo) {
		case SIGHUP:
			daemon_reload(d, err, sizeof(err));
			break;
		case SIGTERM:
		case SIGINT:
			log_info("signal %d: shutting down", si.ssi_signo);
			loop_stop(d->loop);
			break;
		}
	}
}

static void on_queue(void *arg, uint32_t events)
{
	struct rackd *d = arg;

	(void)events;
	/* A connection's record before its peer's first message. */
	optpath_drain(d);
	queue_process(d->queue);
}

static void on_strict_queue(void *arg, uint32_t events)
{
	struct rackd *d = arg;

	(void)events;
	optpath_drain(d);
	queue_process(d->strict_queue);
}

static void open_queue(struct rackd *d, struct queue **q, uint16_t num,
		       bool fail_open)
{
	int ret = queue_open(q, num, d->cfg->queue_maxlen, fail_open,
			     track_packet, d);

	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "binding NFQUEUE %u: %s%s", num, strerror(-ret),
		       ret == -EBUSY ? " (another program owns this queue)" : "");
	}
	loop_add(d->loop, queue_fd(*q), EPOLLIN,
		 fail_open ? on_queue : on_strict_queue, d);
}

static void on_rtnl(void *arg, uint32_t events)
{
	struct rackd *d = arg;

	(void)events;
	rtnl_process(d->rtnl);
}

static void on_link(void *arg, const struct rtnl_link_event *ev)
{
	struct rackd *d = arg;

	d->stats.link_events++;
	live_link_event(d, ev);
	log_debug("link %s (%u): %s, carrier %s", ev->name, ev->ifindex,
		  ev->removed ? "removed" : ev->up ? "up" : "down",
		  ev->carrier ? "on" : "off");
}

static void on_addr(void *arg, const struct rtnl_addr_event *ev)
{
	struct rackd *d = arg;
	char buf[PREFIX_STRLEN];

	d->stats.addr_events++;
	live_addr_event(d, ev);
	log_debug("address %s %s on ifindex %u",
		  prefix_format(&ev->prefix, buf, sizeof(buf)),
		  ev->removed ? "removed" : "added", ev->ifindex);
}

static void on_sweep(struct timer *t, void *arg)
{
	struct rackd *d = arg;
	char status[128];

	track_sweep(d);
	/* Host pairs age: a used-up one is named no more. */
	optpath_sync(d);
	notify_status(daemon_status(d, status, sizeof(status)));
	loop_timer_arm(d->loop, t, d->cfg->sweep_interval_ms);
}

void daemon_sweep_soon(struct rackd *d)
{
	uint64_t now = loop_now(), since = now - d->last_sweep;
	uint64_t delay = since >= TRACK_FRESH_MS ? 0 : TRACK_FRESH_MS - since;

	/* Never later than it already is: the periodic one may be due. */
	if (d->sweep_timer.index != SIZE_MAX &&
	    d->sweep_timer.deadline <= now + delay)
		return;
	loop_timer_arm(d->loop, &d->sweep_timer, delay);
}

static int open_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/*
 * The host's key: a key file that exists and is refused (malformed, too
 * open, another owner's) stops the start; one that cannot be made (its
 * directory missing or read-only) leaves the host a key made in memory,
 * as -s none without -k does, and says so.
 */
/*
 * The key the host key replaced (rackd --rotate-host-key keeps it as
 * PATH.old): with it rackd proves the rotation to peers that knew the
 * old key (hostauth.h). Optional; one that does not load is said.
 */
static void load_old_host_key(struct rackd *d)
{
	char path[4096], err[512], fp[EDP_HOST_FP_STRLEN];
	struct hostkey old;
	int ret;

	if (!d->hostkey_path || d->hostkey_ephemeral ||
	    (size_t)snprintf(path, sizeof(path), "%s%s", d->hostkey_path,
			     HOSTKEY_OLD_SUFFIX) >= sizeof(path))
		return;
	ret = hostkey_load(path, &old, err, sizeof(err));
	if (ret == -ENOENT)
		return;
	if (ret) {
		log_warnx("%s: rotations are not proved to peers", err);
		return;
	}
	d->hostkey_old = xcalloc(1, sizeof(old));
	*d->hostkey_old = old;
	hostkey_wipe(&old);
	edp_host_fingerprint(d->hostkey_old->pk, fp);
	log_info("host key rotated from %s: proved to peers that knew it",
		 fp);
}

static void load_host_key(struct rackd *d)
{
	char err[512], fp[EDP_HOST_FP_STRLEN];
	bool created = false;
	int ret = -ENOENT;

	if (!d->hostkey_path) {
		log_warnx("no host key file (-s none without -k): a key made "
			  "in memory, so this host's identity changes at every "
			  "start");
	} else {
		ret = hostkey_load(d->hostkey_path, &d->hostkey, err,
				   sizeof(err));
		if (ret == -ENOENT)	/* none yet: made now, if it can be */
			ret = hostkey_load_or_create(d->hostkey_path,
						     &d->hostkey, &created,
						     err, sizeof(err));
		else if (ret)
			fatalx(1, "%s", err);
		if (ret == -EINVAL || ret == -EPERM)
			fatalx(1, "%s", err);
		if (ret)
			log_warnx("%s: a key made in memory instead, so this "
				  "host's identity changes at every start", err);
	}
	if (ret) {
		hostkey_generate(&d->hostkey);
		d->hostkey_ephemeral = true;
	}
	edp_host_fingerprint(d->hostkey.pk, fp);
	log_info("host key %s%s: %s", d->hostkey_ephemeral ? "in memory" :
		 d->hostkey_path, created ? " (created)" : "", fp);
	load_old_host_key(d);
}

/* The hosts known from earlier runs: a file that does not parse stops
 * the start (a host is never forgotten silently). */
static void load_known_hosts(struct rackd *d)
{
	char err[512];
	bool missing;

	d->known_hosts = known_hosts_new(KNOWN_HOSTS_DEFAULT_MAX);
	known_hosts_file_init(d, d->known_hosts_path);
	if (d->known_hosts_path &&
	    known_hosts_file_load(d->known_hosts, d->known_hosts_path,
				  &missing, err, sizeof(err)))
		fatalx(1, "known hosts: %s", err);
	log_debug("known hosts: %zu from %s", known_hosts_count(d->known_hosts),
		  d->known_hosts_path ? d->known_hosts_path : "nowhere");
}

void daemon_start(struct rackd *d)
{
	struct rtnl_handlers rh = { on_link, on_addr, d };
	char err[512], *state;
	bool replaced;
	int ret;

	/* Files first: a refused one stops the start before the kernel is
	 * touched. */
	load_host_key(d);
	d->loop = loop_new();
	load_known_hosts(d);
	conn_table_init(&d->conns);
	d->sigfd = open_signals();
	if (d->sigfd < 0)
		fatal(1, "signalfd");
	loop_add(d->loop, d->sigfd, EPOLLIN, on_signal, d);

	ret = ctl_open(&d->ctl, d, d->sock_path);
	if (ret == -EADDRINUSE)
		fatalx(1, "another rackd is already running on %s",
		       d->sock_path);
	if (ret)
		fatalx(1, "control socket %s: %s", d->sock_path,
		       strerror(-ret));

	/*
	 * Two queues. The handshakes and probe segments fail open when
	 * rackd falls behind: a busy rackd must never blackhole a host's
	 * connections, and what passes meanwhile is at worst a connection
	 * adopted later. The strict queue never does: a racks message that
	 * reached the kernel instead of rackd could meet a socket, or a
	 * kernel without one for it that answers with a RST (a
	 * reconnection's SYN-ACK), and so could a held socket's segment
	 * reaching a peer that has not followed a move yet; what it drops
	 * is sent again.
	 */
	open_queue(d, &d->queue, d->cfg->queue_num, true);
	open_queue(d, &d->strict_queue, config_strict_queue(d->cfg), false);

	ret = inject_open(&d->inject, d->cfg->mark,
			  config_unspliced_mark(d->cfg));
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "raw sockets: %s", strerror(-ret));
	}
	ret = flowset_open(&d->offers);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "nftables netlink socket: %s", strerror(-ret));
	}
	edp_announce_new(d->announcement, d->hostkey.pk);
	keypool_init(&d->keys, d->loop);
	host_pairs_init(&d->host_pairs);
	/* Before the host pairs load (the program's maps follow them) and
	 * the ruleset (which diverts no handshake on the BPF path). */
	optpath_start(d);
	answer_init(d);
	ratelimit_init(&d->unauth_queries, RACKD_UNAUTH_QUERY_RATE,
		       RACKD_UNAUTH_QUERY_BURST);
	reconnect_init(d);
	rstguard_init(d);

	ret = rtnl_open(&d->rtnl, &rh);
	if (ret) {
		ctl_close(d->ctl);
		fatalx(1, "rtnetlink: %s", strerror(-ret));
	}
	loop_add(d->loop, rtnl_fd(d->rtnl), EPOLLIN, on_rtnl, d);
	/* Which link each local address is on: carrier loss suspends. */
	if (rtnl_dump_addresses(d->rtnl))
		log_warn("rtnetlink: dumping addresses");

	/* Connections of a previous rackd: their splices and holds go into
	 * the new table's first transaction, which also replaces the old
	 * table that kept rewriting and holding them meanwhile. */
	state_init(d, d->state->path);
	state_load(d);
	optpath_sync(d);
	state = d->conns.count ? state_script(d, d->cfg) : NULL;
	ret = ruleset_install(d->cfg, d->cfg->queue_mode, state, &d->queue_mode,
			      &replaced, err, sizeof(err));
	free(state);
	if (ret && state && ret != -ENOTSUP) {
		/* What the state file says cannot go into a table (its
		 * splices clash, say): rackd starts without it rather than
		 * not at all, and its connections are adopted again. */
		log_warnx("ruleset with the state file's %zu connection(s) "
			  "refused (%s): starting without them",
			  d->conns.count, err);
		state_forget_restored(d);
		ret = ruleset_install(d->cfg, d->cfg->queue_mode, NULL,
				      &d->queue_mode, &replaced, err,
				      sizeof(err));
	}
	if (ret) {
		ctl_close(d->ctl);
		fatalx(ret == -ENOTSUP ? EXIT_KERNEL : 1, "ruleset: %s", err);
	}
	d->table_installed = true;
	if (replaced)
		log_info("replaced a stale table inet %s from an earlier run",
			 RULESET_TABLE);
	log_info("rackd %s: table inet %s installed, queues %u and %u "
		 "(strict) (%s), control socket %s", RACKD_VERSION,
		 RULESET_TABLE, d->cfg->queue_num, config_strict_queue(d->cfg),
		 config_queue_mode_name(d->queue_mode), d->sock_path);

	/* Established connections it does not know: adopted. */
	adopt_init(d);
	timer_init(&d->sweep_timer, on_sweep, d);
	loop_timer_arm(d->loop, &d->sweep_timer, d->cfg->sweep_interval_ms);
	d->started = time(NULL);
	d->started_mono = loop_now();
}

/*
 * Spliced and held connections need the table while no rackd runs: their
 * segments are rewritten and held there (the queue is bypassed). So with
 * such connections written to the state file, the table stays for the
 * next rackd, which takes it over; otherwise it goes.
 */
static bool hand_over(struct rackd *d)
{
	char *script = NULL, err[256];
	size_t len = 0;
	FILE *f;

	if (!d->state->path)
		return false;
	/* Connections that closed since the last sweep leave no rewrites
	 * behind: with no rackd to notice, they would catch the next
	 * connections on their ports. */
	track_sweep(d);
	/* The next rackd counts on from where this one got. */
	if (d->host_pairs.counts_unsaved)
		d->host_pairs.dirty = true;
	if (state_write(d))
		return false;
	/* A connection the state file does not name (released or aborted,
	 * its socket not closed yet) has no next rackd to take its splice
	 * and kept address over: both go now, or the address would stay on
	 * lo for good, the host owning an address it lost. */
	for (struct conn *c = d->conns.head; c; c = c->next)
		if (!conn_managed(c) && (c->mapped || c->kept_local))
			splice_forget(d, c);
	if (!d->splice->mapped && !d->held)
		return false;
	/* Nothing is diverted to a queue nobody will read (see
	 * ruleset_unserved_write). */
	f = open_memstream(&script, &len);
	if (!f)
		fatalx(EXIT_NOMEM, "out of memory");
	ruleset_unserved_write(f, d->splice->mapped > 0);
	if (fclose(f) != 0)
		fatalx(EXIT_NOMEM, "out of memory");
	if (ruleset_run(script, err, sizeof(err)))
		log_warnx("table inet %s: leaving only the splices' rules: %s",
			  RULESET_TABLE, err);
	free(script);
	log_info("table inet %s left in place for %u spliced and %u held "
		 "connection(s): the next rackd takes them over from %s",
		 RULESET_TABLE, d->splice->mapped, d->held, d->state->path);
	return true;
}

void daemon_stop(struct rackd *d)
{
	char err[256];
	bool handed_over;

	notify_stopping();
	handed_over = hand_over(d);
	if (d->table_installed && !handed_over &&
	    ruleset_remove(err, sizeof(err)))
		log_warnx("removing table inet %s: %s", RULESET_TABLE, err);
	ctl_close(d->ctl);
	rtnl_close(d->rtnl);
	queue_close(d->queue);
	queue_close(d->strict_queue);
	optpath_stop(d);
	loop_timer_cancel(d->loop, &d->sweep_timer);
	for (struct conn *c = d->conns.head; c; c = c->next) {
		/* The table is gone already: no set to update. */
		free(c->hold);
		c->hold = NULL;
		live_detach(d, c);
		adopt_reset(d, c);
		/* Keys live only in memory, and are wiped before it is freed. */
		setup_free(d, c);
		loop_timer_cancel(d->loop, &c->expiry);
	}
	conn_table_free(&d->conns, NULL);
	adopt_close(d);
	inject_close(d->inject);
	flowset_close(d->offers);
	keypool_wipe(&d->keys);
	host_pairs_clear(&d->host_pairs);
	live_free(d);
	reconnect_free(d);
	rstguard_free(d);
	/* Kept addresses go with the table, or stay with it. */
	if (handed_over)
		local_leave(d->local);
	else
		local_free(d->local);
	state_free(d);
	known_hosts_file_free(d);
	known_hosts_free(d->known_hosts);
	d->known_hosts = NULL;
	hostkey_wipe(&d->hostkey);
	if (d->hostkey_old) {
		hostkey_wipe(d->hostkey_old);
		free(d->hostkey_old);
		d->hostkey_old = NULL;
	}
	close(d->sigfd);
	loop_free(d->loop);
	config_free(d->cfg);
	ruleset_close();
	log_info("stopped");
}
