// SPDX-License-Identifier: GPL-2.0-only
#include "state.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "hold.h"
#include "hostpairs_file.h"
#include "liveness.h"
#include "local.h"
#include "log.h"
#include "loop.h"
#include "rackd.h"
#include "setup.h"
#include "sockdiag.h"
#include "splice.h"
#include "syncdir.h"
#include "track.h"

#define STATE_MAGIC "racks-state 1"
/* Far more than 10^5 connections' lines: anything larger is not ours. */
#define STATE_MAX_BYTES (256u << 20)

/* conn_end flags in the file */
enum {
	END_SEEN = 1, END_MSS = 2, END_WSCALE = 4, END_SACK = 8, END_TS = 16,
};

/* One connection as read, before anything is built from it. */
struct saved {
	enum conn_dir dir;
	struct endpoint local, remote, wire_local, wire_remote;
	bool suspended, confirmed, kept_local;
	int64_t suspended_since, created, reconnected;
	uint32_t reconnections, suspensions;
	struct setup_saved keys;
	struct conn_end lend, rend;
	bool rebased;		/* progress= given */
	uint32_t snd_base, rcv_base;
	unsigned seen;		/* fields found, as bits of enum field */
};

static void on_write_timer(struct timer *t, void *arg)
{
	(void)t;
	state_write(arg);
}

void state_init(struct rackd *d, const char *path)
{
	d->state->path = path;
	timer_init(&d->state->write_timer, on_write_timer, d);
}

void state_changed(struct rackd *d)
{
	if (d->state->path && !timer_pending(&d->state->write_timer))
		loop_timer_arm(d->loop, &d->state->write_timer,
			       STATE_WRITE_DELAY_MS);
}

void state_event(void *arg, enum event_type type, struct conn *c,
		 const char *reason)
{
	(void)reason;
	/* A connection leaves the file only if it was in it. */
	if (type != EVENT_GONE || conn_managed(c))
		state_changed(arg);
}

void state_free(struct rackd *d)
{
	loop_timer_cancel(d->loop, &d->state->write_timer);
}

/* ---- writing ---- */

static void put_hex(FILE *f, const char *name, const uint8_t *bin, size_t len)
{
	char hex[2 * 64 + 1];

	sodium_bin2hex(hex, sizeof(hex), bin, len);
	fprintf(f, " %s=%s", name, hex);
	sodium_memzero(hex, sizeof(hex));
}

static void put_endpoint(FILE *f, const char *name, const struct endpoint *e)
{
	char buf[ENDPOINT_STRLEN];

	fprintf(f, " %s=%s", name, endpoint_format(e, buf, sizeof(buf)));
}

static void put_end(FILE *f, const char *name, const struct conn_end *e)
{
	unsigned flags = (e->seen ? END_SEEN : 0) | (e->has_mss ? END_MSS : 0) |
			 (e->has_wscale ? END_WSCALE : 0) |
			 (e->sack_permitted ? END_SACK : 0) |
			 (e->has_timestamp ? END_TS : 0);

	fprintf(f, " %s=%u,%" PRIu32 ",%u,%u", name, flags, e->isn,
		(unsigned)e->mss, (unsigned)e->wscale);
}

/* The line of C; its socket's sequence numbers start from SND, RCV when
 * REBASED (restored by CRIU, or about to be). */
static void write_conn(FILE *f, const struct conn *c, bool rebased,
		       uint32_t snd, uint32_t rcv)
{
	struct setup_saved k;

	setup_save(c, &k);
	fprintf(f, "conn dir=%s", c->dir == CONN_OUTGOING ? "out" : "in");
	put_endpoint(f, "local", &c->local);
	put_endpoint(f, "remote", &c->remote);
	put_endpoint(f, "wire_local", &c->wire_local);
	put_endpoint(f, "wire_remote", &c->wire_remote);
	fprintf(f, " confirmed=%d kept_local=%d", c->confirmed, c->kept_local);
	fprintf(f, " state=%s", c->hold ? "suspended" : "connected");
	if (c->hold)
		fprintf(f, " suspended_since=%lld", (long long)(time(NULL) -
			(time_t)((loop_now() - c->hold->since) / 1000)));
	fprintf(f, " created=%lld reconnected=%lld reconnections=%" PRIu32
		   " suspensions=%" PRIu32, (long long)c->created,
		(long long)c->reconnected, c->reconnections, c->suspensions);
	fprintf(f, " conn_id=%016" PRIx64, k.conn_id);
	put_hex(f, "key", k.key, sizeof(k.key));
	put_hex(f, "pk_client", k.t.pk_client, sizeof(k.t.pk_client));
	put_hex(f, "pk_server", k.t.pk_server, sizeof(k.t.pk_server));
	fprintf(f, " isn_client=%" PRIu32 " isn_server=%" PRIu32
		   " hb_out=%" PRIu32 " hb_acked=%" PRIu32 " hb_in=%" PRIu32
		   " rc_base=%" PRIu32, k.t.isn_client, k.t.isn_server,
		k.hb_out, k.hb_acked, k.hb_in, k.rc_base);
	put_end(f, "lend", &c->lend);
	put_end(f, "rend", &c->rend);
	if (k.source >= KEY_SOURCE_ANONYMOUS && k.source <= KEY_SOURCE_DERIVED)
		fprintf(f, " key_source=%s", key_source_name(k.source));
	if (k.have_peer_host)
		put_hex(f, "peer_host", k.peer_host, sizeof(k.peer_host));
	if (rebased)
		fprintf(f, " progress=%" PRIu32 ",%" PRIu32, snd, rcv);
	fputc('\n', f);
	sodium_memzero(&k, sizeof(k));
}

void state_write_conn(FILE *f, const struct conn *c)
{
	write_conn(f, c, c->rebased, c->snd_base, c->rcv_base);
}

int state_export_conn(FILE *f, const struct conn *c)
{
	struct sockdiag_progress pr;
	uint32_t snd_una, rcv_nxt;
	int ret = sockdiag_progress(&c->local, &c->remote, &pr);

	if (ret)
		return ret;
	/* What the checkpoint's socket will start from where it is
	 * restored: its counters begin at zero there. */
	conn_seq_progress(c, &pr, &snd_una, &rcv_nxt);
	write_conn(f, c, true, snd_una, rcv_nxt);
	return 0;
}

struct write_ctx {
	struct rackd *d;
	unsigned count;
};

static int write_conns(FILE *f, void *arg)
{
	struct write_ctx *w = arg;

	fprintf(f, STATE_MAGIC "\n");
	for (struct conn *c = w->d->conns.head; c; c = c->next) {
		if (!conn_managed(c))
			continue;
		state_write_conn(f, c);
		w->count++;
	}
	fprintf(f, "end %u\n", w->count);
	return 0;
}

/* The host pairs' file, written with the state when they changed. */
static void write_host_pairs(struct rackd *d)
{
	char path[4096];
	int ret;

	if (!d->host_pairs.dirty ||
	    hostpairs_file_path(d->state->path, path, sizeof(path)))
		return;
	ret = hostpairs_file_save(path, &d->host_pairs, d->hostkey.pk);
	if (ret)
		log_warnx("%s cannot be written (%s): a restarted rackd would "
			  "run new host handshakes", path, strerror(-ret));
}

static void load_host_pairs(struct rackd *d)
{
	char path[4096], bad[4200], err[512];
	int ret;

	if (hostpairs_file_path(d->state->path, path, sizeof(path)))
		return;
	ret = hostpairs_file_load(path, &d->host_pairs, d->hostkey.pk, err,
				  sizeof(err));
	if (ret == -ESTALE) {
		/* Made with the key this host had before (rotated): the
		 * first connection with each peer runs a new handshake,
		 * which proves the rotation to it. */
		log_info("%s: made with another host key: new host handshakes "
			 "will follow", path);
		d->host_pairs.dirty = true;
	} else if (ret == -EINVAL) {
		/* Kept for a look, never overwritten: new handshakes make
		 * new host pairs. */
		snprintf(bad, sizeof(bad), "%s.bad", path);
		log_warnx("%s; moved to %s: new host handshakes will follow",
			  err, bad);
		(void)rename(path, bad);
	} else if (ret) {
		log_warnx("%s: %s: new host handshakes will follow", path,
			  strerror(-ret));
	} else if (d->host_pairs.count) {
		log_info("%s: %zu host pair(s)", path, d->host_pairs.count);
	}
}

int state_write(struct rackd *d)
{
	struct state_file *s = d->state;
	struct write_ctx w = { .d = d };
	int ret;

	if (!s->path)
		return 0;
	loop_timer_cancel(d->loop, &s->write_timer);
	ret = file_replace(s->path, 0600, write_conns, &w);
	if (ret) {
		s->write_errors++;
		/* Once per run of failures, not once per write. */
		if (!s->write_failing)
			log_warnx("state file %s cannot be written (%s): a "
				  "restarted rackd would not know its "
				  "connections", s->path, strerror(-ret));
		s->write_failing = true;
		return ret;
	}
	write_host_pairs(d);
	if (s->write_failing)
		log_info("state file %s written again", s->path);
	s->write_failing = false;
	s->writes++;
	log_debug("state file %s: %u connection(s)", s->path, w.count);
	return 0;
}

/* ---- reading ---- */

enum field {
	F_DIR, F_LOCAL, F_REMOTE, F_WIRE_LOCAL, F_WIRE_REMOTE, F_CONFIRMED,
	F_KEPT, F_STATE, F_SINCE, F_CREATED, F_RECONNECTED, F_RECONNECTIONS,
	F_SUSPENSIONS, F_CONN_ID, F_KEY, F_PK_CLIENT, F_PK_SERVER,
	F_ISN_CLIENT, F_ISN_SERVER, F_HB_OUT, F_HB_ACKED, F_HB_IN, F_RC_BASE,
	F_LEND, F_REND, F_PROGRESS, F_KEY_SOURCE, F_PEER_HOST, F_COUNT
};

static const char *const field_names[F_COUNT] = {
	"dir", "local", "remote", "wire_local", "wire_remote", "confirmed",
	"kept_local", "state", "suspended_since", "created", "reconnected",
	"reconnections", "suspensions", "conn_id", "key", "pk_client",
	"pk_server", "isn_client", "isn_server", "hb_out", "hb_acked", "hb_in",
	"rc_base", "lend", "rend", "progress", "key_source", "peer_host",
};


static bool parse_u64(const char *v, uint64_t max, uint64_t *out, int base)
{
	char *end;
	unsigned long long n;

	if (!*v || *v == '-' || *v == '+')
		return false;
	errno = 0;
	n = strtoull(v, &end, base);
	if (errno || *end || n > max)
		return false;
	*out = n;
	return true;
}

static bool parse_u32(const char *v, uint32_t *out)
{
	uint64_t n;

	if (!parse_u64(v, UINT32_MAX, &n, 10))
		return false;
	*out = (uint32_t)n;
	return true;
}

static bool parse_time(const char *v, int64_t *out)
{
	uint64_t n;

	if (!parse_u64(v, INT64_MAX, &n, 10))
		return false;
	*out = (int64_t)n;
	return true;
}

static bool parse_bool(const char *v, bool *out)
{
	if (strcmp(v, "0") && strcmp(v, "1"))
		return false;
	*out = *v == '1';
	return true;
}

static bool parse_hex(const char *v, uint8_t *out, size_t len)
{
	size_t got;

	return strlen(v) == 2 * len &&
	       sodium_hex2bin(out, len, v, 2 * len, NULL, &got, NULL) == 0 &&
	       got == len;
}

static bool parse_endpoint(const char *v, struct endpoint *e)
{
	bool has_port;

	return endpoint_parse(v, e, &has_port) == 0 && has_port;
}

static bool parse_end(const char *v, struct conn_end *e)
{
	unsigned flags, mss, wscale;
	uint32_t isn;
	int used = 0;

	if (sscanf(v, "%u,%" SCNu32 ",%u,%u%n", &flags, &isn, &mss, &wscale,
		   &used) != 4 || v[used] || flags > 31 || mss > 65535 ||
	    wscale > 14)
		return false;
	*e = (struct conn_end){
		.seen = flags & END_SEEN, .isn = isn,
		.has_mss = flags & END_MSS, .has_wscale = flags & END_WSCALE,
		.sack_permitted = flags & END_SACK,
		.has_timestamp = flags & END_TS,
		.mss = (uint16_t)mss, .wscale = (uint8_t)wscale,
	};
	return true;
}

/* "SND,RCV" */
static bool parse_progress(const char *v, struct saved *s)
{
	char first[16];
	const char *comma = strchr(v, ',');

	if (!comma || (size_t)(comma - v) >= sizeof(first))
		return false;
	memcpy(first, v, (size_t)(comma - v));
	first[comma - v] = '\0';
	s->rebased = true;
	return parse_u32(first, &s->snd_base) &&
	       parse_u32(comma + 1, &s->rcv_base);
}

static bool parse_field(struct saved *s, enum field f, const char *v)
{
	struct setup_saved *k = &s->keys;

	switch (f) {
	case F_DIR:
		if (strcmp(v, "out") && strcmp(v, "in"))
			return false;
		s->dir = strcmp(v, "out") ? CONN_INCOMING : CONN_OUTGOING;
		return true;
	case F_LOCAL: return parse_endpoint(v, &s->local);
	case F_REMOTE: return parse_endpoint(v, &s->remote);
	case F_WIRE_LOCAL: return parse_endpoint(v, &s->wire_local);
	case F_WIRE_REMOTE: return parse_endpoint(v, &s->wire_remote);
	case F_CONFIRMED: return parse_bool(v, &s->confirmed);
	case F_KEPT: return parse_bool(v, &s->kept_local);
	case F_STATE:
		if (strcmp(v, "connected") && strcmp(v, "suspended"))
			return false;
		s->suspended = !strcmp(v, "suspended");
		return true;
	case F_SINCE: return parse_time(v, &s->suspended_since);
	case F_CREATED: return parse_time(v, &s->created);
	case F_RECONNECTED: return parse_time(v, &s->reconnected);
	case F_RECONNECTIONS: return parse_u32(v, &s->reconnections);
	case F_SUSPENSIONS: return parse_u32(v, &s->suspensions);
	case F_CONN_ID: return parse_u64(v, UINT64_MAX, &k->conn_id, 16);
	case F_KEY: return parse_hex(v, k->key, sizeof(k->key));
	case F_PK_CLIENT:
		return parse_hex(v, k->t.pk_client, sizeof(k->t.pk_client));
	case F_PK_SERVER:
		return parse_hex(v, k->t.pk_server, sizeof(k->t.pk_server));
	case F_ISN_CLIENT: return parse_u32(v, &k->t.isn_client);
	case F_ISN_SERVER: return parse_u32(v, &k->t.isn_server);
	case F_HB_OUT: return parse_u32(v, &k->hb_out);
	case F_HB_ACKED: return parse_u32(v, &k->hb_acked);
	case F_HB_IN: return parse_u32(v, &k->hb_in);
	case F_RC_BASE: return parse_u32(v, &k->rc_base);
	case F_PROGRESS: return parse_progress(v, s);
	case F_KEY_SOURCE:
		for (unsigned i = KEY_SOURCE_ANONYMOUS;
		     i <= KEY_SOURCE_DERIVED; i++)
			if (!strcmp(v, key_source_name(i))) {
				k->source = i;
				return true;
			}
		return false;
	case F_PEER_HOST:
		k->have_peer_host = true;
		return parse_hex(v, k->peer_host, sizeof(k->peer_host));
	case F_LEND: return parse_end(v, &s->lend);
	case F_REND: return parse_end(v, &s->rend);
	case F_COUNT: break;
	}
	return false;
}

/* A "conn" line (after "conn "), split in place; false with ERR set. */
static bool parse_conn(char *line, struct saved *s, char *err, size_t errlen)
{
	unsigned need = (1u << F_COUNT) - 1;

	*s = (struct saved){ 0 };
	for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
		char *eq = strchr(tok, '=');
		enum field f;

		if (!eq) {
			snprintf(err, errlen, "'%.40s' is not NAME=VALUE", tok);
			return false;
		}
		*eq = '\0';
		for (f = 0; f < F_COUNT && strcmp(tok, field_names[f]); f++)
			;
		if (f == F_COUNT || (s->seen & (1u << f))) {
			snprintf(err, errlen, "%s field '%.40s'",
				 f == F_COUNT ? "unknown" : "repeated", tok);
			return false;
		}
		if (!parse_field(s, f, eq + 1)) {
			snprintf(err, errlen, "bad value for %s", tok);
			return false;
		}
		s->seen |= 1u << f;
	}
	/* suspended_since only with state=suspended; progress only for a
	 * socket restored by CRIU. */
	if (!s->suspended)
		need &= ~(1u << F_SINCE);
	need &= ~(1u << F_PROGRESS);
	/* A file from before host keys: its keys were anonymous. */
	need &= ~(1u << F_KEY_SOURCE | 1u << F_PEER_HOST);
	if (!(s->seen & 1u << F_KEY_SOURCE))
		s->keys.source = KEY_SOURCE_ANONYMOUS;
	if ((s->seen & need) != need) {
		for (unsigned f = 0; f < F_COUNT; f++)
			if ((need & ~s->seen) & (1u << f)) {
				snprintf(err, errlen, "field %s missing",
					 field_names[f]);
				break;
			}
		return false;
	}
	if (s->local.addr.family != s->remote.addr.family ||
	    s->wire_local.addr.family != s->wire_remote.addr.family) {
		snprintf(err, errlen, "mixed address families");
		return false;
	}
	return true;
}

static char *read_all(const char *path, size_t *len, int *err)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	struct stat st;

	*err = 0;
	if (!f) {
		*err = -errno;
		return NULL;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > STATE_MAX_BYTES) {
		*err = -EINVAL;
		fclose(f);
		return NULL;
	}
	buf = xcalloc((size_t)st.st_size + 1, 1);
	*len = fread(buf, 1, (size_t)st.st_size, f);
	if (ferror(f))
		*err = -EIO;
	fclose(f);
	return buf;
}

/*
 * The whole file, or nothing: SAVED (count in *n) is filled only when
 * every line parses and the end line says how many came before it.
 */
static bool parse_file(char *buf, struct saved **saved, unsigned *n,
		       char *err, size_t errlen)
{
	unsigned lineno = 0, cap = 0, count = 0;
	bool ended = false;
	char *next = buf;

	*saved = NULL;
	*n = 0;
	while (next && *next) {
		char *line = next, *nl = strchr(line, '\n');
		char lerr[128];
		unsigned long end_count;
		char *end;

		lineno++;
		if (!nl) {
			snprintf(err, errlen, "line %u: no newline (truncated)",
				 lineno);
			goto bad;
		}
		*nl = '\0';
		next = nl + 1;
		if (ended) {
			snprintf(err, errlen, "line %u: after the end line",
				 lineno);
			goto bad;
		}
		if (lineno == 1) {
			if (strcmp(line, STATE_MAGIC)) {
				snprintf(err, errlen, "line 1: not '%s'",
					 STATE_MAGIC);
				goto bad;
			}
			continue;
		}
		if (!strncmp(line, "end ", 4)) {
			errno = 0;
			end_count = strtoul(line + 4, &end, 10);
			if (errno || *end || end_count != count) {
				snprintf(err, errlen, "line %u: end line says "
					 "'%s', %u connection(s) read", lineno,
					 line + 4, count);
				goto bad;
			}
			ended = true;
			continue;
		}
		if (strncmp(line, "conn ", 5)) {
			snprintf(err, errlen, "line %u: unknown line", lineno);
			goto bad;
		}
		if (count == cap) {
			cap = cap ? 2 * cap : 16;
			*saved = xreallocarray(*saved, cap, sizeof(**saved));
		}
		if (!parse_conn(line + 5, &(*saved)[count], lerr,
				sizeof(lerr))) {
			snprintf(err, errlen, "line %u: %s", lineno, lerr);
			goto bad;
		}
		count++;
	}
	if (!ended) {
		snprintf(err, errlen, "%s", lineno ? "no end line (truncated)"
						   : "empty");
		goto bad;
	}
	*n = count;
	return true;
bad:
	if (*saved)
		sodium_memzero(*saved, (size_t)cap * sizeof(**saved));
	free(*saved);
	*saved = NULL;
	return false;
}

/* Rebuild one connection; false (nothing built) when its socket is gone. */
static bool restore(struct rackd *d, const struct saved *s, time_t now)
{
	struct sockdiag_progress pr;
	struct setup_saved k;
	uint64_t held_ms = 0;
	struct conn *c;

	if (conn_lookup(&d->conns, &s->local, &s->remote) ||
	    sockdiag_progress(&s->local, &s->remote, &pr))
		return false;
	c = track_restore(d, &s->local, &s->remote, s->dir);
	conn_set_wire(&d->conns, c, &s->wire_local, &s->wire_remote);
	c->confirmed = s->confirmed;
	c->reconnections = s->reconnections;
	c->suspensions = s->suspensions;
	c->reconnected = (time_t)s->reconnected;
	c->created = (time_t)s->created;
	c->lend = s->lend;
	c->rend = s->rend;
	c->rebased = s->rebased;
	c->snd_base = s->snd_base;
	c->rcv_base = s->rcv_base;
	/* The last heartbeats sent may not have been written. */
	k = s->keys;
	k.hb_out += STATE_COUNTER_MARGIN;
	setup_restore(d, c, &k);
	sodium_memzero(&k, sizeof(k));
	/* The splice goes into the table's first transaction. */
	if (conn_spliced(c)) {
		c->mapped = true;
		c->mapped_local = c->wire_local;
		c->mapped_remote = c->wire_remote;
		d->splice->mapped++;
	}
	if (s->kept_local) {
		c->kept_local = true;
		local_adopt(d->local, &c->local.addr);
	}
	if (s->suspended && now > s->suspended_since)
		held_ms = (uint64_t)(now - s->suspended_since) * 1000;
	live_restore(d, c, s->suspended, held_ms);
	conn_log(c, s->suspended ? "restored, suspended" : "restored");
	return true;
}

/*
 * An address the previous rackd kept on lo for a connection that did not
 * come back (its socket closed meanwhile) is nobody's now: removed, unless
 * a connection restored keeps it, so that the host does not go on owning
 * an address it lost (another host may have it now).
 */
static void release_orphans(struct rackd *d, const struct saved *saved,
			    unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct addr *a = &saved[i].local.addr;

		if (!saved[i].kept_local || local_is_kept(d->local, a))
			continue;
		local_adopt(d->local, a);	/* ours, added by us */
		local_unkeep(d->local, a);	/* and no one's now */
	}
}

void state_forget_restored(struct rackd *d)
{
	while (d->conns.head) {
		struct conn *c = d->conns.head;

		/* None of its entries made it into a table: nothing there to
		 * take out, and its kept address stays until rackd exits. */
		c->mapped = false;
		c->kept_local = false;
		free(c->hold);
		c->hold = NULL;
		rackd_forget(d, c);
	}
	d->held = 0;
	d->splice->mapped = 0;
	d->state->restored = 0;
}

void state_load(struct rackd *d)
{
	struct state_file *s = d->state;
	struct saved *saved = NULL;
	char err[256], bad[4096];
	size_t len = 0;
	unsigned n = 0;
	time_t now = time(NULL);
	int ret;
	char *buf;

	if (!s->path)
		return;
	load_host_pairs(d);
	buf = read_all(s->path, &len, &ret);
	if (!buf) {
		if (ret != -ENOENT) {
			s->load_failed = true;
			log_warnx("state file %s: %s: no connection restored",
				  s->path, strerror(-ret));
		}
		return;
	}
	if (strlen(buf) != len) {
		snprintf(err, sizeof(err), "NUL byte in the file");
	} else if (parse_file(buf, &saved, &n, err, sizeof(err))) {
		for (unsigned i = 0; i < n; i++) {
			if (restore(d, &saved[i], now))
				s->restored++;
			else
				s->skipped++;
		}
		release_orphans(d, saved, n);
		sodium_memzero(saved, n * sizeof(*saved));
		free(saved);
		sodium_memzero(buf, len);
		free(buf);
		log_info("state file %s: %" PRIu64 " connection(s) restored, "
			 "%" PRIu64 " gone meanwhile", s->path, s->restored,
			 s->skipped);
		return;
	}
	sodium_memzero(buf, len);
	free(buf);
	s->load_failed = true;
	/* Kept for a look, out of the way of the next write. */
	if ((size_t)snprintf(bad, sizeof(bad), "%s.bad", s->path) < sizeof(bad)
	    && rename(s->path, bad) == 0)
		log_warnx("state file %s refused (%s): no connection "
			  "restored; moved to %s", s->path, err, bad);
	else
		log_warnx("state file %s refused (%s): no connection "
			  "restored", s->path, err);
}

struct conn *state_import(struct rackd *d, char *line, char *err,
			  size_t errlen)
{
	struct saved s;
	struct conn *c;

	if (strncmp(line, "conn ", 5)) {
		snprintf(err, errlen, "not a 'conn' line");
		return NULL;
	}
	if (!parse_conn(line + 5, &s, err, errlen))
		goto out;
	if (!s.rebased) {
		snprintf(err, errlen, "no progress field: not an export "
			 "(rackckpt dump) of a connection");
		goto out;
	}
	if (conn_lookup(&d->conns, &s.local, &s.remote) ||
	    conn_find_edp(&d->conns, s.keys.conn_id)) {
		snprintf(err, errlen, "connection already known here");
		goto out;
	}
	/* The bound every other way into the table keeps. */
	if (d->conns.count >= d->cfg->max_connections) {
		snprintf(err, errlen, "table full (max_connections %u)",
			 d->cfg->max_connections);
		goto out;
	}
	c = track_restore(d, &s.local, &s.remote, s.dir);
	conn_set_wire(&d->conns, c, &s.wire_local, &s.wire_remote);
	c->confirmed = s.confirmed;
	c->reconnections = s.reconnections;
	c->suspensions = s.suspensions;
	c->reconnected = (time_t)s.reconnected;
	c->created = (time_t)s.created;
	c->lend = s.lend;
	c->rend = s.rend;
	c->rebased = true;
	c->imported = true;
	c->snd_base = s.snd_base;
	c->rcv_base = s.rcv_base;
	/* Its old host may have sent heartbeats after the export. */
	s.keys.hb_out += STATE_COUNTER_MARGIN;
	setup_restore(d, c, &s.keys);
	sodium_memzero(&s, sizeof(s));
	return c;
out:
	sodium_memzero(&s, sizeof(s));
	return NULL;
}
