// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fuzzer's kernel has no BPF: bpfopt_open() says so, and rackd takes
 * the queue path (optpath.c, with kernel_option = auto) that the fake kernel
 * models. The rest is never reached with no program open.
 */
#include <errno.h>
#include <stdio.h>

#include "bpfopt.h"

int bpfopt_probe(const char *cgroup, char *why, size_t whylen)
{
	(void)cgroup;
	snprintf(why, whylen, "no BPF in the fuzzer's kernel");
	return -EOPNOTSUPP;
}

int bpfopt_open(const struct bpfopt_params *p, struct bpfopt **out,
		char *why, size_t whylen)
{
	*out = NULL;
	return bpfopt_probe(p->cgroup, why, whylen);
}

void bpfopt_free(struct bpfopt *b)
{
	(void)b;
}

int bpfopt_fd(const struct bpfopt *b)
{
	(void)b;
	return -1;
}

int bpfopt_drain(struct bpfopt *b, unsigned max, bpfopt_record_fn fn,
		 void *arg)
{
	(void)b, (void)max, (void)fn, (void)arg;
	return 0;
}

int bpfopt_offer_set(struct bpfopt *b, const struct addr *peer,
		     uint32_t hp_id)
{
	(void)b, (void)peer, (void)hp_id;
	return -EOPNOTSUPP;
}

int bpfopt_known_set(struct bpfopt *b, uint32_t hp_id, bool known)
{
	(void)b, (void)hp_id, (void)known;
	return -EOPNOTSUPP;
}

int bpfopt_counters(const struct bpfopt *b, struct bpfopt_counters *out)
{
	(void)b, (void)out;
	return -EOPNOTSUPP;
}

const char *bpfopt_counter_name(unsigned i)
{
	(void)i;
	return "unknown";
}

void bpfopt_reader_busy(struct bpfopt *b, bool busy)
{
	(void)b, (void)busy;
}

const struct bpfopt_listeners *bpfopt_listeners(const struct bpfopt *b)
{
	static const struct bpfopt_listeners none;

	(void)b;
	return &none;
}

const char *bpfopt_cgroup(const struct bpfopt *b)
{
	(void)b;
	return "";
}
