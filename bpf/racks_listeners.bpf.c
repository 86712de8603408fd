// SPDX-License-Identifier: GPL-2.0-only
/*
 * Listeners older than the sock_ops program (racks_sockops.bpf.c): a
 * listener gets the program's WRITE_HDR_OPT flag from TCP_LISTEN_CB,
 * which ran before the program was attached for those, so their SYN-ACKs
 * never carry racks' option. This iterator over the TCP sockets of the
 * namespace that reads it (iter/tcp: the reader's network namespace)
 * sets that flag on every listener, with bpf_setsockopt's
 * TCP_BPF_SOCK_OPS_CB_FLAGS (Linux 6.10; the iterator holds each
 * socket's lock while it runs). The loader (rackd/io/bpfopt.c) reads it
 * once, right after the sock_ops program is attached: a listener made
 * since got the flag from TCP_LISTEN_CB, one made before gets it here.
 *
 * Unlike the sock_ops program, an iterator is a tracing program: the
 * kernel checks it against its own BTF, and libbpf relocates the few
 * kernel fields read below (CO-RE) from /sys/kernel/btf/vmlinux at load.
 * The build needs none of it (the types are declared here, only the
 * fields read); a kernel without BTF, or older than 6.10, refuses to load
 * it, and those listeners answer plain, as they did before.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SOL_TCP 6
#define TCP_LISTEN 10
#ifndef TCP_BPF_SOCK_OPS_CB_FLAGS
#define TCP_BPF_SOCK_OPS_CB_FLAGS 1008	/* Linux 6.10 */
#endif
/* As racks_sockops.bpf.c's OUR_CB_FLAGS. */
#define OUR_CB_FLAGS BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG

/* The kernel's types, as far as this reads them (relocated at load). */
struct sock_common {
	volatile unsigned char skc_state;
} __attribute__((preserve_access_index));

struct bpf_iter_meta {
	void *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__tcp {
	struct bpf_iter_meta *meta;
	struct sock_common *sk_common;
} __attribute__((preserve_access_index));

/* What one pass did, read by the loader from the mapped .bss. */
__u32 listeners_flagged;	/* the flag set now */
__u32 listeners_had;		/* had it already (made after the attach) */
__u32 listeners_failed;		/* bpf_setsockopt refused */
int last_error;

SEC("iter/tcp")
int racks_listeners(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	int flags = 0, err;

	if (!skc || skc->skc_state != TCP_LISTEN)
		return 0;
	/* Keep the bits of other programs on the listener. */
	err = bpf_getsockopt(skc, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, &flags,
			     sizeof(flags));
	if (err)
		goto fail;
	if (flags & OUR_CB_FLAGS) {
		listeners_had++;
		return 0;
	}
	flags |= OUR_CB_FLAGS;
	err = bpf_setsockopt(skc, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, &flags,
			     sizeof(flags));
	if (err)
		goto fail;
	listeners_flagged++;
	return 0;
fail:
	listeners_failed++;
	last_error = err;
	return 0;
}

char _license[] SEC("license") = "GPL";
