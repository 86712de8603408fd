#!/bin/sh
# Build CRIU 4.2.1 from the orig tarball of Debian unstable's `criu`
# package into a private prefix (never /usr or /usr/local themselves), for
# rackckpt.
#
# Debian 12's criu 3.17 fails on kernels >= 6.13 (vDSO layout) and CRIU 4.1
# cannot dump TCP sockets on kernels >= 6.16; 4.2.1 does both.
#
# Usage: packaging/build-criu.sh [PREFIX]
#        packaging/build-criu.sh --print-urls   where it would fetch from
#        packaging/build-criu.sh --fetch        fetch and check it only
#   PREFIX        install prefix (or env CRIU_PREFIX; default build/criu
#                 under the repository); the binary goes to PREFIX/sbin/criu
#   CRIU_SRC_DIR  where the tarball is fetched and unpacked
#                 (default build/criu-src under the repository)
#   CRIU_URL      fetch the tarball from here instead (still checksummed)
#   JOBS          make -j (default 2)
#
# The tarball comes from the Debian archive this machine's apt uses: the
# address of each archive in its sources (sources.list, sources.list.d,
# one-line or deb822; APT_CONFIG is honoured), with the archive's pool
# path, fetched by apt's own downloader (apt-helper), so that a site's
# mirror, proxy (Acquire::http::Proxy) and credentials (auth.conf) apply.
# The security archive is skipped (it has no such file). Last,
# snapshot.debian.org, which keeps every file Debian ever published, for
# a mirror that carries bookworm only.
#
# Idempotent: packages already installed are not touched, a verified
# tarball is reused, and nothing is built when PREFIX/sbin/criu already
# reports version 4.2.1. Builds only the criu binary (no docs, lib, crit or
# plugins). Runs `criu check` at the end and reports its output without
# failing on it.
#
# The pinned checksum is the one of criu_4.2.1.orig.tar.xz in the .dsc of
# criu 4.2.1-1 and in unstable's Sources index (signed by the archive key).
# Runtime note: criu's default network lock is iptables; on a host without
# iptables pass `--network-lock nftables` to dump and restore.
set -eu

CRIU_VERSION=4.2.1
CRIU_TARBALL=criu_4.2.1.orig.tar.xz
CRIU_SHA256=29ec0ee09e296479fe7048c80980e8ef1d0684d0b0204c2b101dfea19f6725b9
CRIU_SHA1=943aa42a53e9678fee0c8cb85c544afa2d331229
CRIU_POOL=pool/main/c/criu
CRIU_SNAPSHOT="https://snapshot.debian.org/file/$CRIU_SHA1"

# What `make criu` needs on bookworm: protoc (protobuf-compiler) with the
# protoc-gen-c plugin (protobuf-c-compiler) and google/protobuf/descriptor.proto
# (libprotobuf-dev); the libraries linked in; xz-utils to unpack.
# python3-protobuf and libnl-route-3-dev are only needed by crit and the
# test suite, asciidoc/xmlto only by the docs.
BUILD_PKGS="build-essential pkg-config xz-utils ca-certificates
	libprotobuf-c-dev libprotobuf-dev protobuf-c-compiler protobuf-compiler
	libnl-3-dev libnet1-dev libcap-dev libbsd-dev libgnutls28-dev
	libnftables-dev uuid-dev"

say() { echo "build-criu: $*"; }
die() { echo "build-criu: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

abspath() {
	case "$1" in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s/%s\n' "$(pwd)" "$1" ;;
	esac
}

PREFIX=$(abspath "${1:-${CRIU_PREFIX:-$repo/build/criu}}")
SRC_DIR=$(abspath "${CRIU_SRC_DIR:-$repo/build/criu-src}")
JOBS=${JOBS:-2}
# A private prefix, never the system's: /usr/lib/racks/criu, the one
# rackckpt looks in, is fine; /usr or /usr/local would shadow Debian's criu.
case "${PREFIX%/}" in
"" | /usr | /usr/local) die "refusing to install into $PREFIX (use a private prefix such as /usr/lib/racks/criu)" ;;
esac
CRIU="$PREFIX/sbin/criu"
# The compiled-in plugin dir is PREFIX/lib/criu instead of /usr/lib/criu, so
# plugins of a system criu are never loaded.
MAKE_VARS="PLUGINDIR=$PREFIX/lib/criu"

have_version() {
	[ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx "Version: $CRIU_VERSION"
}

install_deps() {
	missing=""
	for p in $BUILD_PKGS; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
			missing="$missing $p"
		fi
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" -eq 0 ] || die "missing packages:$missing (run as root to install)"
	say "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if ! apt-get install -y -qq --no-install-recommends $missing; then
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing
	fi
}

sha256_ok() {
	[ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$CRIU_SHA256" ]
}

# The archives of apt's sources, each once, in apt's order.
archive_uris() {
	apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE)' \
		'Identifier: Packages' 2>/dev/null |
		while read -r uri release; do
			case "$release" in
			*-security) ;;
			*) printf '%s\n' "${uri%/}" ;;
			esac
		done | awk '!seen[$0]++'
}

urls() {
	if [ -n "${CRIU_URL:-}" ]; then
		printf '%s\n' "$CRIU_URL"
		return
	fi
	for uri in $(archive_uris); do
		printf '%s/%s/%s\n' "$uri" "$CRIU_POOL" "$CRIU_TARBALL"
	done
	printf '%s\n' "$CRIU_SNAPSHOT"
}

APT_HELPER=/usr/lib/apt/apt-helper

fetch() { # URL FILE
	if [ -x "$APT_HELPER" ]; then
		# apt's downloader: the site's proxy and credentials apply;
		# it checks the hash too.
		"$APT_HELPER" download-file "$1" "$2" "SHA256:$CRIU_SHA256" \
			>/dev/null 2>&1
	elif command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 2 -m 300 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -T 60 -O "$2" "$1"
	else
		python3 -c 'import sys, urllib.request
urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"
	fi
}

get_tarball() {
	tarball="$SRC_DIR/$CRIU_TARBALL"
	if sha256_ok "$tarball"; then
		say "reusing verified $tarball"
		return 0
	fi
	mkdir -p "$SRC_DIR"
	for url in $(urls); do
		say "fetching $url"
		rm -f "$tarball.part"
		if fetch "$url" "$tarball.part" && sha256_ok "$tarball.part"; then
			mv "$tarball.part" "$tarball"
			say "sha256 $CRIU_SHA256 OK"
			return 0
		fi
		if [ -s "$tarball.part" ]; then
			say "checksum mismatch from $url: $(sha256sum "$tarball.part" | cut -d' ' -f1)"
		fi
		rm -f "$tarball.part"
	done
	die "could not fetch $CRIU_TARBALL with sha256 $CRIU_SHA256"
}

unpack() {
	src="$SRC_DIR/criu-$CRIU_VERSION"
	stamp="$src/.racks-config"
	# make does not notice changed defines: a tree built with other
	# settings (another prefix) is unpacked afresh.
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$MAKE_VARS" ]; then
		return 0
	fi
	rm -rf "$src"
	tar -xJf "$SRC_DIR/$CRIU_TARBALL" -C "$SRC_DIR"
	[ -f "$src/Makefile" ] || die "unexpected tarball layout (no $src/Makefile)"
	printf '%s\n' "$MAKE_VARS" >"$stamp"
}

build() {
	say "building criu $CRIU_VERSION in $src (make -j$JOBS criu)"
	t0=$(date +%s)
	# Only the criu binary: no docs, no libcriu/crit, no amdgpu/cuda
	# plugins.
	make -C "$src" -j"$JOBS" "$MAKE_VARS" criu
	t1=$(date +%s)
	say "build took $((t1 - t0)) s"
	have_version "$src/criu/criu" || die "built binary does not report $CRIU_VERSION"
}

install_bin() {
	mkdir -p "$PREFIX/sbin"
	install -m 0755 "$src/criu/criu" "$CRIU.new"
	mv -f "$CRIU.new" "$CRIU"
}

case "${1:-}" in
--print-urls)
	urls
	exit 0
	;;
--fetch)
	get_tarball
	exit 0
	;;
esac

if have_version "$CRIU"; then
	say "criu $CRIU_VERSION already installed, nothing to build"
else
	install_deps
	get_tarball
	unpack
	build
	install_bin
fi

say "criu $CRIU_VERSION is $CRIU"
if [ "$(id -u)" -ne 0 ]; then
	say "not root: skipping criu check"
	exit 0
fi
rc=0
out=$("$CRIU" check 2>&1) || rc=$?
say "criu check (exit $rc):"
printf '%s\n' "$out" | sed 's/^/    /'
[ "$rc" -eq 0 ] || say "criu check reports missing features (not fatal here)"
exit 0
