# racks: hand-written Makefile. `make` builds build/rackd and build/rackctl.
# Variables meant to be overridden: PREFIX DESTDIR SBINDIR MANDIR SYSCONFDIR
# SYSTEMDUNITDIR DEB_DIR CC CFLAGS LDFLAGS V=1 (show commands).

PREFIX ?= /usr/local
DESTDIR ?=
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
SYSTEMDUNITDIR ?= /lib/systemd/system

CC ?= cc
CFLAGS ?= -O2 -g
PKG_CONFIG ?= pkg-config
PYTHON ?= /usr/bin/python3
BUILD := build

PKGS := libmnl libnetfilter_queue libnftables libnftnl libsodium libbpf
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
# rackd's layers, lowest first (README "Architecture"; make check-layers).
RACKD_DIRS := rackd/io rackd/core rackd/engine rackd/persist rackd/ctl
# rackckpt's layers, lowest first (checkpoint/README.md; make check-layers).
CKPT_DIRS := checkpoint/base checkpoint/proc checkpoint/state \
	checkpoint/relay checkpoint/move checkpoint/job checkpoint/cli
# bpf/ holds the sock_ops program and the header it shares with its
# loader (rackd/io/bpfopt.c); build/bpf its skeleton (below).
INCLUDES := -Icommon $(addprefix -I,$(RACKD_DIRS)) -Inft -Iedp -Ibpf \
	-I$(BUILD)/bpf
# rackckpt's objects see common/ and its own folders only: rackd's
# headers are not theirs (and share some of their names).
CKPT_INCLUDES := -Icommon $(addprefix -I,$(CKPT_DIRS))
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(INCLUDES) -MMD -MP

ifeq ($(V),1)
Q :=
quiet = @:
else
Q := @
quiet = @printf '  %-6s %s\n' $(1) $(2)
endif

# pkg-config is only needed for targets that compile daemon code.
pkg_cflags = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
pkg_libs = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

COMMON_SRC := common/addr.c common/proto.c common/syncdir.c
# rtnetlink requests and "lo" host addresses: rackd and rackckpt.
NETLINK_SRC := common/netlink.c common/lohost.c
EDP_SRC := $(wildcard edp/*.c)
RACKD_SRC := rackd/main.c rackd/daemon.c rackd/optpath.c $(wildcard $(addsuffix /*.c,$(RACKD_DIRS))) \
	$(wildcard nft/*.c) $(EDP_SRC) $(COMMON_SRC) \
	$(NETLINK_SRC)
RACKCTL_SRC := $(wildcard rackctl/*.c) $(COMMON_SRC) common/ctlclient.c $(EDP_SRC)
RACKCKPT_SRC := $(wildcard $(addsuffix /*.c,$(CKPT_DIRS))) $(COMMON_SRC) \
	common/ctlclient.c $(NETLINK_SRC)
# What the C unit tests link: pure logic (no netlink), the connection
# core, and fake kernel I/O (tests/unit/fake.c) under the engine modules
# that tests include one at a time.
UNIT_LIB_SRC := rackd/io/packet.c rackd/io/csum.c rackd/core/config.c \
	rackd/io/timer.c rackd/io/log.c rackd/io/rewrite.c rackd/core/conn.c \
	rackd/core/halfopen.c rackd/core/hostkey.c rackd/core/knownhosts.c \
	rackd/persist/hostkey_file.c rackd/persist/knownhosts_file.c \
	rackd/persist/hostpairs_file.c rackd/core/hostpairs.c \
	rackd/core/event.c rackd/core/rackd.c tests/unit/unit.c \
	tests/unit/fake.c $(EDP_SRC) $(COMMON_SRC)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,\
	$(wildcard tests/unit/test_*.c))

obj = $(patsubst %.c,$(BUILD)/$(1)/%.o,$(2))

.PHONY: all deps install uninstall clean check check-unit check-integration \
	check-slow check-fresh asan fuzz demo bench-tools bench deb test-tools
all: $(BUILD)/rackd $(BUILD)/rackctl $(BUILD)/rackckpt

deps:
	$(Q)./packaging/deps.sh

$(BUILD)/obj/checkpoint/%.o: INCLUDES := $(CKPT_INCLUDES)
$(BUILD)/obj/%.o: %.c
	$(call quiet,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) $(CFLAGS) -c -o $@ $<

# The sock_ops program that writes racks' option in the kernel (bpf/,
# bpf/README.md). It reads only the UAPI context (struct bpf_sock_ops)
# and the TCP header, so it is built from <linux/bpf.h> (linux-libc-dev)
# and libbpf's headers, with plain UAPI offsets and no CO-RE: no
# vmlinux.h, no BTF of the build machine's kernel (a chroot, a buildd or
# a container may have none), and the object serves any kernel from
# 5.15. bpftool only generates the skeleton that embeds it in rackd.
BPFTOOL ?= bpftool
BPF_CLANG ?= clang
# clang -target bpf searches /usr/include but not the multiarch folder
# where Debian keeps <asm/types.h> (/usr/include/x86_64-linux-gnu): the
# host's own system folders go after clang's, as libbpf-bootstrap and
# the kernel's selftests do it (a distribution with /usr/include/asm
# needs nothing, and gets nothing new).
BPF_SYS_INCLUDES ?= $(shell $(BPF_CLANG) -v -E - </dev/null 2>&1 | \
	sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_SKEL := $(BUILD)/bpf/racks_sockops.skel.h $(BUILD)/bpf/racks_listeners.skel.h

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/racks_sockops.h
	$(call quiet,CC-BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPF_CLANG) -target bpf -O2 -g -Wall -Wextra -Werror \
		-Ibpf $(BPF_SYS_INCLUDES) -c -o $@ $<

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call quiet,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@.tmp
	$(Q)mv $@.tmp $@

# Kept for llvm-objdump and bpftool prog dump (not an intermediate).
.SECONDARY: $(BUILD)/bpf/racks_sockops.bpf.o $(BUILD)/bpf/racks_listeners.bpf.o

# The loader includes the skeleton: it must exist before -MMD knows it.
$(call obj,obj,rackd/io/bpfopt.c) $(call obj,san-obj,rackd/io/bpfopt.c): \
	$(BPF_SKEL)

$(BUILD)/rackd: $(call obj,obj,$(RACKD_SRC))
	$(call quiet,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(pkg_libs)

$(BUILD)/rackctl: $(call obj,obj,$(RACKCTL_SRC))
	$(call quiet,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs libsodium 2>/dev/null)

$(BUILD)/rackckpt: $(call obj,obj,$(RACKCKPT_SRC))
	$(call quiet,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs libsodium libmnl 2>/dev/null)

# The daemon under AddressSanitizer and UndefinedBehaviorSanitizer.
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
$(BUILD)/san-obj/%.o: %.c
	$(call quiet,CC-SAN,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) $(SAN_FLAGS) -c -o $@ $<

$(BUILD)/asan/rackd: $(call obj,san-obj,$(RACKD_SRC))
	$(call quiet,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SAN_FLAGS) $(LDFLAGS) -o $@ $^ $(pkg_libs)

# rackckpt too: its job commands run under the sanitizers in test_mpi.
$(BUILD)/san-obj/checkpoint/%.o: INCLUDES := $(CKPT_INCLUDES)
$(BUILD)/asan/rackckpt: $(call obj,san-obj,$(RACKCKPT_SRC))
	$(call quiet,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SAN_FLAGS) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs libsodium libmnl 2>/dev/null)

asan: $(BUILD)/asan/rackd $(BUILD)/asan/rackckpt

# Unit tests are built with the sanitizers too.
$(BUILD)/tests/%: tests/unit/%.c $(call obj,san-obj,$(UNIT_LIB_SRC))
	$(call quiet,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) -Itests/unit $(SAN_FLAGS) \
		-o $@ $< $(call obj,san-obj,$(UNIT_LIB_SRC)) $(pkg_libs)

# rackckpt's unit tests (tests/unit/ckpt/) link its modules under test
# with common/ and the framework, built with the sanitizers too.
CKPT_UNIT_LIB_SRC := checkpoint/job/plan.c checkpoint/base/util.c \
	checkpoint/state/skqueue.c checkpoint/state/image.c \
	common/syncdir.c common/addr.c tests/unit/unit.c
CKPT_UNIT_TESTS := $(patsubst tests/unit/ckpt/%.c,$(BUILD)/tests/ckpt/%,\
	$(wildcard tests/unit/ckpt/test_*.c))
$(BUILD)/tests/ckpt/%: tests/unit/ckpt/%.c $(CKPT_UNIT_LIB_SRC)
	$(call quiet,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CKPT_INCLUDES) -Itests/unit \
		$(SAN_FLAGS) -o $@ $< $(CKPT_UNIT_LIB_SRC)

check-unit: $(UNIT_TESTS) $(CKPT_UNIT_TESTS) $(BUILD)/tests/handshake_orders
	$(Q)set -e; for t in $(UNIT_TESTS) $(CKPT_UNIT_TESTS) \
		$(BUILD)/tests/handshake_orders; do $$t; done

# No call or include upward between the layers of rackd and of rackckpt,
# no cycle between folders; `tests/layers.py --picture` draws them.
.PHONY: check-layers
check-layers:
	$(Q)$(PYTHON) tests/layers.py

# libFuzzer targets (clang); `make fuzz FUZZ_SECONDS=60` runs each.
FUZZ_SECONDS ?= 20
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
$(BUILD)/fuzz/%: tests/fuzz/%.c
	$(call quiet,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)clang -std=c11 -D_GNU_SOURCE -g -O1 $(INCLUDES) \
		-fsanitize=fuzzer,address,undefined -o $@ $< $(pkg_libs)

# fuzz_engine, the stateful fuzzer: the whole engine, wired by rackd/main.c
# and started by rackd/daemon.c, over the fake kernel of tests/fuzz/engine/
# (engine.h). The engine's modules share static names, so each source is a
# translation unit of its own, compiled for the fuzzer without its main()
# and linked with it; UBSan's findings abort like ASan's. clang warns of
# adopt.c's deliberate '|' of two booleans (both must run), gcc does not.
FUZZ_ENGINE_SRC := tests/fuzz/fuzz_engine.c $(wildcard tests/fuzz/engine/*.c) \
	$(filter-out rackd/engine/local.c,$(wildcard rackd/engine/*.c)) \
	$(wildcard rackd/core/*.c) rackd/io/packet.c rackd/io/csum.c \
	rackd/io/rewrite.c rackd/io/timer.c rackd/persist/state.c \
	rackd/persist/hostkey_file.c rackd/persist/knownhosts_file.c \
	rackd/persist/hostpairs_file.c rackd/optpath.c \
	rackd/ctl/ctl_cmds.c rackd/ctl/ctl_migrate.c rackd/ctl/ctl_hosts.c \
	edp/option.c edp/keys.c edp/announce.c edp/hostid.c edp/noise.c \
	edp/hostpair.c nft/splicemap.c nft/adoptset.c nft/offerset.c \
	nft/xt_queue.c $(COMMON_SRC)
FUZZ_ENGINE_FLAGS := -g -O1 -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
# The fake kernel's bookkeeping (invariants, nft sets, timers, pool) is
# not coverage-instrumented: its comparisons would only slow the fuzzer
# and feed it features of the harness rather than of rackd.
FUZZ_COVERAGE := -fsanitize=fuzzer-no-link
$(addprefix $(BUILD)/fuzz-obj/tests/fuzz/engine/,check.o nft.o fake.o host.o pool.o): \
	FUZZ_COVERAGE :=
$(BUILD)/fuzz-obj/%.o: %.c
	$(call quiet,CC-FUZZ,$<)
	$(Q)mkdir -p $(@D)
	$(Q)clang $(BASE_CFLAGS) $(pkg_cflags) -Irackd -Itests/fuzz $(FUZZ_ENGINE_FLAGS) \
		-Wno-bitwise-instead-of-logical $(FUZZ_COVERAGE) -c -o $@ $<

$(BUILD)/fuzz/fuzz_engine: $(call obj,fuzz-obj,$(FUZZ_ENGINE_SRC))
	$(call quiet,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)clang $(FUZZ_ENGINE_FLAGS) -fsanitize=fuzzer -o $@ $^ $(pkg_libs)

# The handshake in every order (tests/fuzz/orders.c): the whole engine
# over fuzz_engine's world, a table of orders instead of libFuzzer's
# input (crafted segments, raw.c, are not among its orders); run by
# check-unit. Its objects are the fuzzer's (their coverage hooks unused:
# the sanitizer runtime has them).
ORDERS_SRC := tests/fuzz/orders.c tests/fuzz/orders_world.c \
	tests/fuzz/orders_fates.c \
	$(filter-out tests/fuzz/fuzz_engine.c tests/fuzz/engine/raw.c,\
	$(FUZZ_ENGINE_SRC))
$(BUILD)/tests/handshake_orders: $(call obj,fuzz-obj,$(ORDERS_SRC))
	$(call quiet,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)clang $(FUZZ_ENGINE_FLAGS) -fsanitize=fuzzer-no-link -o $@ $^ \
		$(pkg_libs)

# rackckpt's targets see its headers, not rackd's.
$(BUILD)/fuzz/fuzz_plan: INCLUDES := $(CKPT_INCLUDES)

# Each run's log goes to build/fuzz/NAME.log, what it found to
# build/fuzz/NAME-crash-...; a failure prints the log's tail.
fuzz: $(FUZZ_TARGETS)
	$(Q)set -e; for f in $(FUZZ_TARGETS); do \
		n=$$(basename $$f); mkdir -p $(BUILD)/corpus/$$n; \
		if ! $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$$f- \
			$(BUILD)/corpus/$$n tests/fuzz/seeds > $$f.log 2>&1; then \
			tail -40 $$f.log; echo "fuzz: $$n FAILED"; exit 1; fi; \
		echo "fuzz: $$n: $$(grep -o 'Done [0-9]* runs in [0-9]* second' $$f.log)"; \
	done

# The one command CI runs (README): installs dependencies, builds, runs
# every fast test. Long proofs are in check-slow. The integration tests
# run in TEST_JOBS pytest-xdist workers (they mostly wait out cuts and
# timers); tests/conftest.py keeps the CPU-heavy, the timing-sensitive
# and the machine-wide ones apart (tests/README.md). TEST_JOBS=0: one
# process.
TEST_JOBS ?= 4
PYTEST_JOBS = $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadgroup)
check: deps all asan check-unit check-layers test-tools bench-tools
	$(Q)$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=15
	$(Q)$(PYTHON) -m pytest -q $(PYTEST_JOBS) --durations=12 tests

# The README's test command on a bare Debian 12 root made anew, from a
# clone of the committed HEAD (tests/tools/freshroot): proves that deps.sh
# installs everything. FRESH="make demo" runs another command there.
FRESH ?= make check
check-fresh:
	$(Q)tests/tools/freshroot -- $(FRESH)

check-slow: deps all asan test-tools
	$(Q)$(PYTHON) -m pytest -q -m slow tests

demo: deps all
	$(Q)$(PYTHON) tests/demo.py

# The unit's ExecStart and ExecReload follow SBINDIR. An existing
# racks.conf is the administrator's: never overwritten, and removed by
# uninstall only while it is still the default one.
RACKS_CONF := $(DESTDIR)$(SYSCONFDIR)/racks/racks.conf
install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(SYSTEMDUNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/racks
	install -m 0755 $(BUILD)/rackd $(BUILD)/rackctl $(BUILD)/rackckpt \
		$(DESTDIR)$(SBINDIR)/
	install -m 0644 man/rackd.8 man/rackctl.8 man/rackckpt.8 \
		$(DESTDIR)$(MANDIR)/man8/
	install -m 0644 man/racks.conf.5 $(DESTDIR)$(MANDIR)/man5/
	sed 's|/usr/sbin/|$(SBINDIR)/|g' packaging/rackd.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/rackd.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/rackd.service
	[ -e $(RACKS_CONF) ] || install -m 0644 packaging/racks.conf $(RACKS_CONF)

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/rackd $(DESTDIR)$(SBINDIR)/rackctl \
		$(DESTDIR)$(SBINDIR)/rackckpt \
		$(DESTDIR)$(MANDIR)/man8/rackd.8 $(DESTDIR)$(MANDIR)/man8/rackctl.8 \
		$(DESTDIR)$(MANDIR)/man8/rackckpt.8 \
		$(DESTDIR)$(MANDIR)/man5/racks.conf.5 \
		$(DESTDIR)$(SYSTEMDUNITDIR)/rackd.service
	! cmp -s packaging/racks.conf $(RACKS_CONF) || rm -f $(RACKS_CONF)

# make deb: the Debian package, built by dpkg-buildpackage in a copy of the
# tree (build/deb/racks, with packaging/debian as debian/) so that nothing
# lands among the sources, then checked by lintian. The .deb, .changes and
# .buildinfo end up in build/deb/ (or DEB_DIR).
DEB_DIR ?= $(BUILD)/deb
deb: deps
	$(Q)rm -rf $(DEB_DIR)/racks $(DEB_DIR)/*.deb $(DEB_DIR)/*.changes \
		$(DEB_DIR)/*.buildinfo
	$(Q)mkdir -p $(DEB_DIR)/racks
	$(Q)tar -c --exclude-vcs --exclude=./build --exclude=./bench/results \
		-f - . | tar -x -C $(DEB_DIR)/racks
	$(Q)cp -r packaging/debian $(DEB_DIR)/racks/debian
	$(Q)cd $(DEB_DIR)/racks && dpkg-buildpackage -us -uc -b > ../build.log 2>&1 \
		|| { tail -40 ../build.log; echo "deb: failed, see $(DEB_DIR)/build.log"; exit 1; }
	$(Q)lintian --fail-on error $(DEB_DIR)/*.changes
	$(Q)ls $(DEB_DIR)/*.deb

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# Benchmark helpers run by the benchmark driver: `make bench-tools`.
# rr and connbench are standalone programs (libc only), built with the
# project's warnings.
BENCH_TOOLS := $(BUILD)/bench/rr $(BUILD)/bench/connbench \
	$(BUILD)/bench/nfqfloor $(BUILD)/bench/connfleet $(BUILD)/bench/synflood
bench-tools: $(BENCH_TOOLS)

# nfqfloor serves a queue exactly as rackd does: it links rackd's queue,
# xt target and log modules.
NFQFLOOR_SRC := bench/tools/nfqfloor.c rackd/io/queue.c nft/xt_queue.c \
	rackd/io/log.c
$(BUILD)/bench/nfqfloor: $(NFQFLOOR_SRC)
	$(call quiet,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) -O2 $(CFLAGS) $(LDFLAGS) -o $@ \
		$(NFQFLOOR_SRC) $(pkg_libs)

$(BUILD)/bench/%: bench/tools/%.c
	$(call quiet,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) $(LDFLAGS) -o $@ $<

# Programs the integration tests run (make test-tools, a prerequisite of
# check and check-slow), built with the warnings, on one NFQUEUE plumbing
# (tests/tools/nfqbox.c, which adds its queue rule with rackd's xt target
# module): wintrack, a window-tracking middlebox for the test-bed's router
# (tests/tools/wintrack.c), and disorder, one that delays, duplicates and
# reorders chosen segments (tests/tools/disorder.c).
NFQBOX_SRC := tests/tools/nfqbox.c nft/xt_queue.c rackd/io/log.c
WINTRACK_SRC := tests/tools/wintrack.c tests/tools/wintrack_track.c
DISORDER_SRC := tests/tools/disorder.c tests/tools/disorder_hold.c
# connfleet (bench/tools/connfleet.c: thousands of idle connections, each
# echoing on command) serves tests/test_load.py as well as the bench.
# noise_peer (tests/tools/noise_peer.c) plays one end of edp/noise.c's
# handshake against another implementation (tests/test_noise.py), under
# the sanitizers like the unit tests.
# bpfopt_tool (tests/tools/bpfopt_tool.c) loads the sock_ops program
# through rackd/io/bpfopt.c and prints what it reports (tests/
# test_bpfopt.py), under the sanitizers.
TEST_TOOLS := $(BUILD)/tests/wintrack $(BUILD)/tests/disorder \
	$(BUILD)/bench/connfleet $(BUILD)/tests/noise_peer \
	$(BUILD)/tests/bpfopt_tool
test-tools: $(TEST_TOOLS)

BPFOPT_TOOL_SRC := tests/tools/bpfopt_tool.c rackd/io/bpfopt.c rackd/io/log.c \
	common/addr.c edp/option.c
$(BUILD)/tests/bpfopt_tool: $(BPFOPT_TOOL_SRC) rackd/io/bpfopt.h \
	bpf/racks_sockops.h $(BPF_SKEL)
	$(call quiet,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) $(SAN_FLAGS) $(LDFLAGS) -o $@ \
		$(BPFOPT_TOOL_SRC) $(shell $(PKG_CONFIG) --libs libbpf 2>/dev/null)

NOISE_PEER_SRC := tests/tools/noise_peer.c edp/noise.c edp/hostpair.c \
	edp/hostid.c
$(BUILD)/tests/noise_peer: $(NOISE_PEER_SRC) edp/noise.h
	$(call quiet,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) $(SAN_FLAGS) $(LDFLAGS) -o $@ \
		$(NOISE_PEER_SRC) $(shell $(PKG_CONFIG) --libs libsodium 2>/dev/null)

$(BUILD)/tests/wintrack: $(WINTRACK_SRC) $(NFQBOX_SRC) tests/tools/wintrack.h \
	tests/tools/nfqbox.h
	$(call quiet,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) -O2 $(CFLAGS) $(LDFLAGS) -o $@ \
		$(WINTRACK_SRC) $(NFQBOX_SRC) $(pkg_libs)

$(BUILD)/tests/disorder: $(DISORDER_SRC) $(NFQBOX_SRC) tests/tools/disorder.h \
	tests/tools/nfqbox.h
	$(call quiet,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(pkg_cflags) -O2 $(CFLAGS) $(LDFLAGS) -o $@ \
		$(DISORDER_SRC) $(NFQBOX_SRC) $(pkg_libs)

# make bench [QUICK=1]: racks against plain TCP (bench/run.py); the report
# goes to bench/results/.
bench: deps all bench-tools
	$(Q)$(PYTHON) bench/run.py $(if $(QUICK),--quick)
