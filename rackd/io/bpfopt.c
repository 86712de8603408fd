// SPDX-License-Identifier: GPL-2.0-only
#include "bpfopt.h"

#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "racks_listeners.skel.h"
#include "racks_sockops.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The program writes the option without edp/option.h (racks_sockops.h
 * says why): the two must agree. */
_Static_assert(RACKS_BPF_OPT_KIND == EDP_OPT_KIND, "option kind");
_Static_assert(RACKS_BPF_EXID == EDP_EXID, "ExID");
_Static_assert(RACKS_BPF_VERSION == EDP_VERSION, "version");
_Static_assert(RACKS_BPF_SYN == EDP_SYN && RACKS_BPF_SYNACK == EDP_SYNACK,
	       "types");
_Static_assert(RACKS_BPF_NONCE_LEN == EDP_NONCE_LEN, "nonce");
_Static_assert(RACKS_BPF_LONG_LEN == EDP_OPT_HDR_LEN + EDP_OFFER_LONG_BODY,
	       "long form");
_Static_assert(RACKS_BPF_LONG_SIZE == EDP_OFFER_SIZE, "long form padded");
_Static_assert(RACKS_BPF_HOSTKEYS == EDP_OFFER_HOSTKEYS, "flags");
_Static_assert(sizeof(struct racks_bpf_opt) == RACKS_BPF_LONG_LEN,
	       "option layout");

#define RINGBUF_DEFAULT (1u << 20)
/* A ring_buffer__consume() callback's "stop here": the record it was
 * called for is consumed, the rest wait. */
#define DRAIN_STOP (-ECANCELED)

struct bpfopt {
	struct racks_sockops *skel;
	struct bpf_link *link;
	struct ring_buffer *rb;
	char cgroup[256];
	uint64_t netns_cookie;
	struct bpfopt_listeners listeners;
	/* the drain in progress */
	bpfopt_record_fn fn;
	void *arg;
	unsigned max, handed;
};

/* libbpf's messages go to the debug log; the last line of its last
 * warning is kept for the reason given: the verifier's verdict ends the
 * log that libbpf frames with "-- BEGIN/END PROG LOAD LOG --". */
static char libbpf_last[256];

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	char *msg, *end, *last;

	if (level == LIBBPF_DEBUG && !log_debug_enabled())
		return 0;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	log_debug("libbpf: %s", msg);
	if (level != LIBBPF_DEBUG) {
		end = strstr(msg, "-- END PROG LOAD LOG --");
		if (!end)
			end = msg + strlen(msg);
		while (end > msg && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		*end = '\0';
		/* The verifier's statistics follow its verdict. */
		for (;;) {
			last = strrchr(msg, '\n');
			last = last ? last + 1 : msg;
			if (last == msg || (strncmp(last, "processed ", 10) &&
					    strncmp(last, "verification time", 17)))
				break;
			last[-1] = '\0';
		}
		/* libbpf's own summaries ("failed to load object") say
		 * less than the line before them. */
		if (*last && !strstr(last, "failed to load") &&
		    !strstr(last, "failed to open"))
			snprintf(libbpf_last, sizeof(libbpf_last), "%.*s",
				 (int)sizeof(libbpf_last) - 1, last);
	}
	free(msg);
	return 0;
}

static void libbpf_setup(void)
{
	libbpf_set_print(libbpf_print);
	libbpf_last[0] = '\0';
}

int bpfopt_own_netns_cookie(uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* The first cgroup2 mount in /proc/self/mounts into DIR. */
static int cgroup2_mount(char *dir, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	int err = -ENOENT;

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_type, "cgroup2") == 0) {
			snprintf(dir, len, "%s", m->mnt_dir);
			err = 0;
			break;
		}
	}
	endmntent(f);
	return err;
}

/* CGROUP (or the cgroup2 mount) opened as a directory of cgroup v2 into
 * *FD, its path into DIR. */
static int cgroup_open(const char *cgroup, char *dir, size_t dirlen, int *fd,
		       char *why, size_t whylen)
{
	struct statfs sfs;
	int err;

	*fd = -1;
	if (cgroup) {
		snprintf(dir, dirlen, "%s", cgroup);
	} else if ((err = cgroup2_mount(dir, dirlen)) < 0) {
		snprintf(why, whylen, "no cgroup v2 mounted (none in "
			 "/proc/self/mounts)");
		return err;
	}
	if (statfs(dir, &sfs) < 0) {
		err = -errno;
		snprintf(why, whylen, "cgroup %s: %s", dir, strerror(-err));
		return err;
	}
	if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(why, whylen, "%s is not a cgroup v2 directory", dir);
		return -ENOTDIR;
	}
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0) {
		err = -errno;
		snprintf(why, whylen, "cgroup %s: %s", dir, strerror(-err));
		return err;
	}
	return 0;
}

/* Why the program did not load (ERR from libbpf), in one line. The
 * kernel's BTF plays no part: the program has no CO-RE relocation. */
static void load_failure(int err, char *why, size_t whylen)
{
	if (err == -EPERM)
		snprintf(why, whylen, "no privilege to load a BPF program "
			 "(needs CAP_BPF and CAP_NET_ADMIN, or "
			 "CAP_SYS_ADMIN)");
	else if (libbpf_last[0])
		snprintf(why, whylen, "the kernel refused the sock_ops program "
			 "(%s): %s", strerror(-err), libbpf_last);
	else
		snprintf(why, whylen, "the sock_ops program did not load: %s",
			 strerror(-err));
}

/* Open and load the skeleton for namespace COOKIE (0: ours). */
static int skel_load(struct racks_sockops **out, uint64_t cookie,
		     uint32_t ringbuf, char *why, size_t whylen)
{
	struct racks_sockops *skel;
	int err;

	*out = NULL;
	libbpf_setup();
	if (!cookie && (err = bpfopt_own_netns_cookie(&cookie)) < 0) {
		snprintf(why, whylen, "no network namespace cookie "
			 "(SO_NETNS_COOKIE, Linux 5.14): %s", strerror(-err));
		return err;
	}
	skel = racks_sockops__open();
	if (!skel) {
		err = -errno;
		snprintf(why, whylen, "the sock_ops program did not open: %s",
			 strerror(-err));
		return err;
	}
	skel->rodata->netns_cookie = cookie;
	err = bpf_map__set_max_entries(skel->maps.events,
				       ringbuf ? ringbuf : RINGBUF_DEFAULT);
	if (err < 0) {
		snprintf(why, whylen, "ring buffer of %u bytes: %s", ringbuf,
			 strerror(-err));
		goto err;
	}
	err = racks_sockops__load(skel);
	if (err < 0) {
		load_failure(err, why, whylen);
		goto err;
	}
	*out = skel;
	return 0;
err:
	racks_sockops__destroy(skel);
	return err;
}

int bpfopt_probe(const char *cgroup, char *why, size_t whylen)
{
	struct racks_sockops *skel;
	char dir[256];
	int fd, err;

	err = cgroup_open(cgroup, dir, sizeof(dir), &fd, why, whylen);
	if (err < 0)
		return err;
	close(fd);
	err = skel_load(&skel, 0, 0, why, whylen);
	racks_sockops__destroy(skel);
	return err;
}

/* Addresses as the program keeps them (racks_sockops.h) into E. */
static void endpoint_from(struct endpoint *e, __u32 family,
			  const __u32 addr[4], __u16 port)
{
	memset(e, 0, sizeof(*e));
	e->addr.family = (uint8_t)family;
	memcpy(e->addr.bytes, addr, family == AF_INET ? 4 : 16);
	e->port = port;
}

static int sample(void *ctx, void *data, size_t size)
{
	struct bpfopt *b = ctx;
	const struct racks_bpf_event *ev = data;
	struct bpfopt_record r;

	if (size < sizeof(*ev)) {
		log_warnx("bpf: a record of %zu bytes, not %zu: skipped", size,
			  sizeof(*ev));
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.racks = ev->kind == RACKS_BPF_RACKS;
	r.active = ev->side == RACKS_BPF_ACTIVE;
	r.peer_long = ev->peer_long;
	r.local_long = ev->local_long;
	r.syn_retrans = ev->syn_retrans;
	r.peer_flags = ev->peer_flags;
	endpoint_from(&r.local, ev->family, ev->local_addr, ev->local_port);
	endpoint_from(&r.remote, ev->family, ev->remote_addr, ev->remote_port);
	r.local_isn = ev->local_isn;
	r.remote_isn = ev->remote_isn;
	r.hp_sent = ev->hp_sent;
	r.hp_peer = ev->hp_peer;
	memcpy(r.nonce_local, ev->nonce_local, EDP_NONCE_LEN);
	memcpy(r.nonce_peer, ev->nonce_peer, EDP_NONCE_LEN);
	b->fn(b->arg, &r);
	return ++b->handed >= b->max ? DRAIN_STOP : 0;
}

/*
 * Listeners made before the program was attached never ran its
 * TCP_LISTEN_CB: one pass of the iterator of bpf/racks_listeners.bpf.c
 * over the namespace's TCP sockets gives them its flag. Optional: where
 * it cannot load (no kernel BTF, a kernel before 6.10), those listeners
 * answer plain, and WHY in b->listeners says so.
 */
static void listeners_flag(struct bpfopt *b)
{
	struct bpfopt_listeners *l = &b->listeners;
	struct racks_listeners *skel;
	struct bpf_link *link = NULL;
	char buf[64];
	int fd = -1, err;
	ssize_t n;

	memset(l, 0, sizeof(*l));
	libbpf_last[0] = '\0';
	skel = racks_listeners__open_and_load();
	if (!skel && errno == EPERM) {
		snprintf(l->why, sizeof(l->why), "no privilege to load the "
			 "listener iterator (a tracing program: needs CAP_BPF "
			 "and CAP_PERFMON)");
		goto out;
	}
	if (!skel) {
		err = -errno;
		snprintf(l->why, sizeof(l->why), "the listener iterator did not "
			 "load (needs the kernel's BTF and Linux 6.10): %s%s%.80s",
			 strerror(-err), libbpf_last[0] ? ": " : "", libbpf_last);
		goto out;
	}
	link = bpf_program__attach_iter(skel->progs.racks_listeners, NULL);
	if (!link) {
		err = -errno;
		snprintf(l->why, sizeof(l->why), "the listener iterator: %s",
			 strerror(-err));
		goto out;
	}
	/* Its netns is the reader's: ours. */
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		snprintf(l->why, sizeof(l->why), "the listener iterator: %s",
			 strerror(errno));
		goto out;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	if (n < 0) {
		snprintf(l->why, sizeof(l->why), "reading the listener "
			 "iterator: %s", strerror(errno));
		goto out;
	}
	l->ran = true;
	l->flagged = skel->bss->listeners_flagged;
	l->had = skel->bss->listeners_had;
	l->failed = skel->bss->listeners_failed;
	if (l->failed)
		snprintf(l->why, sizeof(l->why), "%u listener(s) refused the "
			 "flag: %s", l->failed,
			 strerror(-skel->bss->last_error));
out:
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	racks_listeners__destroy(skel);
}

int bpfopt_open(const struct bpfopt_params *p, struct bpfopt **out,
		char *why, size_t whylen)
{
	struct bpfopt *b;
	int cgfd = -1, err;

	*out = NULL;
	b = xcalloc(1, sizeof(*b));
	err = cgroup_open(p->cgroup, b->cgroup, sizeof(b->cgroup), &cgfd, why,
			  whylen);
	if (err < 0)
		goto err;
	b->netns_cookie = p->netns_cookie;
	if (!b->netns_cookie &&
	    (err = bpfopt_own_netns_cookie(&b->netns_cookie)) < 0) {
		snprintf(why, whylen, "no network namespace cookie "
			 "(SO_NETNS_COOKIE, Linux 5.14): %s", strerror(-err));
		goto err;
	}
	err = skel_load(&b->skel, b->netns_cookie, p->ringbuf_bytes, why,
			whylen);
	if (err < 0)
		goto err;
	/* One callback for the ring's lifetime; each drain tells it where
	 * the records go (b->fn). */
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), sample, b,
				 NULL);
	if (!b->rb) {
		err = -errno;
		snprintf(why, whylen, "ring buffer: %s", strerror(-err));
		goto err;
	}
	/* A link, not bpf_prog_attach(): it is multi-attach and goes with
	 * its fd, so a rackd that dies leaves no program behind. */
	b->link = bpf_program__attach_cgroup(b->skel->progs.racks_sockops,
					     cgfd);
	if (!b->link) {
		err = -errno;
		if (err == -EPERM)
			snprintf(why, whylen, "no privilege to attach to cgroup "
				 "%s (needs CAP_NET_ADMIN and CAP_BPF), or a "
				 "program there allows no other", b->cgroup);
		else
			snprintf(why, whylen, "attaching to cgroup %s: %s",
				 b->cgroup, strerror(-err));
		goto err;
	}
	close(cgfd);
	cgfd = -1;
	listeners_flag(b);
	*out = b;
	log_info("bpf: racks' option handled in the kernel for namespace "
		 "cookie %llu, cgroup %s", (unsigned long long)b->netns_cookie,
		 b->cgroup);
	if (b->listeners.ran)
		log_info("bpf: %u listener(s) older than the program now answer "
			 "racks", b->listeners.flagged);
	if (b->listeners.why[0])
		log_warnx("bpf: %s; listeners older than the program answer "
			  "plain (their connections are adopted)",
			  b->listeners.why);
	return 0;
err:
	if (cgfd >= 0)
		close(cgfd);
	bpfopt_free(b);
	return err;
}

void bpfopt_free(struct bpfopt *b)
{
	if (!b)
		return;
	/* The link first: no record is made for a ring about to go. */
	bpf_link__destroy(b->link);
	ring_buffer__free(b->rb);
	racks_sockops__destroy(b->skel);
	free(b);
}

int bpfopt_fd(const struct bpfopt *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

int bpfopt_drain(struct bpfopt *b, unsigned max, bpfopt_record_fn fn,
		 void *arg)
{
	int n;

	if (!max)
		return 0;
	b->fn = fn;
	b->arg = arg;
	b->max = max;
	b->handed = 0;
	n = ring_buffer__consume(b->rb);
	b->fn = NULL;
	if (n < 0 && n != DRAIN_STOP)
		return n;
	return (int)b->handed;
}

/* PEER as the offer map's key; IPv4-mapped IPv6 as IPv4, as the program
 * sees those sockets. */
static void addr_key(const struct addr *peer, struct racks_bpf_addr *k)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(k, 0, sizeof(*k));
	if (peer->family == AF_INET6 &&
	    memcmp(peer->bytes, mapped, sizeof(mapped)) != 0) {
		k->family = AF_INET6;
		memcpy(k->addr, peer->bytes, 16);
		return;
	}
	k->family = AF_INET;
	memcpy(k->addr, peer->family == AF_INET ? peer->bytes :
		peer->bytes + 12, 4);
}

int bpfopt_offer_set(struct bpfopt *b, const struct addr *peer,
		     uint32_t hp_id)
{
	struct racks_bpf_addr k;
	int err;

	addr_key(peer, &k);
	if (hp_id)
		err = bpf_map__update_elem(b->skel->maps.offer_ids, &k,
					   sizeof(k), &hp_id, sizeof(hp_id),
					   BPF_ANY);
	else
		err = bpf_map__delete_elem(b->skel->maps.offer_ids, &k,
					   sizeof(k), 0);
	return err == -ENOENT && !hp_id ? 0 : err;
}

int bpfopt_known_set(struct bpfopt *b, uint32_t hp_id, bool known)
{
	uint8_t one = 1;
	int err;

	if (known)
		err = bpf_map__update_elem(b->skel->maps.known_ids, &hp_id,
					   sizeof(hp_id), &one, sizeof(one),
					   BPF_ANY);
	else
		err = bpf_map__delete_elem(b->skel->maps.known_ids, &hp_id,
					   sizeof(hp_id), 0);
	return err == -ENOENT && !known ? 0 : err;
}

void bpfopt_reader_busy(struct bpfopt *b, bool busy)
{
	/* .bss is mapped too: the next record reads it. */
	__atomic_store_n(&b->skel->bss->reader_busy, busy ? 1u : 0u,
			 __ATOMIC_SEQ_CST);
}

void bpfopt_flags_set(struct bpfopt *b, uint8_t flags)
{
	/* .data is a memory-mapped array: the next SYN reads it. */
	b->skel->data->offer_flags = flags;
}

int bpfopt_counters(const struct bpfopt *b, struct bpfopt_counters *out)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	uint64_t *v;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	v = xcalloc((size_t)ncpu, sizeof(*v));
	for (uint32_t i = 0; i < RACKS_BPF_CNT_MAX; i++) {
		err = bpf_map__lookup_elem(b->skel->maps.counters, &i,
					   sizeof(i), v,
					   (size_t)ncpu * sizeof(*v), 0);
		if (err < 0)
			break;
		for (int c = 0; c < ncpu; c++)
			out->v[i] += v[c];
	}
	free(v);
	return err;
}

const char *bpfopt_counter_name(unsigned i)
{
	static const char *const names[RACKS_BPF_CNT_MAX] = {
		[RACKS_BPF_CNT_WRITTEN_SYN] = "written_syn",
		[RACKS_BPF_CNT_WRITTEN_SYNACK] = "written_synack",
		[RACKS_BPF_CNT_PARSED] = "parsed",
		[RACKS_BPF_CNT_PARSE_BAD] = "parse_bad",
		[RACKS_BPF_CNT_EVENTS_RACKS] = "events_racks",
		[RACKS_BPF_CNT_EVENTS_PLAIN] = "events_plain",
		[RACKS_BPF_CNT_RINGBUF_FULL] = "ringbuf_full",
		[RACKS_BPF_CNT_FOREIGN] = "foreign_netns",
		[RACKS_BPF_CNT_LOCAL] = "local_skipped",
		[RACKS_BPF_CNT_NO_ROOM] = "no_room",
		[RACKS_BPF_CNT_NO_STATE] = "no_state",
		[RACKS_BPF_CNT_QUIET] = "quiet_records",
		[RACKS_BPF_CNT_PASSIVE_PLAIN] = "passive_plain",
		[RACKS_BPF_CNT_LAZY] = "lazy_records",
	};

	return i < RACKS_BPF_CNT_MAX && names[i] ? names[i] : "unknown";
}

const struct bpfopt_listeners *bpfopt_listeners(const struct bpfopt *b)
{
	return &b->listeners;
}

const char *bpfopt_cgroup(const struct bpfopt *b)
{
	return b->cgroup;
}

uint64_t bpfopt_netns_cookie(const struct bpfopt *b)
{
	return b->netns_cookie;
}
