// SPDX-License-Identifier: GPL-2.0-only
#include "optpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "bpfopt.h"
#include "kernelopt.h"
#include "log.h"
#include "loop.h"

const char *optpath_name(const struct rackd *d)
{
	return d->bpf ? "bpf" : "queue";
}

static void offer_sync(struct rackd *d, const struct addr *a)
{
	int err = bpfopt_offer_set(d->bpf, a, kernelopt_offer(d, a));

	if (err < 0 && d->stats.bpf_map_errors++ == 0)
		log_warnx("bpf: offer map: %s (host pairs named in SYNs may "
			  "be stale)", strerror(-err));
}

static void known_sync(struct rackd *d, uint32_t id, bool known)
{
	int err = bpfopt_known_set(d->bpf, id, known);

	if (err < 0 && d->stats.bpf_map_errors++ == 0)
		log_warnx("bpf: known host pairs map: %s", strerror(-err));
}

/* The host pairs changed (host_pairs_notify_fn): the maps follow. */
static void pair_changed(void *arg, const struct host_pair *h,
			 const struct addr *where, bool present)
{
	struct rackd *d = arg;

	if (!d->bpf)
		return;
	known_sync(d, h->id, present);
	if (where)
		offer_sync(d, where);
}

static void pull(struct rackd *d);

void optpath_sync(struct rackd *d)
{
	if (!d->bpf)
		return;
	/* Plain peers' records wake nobody (bpf/racks_sockops.bpf.c): the
	 * sweep reads them at the latest. */
	pull(d);
	for (struct host_pair *h = d->host_pairs.head; h; h = h->next) {
		known_sync(d, h->id, true);
		if (h->have_addr)
			offer_sync(d, &h->peer_addr);
	}
}

static void record(void *arg, const struct bpfopt_record *r)
{
	kernelopt_record(arg, r);
}

static int drain(struct rackd *d)
{
	int n = bpfopt_drain(d->bpf, OPTPATH_BATCH, record, d);

	if (n < 0 && d->stats.bpf_map_errors++ == 0)
		log_warnx("bpf: reading the ring: %s", strerror(-n));
	if (n > 0)
		d->stats.bpf_drains++;
	return n;
}

void optpath_drain(struct rackd *d)
{
	if (d->bpf)
		drain(d);
}

/* Every record the ring holds (d->records_pull). */
static void pull(struct rackd *d)
{
	while (drain(d) == OPTPATH_BATCH)
		;
}

/*
 * Records wait: read them, then read in rounds while more come. While
 * the rounds go on, the program pushes records without waking the loop
 * (bpfopt_reader_busy). Three states:
 *   polled: the ring's fd in the loop, records wake it;
 *   rounds: a timer every OPTPATH_ROUND_MS, records wake nobody, until
 *           OPTPATH_QUIET_ROUNDS rounds in a row found none;
 *   grace:  one more round after those, records may wake again but the
 *           fd is not polled yet: it takes any record pushed by a
 *           program that read "busy" just before it was cleared.
 * No timer runs once the ring has been quiet that long (polled).
 */
static void rounds(struct rackd *d)
{
	if (!d->bpf_busy) {
		bpfopt_reader_busy(d->bpf, true);
		d->bpf_busy = true;
	}
	loop_timer_arm(d->loop, &d->bpf_timer, OPTPATH_ROUND_MS);
}

static void on_ring(void *arg, uint32_t events)
{
	struct rackd *d = arg;

	(void)events;
	drain(d);
	if (loop_mod(d->loop, bpfopt_fd(d->bpf), 0) == 0) {
		d->bpf_polled = false;
		d->bpf_quiet = 0;
		rounds(d);
	}
}

static void on_round(struct timer *t, void *arg)
{
	struct rackd *d = arg;

	if (drain(d) > 0) {
		d->bpf_quiet = 0;
		rounds(d);
		return;
	}
	if (d->bpf_busy && ++d->bpf_quiet < OPTPATH_QUIET_ROUNDS) {
		rounds(d);
		return;
	}
	d->bpf_quiet = 0;
	if (d->bpf_busy) {
		/* Quiet: records wake the loop again after one more round. */
		bpfopt_reader_busy(d->bpf, false);
		d->bpf_busy = false;
		loop_timer_arm(d->loop, t, OPTPATH_ROUND_MS);
		return;
	}
	/* Quiet twice: the next record wakes the loop (level-triggered,
	 * so one that came since the drain does at once). */
	if (loop_mod(d->loop, bpfopt_fd(d->bpf), EPOLLIN) == 0)
		d->bpf_polled = true;
	else
		loop_timer_arm(d->loop, t, OPTPATH_ROUND_MS);
}

/* The sock_ops program for d->cfg; 0 or -errno, why in d's reason. */
static int open_bpf(struct rackd *d)
{
	struct bpfopt_params p = {
		.cgroup = d->cfg->bpf_cgroup[0] ? d->cfg->bpf_cgroup : NULL,
	};
	char why[sizeof(d->option_path_reason) - 64];
	int err = bpfopt_open(&p, &d->bpf, why, sizeof(why));

	if (err < 0) {
		snprintf(d->option_path_reason, sizeof(d->option_path_reason),
			 "%s", why);
		return err;
	}
	snprintf(d->option_path_reason, sizeof(d->option_path_reason),
		 "sock_ops program attached to cgroup %s", bpfopt_cgroup(d->bpf));
	return 0;
}

void optpath_start(struct rackd *d)
{
	enum kernel_option k = d->cfg->kernel_option;
	char why[sizeof(d->option_path_reason)];

	d->bpf = NULL;
	if (k == KERNEL_OPTION_QUEUE) {
		snprintf(d->option_path_reason, sizeof(d->option_path_reason),
			 "kernel_option = queue");
	} else if (open_bpf(d) < 0) {
		if (k == KERNEL_OPTION_BPF)
			fatalx(EXIT_KERNEL, "kernel_option = bpf, and the BPF "
			       "path cannot be used: %s", d->option_path_reason);
		snprintf(why, sizeof(why), "%s", d->option_path_reason);
		snprintf(d->option_path_reason, sizeof(d->option_path_reason),
			 "BPF unusable, the queue instead: %.*s",
			 (int)sizeof(why) - 40, why);
	}
	d->cfg->bpf_handshakes = d->bpf != NULL;
	d->records_pull = d->bpf ? pull : NULL;
	log_info("racks' handshake option: %s path (%s)", optpath_name(d),
		 d->option_path_reason);
	host_pairs_set_notify(&d->host_pairs, pair_changed, d);
	if (!d->bpf)
		return;
	timer_init(&d->bpf_timer, on_round, d);
	if (loop_add(d->loop, bpfopt_fd(d->bpf), EPOLLIN, on_ring, d))
		fatalx(1, "bpf: the ring buffer's descriptor in the loop");
	d->bpf_polled = true;
}

int optpath_reload(const struct rackd *d, struct config *cfg, char *err,
		   size_t errlen)
{
	if (cfg->kernel_option != d->cfg->kernel_option ||
	    strcmp(cfg->bpf_cgroup, d->cfg->bpf_cgroup) != 0) {
		snprintf(err, errlen, "changing kernel_option or bpf_cgroup "
			 "needs a restart");
		return -EINVAL;
	}
	cfg->bpf_handshakes = d->cfg->bpf_handshakes;
	return 0;
}

void optpath_stop(struct rackd *d)
{
	host_pairs_set_notify(&d->host_pairs, NULL, NULL);
	if (!d->bpf)
		return;
	loop_timer_cancel(d->loop, &d->bpf_timer);
	loop_del(d->loop, bpfopt_fd(d->bpf));
	bpfopt_free(d->bpf);
	d->bpf = NULL;
	d->records_pull = NULL;
}
