#!/bin/sh
# Install every build and test dependency of racks from Debian's archive:
# everything `make`, `make demo`, `make check`, `make check-slow`, `make
# bench` and `make deb` use, on a bare Debian 12 (bookworm) that has only
# Essential, apt, git, make and ca-certificates (`make check-fresh` proves
# it). Every package is named here: apt runs with --no-install-recommends,
# so nothing that a package only recommends is relied on.
# Idempotent: packages already installed are skipped without touching apt.
set -eu

# The sock_ops program that writes racks' option in the kernel (bpf/):
# clang compiles it with -target bpf from the UAPI headers of
# linux-libc-dev (<linux/bpf.h>; <asm/types.h> is in Debian's multiarch
# folder, which the Makefile adds: BPF_SYS_INCLUDES) and libbpf-dev's
# <bpf/bpf_helpers.h>; bpftool generates the skeleton that
# rackd/io/bpfopt.c loads. No vmlinux.h: the build never reads the
# kernel's BTF (/sys/kernel/btf may be absent in a chroot or container).
BUILD_PKGS="build-essential pkg-config libmnl-dev libnetfilter-queue-dev
	libnftnl-dev libnftables-dev libsodium-dev libbpf-dev linux-libc-dev
	bpftool clang"
# nftables: the CLI is used by tests to inspect the ruleset;
# iproute2/procps/kmod: namespaces, veth, netem (tc), sysctl;
# python3-pytest/python3-scapy: the integration suite and crafted packets;
# python3-pytest-xdist (with python3-execnet, which it depends on, named
# anyway): make check runs the namespace tests in parallel workers;
# libclang-rt-14-dev: libFuzzer targets with clang (which only recommends
# the runtime that holds libFuzzer and ASan); mandoc: man page lint;
# openssh-server/-client and iperf3: real programs whose connections must
# survive (iperf3 also measures throughput for make bench,
# python3-matplotlib draws its plot); tcpdump: captures read back by Scapy;
# conntrack (of conntrack-tools): R's connection table listed and flushed,
# a middlebox that forgets its flows (tests/test_forget.py, make bench);
# util-linux: nsenter, setpriv, unshare (Essential today, named anyway);
# python3-dissononce: an independent Noise implementation that
# edp/noise.c must interoperate with (tests/test_noise.py);
# nginx-light and apache2-utils (ab): a real web server and load generator
# for make bench's short connections, one request each (bench/fig_http.py).
TEST_PKGS="nftables iproute2 procps kmod util-linux python3 python3-pytest
	python3-pytest-xdist python3-execnet python3-scapy iperf3 tcpdump libclang-rt-14-dev mandoc
	openssh-server openssh-client python3-matplotlib conntrack python3-dissononce
	nginx-light apache2-utils"
# make deb: dpkg-dev (dpkg-buildpackage), debhelper (dh, dh_installsystemd),
# fakeroot (root-owned files without root), lintian (checks the package);
# systemd: systemd-analyze verifies packaging/rackd.service; strace: the
# test that rackd's system calls and sockets pass the unit's filters.
PKG_PKGS="dpkg-dev debhelper fakeroot lintian systemd strace"
# rackckpt's MPI test (tests/test_mpi.py): Open MPI over TCP, the
# implementation that finishes reliably across namespaced hosts (see
# tests/tools/mpi/README.md; MPICH over UCX hung in half of its runs).
MPI_PKGS="openmpi-bin libopenmpi-dev"

missing=""
for p in $BUILD_PKGS $TEST_PKGS $PKG_PKGS $MPI_PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done

if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps.sh: missing packages:$missing (run as root to install)" >&2
		exit 1
	fi
	echo "deps.sh: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# apt and dpkg's progress go to a log, shown when they fail.
	log=$(mktemp /tmp/racks-deps.XXXXXX)
	# shellcheck disable=SC2086
	if ! { apt-get update -qq &&
		apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
		tail -40 "$log" >&2
		echo "deps.sh: apt-get failed (whole log: $log)" >&2
		exit 1
	fi
	echo "deps.sh: installed $(grep -c '^Setting up ' "$log") packages"
	rm -f "$log"
fi

# CRIU 4.2.1 for rackckpt, built once into build/criu by build-criu.sh
# (which installs CRIU's own build dependencies). Checked here by its
# version alone, so that an up-to-date tree costs one exec, not the
# script's `criu check`.
here=$(cd "$(dirname "$0")" && pwd)
criu="$here/../build/criu/sbin/criu"
if ! "$criu" --version 2>/dev/null | grep -qx "Version: 4.2.1"; then
	"$here/build-criu.sh"
fi
