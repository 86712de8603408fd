// SPDX-License-Identifier: GPL-2.0-only
#include "ctl_cmds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adopt.h"
#include "bpfopt.h"
#include "ctl_hosts.h"
#include "ctl_migrate.h"
#include "hold.h"
#include "hostid.h"
#include "knownhosts_file.h"
#include "liveness.h"
#include "local.h"
#include "loop.h"
#include "migrate.h"
#include "queue.h"
#include "rackd.h"
#include "reconnect.h"
#include "rstguard.h"
#include "keystate.h"
#include "splice.h"
#include "state.h"
#include "track.h"

static void put_u64(FILE *out, const char *key, uint64_t v)
{
	proto_put(out, key, "%" PRIu64, v);
}

/* One counter of a per-reason array: key PREFIX followed by the reason. */
static void put_reason(FILE *out, const char *prefix, const char *reason,
		       uint64_t v)
{
	char key[64];

	snprintf(key, sizeof(key), "%s%s", prefix, reason);
	put_u64(out, key, v);
}

static void put_bool(FILE *out, const char *key, bool v)
{
	proto_put(out, key, "%s", v ? "true" : "false");
}

static void put_edp_stats(FILE *out, const struct rackd_edp_stats *e)
{
	put_u64(out, "edp_syn_offered", e->syn_offered);
	put_u64(out, "edp_syn_no_room", e->syn_no_room);
	put_u64(out, "edp_syn_fallback", e->syn_fallback);
	put_u64(out, "edp_synack_offered", e->synack_offered);
	put_u64(out, "edp_synack_no_room", e->synack_no_room);
	put_u64(out, "edp_offer_errors", e->offer_errors);
	put_u64(out, "edp_setup_started", e->setup_started);
	put_u64(out, "edp_setup_ok", e->setup_ok);
	put_u64(out, "edp_setup_failed", e->setup_failed);
	put_u64(out, "edp_released", e->released);
	put_u64(out, "edp_msgs_in", e->msgs_in);
	put_u64(out, "edp_msgs_out", e->msgs_out);
	put_u64(out, "edp_send_errors", e->send_errors);
	for (int i = EDP_ERR_LENGTH; i < EDP_ERR_MAX; i++)
		put_reason(out, "edp_rejected_", edp_error_name(i),
			   e->rejected_by[i]);
	put_u64(out, "edp_unknown_conn", e->unknown_conn);
	put_u64(out, "edp_bad_mac", e->bad_mac);
	put_u64(out, "edp_bad_key", e->bad_key);
	put_u64(out, "edp_duplicate", e->duplicate);
	put_u64(out, "edp_unexpected", e->unexpected);
	put_u64(out, "edp_with_payload", e->with_payload);
	put_u64(out, "edp_bad_seq", e->bad_seq);
	put_u64(out, "edp_probe_fins", e->probe_fins);
	put_u64(out, "edp_probes_answered", e->probes_answered);
	put_u64(out, "edp_probes_unproven", e->probes_unproven);
	put_u64(out, "edp_probes_refused", e->probes_refused);
	put_u64(out, "edp_keyed_anonymous", e->keyed_anonymous);
	put_u64(out, "edp_keyed_exchange", e->keyed_exchange);
	put_u64(out, "edp_keyed_derived", e->keyed_derived);
	put_u64(out, "edp_setup_msgs_out", e->setup_msgs_out);
	put_u64(out, "edp_keyed_later", e->keyed_later);
	put_u64(out, "edp_hs_started", e->hs_started);
	put_u64(out, "edp_hs_done", e->hs_done);
	put_u64(out, "edp_hs_sent", e->hs_sent);
	put_u64(out, "edp_hs_received", e->hs_received);
	put_u64(out, "edp_hs_bad", e->hs_bad);
	put_u64(out, "edp_hs_late", e->hs_late);
	put_u64(out, "edp_hs_rotated", e->hs_rotated);
	put_u64(out, "edp_hs_bad_rotation", e->hs_bad_rotation);
	put_u64(out, "edp_hs_mismatch", e->hs_mismatch);
	put_u64(out, "edp_hs_not_pinned", e->hs_not_pinned);
	put_u64(out, "edp_anonymous_refused", e->anonymous_refused);
	put_u64(out, "edp_hostpair_bad_mac", e->hostpair_bad_mac);
}

static void put_adopt_stats(FILE *out, const struct rackd *d)
{
	const struct adopt_stats *a = &d->adopt->stats;

	put_u64(out, "adopt_started", a->started);
	put_u64(out, "adopt_completed", a->completed);
	put_u64(out, "adopt_unanswered", a->unanswered);
	put_u64(out, "adopt_failed", a->failed);
	put_u64(out, "adopt_learnt", a->learnt);
	put_u64(out, "adopt_rounds", a->rounds);
	put_u64(out, "adopt_samples", a->samples);
	put_u64(out, "adopt_msgs_in", a->msgs_in);
	put_u64(out, "adopt_msgs_out", a->msgs_out);
	put_u64(out, "adopt_disagreed", a->disagreed);
	put_u64(out, "adopt_refused", a->refused);
	put_u64(out, "adopt_readopted", a->readopted);
	put_u64(out, "adopt_readopt_asked", a->readopt_asked);
	put_u64(out, "adopt_readopt_refused", a->readopt_refused);
	put_u64(out, "adopt_unchecked_dropped", a->unchecked_dropped);
	put_u64(out, "adopt_set_errors", a->set_errors);
}

static void put_live_stats(FILE *out, const struct rackd *d)
{
	const struct live_stats *l = &d->live->stats;

	put_u64(out, "suspended", live_suspended_count(d));
	put_u64(out, "suspensions", l->suspensions);
	put_u64(out, "link_suspensions", l->link_suspensions);
	put_u64(out, "resumes", l->resumes);
	put_u64(out, "resumed_by_traffic", l->resumed_by_traffic);
	put_u64(out, "hold_unacceptable", l->hold_unacceptable);
	put_u64(out, "suspend_aborts", l->aborted);
	put_u64(out, "hold_answers", l->hold_answers);
	put_u64(out, "hold_clamped", l->hold_clamped);
	put_u64(out, "resume_kicks", l->resume_kicks);
	put_u64(out, "windows_closed", l->windows_closed);
	put_u64(out, "heartbeats_out", l->heartbeats_out);
	put_u64(out, "heartbeats_in", l->heartbeats_in);
	put_u64(out, "heartbeat_acks_in", l->heartbeat_acks_in);
	put_u64(out, "heartbeats_replayed", l->replayed);
	put_u64(out, "addr_suspensions", l->addr_suspensions);
	put_u64(out, "path_migrations", l->migrations);
	put_u64(out, "move_collisions", l->move_collisions);
	put_u64(out, "reconnects_unanswered", l->reconnects_unanswered);
	put_u64(out, "path_reopens", l->reopens);
	put_u64(out, "heard_one_way", l->heard_one_way);
	put_u64(out, "heartbeat_carriers_closed", l->carriers_gone);
	put_u64(out, "suspend_skipped_all_closed", l->carrierless);
	put_u64(out, "resets_held", d->rstguard->stats.held);
	put_u64(out, "resets_dropped", d->rstguard->stats.dropped);
	put_u64(out, "resets_delivered", d->rstguard->stats.delivered);
}

static void put_reconnect_stats(FILE *out, const struct rackd *d)
{
	const struct reconnect_stats *r = &d->reconnect->stats;
	unsigned long spliced = 0;

	for (const struct conn *c = d->conns.head; c; c = c->next)
		spliced += c->mapped;
	put_u64(out, "spliced", spliced);
	put_u64(out, "reconnects_sent", r->sent);
	put_u64(out, "reconnects_accepted", r->accepted);
	put_u64(out, "reconnect_acks_in", r->acks_in);
	put_u64(out, "reconnects_refused_mac", r->refused_mac);
	put_u64(out, "reconnects_refused_replay", r->refused_replay);
	put_u64(out, "reconnects_refused_other", r->refused_other);
	put_u64(out, "reconnects_manual", r->manual);
	put_u64(out, "reconnects_malformed", r->malformed);
	put_u64(out, "reconnects_unknown", r->unknown);
	put_u64(out, "reconnect_acks_out", r->acks_out);
	put_u64(out, "reconnect_challenges_out", r->challenges_out);
	put_u64(out, "reconnects_refused_address", r->refused_address);
	put_u64(out, "reconnects_refused_left", r->refused_left);
	put_u64(out, "reconnects_refused_unproven", r->refused_unproven);
	put_u64(out, "reconnects_paced", r->paced);
	put_u64(out, "reconnects_refused_collision", r->refused_collision);
	put_u64(out, "reconnects_reset_by_path", r->reset_by_path);
	put_u64(out, "reconnects_stalled", r->stalls);
	put_u64(out, "splice_updates", d->splice->updates);
	put_u64(out, "splice_errors", d->splice->errors);
	put_u64(out, "addresses_kept", d->local->keeps);
	put_u64(out, "address_keep_errors", d->local->keep_errors);
	put_u64(out, "state_restored", d->state->restored);
	put_u64(out, "state_gone", d->state->skipped);
	put_u64(out, "state_load_failed", d->state->load_failed);
	put_u64(out, "state_writes", d->state->writes);
	put_u64(out, "state_write_errors", d->state->write_errors);
	put_u64(out, "migrations_exported", d->migrate->exported);
	put_u64(out, "migrations_unexported", d->migrate->unexported);
	put_u64(out, "migrations_released", d->migrate->released);
	put_u64(out, "migrations_imported", d->migrate->imported);
	put_u64(out, "migrations_arrived", d->migrate->arrived);
	put_u64(out, "migrations_arrive_expired", d->migrate->arrive_expired);
	put_u64(out, "away_out", d->migrate->away_out);
	put_u64(out, "away_in", d->migrate->away_in);
	put_u64(out, "away_acks_in", d->migrate->away_acks_in);
	put_u64(out, "away_refused", d->migrate->refused);
}

/* Both queues' counters together: every packet rackd decided. */
static void queue_totals(const struct rackd *d, struct queue_stats *t)
{
	const struct queue_stats *a = queue_stats(d->queue);
	const struct queue_stats *m = queue_stats(d->strict_queue);

	t->received = a->received + m->received;
	t->verdicts = a->verdicts + m->verdicts;
	t->truncated = a->truncated + m->truncated;
	t->rewritten = a->rewritten + m->rewritten;
	t->recv_errors = a->recv_errors + m->recv_errors;
	t->send_errors = a->send_errors + m->send_errors;
}

/* Which path racks' handshake option takes, why, and the program's
 * counters (bpfopt.h). */
static void put_option_path(FILE *out, const struct rackd *d)
{
	const struct rackd_stats *s = &d->stats;
	const struct bpfopt_listeners *lst;
	struct bpfopt_counters bc;

	proto_put(out, "option_path", "%s", d->bpf ? "bpf" : "queue");
	proto_put(out, "option_path_reason", "%s", d->option_path_reason);
	proto_put(out, "kernel_option", "%s",
		  config_kernel_option_name(d->cfg->kernel_option));
	if (!d->bpf)
		return;
	proto_put(out, "bpf_cgroup", "%s", bpfopt_cgroup(d->bpf));
	lst = bpfopt_listeners(d->bpf);
	proto_put(out, "bpf_old_listeners", "%s", lst->ran ? "flagged" :
		  "plain");
	put_u64(out, "bpf_old_listeners_flagged", lst->flagged);
	if (lst->why[0])
		proto_put(out, "bpf_old_listeners_reason", "%s", lst->why);
	if (bpfopt_counters(d->bpf, &bc) == 0)
		for (unsigned i = 0; i < RACKS_BPF_CNT_MAX; i++)
			put_reason(out, "bpf_", bpfopt_counter_name(i), bc.v[i]);
	put_u64(out, "bpf_records", s->bpf_records);
	put_u64(out, "bpf_records_racks", s->bpf_racks);
	put_u64(out, "bpf_records_plain", s->bpf_plain);
	put_u64(out, "bpf_records_ignored", s->bpf_ignored);
	put_u64(out, "bpf_records_duplicate", s->bpf_duplicate);
	put_u64(out, "bpf_drains", s->bpf_drains);
	proto_put(out, "bpf_reader", "%s", d->bpf_polled ? "polled" :
		  d->bpf_busy ? "rounds" : "grace");
	put_u64(out, "bpf_records_pulled", s->bpf_pulled);
	put_u64(out, "bpf_map_errors", s->bpf_map_errors);
}

static int cmd_status(struct rackd *d, const struct proto_msg *req, FILE *out,
		      char *err, size_t errlen)
{
	struct queue_stats total, *qs = &total;
	const struct rackd_stats *s = &d->stats;
	char fp[EDP_HOST_FP_STRLEN];

	(void)req, (void)err, (void)errlen;
	/* The records the BPF path left for later count too. */
	if (d->records_pull)
		d->records_pull(d);
	queue_totals(d, &total);
	edp_host_fingerprint(d->hostkey.pk, fp);
	proto_put(out, "version", "%s", RACKD_VERSION);
	proto_put(out, "protocol", "%d", PROTO_VERSION);
	proto_put(out, "pid", "%d", (int)getpid());
	proto_put(out, "host_key", "%s", fp);
	put_u64(out, "known_hosts", known_hosts_count(d->known_hosts));
	put_u64(out, "known_hosts_writes", d->hosts_file->writes);
	put_u64(out, "known_hosts_write_errors", d->hosts_file->write_errors);
	proto_put(out, "queue_mode", "%s", config_queue_mode_name(d->queue_mode));
	put_option_path(out, d);
	proto_put(out, "queue", "%u", d->cfg->queue_num);
	proto_put(out, "strict_queue", "%u", config_strict_queue(d->cfg));
	put_u64(out, "strict_queued", queue_stats(d->strict_queue)->received);
	put_u64(out, "uptime", (loop_now() - d->started_mono) / 1000);
	put_u64(out, "connections", d->conns.count);
	put_u64(out, "packets_queued", qs->received);
	put_u64(out, "packets_truncated", qs->truncated);
	put_u64(out, "packets_malformed", s->malformed);
	for (int e = 1; e < PACKET_ERR_MAX; e++)
		put_reason(out, "malformed_", packet_error_name(e),
			   s->malformed_by[e]);
	put_u64(out, "packets_unexpected", s->unexpected);
	put_u64(out, "verdicts", qs->verdicts);
	put_u64(out, "syn", s->syn);
	put_u64(out, "synack", s->synack);
	put_u64(out, "syn_retransmit", s->syn_retransmit);
	put_u64(out, "syn_live_socket", s->syn_live_socket);
	put_u64(out, "syn_splice_taken", s->syn_splice_taken);
	put_u64(out, "synack_unmatched", s->synack_unmatched);
	put_u64(out, "connections_total", s->conns_total);
	put_u64(out, "connections_expired", s->conns_expired);
	put_u64(out, "connections_closed", s->conns_closed);
	put_u64(out, "connections_refused", s->conns_refused);
	put_u64(out, "half_open", d->conns.halfopen.count);
	put_u64(out, "half_open_evicted", s->halfopen_evicted);
	put_u64(out, "unauthenticated_paced", s->unauth_paced);
	put_u64(out, "sweeps", s->sweeps);
	put_u64(out, "link_events", s->link_events);
	put_u64(out, "addr_events", s->addr_events);
	put_u64(out, "packets_rewritten", qs->rewritten);
	put_u64(out, "checksum_bad", s->csum_bad);
	put_edp_stats(out, &d->edp);
	put_adopt_stats(out, d);
	put_live_stats(out, d);
	put_reconnect_stats(out, d);
	put_u64(out, "ctl_requests", s->ctl_requests);
	put_u64(out, "ctl_errors", s->ctl_errors);
	put_u64(out, "queue_recv_errors", qs->recv_errors);
	put_u64(out, "queue_send_errors", qs->send_errors);
	return 0;
}

static void put_endpoint(FILE *out, const char *key, const struct endpoint *e)
{
	char buf[ENDPOINT_STRLEN];

	proto_put(out, key, "%s", endpoint_format(e, buf, sizeof(buf)));
}

/* Whether list shows C's reconnections too: suspended, or not yet
 * followed by its peer. */
static bool reconnect_news(const struct conn *c)
{
	return c->edp && c->edp->keyed && c->edp->rc_attempts &&
	       (c->state == CONN_SUSPENDED || !c->confirmed);
}

/*
 * What became of C's reconnections: how many, and what answered the ones
 * still pending (nothing; or the peer's heartbeats on the same path but
 * not them, which rackd also logs).
 */
static void put_reconnections(FILE *out, const struct conn *c)
{
	const struct conn_edp *e = c->edp;
	const char *answer = "none";

	put_u64(out, "reconnect_attempts", e->rc_attempts);
	put_u64(out, "reconnect_answers", e->rc_answers);
	if (!e->rc_attempts)
		return;
	put_u64(out, "reconnect_pending", e->rc_pending);
	if (!e->rc_pending) {
		answer = "accepted";
	} else {
		put_u64(out, "reconnect_pending_ms",
			loop_now() - e->rc_first_ms);
		if (c->host && !c->host->suspended)
			answer = "heartbeats_only";
	}
	proto_put(out, "reconnect_answer", "%s", answer);
}

/*
 * Why a suspended connection is still suspended, for how long, and what
 * has been tried: a suspension is never silent either.
 */
static void put_suspension(FILE *out, struct rackd *d, const struct conn *c)
{
	enum live_wait w = live_waiting_for(d, c);

	if (c->edp && c->edp->rst_held)
		proto_put(out, "reset_held", "true");
	if (w == LIVE_WAIT_NONE)
		return;
	proto_put(out, "suspended_reason", "%s", live_wait_name(w));
	put_u64(out, "suspended_for", live_suspended_ms(c) / 1000);
	put_u64(out, "path_probes", c->host->tries);
	if (c->edp)
		put_u64(out, "reopen_attempts",
			c->host->reopening ? c->edp->rc_pending : 0);
}

static void put_conn_summary(FILE *out, struct rackd *d, const struct conn *c)
{
	const char *unmanaged = conn_unmanaged_name(c->unmanaged);

	proto_put(out, "id", "%" PRIu64, c->id);
	proto_put(out, "state", "%s", conn_state_name(c->state));
	proto_put(out, "direction", "%s", conn_dir_name(c->dir));
	put_endpoint(out, "local", &c->local);
	put_endpoint(out, "remote", &c->remote);
	proto_put(out, "peer", "%s", conn_peer_name(c->peer));
	proto_put(out, "tcp_state", "%s", conn_tcp_state_name(c->tcp_state));
	put_u64(out, "age", (loop_now() - c->created_mono) / 1000);
	put_u64(out, "since", (loop_now() - c->state_since) / 1000);
	put_u64(out, "suspensions", c->suspensions);
	put_u64(out, "reconnections", c->reconnections);
	/* Where its segments travel now; the socket's endpoints above. */
	put_endpoint(out, "wire_local", &c->wire_local);
	put_endpoint(out, "wire_remote", &c->wire_remote);
	/* Who it is with, and how its key was made (setup.h). */
	if (c->edp && c->edp->source != KEY_SOURCE_NONE)
		proto_put(out, "key_source", "%s",
			  key_source_name(c->edp->source));
	if (c->edp && c->edp->have_peer_host) {
		char fp[EDP_HOST_FP_STRLEN];
		const struct known_host *kh =
			known_hosts_by_key(d->known_hosts, c->edp->peer_host);

		edp_host_fingerprint(c->edp->peer_host, fp);
		proto_put(out, "peer_host", "%s", fp);
		if (kh && kh->name[0])
			proto_put(out, "peer_host_name", "%s", kh->name);
	}
	/* Never silent: why racks does not protect it. */
	if (unmanaged)
		proto_put(out, "unmanaged", "%s", unmanaged);
	/* Late set-up: where it is, and what made it needed. */
	if (c->adoption != ADOPTION_NONE) {
		proto_put(out, "adoption", "%s", conn_adoption_name(c->adoption));
		if (conn_unmanaged_name(c->cause))
			proto_put(out, "adopted_for", "%s",
				  conn_unmanaged_name(c->cause));
	}
	/* Never silent either: where a suspended one's reconnections are. */
	if (reconnect_news(c))
		put_reconnections(out, c);
	put_suspension(out, d, c);
}

static int cmd_list(struct rackd *d, const struct proto_msg *req, FILE *out,
		    char *err, size_t errlen)
{
	(void)req, (void)err, (void)errlen;
	/* Show the kernel's current view, not the last periodic sweep's,
	 * with every record the BPF path left for later (plain peers'). */
	if (d->records_pull)
		d->records_pull(d);
	track_sweep_fresh(d);
	for (const struct conn *c = d->conns.head; c; c = c->next) {
		proto_put(out, "record", "conn");
		put_conn_summary(out, d, c);
	}
	return 0;
}

static void put_end(FILE *out, const char *who, const struct conn_end *e)
{
	char key[64];

#define PUT(name, fmt, val)                                   \
	do {                                                  \
		snprintf(key, sizeof(key), "%s_" name, who);  \
		proto_put(out, key, fmt, val);                \
	} while (0)
	PUT("isn", "%u", e->isn);
	if (e->has_mss)
		PUT("mss", "%u", e->mss);
	if (e->has_wscale)
		PUT("wscale", "%u", e->wscale);
	PUT("sack_permitted", "%s", e->sack_permitted ? "true" : "false");
	PUT("timestamps", "%s", e->has_timestamp ? "true" : "false");
#undef PUT
}

static int parse_id(const struct proto_msg *req, uint64_t *id, char *err,
		    size_t errlen)
{
	const char *s = proto_get(req, "id");
	char *end;

	if (!s || !*s) {
		snprintf(err, errlen, "missing connection id");
		return -EINVAL;
	}
	errno = 0;
	*id = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-') {
		snprintf(err, errlen, "bad connection id '%s'", s);
		return -EINVAL;
	}
	return 0;
}

static int cmd_show(struct rackd *d, const struct proto_msg *req, FILE *out,
		    char *err, size_t errlen)
{
	struct conn_negotiated n;
	const struct conn *c;
	uint64_t id;
	char when[32];
	struct tm tm;
	int ret = parse_id(req, &id, err, errlen);

	if (ret)
		return ret;
	if (d->records_pull)
		d->records_pull(d);
	track_sweep_fresh(d);
	c = conn_find_id(&d->conns, id);
	if (!c) {
		snprintf(err, errlen, "no connection with id %" PRIu64, id);
		return -ENOENT;
	}
	put_conn_summary(out, d, c);
	gmtime_r(&c->created, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	proto_put(out, "created", "%s", when);
	if (c->edp && c->edp->keyed) {
		/* Derived from the key; the key itself never leaves rackd. */
		proto_put(out, "conn_id", "%016llx",
			  (unsigned long long)c->edp->conn_id);
		proto_put(out, "key_fingerprint", "%s", c->edp->fingerprint);
	}
	if (c->edp && c->state == CONN_CONNECTED)
		put_u64(out, "setup_ms", c->edp->setup_ms);
	/* "kernel": nft maps rewrite it, its data never reaches rackd. */
	proto_put(out, "splice", "%s", c->mapped ? "kernel" : "none");
	/* Until "none" after a resumption, its segments still cross rackd. */
	proto_put(out, "hold", "%s", hold_phase(c));
	if (c->host)
		put_bool(out, "peer_confirmed", c->confirmed);
	if (c->edp && c->edp->keyed && !reconnect_news(c))
		put_reconnections(out, c);
	if (c->reconnected) {
		gmtime_r(&c->reconnected, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		proto_put(out, "last_reconnection", "%s", when);
	}
	if (c->kept_local)
		put_bool(out, "local_address_kept", true);
	if (c->migration != MIG_NONE)
		proto_put(out, "migration", "%s",
			  conn_migration_name(c->migration));
	if (c->migration == MIG_LEAVING)
		put_bool(out, "peer_holds", c->away_acked);
	put_end(out, "local", &c->lend);
	if (c->rend.seen)
		put_end(out, "remote", &c->rend);
	if (c->state == CONN_HANDSHAKE)
		return 0;
	conn_negotiate(c, &n);
	put_bool(out, "window_scaling", n.wscale);
	if (n.wscale) {
		proto_put(out, "snd_wscale", "%u", n.snd_wscale);
		proto_put(out, "rcv_wscale", "%u", n.rcv_wscale);
	}
	put_bool(out, "sack", n.sack);
	put_bool(out, "timestamps", n.timestamps);
	return 0;
}

static int cmd_reload(struct rackd *d, const struct proto_msg *req, FILE *out,
		      char *err, size_t errlen)
{
	(void)req, (void)out;
	return d->reload(d, err, errlen);
}

/* Both ends moved: tell rackd where the peer is now. */
static int cmd_peer(struct rackd *d, const struct proto_msg *req, FILE *out,
		    char *err, size_t errlen)
{
	const char *where = proto_get(req, "peer");
	struct endpoint ep;
	struct conn *c;
	bool has_port;
	uint64_t id;
	int ret = parse_id(req, &id, err, errlen);

	if (ret)
		return ret;
	if (!where || endpoint_parse(where, &ep, &has_port)) {
		snprintf(err, errlen, "bad peer address '%s' (ADDR, ADDR:PORT "
			 "or [ADDR6]:PORT)", where ? where : "");
		return -EINVAL;
	}
	c = conn_find_id(&d->conns, id);
	if (!c) {
		snprintf(err, errlen, "no connection with id %" PRIu64, id);
		return -ENOENT;
	}
	ret = reconnect_set_peer(d, c, &ep, has_port);
	if (ret == -ENOTCONN)
		snprintf(err, errlen, "connection %" PRIu64 " is not managed "
			 "by racks (state %s)", id, conn_state_name(c->state));
	else if (ret == -EAFNOSUPPORT)
		snprintf(err, errlen, "connection %" PRIu64 " is %s: the peer "
			 "must be given as one too", id,
			 c->remote.addr.family == AF_INET ? "IPv4" : "IPv6");
	else if (ret < 0)
		snprintf(err, errlen, "splicing failed: %s", strerror(-ret));
	if (ret < 0)
		return ret;
	put_u64(out, "moved", (uint64_t)ret);
	return 0;
}

/* The reply opens a stream (ctl.c): every later event is one more
 * message. */
static int cmd_events(struct rackd *d, const struct proto_msg *req, FILE *out,
		      char *err, size_t errlen)
{
	(void)d, (void)req, (void)out, (void)err, (void)errlen;
	return 0;
}

static const struct ctl_command ctl_commands[] = {
	{ "status", false, false, cmd_status },
	{ "list", false, false, cmd_list },
	{ "show", false, false, cmd_show },
	{ "reload", true, false, cmd_reload },
	{ "events", false, true, cmd_events },
	{ "peer", true, false, cmd_peer },
	{ "export", true, false, cmd_export },
	{ "unexport", true, false, cmd_unexport },
	{ "release", true, false, cmd_release },
	{ "import", true, false, cmd_import },
	{ "restored", true, false, cmd_restored },
	{ "host", false, false, cmd_host },
	{ "hosts", false, false, cmd_hosts },
	{ "hosts_add", true, false, cmd_hosts_add },
	{ "hosts_remove", true, false, cmd_hosts_remove },
	{ "hosts_pin", true, false, cmd_hosts_pin },
};

const struct ctl_command *ctl_command_find(const char *name)
{
	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]);
	     i++)
		if (strcmp(ctl_commands[i].name, name) == 0)
			return &ctl_commands[i];
	return NULL;
}
