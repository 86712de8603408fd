// SPDX-License-Identifier: GPL-2.0-only
/*
 * pf-style TCP window tracking, after Guido van Rooij's "Real Stateful TCP
 * Packet Filtering in IP Filter" as OpenBSD pf applies it (pf_create_state
 * and pf_tcp_track_full, without sequence modulation or scrub). Each end of
 * a flow has seqlo (the highest seq + len it sent), seqhi (the highest seq
 * the other end's ack + window lets it send), max_win (the largest window
 * it advertised, unscaled) and its window-scale shift from its SYN. A
 * segment passes when its data ends at or below its sender's seqhi, starts
 * at most one window below its seqlo, and acks no further forward than
 * MAXACKWINDOW and no further back than MAXACKWINDOW << scale. pf eases
 * the sequence checks of segments without data (their seq is replaced by
 * seqlo); --strict keeps them, as Linux conntrack's tcp_in_window does.
 */
#include "wintrack.h"

#include <arpa/inet.h>
#include <err.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define WSCALE_FLAG 0x80
#define WSCALE_MASK 0x0f
#define TCP_MAXWIN 65535
/* pf's slack for acks: "1500 is an arbitrary fudge factor". */
#define MAXACKWINDOW (0xffff + 1500)

/* TCP states as BSD numbers them: pf compares them by order. */
enum { TCPS_CLOSED, TCPS_LISTEN, TCPS_SYN_SENT, TCPS_SYN_RECEIVED,
       TCPS_ESTABLISHED, TCPS_CLOSE_WAIT, TCPS_FIN_WAIT_1, TCPS_CLOSING,
       TCPS_LAST_ACK, TCPS_FIN_WAIT_2, TCPS_TIME_WAIT };

#define SEQ_LT(a, b) ((int32_t)((a) - (b)) < 0)
#define SEQ_GEQ(a, b) ((int32_t)((a) - (b)) >= 0)
#define SEQ_GT(a, b) ((int32_t)((a) - (b)) > 0)

#define TRACK_BUCKETS 4096

struct peer {
	uint32_t seqlo, seqhi, max_win;
	uint8_t wscale, state;
	bool seen;		/* pf tests seqlo == 0; an ISN may be 0 */
};

struct flow {
	struct flow *next;
	/* End 0 sent the SYN. */
	struct nfqbox_tuple t;
	struct peer peer[2];
	uint64_t accepted, dropped, racks_accepted, racks_dropped;
};

struct wtrack {
	bool strict;
	struct flow *buckets[TRACK_BUCKETS];
	struct wtrack_stats stats;
};

static const char *const verdict_names[WT_MAX] = {
	[WT_CREATED] = "created", [WT_TRACKED] = "tracked",
	[WT_LOOSE] = "loose",
	[WT_NO_STATE] = "no_state", [WT_SEQ_AHEAD] = "seq_ahead",
	[WT_SEQ_BEHIND] = "seq_behind", [WT_ACK_AHEAD] = "ack_ahead",
	[WT_ACK_BEHIND] = "ack_behind", [WT_RST_INEXACT] = "rst_inexact",
	[WT_NODATA_SEQ] = "nodata_seq",
};

const char *wtrack_verdict_name(enum wtrack_verdict v)
{
	return v < WT_MAX ? verdict_names[v] : "?";
}

bool wtrack_verdict_accepts(enum wtrack_verdict v)
{
	return v < WT_ACCEPT_MAX;
}

struct wtrack *wtrack_new(bool strict)
{
	struct wtrack *t = calloc(1, sizeof(*t));

	if (!t)
		err(1, "calloc");
	t->strict = strict;
	return t;
}

void wtrack_free(struct wtrack *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < TRACK_BUCKETS; i++) {
		struct flow *f = t->buckets[i], *next;

		for (; f; f = next) {
			next = f->next;
			free(f);
		}
	}
	free(t);
}

const struct wtrack_stats *wtrack_stats(const struct wtrack *t)
{
	return &t->stats;
}

/* The flow of S, and in *from which of its ends sent it. */
static struct flow *flow_find(struct wtrack *t,
			      const struct nfqbox_segment *s, int *from)
{
	for (struct flow *f = t->buckets[nfqbox_bucket(s, TRACK_BUCKETS)]; f;
	     f = f->next) {
		if ((*from = nfqbox_tuple_from(&f->t, s)) >= 0)
			return f;
	}
	return NULL;
}

/* A new flow from a SYN, as pf_create_state sets up its two peers. */
static void flow_start(struct flow *f, const struct nfqbox_segment *s)
{
	struct peer *src = &f->peer[0], *dst = &f->peer[1];

	memset(f->peer, 0, sizeof(f->peer));
	nfqbox_tuple_set(&f->t, s);
	src->seen = true;
	src->seqlo = s->seq;
	src->seqhi = s->seq + s->len + 1 + 1;	/* the SYN's own sequence */
	if (s->flags & TH_FIN)
		src->seqhi++;
	src->wscale = s->wscale;
	src->max_win = s->win ? s->win : 1;
	if (src->wscale & WSCALE_MASK) {
		/* Remove the scale factor from the initial window. */
		uint32_t shift = src->wscale & WSCALE_MASK;

		src->max_win = (src->max_win + (1u << shift) - 1) >> shift;
	}
	src->state = TCPS_SYN_SENT;
	dst->seqhi = 1;
	dst->max_win = 1;
	dst->state = TCPS_CLOSED;
}

/* racks' message types (edp/option.h), for the drop log. */
static const char *racks_type_name(uint8_t type)
{
	static const char *const names[] = {
		"?", "syn", "synack", "key", "confirm", "done", "heartbeat",
		"heartbeat_ack", "reconnect", "reconnect_ack", "away",
		"away_ack",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

static void flags_text(uint8_t flags, char *buf)
{
	static const char names[] = "FSRPAU";

	for (int i = 0; i < 6; i++)
		if (flags & (1 << i))
			*buf++ = names[i];
	*buf = '\0';
}

static void log_drop(FILE *log, const struct nfqbox_segment *s,
		     const struct flow *f, int from, enum wtrack_verdict v,
		     int32_t ackskew)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN], fl[8];
	int af = s->family == 4 ? AF_INET : AF_INET6;

	if (!log)
		return;
	inet_ntop(af, s->saddr, a, sizeof(a));
	inet_ntop(af, s->daddr, b, sizeof(b));
	flags_text(s->flags, fl);
	fprintf(log, "drop %s v%d %s%s%s:%u > %s%s%s:%u flags %s seq %" PRIu32
		" ack %" PRIu32 " len %" PRIu32 " win %u%s%s",
		wtrack_verdict_name(v),
		s->family, af == AF_INET6 ? "[" : "", a,
		af == AF_INET6 ? "]" : "", s->sport, af == AF_INET6 ? "[" : "",
		b, af == AF_INET6 ? "]" : "", s->dport, fl, s->seq, s->ack,
		s->len, s->win, s->racks ? " racks:" : "",
		s->racks ? racks_type_name(s->racks_type) : "");
	if (f) {
		const struct peer *src = &f->peer[from], *dst = &f->peer[!from];

		fprintf(log, " ackskew %" PRId32 " src lo %" PRIu32 " hi %"
			PRIu32 " maxwin %" PRIu32 " ws %u st %u dst lo %"
			PRIu32 " hi %" PRIu32 " maxwin %" PRIu32 " ws %u st %u",
			ackskew, src->seqlo, src->seqhi, src->max_win,
			src->wscale & WSCALE_MASK, src->state, dst->seqlo,
			dst->seqhi, dst->max_win, dst->wscale & WSCALE_MASK,
			dst->state);
	}
	fputc('\n', log);
	fflush(log);
}

/* pf's state updates for a segment it lets by (both branches). */
static void peers_update(struct peer *src, struct peer *dst, uint8_t flags,
			 uint32_t end, uint32_t ack, uint32_t win,
			 uint32_t sws, bool tracked)
{
	if (src->max_win < win)
		src->max_win = win;
	if (SEQ_GT(end, src->seqlo))
		src->seqlo = end;
	/* Slide the window of what the other end may send. */
	if (SEQ_GEQ(ack + (win << sws), dst->seqhi))
		dst->seqhi = ack + ((win << sws) ? (win << sws) : 1);
	if ((flags & TH_SYN) && tracked && src->state < TCPS_SYN_SENT)
		src->state = TCPS_SYN_SENT;
	if ((flags & TH_FIN) && src->state < TCPS_CLOSING)
		src->state = TCPS_CLOSING;
	if ((flags & TH_ACK) && tracked) {
		if (dst->state == TCPS_SYN_SENT)
			dst->state = TCPS_ESTABLISHED;
		else if (dst->state == TCPS_CLOSING)
			dst->state = TCPS_FIN_WAIT_2;
	}
	if (flags & TH_RST)
		src->state = dst->state = TCPS_TIME_WAIT;
}

/* The first segment from the SYN's receiver (its SYN-ACK): its peer state
 * starts here, and window scaling is settled (pf's "seqlo == 0" case). */
static void responder_start(struct peer *src, struct peer *dst,
			    const struct nfqbox_segment *s, uint32_t *end,
			    uint32_t *win, uint32_t *sws, uint32_t *dws)
{
	uint32_t room;

	if (s->flags & TH_SYN) {
		(*end)++;
		if (dst->wscale & WSCALE_FLAG) {
			src->wscale = s->wscale;
			if (src->wscale & WSCALE_FLAG) {
				*sws = src->wscale & WSCALE_MASK;
				*win = (*win + (1u << *sws) - 1) >> *sws;
				*dws = dst->wscale & WSCALE_MASK;
			} else {
				/* No scaling after all: the other end's
				 * window counts unscaled. */
				uint32_t w = dst->max_win <<
					(dst->wscale & WSCALE_MASK);

				dst->max_win = w < TCP_MAXWIN ? w : TCP_MAXWIN;
				dst->wscale = 0;
			}
		}
	}
	if (s->flags & TH_FIN)
		(*end)++;
	src->seen = true;
	src->seqlo = s->seq;
	if (src->state < TCPS_SYN_SENT)
		src->state = TCPS_SYN_SENT;
	room = dst->max_win << *dws;
	room = room ? room : 1;
	if (src->seqhi == 1 || SEQ_GEQ(*end + room, src->seqhi))
		src->seqhi = *end + room;
	if (*win > src->max_win)
		src->max_win = *win;
}

static enum wtrack_verdict wtrack_flow(struct wtrack *t, struct flow *f,
				       int from,
				       const struct nfqbox_segment *s,
				       int32_t *skew_out)
{
	struct peer *src = &f->peer[from], *dst = &f->peer[!from];
	uint32_t sws = 0, dws = 0, win = s->win;
	uint32_t seq = s->seq, ack = s->ack, end;
	int32_t ackskew;
	bool nodata_bad = false;

	if (src->wscale && dst->wscale && !(s->flags & TH_SYN)) {
		sws = src->wscale & WSCALE_MASK;
		dws = dst->wscale & WSCALE_MASK;
	}
	end = seq + s->len;
	if (!src->seen) {
		responder_start(src, dst, s, &end, &win, &sws, &dws);
	} else {
		if (s->flags & TH_SYN)
			end++;
		if (s->flags & TH_FIN)
			end++;
	}
	if (!(s->flags & TH_ACK))
		ack = dst->seqlo;	/* passes the ack checks */
	else if ((ack == 0 && (s->flags & TH_RST)) ||
		 dst->state < TCPS_SYN_SENT)
		ack = dst->seqlo;	/* stacks that send no ack */
	if (seq == end) {
		/* pf: "ease sequencing restrictions on no data packets";
		 * --strict checks them as conntrack does, once pf's own
		 * checks passed (so a drop names pf's reason if pf has one). */
		nodata_bad = t->strict &&
			     (SEQ_GT(seq, src->seqhi) ||
			      SEQ_LT(seq, src->seqlo - (dst->max_win << dws) -
					  1));
		seq = src->seqlo;
		end = seq;
	}
	ackskew = (int32_t)(dst->seqlo - ack);
	*skew_out = ackskew;
	if (SEQ_GEQ(src->seqhi, end) &&
	    SEQ_GEQ(seq, src->seqlo - (dst->max_win << dws)) &&
	    ackskew >= -MAXACKWINDOW &&
	    ackskew <= (MAXACKWINDOW << sws) &&
	    (!(s->flags & TH_RST) || s->seq == src->seqlo ||
	     s->seq == src->seqlo + 1 || s->seq + 1 == src->seqlo)) {
		if (nodata_bad)
			return WT_NODATA_SEQ;
		peers_update(src, dst, s->flags, end, ack, win, sws, true);
		return WT_TRACKED;
	}
	if ((dst->state < TCPS_SYN_SENT || dst->state >= TCPS_FIN_WAIT_2 ||
	     src->state >= TCPS_FIN_WAIT_2) &&
	    SEQ_GEQ(src->seqhi + MAXACKWINDOW, end) &&
	    SEQ_GEQ(seq, src->seqlo - MAXACKWINDOW)) {
		if (nodata_bad)
			return WT_NODATA_SEQ;
		peers_update(src, dst, s->flags, end, ack, win, sws, false);
		return WT_LOOSE;
	}
	if (SEQ_LT(src->seqhi, end))
		return WT_SEQ_AHEAD;
	if (SEQ_LT(seq, src->seqlo - (dst->max_win << dws)))
		return WT_SEQ_BEHIND;
	if (ackskew < -MAXACKWINDOW)
		return WT_ACK_AHEAD;
	if (ackskew > (MAXACKWINDOW << sws))
		return WT_ACK_BEHIND;
	return WT_RST_INEXACT;
}

static enum wtrack_verdict decide(struct wtrack *t,
				  const struct nfqbox_segment *s,
				  struct flow **fp, int *from, int32_t *skew)
{
	bool syn_only = (s->flags & (TH_SYN | TH_ACK | TH_RST)) == TH_SYN;
	struct flow *f = flow_find(t, s, from);

	*fp = f;
	if (f && syn_only && f->peer[0].state >= TCPS_FIN_WAIT_2 &&
	    f->peer[1].state >= TCPS_FIN_WAIT_2) {
		/* A closed flow's 4-tuple reused: a new flow (pf drops
		 * this SYN and admits its retransmission instead). */
		flow_start(f, s);
		*from = 0;
		t->stats.flows_reused++;
		return WT_CREATED;
	}
	if (f)
		return wtrack_flow(t, f, *from, s, skew);
	if (!syn_only)
		return WT_NO_STATE;
	f = calloc(1, sizeof(*f));
	if (!f)
		err(1, "calloc");
	flow_start(f, s);
	f->next = t->buckets[nfqbox_bucket(s, TRACK_BUCKETS)];
	t->buckets[nfqbox_bucket(s, TRACK_BUCKETS)] = f;
	t->stats.flows++;
	*fp = f;
	*from = 0;
	return WT_CREATED;
}

enum wtrack_verdict wtrack_segment(struct wtrack *t,
				   const struct nfqbox_segment *s, FILE *log)
{
	struct flow *f = NULL;
	int from = 0;
	int32_t skew = 0;
	enum wtrack_verdict v = decide(t, s, &f, &from, &skew);
	bool ok = wtrack_verdict_accepts(v);

	t->stats.verdicts[v]++;
	if (ok) {
		t->stats.bytes += s->len;
		t->stats.racks_accepted += s->racks;
	} else {
		t->stats.racks_dropped += s->racks;
		log_drop(log, s, f, from, v, skew);
	}
	if (s->len > 1500)
		t->stats.gso++;
	if (s->len > t->stats.max_len)
		t->stats.max_len = s->len;
	if (f) {
		*(ok ? &f->accepted : &f->dropped) += 1;
		*(ok ? &f->racks_accepted : &f->racks_dropped) += s->racks;
	}
	return v;
}

void wtrack_flows_json(const struct wtrack *t, FILE *out, size_t limit)
{
	size_t n = 0;

	fputc('[', out);
	for (size_t i = 0; i < TRACK_BUCKETS; i++) {
		for (const struct flow *f = t->buckets[i]; f && n < limit;
		     f = f->next) {
			char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
			int af = f->t.family == 4 ? AF_INET : AF_INET6;

			inet_ntop(af, f->t.addr[0], a, sizeof(a));
			inet_ntop(af, f->t.addr[1], b, sizeof(b));
			fprintf(out, "%s{\"client\": \"%s\", \"client_port\": %u, "
				"\"server\": \"%s\", \"server_port\": %u, "
				"\"accepted\": %" PRIu64 ", \"dropped\": %" PRIu64
				", \"racks_accepted\": %" PRIu64
				", \"racks_dropped\": %" PRIu64
				", \"states\": [%u, %u]}",
				n ? ", " : "", a, f->t.port[0], b, f->t.port[1],
				f->accepted, f->dropped, f->racks_accepted,
				f->racks_dropped, f->peer[0].state,
				f->peer[1].state);
			n++;
		}
	}
	fputc(']', out);
}
