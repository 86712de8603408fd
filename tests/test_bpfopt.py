"""racks' option written and read by the kernel: the sock_ops program of
bpf/ loaded through rackd/io/bpfopt.c (tests/tools/bpfopt_tool.c), on
the standard test-bed::

      ns A (host)              ns R (router)              ns B (host)
    +--------------+   +----------------------------+   +--------------+
    | bpfopt_tool  |---|                            |---| bpfopt_tool  |
    | optconn      |   |                            |   | optconn      |
    +--------------+   +----------------------------+   +--------------+
          \\_________ one child cgroup of the cgroup2 mount __________/

Every namespace of the test-bed shares the machine's cgroup tree, so a
test makes a child cgroup of its own (racks-test-PID-N), attaches there,
and runs its clients and servers in it (their pids written to
cgroup.procs before they make a socket); the host's own processes are
never in it, and a finalizer kills what is left in it and removes it.
Each tool handles its own namespace's sockets only (the netns cookie),
which the tests prove with sockets of the other namespace in the same
cgroup. Captures on A's eth0 are decoded with the project's own parser
and builder (bpfopt_tool --parse: edp_option_parse, edp_option_build).
"""

import itertools
import json
import os
import re
import signal
import statistics
import subprocess
from pathlib import Path

import pytest

import testbed
from testbed import read_line, wait_until

TOOL = testbed.REPO / "build" / "tests" / "bpfopt_tool"
CONNBENCH = testbed.REPO / "build" / "bench" / "connbench"
OPTCONN = testbed.TOOLS / "optconn.py"
PORT = 5301
EXID = (0x7261).to_bytes(2, "big")
HP_ID = 0x52a0c001
_serial = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def built():
    testbed.make("build/tests/bpfopt_tool", "build/bench/connbench")


def cgroup2_mount():
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return Path(mnt)
    pytest.fail("no cgroup v2 mounted (NOTES.md: /sys/fs/cgroup/unified)")


@pytest.fixture
def cgroup(topo):
    """A child cgroup of the cgroup2 mount, for this test alone; killed
    and removed at teardown (before the topology goes)."""
    path = cgroup2_mount() / f"racks-test-{os.getpid()}-{next(_serial)}"
    path.mkdir()

    def procs():
        return (path / "cgroup.procs").read_text().split()

    yield path
    if procs():
        # Only this test's processes are in it (checked by the tests).
        (path / "cgroup.kill").write_text("1")
    wait_until(lambda: not procs(), 10, f"{path} to empty")
    path.rmdir()


def host_never_in(cg):
    """No process of the host's own network namespace is in CG."""
    own = os.readlink("/proc/self/ns/net")
    pids = (cg / "cgroup.procs").read_text().split()
    for pid in pids:
        try:
            assert os.readlink(f"/proc/{pid}/ns/net") != own, pid
        except FileNotFoundError:
            pass
    return pids


def in_cgroup(ns, cg, argv, **kw):
    """ARGV started in namespace NS and cgroup CG: the shell writes its pid
    to cgroup.procs, then execs ARGV (same pid), so every socket it makes
    is the cgroup's. nsenter keeps the mount namespace (ip netns exec
    would hide the cgroup2 mount under a fresh /sys)."""
    return ns.popen(["sh", "-c", 'echo $$ > "$0" && exec "$@"',
                     cg / "cgroup.procs", *map(str, argv)], nsenter=True,
                    **kw)


class Tool:
    """bpfopt_tool attached to CG for namespace NS; its lines in a file."""

    def __init__(self, ns, cg, tmp_path, *args):
        self.out = tmp_path / f"bpfopt-{ns.name}-{next(_serial)}.jsonl"
        self.err = self.out.with_suffix(".err")
        self.lines = None      # set once it has exited
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = ns.popen([TOOL, "--cgroup", cg, *args], nsenter=True,
                                 stdout=out, stderr=err)
        self.ready = wait_until(lambda: self._event("ready"), 15,
                                f"bpfopt_tool in {ns.name} to attach",
                                interval=0.05)[0]

    def _lines(self):
        if self.lines is None and self.proc.poll() is not None:
            raise AssertionError(f"bpfopt_tool exited {self.proc.returncode}"
                                 f": {self.err.read_text()}")
        return [json.loads(line) for line in
                self.out.read_text().splitlines() if line.endswith("}")]

    def _event(self, name):
        return [e for e in self._lines() if e["event"] == name]

    def records(self):
        return self._event("record")

    def counters(self):
        """Counters now (SIGUSR1)."""
        before = len(self._event("counters"))
        os.kill(self.proc.pid, signal.SIGUSR1)
        return wait_until(lambda: self._event("counters")[before:], 10,
                          "counters")[0]

    def stop(self):
        """SIGTERM: it drains, prints its counters, detaches. Returns
        (records, final counters)."""
        os.kill(self.proc.pid, signal.SIGTERM)
        rc = self.proc.wait(timeout=15)
        self.lines = []
        self.lines = self._lines()
        assert rc == 0, f"bpfopt_tool exited {rc}: {self.err.read_text()}"
        assert self.lines[-1]["event"] == "detached", self.lines[-3:]
        return self.records(), self._event("counters")[-1]


def start_server(ns, cg, port=PORT):
    proc = in_cgroup(ns, cg, [testbed.PYTHON, OPTCONN, "serve", port])
    line = read_line(proc, 10, "optconn server")
    assert line == "READY", line
    return proc


def run_client(ns, cg, addr, count, size=1000, port=PORT):
    proc = in_cgroup(ns, cg, [testbed.PYTHON, OPTCONN, "connect", addr, port,
                              count, "--bytes", size])
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out)


# --- the option on the wire ---------------------------------------------------------

def tcp_raw(p):
    from scapy.all import TCP
    return bytes(p[TCP])


def racks_option(raw):
    """The racks option of a TCP segment and the 20 bytes from its start
    (option and padding), or (None, None)."""
    hdr = (raw[12] >> 4) * 4
    opts = raw[20:hdr]
    i = 0
    while i < len(opts):
        if opts[i] in (0, 1):
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        if opts[i] == 254 and opts[i + 2:i + 4] == EXID:
            return opts[i:i + opts[i + 1]], opts[i:i + 20]
        i += opts[i + 1]
    return None, None


def mss_option(raw):
    hdr = (raw[12] >> 4) * 4
    opts, i = raw[20:hdr], 0
    while i < len(opts):
        if opts[i] in (0, 1):
            i += 1
            continue
        if opts[i] == 2:
            return int.from_bytes(opts[i + 2:i + 4], "big")
        i += opts[i + 1]
    return None


def parse_option(opt):
    """edp_option_parse() and edp_option_build() on OPT (bytes)."""
    r = subprocess.run([TOOL, "--parse", opt.hex()], capture_output=True,
                       text=True, timeout=10)
    parsed = json.loads(r.stdout)
    assert r.returncode == 0 and parsed["error"] == "ok", (opt.hex(), parsed)
    return parsed


def handshake(pkts, a_addr, b_addr):
    """Per client port: {'syn': pkt, 'synack': pkt, 'data': [pkts]} (data:
    segments after the handshake, either way)."""
    from scapy.all import IP, IPv6, TCP
    conns = {}
    for p in pkts:
        l3 = p[IP] if IP in p else p[IPv6]
        t = p[TCP]
        client_port = t.sport if l3.src == a_addr else t.dport
        c = conns.setdefault(client_port, {"syn": None, "synack": None,
                                           "data": []})
        flags = int(t.flags)
        if flags & 0x12 == 0x02 and l3.src == a_addr:
            c["syn"] = c["syn"] or p
        elif flags & 0x12 == 0x12 and l3.src == b_addr:
            c["synack"] = c["synack"] or p
        elif not flags & 0x02:
            c["data"].append(p)
    return conns


def nonce_of(parsed):
    return parsed["nonce"]


# --- (a) (b) (d) (f): both ends racks ---------------------------------------------

@pytest.mark.parametrize("family,b_knows", [("v4", True), ("v4", False),
                                            ("v6", True)])
def test_handshake_option_in_the_kernel_and_one_record_each(
        topo, cgroup, tmp_path, family, b_knows):
    """A offers the host pair its map names for B's IPv4 address (none for
    IPv6); B echoes it only when its known-ids map has it. Every SYN and
    SYN-ACK carries the queue path's bytes, with a nonce of its own; each
    end reports each connection once, with ISNs and nonces that match the
    capture and the other end; data segments carry no option."""
    a_addr, b_addr = topo.addr["a"][family], topo.addr["b"][family]
    ta = Tool(topo.a, cgroup, tmp_path,
              "--offer", f"{topo.addr['b']['v4']}={HP_ID}")
    tb = Tool(topo.b, cgroup, tmp_path,
              *(["--known", str(HP_ID)] if b_knows else ["--known", "7"]))
    start_server(topo.b, cgroup)
    cap = testbed.Capture(topo.a, tmp_path / "a.pcap", f"tcp port {PORT}")
    n = 4
    client = run_client(topo.a, cgroup, b_addr, n, size=20000)
    assert client["answers"] == ["20000"] * n
    pkts = cap.packets()
    host_never_in(cgroup)
    recs_a, cnt_a = ta.stop()
    recs_b, cnt_b = tb.stop()

    offered = HP_ID if family == "v4" else 0
    echoed = offered if b_knows else 0
    conns = handshake(pkts, a_addr, b_addr)
    assert sorted(conns) == sorted(client["ports"])
    nonces = []
    for port in client["ports"]:
        c = conns[port]
        syn_opt, syn20 = racks_option(tcp_raw(c["syn"]))
        ack_opt, ack20 = racks_option(tcp_raw(c["synack"]))
        assert syn_opt is not None and ack_opt is not None, port
        syn, ack = parse_option(syn_opt), parse_option(ack_opt)
        # (a) the queue path's bytes: edp_option_build() of what was
        # parsed, long form, NOP-padded to 20.
        assert bytes.fromhex(syn["built"]) == syn20, syn20.hex()
        assert bytes.fromhex(ack["built"]) == ack20, ack20.hex()
        assert (syn["type"], ack["type"]) == ("syn", "synack")
        assert syn["has_nonce"] and ack["has_nonce"]
        assert syn["flags"] == ack["flags"] == 1       # EDP_OFFER_HOSTKEYS
        assert syn["hp_id"] == offered and ack["hp_id"] == echoed
        nonces += [syn["nonce"], ack["nonce"]]
        # (b) one record on each side, matching the capture and each other.
        ra = [r for r in recs_a if r["local_port"] == port]
        rb = [r for r in recs_b if r["remote_port"] == port]
        assert len(ra) == 1 and len(rb) == 1, (ra, rb)
        ra, rb = ra[0], rb[0]
        assert (ra["kind"], ra["side"], rb["kind"], rb["side"]) == \
            ("racks", "active", "racks", "passive")
        from scapy.all import TCP
        assert ra["local_isn"] == c["syn"][TCP].seq == rb["remote_isn"]
        assert ra["remote_isn"] == c["synack"][TCP].seq == rb["local_isn"]
        assert ra["nonce_local"] == syn["nonce"] == rb["nonce_peer"]
        assert ra["nonce_peer"] == ack["nonce"] == rb["nonce_local"]
        assert (ra["hp_sent"], ra["hp_peer"]) == (offered, echoed)
        assert (rb["hp_peer"], rb["hp_sent"]) == (offered, echoed)
        assert ra["peer_long"] and rb["peer_long"] and ra["local_long"]
        assert ra["remote_addr"] == rb["local_addr"] == b_addr
        assert rb["remote_addr"] == ra["local_addr"] == a_addr
        # (d) the data after the handshake: there (positive control),
        # and without racks' option: the callbacks were cleared.
        data = [p for p in c["data"] if len(p[TCP].payload) > 0]
        assert len(data) >= 2, port
        assert all(racks_option(tcp_raw(p))[0] is None for p in c["data"])
    assert len(set(nonces)) == 2 * n, nonces
    assert len(recs_a) == len(recs_b) == n
    for cnt, written in ((cnt_a, "written_syn"), (cnt_b, "written_synack")):
        assert cnt[written] == n and cnt["events_racks"] == n, cnt
        assert cnt["events_plain"] == 0 and cnt["ringbuf_full"] == 0, cnt
        assert cnt["parse_bad"] == 0 and cnt["no_room"] == 0, cnt
        # The other host's sockets are in the same cgroup.
        assert cnt["foreign_netns"] > 0, cnt


# --- (c) (e): a plain peer, and the other namespace left alone ------------------

def test_plain_peer_and_other_namespace_untouched(topo, cgroup, tmp_path):
    """Only A has the program. B's server and client are in the same
    cgroup, yet B's sockets are left alone: B answers A's offer plain,
    B's own SYNs carry no option, and A reports both connections plain."""
    ta = Tool(topo.a, cgroup, tmp_path)
    a4, b4 = topo.addr["a"]["v4"], topo.addr["b"]["v4"]
    start_server(topo.b, cgroup)
    start_server(topo.a, cgroup, port=PORT + 1)
    cap = testbed.Capture(topo.a, tmp_path / "a.pcap",
                          f"tcp port {PORT} or tcp port {PORT + 1}")
    out = run_client(topo.a, cgroup, b4, 2)
    back = run_client(topo.b, cgroup, a4, 2, port=PORT + 1)
    pkts = cap.packets()
    pids = host_never_in(cgroup)
    assert len(pids) == 2, pids        # A's server and B's, both alive
    recs, cnt = ta.stop()
    from scapy.all import TCP
    # A -> B: A's SYN offers (positive control), B's SYN-ACK is plain.
    conns = handshake([p for p in pkts if PORT in (p[TCP].sport,
                                                  p[TCP].dport)], a4, b4)
    for port in out["ports"]:
        assert racks_option(tcp_raw(conns[port]["syn"]))[0] is not None
        assert racks_option(tcp_raw(conns[port]["synack"]))[0] is None
        r = [r for r in recs if r["local_port"] == port]
        assert len(r) == 1 and r[0]["kind"] == "plain" and \
            r[0]["side"] == "active", r
        assert r[0]["local_isn"] == conns[port]["syn"][TCP].seq
        assert r[0]["remote_isn"] == conns[port]["synack"][TCP].seq
    # B -> A: B's SYN carries nothing (its namespace is not A's), A
    # answers plain and pushes no record: a plain client of A's is none
    # of rackd's business (it is only counted).
    conns = handshake([p for p in pkts if PORT + 1 in (p[TCP].sport,
                                                      p[TCP].dport)], b4, a4)
    for port in back["ports"]:
        assert racks_option(tcp_raw(conns[port]["syn"]))[0] is None
        assert racks_option(tcp_raw(conns[port]["synack"]))[0] is None
        assert not [r for r in recs if r["remote_port"] == port], recs
    assert len(recs) == 2, recs
    assert cnt["written_syn"] == 2 and cnt["written_synack"] == 0, cnt
    assert cnt["events_plain"] == 2 and cnt["events_racks"] == 0, cnt
    assert cnt["passive_plain"] == 2, cnt
    # The plain peers' records woke nobody: left for the next reading.
    assert cnt["lazy_records"] == 2, cnt
    assert cnt["foreign_netns"] >= 4, cnt   # B's listener, connects, accepts


# --- (f): the MSS -----------------------------------------------------------------

def test_mss_lowered_by_at_most_the_reserved_bytes(topo, cgroup, tmp_path):
    """The SYN's MSS option is the plain one, and full data segments of
    a racks connection are at most 20 bytes (the reserved room) shorter
    than a plain connection's, in one capture. One segment per skb
    (gso_max_segs 1 on A's eth0, a test-made link) so the capture shows
    the segments TCP cut."""
    topo.a.ip("link", "set", "dev", "eth0", "gso_max_segs", "1")
    b4 = topo.addr["b"]["v4"]
    start_server(topo.b, cgroup)
    cap = testbed.Capture(topo.a, tmp_path / "a.pcap",
                          f"tcp port {PORT} or tcp port {PORT + 1}")
    plain = run_client(topo.a, cgroup, b4, 1, size=200000)
    ta = Tool(topo.a, cgroup, tmp_path)
    tb = Tool(topo.b, cgroup, tmp_path)
    # A listener answers with the option only if it was made while the
    # program was attached (TCP_LISTEN_CB sets its flags).
    start_server(topo.b, cgroup, port=PORT + 1)
    racks = run_client(topo.a, cgroup, b4, 1, size=200000, port=PORT + 1)
    pkts = cap.packets()
    recs_a, _ = ta.stop()
    tb.stop()
    assert [r["kind"] for r in recs_a] == ["racks"]
    from scapy.all import TCP
    conns = handshake(pkts, topo.addr["a"]["v4"], b4)
    p, r = conns[plain["ports"][0]], conns[racks["ports"][0]]
    assert racks_option(tcp_raw(p["syn"]))[0] is None
    assert racks_option(tcp_raw(r["syn"]))[0] is not None
    assert mss_option(tcp_raw(p["syn"])) == mss_option(tcp_raw(r["syn"]))

    def biggest(c):
        return max(len(x[TCP].payload) for x in c["data"])

    assert 0 <= biggest(p) - biggest(r) <= 20, (biggest(p), biggest(r))
    print(f"\nfull segment: plain {biggest(p)} B, racks {biggest(r)} B; "
          f"SYN MSS {mss_option(tcp_raw(r['syn']))}")


# --- (g): syncookies --------------------------------------------------------------

def syncookies_sent(ns):
    text = ns.run(["cat", "/proc/net/netstat"]).stdout.splitlines()
    for names, values in zip(text[::2], text[1::2]):
        if names.startswith("TcpExt:"):
            row = dict(zip(names.split()[1:], values.split()[1:]))
            return int(row["SyncookiesSent"])
    raise AssertionError("no TcpExt in /proc/net/netstat")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_syncookie_mode_answers_and_reports(topo, cgroup, tmp_path, family):
    """tcp_syncookies=2 in B: every SYN-ACK is a cookie (B keeps no
    request socket), yet it carries the option, and both ends report each
    connection with matching nonces and ISNs."""
    topo.b.sysctl("net.ipv4.tcp_syncookies", "2")
    a_addr, b_addr = topo.addr["a"][family], topo.addr["b"][family]
    ta = Tool(topo.a, cgroup, tmp_path)
    tb = Tool(topo.b, cgroup, tmp_path)
    start_server(topo.b, cgroup)
    before = syncookies_sent(topo.b)
    cap = testbed.Capture(topo.a, tmp_path / "a.pcap", f"tcp port {PORT}")
    client = run_client(topo.a, cgroup, b_addr, 3)
    pkts = cap.packets()
    assert syncookies_sent(topo.b) - before >= 3     # cookies were sent
    recs_a, _ = ta.stop()
    recs_b, cnt_b = tb.stop()
    from scapy.all import TCP
    conns = handshake(pkts, a_addr, b_addr)
    for port in client["ports"]:
        ack = parse_option(racks_option(tcp_raw(conns[port]["synack"]))[0])
        ra = [r for r in recs_a if r["local_port"] == port]
        rb = [r for r in recs_b if r["remote_port"] == port]
        assert len(ra) == 1 and len(rb) == 1
        assert ra[0]["kind"] == rb[0]["kind"] == "racks"
        assert ra[0]["nonce_peer"] == ack["nonce"] == rb[0]["nonce_local"]
        assert ra[0]["nonce_local"] == rb[0]["nonce_peer"]
        assert rb[0]["local_isn"] == conns[port]["synack"][TCP].seq
        assert rb[0]["remote_isn"] == conns[port]["syn"][TCP].seq
    assert cnt_b["written_synack"] == 3 and cnt_b["events_racks"] == 3


# --- (h): a thousand connections --------------------------------------------------

@pytest.mark.bulk
def test_thousand_connections_thousand_records(topo, cgroup, tmp_path):
    """1,000 connections as fast as connbench opens them (IPv4 clients of
    a dual-stack listener: mapped addresses on B): 1,000 racks records on
    each side, none lost; then a 4 KiB ring buffer that nobody drains
    (its tool stopped) proves that a loss would be counted."""
    ta = Tool(topo.a, cgroup, tmp_path)
    tb = Tool(topo.b, cgroup, tmp_path, "--batch", "64")
    srv = in_cgroup(topo.b, cgroup, [CONNBENCH, "server", PORT])
    assert read_line(srv, 10, "connbench server") == "READY"
    cli = in_cgroup(topo.a, cgroup, [CONNBENCH, "client",
                                     topo.addr["b"]["v4"], PORT, 1000,
                                     "rate"])
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    rate = json.loads(out)
    wait_until(lambda: len(tb.records()) >= 1000, 20, "B's 1000 records")
    recs_a, cnt_a = ta.stop()
    recs_b, cnt_b = tb.stop()
    for recs, cnt in ((recs_a, cnt_a), (recs_b, cnt_b)):
        assert len(recs) == 1000 and all(r["kind"] == "racks" for r in recs)
        assert cnt["events_racks"] == 1000 and cnt["ringbuf_full"] == 0, cnt
    assert all(r["family"] == 4 for r in recs_b)     # mapped -> IPv4
    assert len({r["nonce_local"] for r in recs_a}) == 1000
    print(f"\n1000 connections at {rate['per_second']:.0f}/s: 1000 records "
          f"each side, ringbuf_full {cnt_a['ringbuf_full']} / "
          f"{cnt_b['ringbuf_full']}")

    # The negative's control: a ring buffer too small, not drained.
    small = Tool(topo.a, cgroup, tmp_path, "--ringbuf", "4096")
    os.kill(small.proc.pid, signal.SIGSTOP)
    try:
        cli = in_cgroup(topo.a, cgroup, [CONNBENCH, "client",
                                         topo.addr["b"]["v4"], PORT, 200,
                                         "rate"])
        assert cli.wait(timeout=60) == 0
    finally:
        os.kill(small.proc.pid, signal.SIGCONT)
    recs, cnt = small.stop()
    assert cnt["ringbuf_full"] > 0, cnt
    assert len(recs) + cnt["ringbuf_full"] == 200, (len(recs), cnt)
    print(f"4 KiB ring buffer, not drained: {len(recs)} records kept, "
          f"{cnt['ringbuf_full']} counted as lost")


# --- fallback ---------------------------------------------------------------------

def test_probe_says_why_and_nothing_is_attached(topo, cgroup, tmp_path):
    """A bogus cgroup path, a directory that is no cgroup v2, and an
    unprivileged user each get a one-line reason, and leave nothing
    attached; the privileged probe of the real cgroup says yes."""
    def probe(*args, user=False):
        pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all"] if user else []
        r = testbed.run(topo.a.exec_prefix(nsenter=True) + pre +
                        [str(TOOL), "--probe", *args], check=False)
        return r.returncode, json.loads(r.stdout.splitlines()[-1])

    rc, p = probe("--cgroup", "/nonexistent/racks")
    assert rc == 1 and not p["ok"] and "/nonexistent/racks" in p["why"] and \
        "No such file" in p["why"], p
    rc, p = probe("--cgroup", str(tmp_path))
    assert rc == 1 and "is not a cgroup v2 directory" in p["why"], p
    rc, p = probe("--cgroup", str(cgroup), user=True)
    assert rc == 1 and p["why"].startswith("no privilege"), p
    rc, p = probe("--cgroup", str(cgroup))
    assert rc == 0 and p["ok"], p

    def attached():
        r = testbed.run(["bpftool", "-j", "cgroup", "show", str(cgroup)])
        return json.loads(r.stdout.strip() or "[]")

    # The unprivileged open fails the same way and attaches nothing.
    r = topo.a.popen(["setpriv", "--reuid=65534", "--regid=65534",
                      "--clear-groups", "--inh-caps=-all",
                      "--bounding-set=-all", TOOL, "--cgroup", cgroup],
                     nsenter=True)
    out, _ = r.communicate(timeout=20)
    assert r.returncode == 1 and "no privilege" in out, out
    assert attached() == []
    # Positive control: attached while the tool runs, gone after.
    t = Tool(topo.a, cgroup, tmp_path)
    progs = attached()
    assert len(progs) == 1 and progs[0]["attach_type"] == "cgroup_sock_ops" \
        and progs[0]["attach_flags"] == "multi", progs
    t.stop()
    assert attached() == []


def test_built_and_loaded_without_the_kernels_btf(topo, cgroup, tmp_path):
    """The program is built from UAPI headers (<linux/bpf.h>), no
    vmlinux.h, no CO-RE: in a mount namespace whose /sys/kernel/btf is an
    empty tmpfs (a chroot, a buildd, a container), `make` builds the
    object, byte for byte the one the tree's build loads, and its
    skeleton (and the listener iterator's, whose CO-RE relocations wait
    for the load); and the sock_ops program still loads there (the
    verifier's yes: --probe), since no relocation needs the kernel's
    BTF."""
    testbed.make("build/bpf/racks_sockops.bpf.o")
    build = tmp_path / "build"
    hidden = ("mount -t tmpfs none /sys/kernel/btf && "
              "test ! -e /sys/kernel/btf/vmlinux && ")
    r = testbed.run(["unshare", "-m", "sh", "-c", hidden +
                     f"make -s -C {testbed.REPO} BUILD={build} "
                     f"{build}/bpf/racks_sockops.skel.h "
                     f"{build}/bpf/racks_listeners.skel.h"], check=False,
                    timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not list(build.rglob("vmlinux.h"))
    obj = (build / "bpf" / "racks_sockops.bpf.o").read_bytes()
    assert obj == (testbed.REPO / "build" / "bpf" /
                   "racks_sockops.bpf.o").read_bytes()
    for skel in ("racks_sockops", "racks_listeners"):
        assert (build / "bpf" / f"{skel}.skel.h").stat().st_size > 0
    # Loaded with the kernel's BTF out of sight, inside A's namespace.
    r = testbed.run(["unshare", "-m", "sh", "-c", hidden +
                     f"exec nsenter --net=/run/netns/{topo.a.name} "
                     f"{TOOL} --probe --cgroup {cgroup}"], check=False)
    p = json.loads(r.stdout.splitlines()[-1])
    assert r.returncode == 0 and p["ok"], (r.stdout, r.stderr)


# --- what it costs ----------------------------------------------------------------

def connect_p50(topo, cgroup, count, port=PORT):
    cli = in_cgroup(topo.a, cgroup, [CONNBENCH, "client",
                                     topo.addr["b"]["v4"], port, count])
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    return json.loads(out)["p50_us"]


@pytest.mark.timing
def test_connect_latency_with_and_without_the_program(topo, cgroup,
                                                      tmp_path):
    """connect() p50 (connbench, paced) without the program, with it on
    both ends, and without it again, in one run: a printed figure, not an
    assertion (bench/ owns the goals)."""
    def server(port):
        srv = in_cgroup(topo.b, cgroup, [CONNBENCH, "server", port])
        assert read_line(srv, 10, "connbench server") == "READY"

    server(PORT)
    count = 300
    plain = [connect_p50(topo, cgroup, count)]
    ta, tb = Tool(topo.a, cgroup, tmp_path), Tool(topo.b, cgroup, tmp_path)
    server(PORT + 1)    # listening while attached: answers with racks
    bpf = [connect_p50(topo, cgroup, count, PORT + 1) for _ in range(2)]
    # The same with both tools stopped: the program's own cost, without
    # the wake-ups and the work of a reader on this 2-core machine (the
    # 1 MiB ring buffers hold these records until the tools go on).
    for t in (ta, tb):
        os.kill(t.proc.pid, signal.SIGSTOP)
    try:
        quiet = [connect_p50(topo, cgroup, count, PORT + 1)
                 for _ in range(2)]
    finally:
        for t in (ta, tb):
            os.kill(t.proc.pid, signal.SIGCONT)
    recs, cnt = ta.stop()
    tb.stop()
    plain.append(connect_p50(topo, cgroup, count))
    assert cnt["events_racks"] == 4 * count and cnt["ringbuf_full"] == 0, cnt
    p, b, q = (statistics.median(x) for x in (plain, bpf, quiet))
    print(f"\nconnect() p50: plain {plain} us; BPF option both ends, "
          f"records read as they come {bpf} us (ratio {b / p:.2f}); "
          f"records left in the ring {quiet} us (ratio {q / p:.2f})")
