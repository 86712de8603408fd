"""The network forgets a connection and nobody moves (issue 21): R, a
strict stateful firewall or a masquerading NAT, loses its conntrack entry
for a managed flow (``conntrack -F`` in R, or its own established timeout)
while the path is cut, or while data flows. To R every later segment of
the flow is a mid-stream segment of an unknown flow, which its strict
policy drops; plain TCP never recovers. A suspended racks connection
re-opens its path itself with a reconnection SYN on its current addresses,
which R admits as the new flow it is, and data flows again.

Topology: the standard A -- R -- B (see testbed.py); R's middlebox is one
nft table, ``forget`` (testbed.Topology.forgetting_box), every acting rule
of it counting::

    A 10.71.1.2 ---- R [strict firewall | NAT] ---- B 10.71.2.2
      fd71:1::2          conntrack -F               fd71:2::2

    forward (policy drop):
      ct state invalid                    counter invalid     drop
      ct state established,related                            accept
      icmp, icmpv6                                            accept
      SYN, ct state new, racks' reconnection marker  counter reopen_syn
      SYN (of syn|ack|fin|rst), ct state new  counter syn_new  accept
      (everything else)                   counter dropped     (policy drop)
    input (NAT only): a TCP segment from B to R's own address that is
      of no flow R tracks (ct state new or invalid)
                                      counter unsolicited drop
      (a NAT that forgot drops, rather than resets, what it does not know)
    postrouting (NAT): towards B     counter masqueraded masquerade [fully-random]
    prerouting (port forward): B -> R:PORT  counter forwarded  dnat to A:PORT

"R drops everything" during a cut: testbed.cut_silent on both of R's
interfaces (netdev tables, so nothing reaches conntrack meanwhile and the
table stays as empty as the flush left it). Times are from the restore
(the goal: data flows within 2 s of the path being usable, default
configuration), or, with no cut, the longest pause the application saw
(the path goes silent at the flush, rackd suspends after suspend_after).

rackd's interface for a suspended connection (``rackctl list --json``):
``suspended_reason`` (link_down, path_silent, reopen_refused, reopen_off),
``reopen_attempts``, ``suspended_for``; racks.conf ``reopen = yes|no``.
"""

import ipaddress
import json
import re
import signal
import subprocess
import threading
import time

import pytest

import racks
import testbed
from test_programs import SSH_PORT, start_sshd, stop_sshd
from testbed import start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
CUT_SECONDS = 12
SUSPEND_AFTER = 5.0           # rackd's default
GOAL = 2.0                    # restore -> data flowing (issue 21)
SLACK = 1.0                   # a shared, busy machine
RATE = 1 * MB                 # bytes/s each way
COUNT = 320                   # ssh counter lines, one per 100 ms
REASONS = {"link_down", "path_silent", "reopen_refused", "reopen_off"}
RECONNECTION_MARKER = testbed.RECONNECTION_MARKER

BOXES = ["firewall", "nat"]


# --- R: the middlebox that forgets -------------------------------------------

def forgetting_box(topo, nat=None, forward_port=None):
    """R's forgetting middlebox (testbed.Topology.forgetting_box, the
    module docstring's rules), checked in place."""
    box = topo.forgetting_box(nat=nat, forward_port=forward_port)
    listing = box.listing()
    assert "policy drop" in listing, listing
    assert ("masquerade" in listing) == bool(nat), listing
    return box


def nat_of(box):
    return "masquerade" if box == "nat" else None


def conntrack_tcp(topo):
    return topo.conntrack_tcp()


def forget(topo):
    """R forgets every flow; how many TCP flows it forgot."""
    return len(topo.forget())


def reply_ports(entries, server_port):
    """The ports R's NAT gave flows to server_port: the destination port
    of each entry's reply tuple (``... src=B dst=R sport=P dport=X``)."""
    out = []
    for line in entries:
        ports = re.findall(r"sport=(\d+) dport=(\d+)", line)
        if len(ports) == 2 and int(ports[0][1]) == server_port:
            out.append(int(ports[1][1]))
    return out


def cut_everything(topo):
    """R drops every frame on both of its interfaces (carrier kept);
    returns the two cut Middleboxes."""
    return [topo.cut_silent(h) for h in "ab"]


def restore_everything(topo, cuts):
    """Undo cut_everything, once each cut has shown that it acted (its
    table goes with the restore)."""
    for c in cuts:
        c.assert_acted("cut")
    # One transaction: restored one side before the other, R would see
    # (and track) a SYN that the other side's cut then drops.
    testbed.nft(topo.r, "; ".join(f"delete table {c.family} {c.table}"
                                  for c in cuts))


def gateway(topo, host, family):
    """R's address on host's side."""
    net = ipaddress.ip_interface(
        f"{topo.addr[host][family]}/{topo.prefix[host][family]}").network
    return str(net.network_address + 1)


def host_port(endpoint):
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]"), int(port)


# --- the application's view ---------------------------------------------------

class Session:
    """ssh from A to B over family, a counter line every 100 ms from B;
    every line time-stamped on arrival (time.monotonic())."""

    def __init__(self, topo, key, tmp, family, count=COUNT):
        self.stderr_path = tmp / "ssh.stderr"
        self.count = count
        argv = ["ssh", "-F", "/dev/null", "-i", str(key), "-n", "-T",
                "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null",
                "-o", "ServerAliveInterval=0", "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR",
                "-p", str(SSH_PORT), f"root@{topo.addr['b'][family]}",
                f"i=0; while [ $i -lt {count} ]; do echo $i; i=$((i+1)); "
                f"sleep 0.1; done"]
        with open(self.stderr_path, "w") as err:
            self.proc = topo.a.popen(argv, stdin=subprocess.DEVNULL,
                                     stderr=err)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def first_after(self, t, timeout):
        """Arrival time of the first line after monotonic time t."""
        return testbed.wait_until(
            lambda: next((at for at, _ in list(self.lines) if at > t), None),
            timeout, lambda: f"an ssh line after the restore "
            f"({len(self.lines)} lines, last {self.lines[-1:]})")

    def longest_gap(self):
        lines = list(self.lines)
        return max((b[0] - a[0] for a, b in zip(lines, lines[1:])),
                   default=0.0)

    def check(self, timeout):
        """Every line once, in order, and a clean exit."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"ssh still running; {len(self.lines)} "
                                 f"lines, last {self.lines[-1:]}") from None
        self.reader.join(10)
        stderr = self.stderr_path.read_text()
        got = [text for _, text in self.lines]
        assert got == [str(i) for i in range(self.count)], \
            (len(got), got[-3:], stderr)
        assert code == 0, stderr


def managed(rackd, side, ports=(SSH_PORT, PORT)):
    """The test's connections in rackd (A: by remote port, B: by local)."""
    key = "remote_port" if side == "a" else "local_port"
    return [c for port in ports
            for c in racks.conns_between(rackd, **{key: port})]


def wait_managed(rackd, side, state, n, timeout, ports=(SSH_PORT, PORT)):
    def ready():
        conns = managed(rackd, side, ports)
        return conns if len(conns) == n and \
            all(c["state"] == state for c in conns) else None
    return testbed.wait_until(ready, timeout, lambda: f"{n} {state}: "
                              f"{json.dumps(managed(rackd, side, ports))}")


def wait_suspensions(rackd, n, timeout):
    testbed.wait_until(lambda: rackd.status()["suspensions"] >= n, timeout,
                       lambda: f"{n} suspensions: {rackd.status()['suspensions']}"
                       f", {rackd.connections()}")


def watch_suspended(rackds, seconds, ports=(SSH_PORT, PORT)):
    """Poll every rackd's connections for seconds: each poll must show
    every one suspended (none connected: no flapping), with a reason of
    REASONS, reopen_attempts and suspended_for. Returns {side:
    [(reasons, attempts), ...]} per poll."""
    seen = {side: [] for side in rackds}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for side, rackd in rackds.items():
            conns = managed(rackd, side, ports)
            assert conns, f"{side}: the connections vanished"
            for c in conns:
                assert c["state"] == "suspended", (side, c)
                assert c.get("suspended_reason") in REASONS, (side, c)
                assert isinstance(c.get("reopen_attempts"), int), (side, c)
                assert isinstance(c.get("suspended_for"), (int, float)), \
                    (side, c)
            seen[side].append(([c["suspended_reason"] for c in conns],
                               [c["reopen_attempts"] for c in conns]))
        time.sleep(0.5)
    return seen


def assert_growing(seen, side):
    """Each connection's reopen_attempts never fell and grew over the
    polls of watch_suspended."""
    polls = [attempts for _, attempts in seen[side]]
    assert len(polls) >= 3, seen[side]
    for i in range(len(polls[0])):
        series = [p[i] for p in polls]
        assert series == sorted(series) and series[-1] > series[0], \
            (side, i, series)


def status_line(rackd):
    st = rackd.status()
    keys = ("suspensions", "resumes", "reconnects_sent", "reconnects_accepted",
            "reconnect_acks_in", "reconnect_acks_out")
    return {k: st.get(k) for k in keys}


# --- positive controls: the box really forgets, plain TCP dies ---------------

PINGPONG = """
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
print("CONNECTED", s.getsockname()[1], flush=True)
for line in sys.stdin:
    s.settimeout(float(line))
    s.sendall(b"ping")
    try:
        print("REPLY", s.recv(100).decode(), flush=True)
    except OSError as e:
        print("NOREPLY", type(e).__name__, flush=True)
"""

ECHO = """
import socket, sys, threading
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(); print("READY", flush=True)
def serve(c):
    try:
        while data := c.recv(100):
            c.sendall(b"pong:" + data)
    except OSError:
        pass
    c.close()
while True:
    c, peer = s.accept()
    print("PEER", peer[1], flush=True)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


class PingPong:
    """An echo server in server_ns and a client in client_ns to addr:port
    that pings on request."""

    def __init__(self, client_ns, server_ns, addr, port):
        self.server = server_ns.popen([testbed.PYTHON, "-c", ECHO, str(port)])
        assert testbed.read_line(self.server, 10, "echo") == "READY"
        self.client = client_ns.popen([testbed.PYTHON, "-c", PINGPONG, addr,
                                       str(port)], stdin=subprocess.PIPE)
        word, local = testbed.read_line(self.client, 15, "pingpong").split()
        assert word == "CONNECTED"
        self.local_port = int(local)
        word, peer = testbed.read_line(self.server, 5, "echo's peer").split()
        self.peer_port = int(peer)         # as the server sees it

    def ping(self, timeout):
        self.client.stdin.write(f"{timeout}\n")
        self.client.stdin.flush()
        return testbed.read_line(self.client, timeout + 5, "pingpong")

    def close(self):
        testbed.terminate([self.client, self.server])


@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("nat, forward", [(None, False), ("masquerade", False),
                                          ("fully-random", False),
                                          ("masquerade", True)],
                         ids=["firewall", "nat", "nat-new-port",
                              "port-forward"])
def test_plain_tcp_dies_when_the_box_forgets(topo, family, nat, forward):
    """The positive control of everything below, without rackd: a plain
    connection through R echoes, R forgets it, and it never echoes again
    (every segment of it is mid-stream to R, dropped, counted). With a
    port forward the server is A and the client B (to R's address)."""
    box = forgetting_box(topo, nat=nat, forward_port=PORT if forward else None)
    if forward:
        pp = PingPong(topo.b, topo.a, gateway(topo, "b", family), PORT)
    else:
        pp = PingPong(topo.a, topo.b, topo.addr["b"][family], PORT)
    try:
        assert pp.ping(5) == "REPLY pong:ping"
        entries = conntrack_tcp(topo)
        assert len(entries) == 1, entries
        before = box.counts()
        flushed = forget(topo)
        assert pp.ping(3).startswith("NOREPLY")
        # What the client sent (and resent) went nowhere...
        box.assert_acted("dropped", since=before)
        # ... and never came back to life: R still knows of nothing.
        assert pp.ping(3).startswith("NOREPLY")
        assert not conntrack_tcp(topo), conntrack_tcp(topo)
        after = box.counts()
        assert after["syn_new"] == before["syn_new"], (before, after)
        assert after["invalid"] == 0, after
    finally:
        pp.close()
    print(f"\n{family} {nat or 'firewall'}{' port-forward' if forward else ''}:"
          f" {flushed} entr{'y' if flushed == 1 else 'ies'} forgotten; R "
          f"{before} -> {after}")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_the_new_port_nat_hands_out_a_new_port_after_forgetting(topo, family):
    """The fixture of the new-port NAT, without rackd: two plain
    connections from the same source port of A, R forgetting between
    them, reach B from different ports (masquerade fully-random), as R's
    table says too; with plain masquerade they reach B from the same."""
    ports = {}
    for nat in ("fully-random", "masquerade"):
        box = forgetting_box(topo, nat=nat)
        server = topo.b.popen([testbed.PYTHON, "-c", ECHO, str(PORT)])
        assert testbed.read_line(server, 10, "echo") == "READY"
        seen, mapped = [], []
        for _ in range(2):
            client = topo.a.run([testbed.PYTHON, "-c", f"""
import socket
s = socket.socket(socket.AF_INET6 if {family == 'v6'} else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 47123))
s.connect(("{topo.addr['b'][family]}", {PORT}))
s.sendall(b"x"); assert s.recv(10) == b"pong:x"
import struct; s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
"""])
            assert client.returncode == 0
            word, peer = testbed.read_line(server, 5, "echo's peer").split()
            seen.append(int(peer))
            mapped += reply_ports(conntrack_tcp(topo), PORT)
            forget(topo)
        testbed.terminate([server])
        box.assert_acted("masqueraded", at_least=2)
        box.remove()
        ports[nat] = (seen, mapped)
    (first, second), mapped = ports["fully-random"]
    assert first != second, ports
    assert sorted(mapped) == sorted([first, second]), ports
    same = ports["masquerade"][0]
    assert same == [47123, 47123], ports
    print(f"\n{family}: B saw A's port 47123 as {ports}")


# --- 1. forgotten during a cut, and while busy --------------------------------

def start_apps(topo, tmp_path, family, size, timeout):
    """sshd on B, the counter session and a paced transfer both ways."""
    sshd, key = start_sshd(topo, tmp_path)
    session = Session(topo, key, tmp_path, family)
    server, client = racks.start_transfer(topo, family, size, PORT, rate=RATE,
                                          timeout=timeout)
    testbed.wait_until(lambda: len(session.lines) > 5, 15,
                       "the first counter lines")
    return sshd, session, server, client


def forgotten_with_apps(topo, tmp_path, family, box_kind, cut, config=None):
    """ssh counter and a transfer both ways between A and B, both managed;
    R forgets them (during a CUT_SECONDS cut of everything, or with cut
    False while data flows). Returns the figures; asserts the rest."""
    box = forgetting_box(topo, nat=nat_of(box_kind))
    ra = topo.start_rackd("a", config=config)
    rb = topo.start_rackd("b", config=config)
    rackds = {"a": ra, "b": rb}
    size = (CUT_SECONDS + 10) * MB if cut else 16 * MB
    sshd, session, server, client = start_apps(topo, tmp_path, family, size,
                                               timeout=90)
    procs = [session.proc, server.proc, client.proc]
    try:
        for side in "ab":
            wait_managed(rackds[side], side, "connected", 2, 15)
        if cut:
            cuts = cut_everything(topo)
            t_cut = time.monotonic()
            for side in "ab":
                wait_managed(rackds[side], side, "suspended", 2,
                             SUSPEND_AFTER + 4)
            before = box.counts()
            flushed = forget(topo)
            t_forgot = time.monotonic()
            seen = watch_suspended(rackds, CUT_SECONDS - 1.0 -
                                   (time.monotonic() - t_cut))
            for side in "ab":
                assert_growing(seen, side)
            assert not conntrack_tcp(topo), "R learnt something in the cut"
            time.sleep(max(0.0, CUT_SECONDS - (time.monotonic() - t_cut)))
            restore_everything(topo, cuts)
            t_back = time.monotonic()
        else:
            time.sleep(1.0)
            before = box.counts()
            flushed = forget(topo)
            t_forgot = t_back = time.monotonic()
            # Counted, not polled: re-opened at once, a connection may be
            # suspended for less than a poll. Whichever end suspends first
            # re-opens, and its peer may hear it before its own
            # suspend_after is up: two suspensions in all (and R's
            # reopen_syn, below, shows both connections re-opened).
            testbed.wait_until(
                lambda: sum(r.status()["suspensions"]
                            for r in rackds.values()) >= 2,
                SUSPEND_AFTER + 4,
                lambda: "2 suspensions: " + ", ".join(
                    f"{s} {r.status()['suspensions']} {r.connections()}"
                    for s, r in rackds.items()))
            seen = {}
        t_data = session.first_after(t_back if cut else t_forgot + 0.5,
                                     SUSPEND_AFTER + 10)
        to_data = t_data - t_back
        wait_managed(ra, "a", "connected", 1, 10, ports=(SSH_PORT,))
        wait_managed(rb, "b", "connected", 1, 10, ports=(SSH_PORT,))
        session.check(60)
        racks.check_both_ways(server, client, size, 90)
        after = box.counts()
    finally:
        stop_sshd(sshd)
        testbed.terminate(procs)
    # R admitted each connection's fresh flow by its SYN, racks' own.
    assert after["syn_new"] - before["syn_new"] >= 2, (before, after)
    assert after["reopen_syn"] - before["reopen_syn"] >= 2, (before, after)
    # Not asserted: `invalid`. Both ends re-open; where their SYNs cross,
    # R takes the later one, in the reply direction of the flow the
    # earlier one opened, for invalid and drops it (harmless: the first
    # re-opened the flow).
    if not cut:
        # The flows' segments after the flush were mid-stream to R.
        box.assert_acted("dropped", since=before)
    return {"flushed": flushed, "to_data": to_data,
            "gap": session.longest_gap(), "before": before, "after": after,
            "seen": {s: seen[s][-1] for s in seen},
            "status": {s: status_line(r) for s, r in rackds.items()}}


@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("box", BOXES)
def test_forgotten_during_a_cut_flows_again(topo, tmp_path, family, box):
    """A 12 s cut of everything at R, no move; meanwhile R forgets the
    flows. Both ends stay suspended with a reason, re-opening (no end
    ever says connected), R admits the re-opened flows by their SYNs,
    data flows within 2 s (+ slack) of the restore, ssh counts on, and
    the transfers are byte-exact both ways."""
    got = forgotten_with_apps(topo, tmp_path, family, box, cut=True)
    print(f"\n{family} {box}, {CUT_SECONDS} s cut, {got['flushed']} entries "
          f"forgotten: data {got['to_data']:.2f} s after the restore; R "
          f"{got['before']} -> {got['after']}; in the cut {got['seen']}; "
          f"{got['status']}")
    assert got["to_data"] <= GOAL + SLACK, got


@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("box", BOXES)
def test_forgotten_while_busy_flows_again(topo, tmp_path, family, box):
    """R forgets the flows while data flows, nothing cut: the path goes
    silent at once, rackd suspends after suspend_after, re-opens, and the
    application's longest pause is at most suspend_after + 2 s (+ slack)."""
    got = forgotten_with_apps(topo, tmp_path, family, box, cut=False)
    print(f"\n{family} {box}, forgotten while busy ({got['flushed']} "
          f"entries): data {got['to_data']:.2f} s after the flush, longest "
          f"ssh pause {got['gap']:.2f} s; R {got['before']} -> "
          f"{got['after']}; {got['status']}")
    assert got["gap"] <= SUSPEND_AFTER + GOAL + SLACK, got


# --- 2. the NAT's own timeout --------------------------------------------------

@pytest.mark.slow
@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
def test_nat_timeout_expires_during_a_long_cut(topo, tmp_path, family):
    """R's nf_conntrack_tcp_timeout_established is 10 s (its netns only;
    the host's stays as it was); a 25 s cut of everything outlives it, R
    drops the flows by itself (the test sees them go), and after the
    restore they are re-opened as after a flush."""
    host = testbed.run(["sysctl", "-n", "net.netfilter."
                        "nf_conntrack_tcp_timeout_established"]).stdout
    topo.r.sysctl("net.netfilter.nf_conntrack_tcp_timeout_established", 10)
    assert testbed.run(["sysctl", "-n", "net.netfilter."
                        "nf_conntrack_tcp_timeout_established"]).stdout == host
    cut_seconds = 25
    box = forgetting_box(topo, nat="masquerade")
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    size = (cut_seconds + 10) * MB
    sshd, session, server, client = start_apps(topo, tmp_path, family, size,
                                               timeout=120)
    procs = [session.proc, server.proc, client.proc]
    try:
        for side, r in (("a", ra), ("b", rb)):
            wait_managed(r, side, "connected", 2, 15)
        assert len(conntrack_tcp(topo)) >= 2
        cuts = cut_everything(topo)
        t_cut = time.monotonic()
        testbed.wait_until(lambda: not conntrack_tcp(topo), cut_seconds - 5,
                           lambda: f"R to time the flows out: "
                           f"{conntrack_tcp(topo)}")
        expired = time.monotonic() - t_cut
        before = box.counts()
        time.sleep(max(0.0, cut_seconds - (time.monotonic() - t_cut)))
        restore_everything(topo, cuts)
        t_back = time.monotonic()
        to_data = session.first_after(t_back, 10) - t_back
        session.check(90)
        racks.check_both_ways(server, client, size, 120)
        after = box.counts()
    finally:
        stop_sshd(sshd)
        testbed.terminate(procs)
    assert after["syn_new"] - before["syn_new"] >= 2, (before, after)
    assert after["reopen_syn"] - before["reopen_syn"] >= 2, (before, after)
    print(f"\n{family}: R timed the flows out {expired:.1f} s into the "
          f"{cut_seconds} s cut; data {to_data:.2f} s after the restore; "
          f"R {before} -> {after}")
    assert to_data <= GOAL + SLACK


# --- 3. a port forward; a NAT that hands out a new port ----------------------

@pytest.mark.parametrize("family", ["v4", "v6"])
def test_server_behind_a_forgetting_port_forward(topo, family):
    """A serves behind R's port forward (B connects to R's address): R
    forgets during a 12 s cut; the connection is re-opened (by A, out
    through the masquerade, or by B, in through the forward) and the
    transfer is byte-exact both ways."""
    box = forgetting_box(topo, nat="masquerade", forward_port=PORT)
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    size = (CUT_SECONDS + 10) * MB
    server = start_xfer_server(topo.a, PORT, send=size, rate=RATE,
                               timeout=90)
    client = start_xfer_client(topo.b, gateway(topo, "b", family), PORT, size,
                               recv=True, rate=RATE, announce=True,
                               timeout=90)
    try:
        client.connected()
        box.assert_acted("forwarded")
        # A is the server here: its connection by local port ("b"'s
        # filter), B's by remote port.
        wait_managed(ra, "b", "connected", 1, 15, ports=(PORT,))
        wait_managed(rb, "a", "connected", 1, 15, ports=(PORT,))
        cuts = cut_everything(topo)
        t_cut = time.monotonic()
        for side, r in (("b", ra), ("a", rb)):
            wait_managed(r, side, "suspended", 1, SUSPEND_AFTER + 4,
                         ports=(PORT,))
        before = box.counts()
        flushed = forget(topo)
        time.sleep(max(0.0, CUT_SECONDS - (time.monotonic() - t_cut)))
        restore_everything(topo, cuts)
        t_back = time.monotonic()
        wait_managed(rb, "a", "connected", 1, 15, ports=(PORT,))
        took = time.monotonic() - t_back
        racks.check_both_ways(server, client, size, 90)
        after = box.counts()
    finally:
        testbed.terminate([server.proc, client.proc])
    assert after["syn_new"] - before["syn_new"] >= 1, (before, after)
    opened = {k: after[k] - before[k] for k in ("forwarded", "masqueraded")}
    assert sum(opened.values()) >= 1, (before, after)
    print(f"\n{family} port forward: {flushed} entries forgotten; B "
          f"connected {took:.2f} s after the restore; re-opened through "
          f"{opened}; R {before} -> {after}")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_client_behind_a_nat_that_hands_out_a_new_port(topo, family):
    """R masquerades A fully-random and forgets while data flows: the
    re-opened flow leaves R from another port, B follows it (its
    wire_remote), and the transfer is byte-exact both ways."""
    box = forgetting_box(topo, nat="fully-random")
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    size = 16 * MB
    server, client = racks.start_transfer(topo, family, size, PORT, rate=RATE,
                                          timeout=90)
    try:
        wait_managed(ra, "a", "connected", 1, 15, ports=(PORT,))
        mine = wait_managed(rb, "b", "connected", 1, 15, ports=(PORT,))[0]
        old = host_port(mine["wire_remote"])
        assert reply_ports(conntrack_tcp(topo), PORT) == [old[1]], \
            (old, conntrack_tcp(topo))
        time.sleep(1)
        before = box.counts()
        forget(topo)
        wait_suspensions(rb, 1, SUSPEND_AFTER + 4)

        def moved():
            conns = managed(rb, "b", (PORT,))
            return conns and conns[0]["state"] == "connected" and \
                host_port(conns[0]["wire_remote"]) != old and conns[0]
        now = testbed.wait_until(moved, 10, lambda: f"B at a new port: "
                                 f"{managed(rb, 'b', (PORT,))}")
        new = host_port(now["wire_remote"])
        mapped = reply_ports(conntrack_tcp(topo), PORT)
        racks.check_both_ways(server, client, size, 90)
        after = box.counts()
    finally:
        testbed.terminate([server.proc, client.proc])
    assert new[0] == old[0] == gateway(topo, "b", family), (old, new)
    assert new[1] != old[1] and mapped == [new[1]], (old, new, mapped)
    assert host_port(now["remote"]) == old, now     # the socket's view
    assert after["syn_new"] - before["syn_new"] >= 1, (before, after)
    box.assert_acted("masqueraded", at_least=1, since=before)
    print(f"\n{family}: R mapped A to port {old[1]}, after forgetting to "
          f"{new[1]}; R {before} -> {after}")


# --- 4. the outside end cannot re-open -----------------------------------------

@pytest.mark.timing
def test_outside_end_of_a_nat_cannot_reopen_and_says_so(topo):
    """A (inside R's NAT) has reopen = no; R forgets while data flows. B,
    outside, cannot re-open (its SYNs end in R's `unsolicited`): both
    ends stay suspended with their reasons, B's attempts grow, A's say
    reopen_off, neither ever says connected. Reloaded with reopen = yes,
    A re-opens the path and the transfer completes byte-exact."""
    box = forgetting_box(topo, nat="masquerade")
    ra = topo.start_rackd("a", config="reopen = no\n")
    rb = topo.start_rackd("b")
    size = 24 * MB
    server, client = racks.start_transfer(topo, "v4", size, PORT, rate=RATE,
                                          timeout=120)
    try:
        wait_managed(ra, "a", "connected", 1, 15, ports=(PORT,))
        wait_managed(rb, "b", "connected", 1, 15, ports=(PORT,))
        time.sleep(1)
        forget(topo)
        for side, r in (("a", ra), ("b", rb)):
            wait_managed(r, side, "suspended", 1, SUSPEND_AFTER + 4,
                         ports=(PORT,))
        before = box.counts()
        seen = watch_suspended({"a": ra, "b": rb}, 6, ports=(PORT,))
        assert_growing(seen, "b")
        assert all(reasons == ["reopen_off"] and attempts == [0]
                   for reasons, attempts in seen["a"]), seen["a"]
        # B tried, into R's input: a NAT opens nothing from outside.
        box.assert_acted("unsolicited", since=before)
        assert box.counts()["syn_new"] == before["syn_new"]
        ra.conf.write_text("reopen = yes\n")
        ra.kill(signal.SIGHUP)
        t_on = time.monotonic()
        wait_managed(ra, "a", "connected", 1, 10, ports=(PORT,))
        took = time.monotonic() - t_on
        racks.check_both_ways(server, client, size, 120)
        after = box.counts()
    finally:
        testbed.terminate([server.proc, client.proc])
    assert after["reopen_syn"] > before["reopen_syn"], (before, after)
    print(f"\nB outside: {seen['b'][-1]}, A {seen['a'][-1]}; A connected "
          f"{took:.2f} s after reopen = yes; R {before} -> {after}")


# --- 5. a plain peer sees nothing new ------------------------------------------

def reconnection_syns(pkts):
    """SYNs that a plain TCP never sends: data in a SYN, or racks'
    option 254 with the reconnection's type."""
    from scapy.all import TCP
    out = []
    for p in pkts:
        t = p[TCP]
        if not t.flags & 0x02:
            continue
        raw = bytes(t)
        opts, pay = raw[20:4 * t.dataofs], bytes(t.payload)
        if pay or racks_option(opts, RECONNECTION_MARKER):
            out.append(p)
    return out


def racks_option(opts, kind_byte=None):
    """Whether TCP option bytes carry racks' option 254 (with kind_byte
    as its fifth byte, when given)."""
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        body = opts[i:i + opts[i + 1]]
        if kind == 254 and body[2:4] == b"ra" and \
                (kind_byte is None or (len(body) > 4 and body[4] == kind_byte)):
            return True
        i += opts[i + 1]
    return False


@pytest.mark.parametrize("family, box, racks_on", [
    ("v4", "nat", "a"), ("v6", "nat", "a"), ("v4", "firewall", "a"),
    ("v6", "firewall", "a"), ("v4", "firewall", "b")])
def test_plain_peer_sees_no_reconnection_syn(topo, tmp_path, family, box,
                                              racks_on):
    """rackd on one end only (the client; behind the NAT, A), a plain
    peer on the other: the connection is left unmanaged; R forgets it
    during a cut of everything. What the rackd host sends holds its
    connection's own handshake SYN, with racks' offer (the capture's
    positive control: it sees the option), and its data, but never a
    SYN with data or with racks' reconnection marker, nor any SYN after
    the first; the connection stays dead (plain TCP, R forgot it)."""
    from scapy.all import IP, IPv6, TCP
    fw = forgetting_box(topo, nat=nat_of(box))
    rackd = topo.start_rackd(racks_on)
    other = topo.other(racks_on)
    cap = testbed.Capture(topo.ns(racks_on), tmp_path / "sent.pcap",
                          f"tcp port {PORT}")
    pp = PingPong(topo.ns(racks_on), topo.ns(other),
                  topo.addr[other][family], PORT)
    try:
        assert pp.ping(5) == "REPLY pong:ping"
        conns = racks.wait_states(rackd, "released", 20, remote_port=PORT)
        shown = rackd.ctl_json("show", str(conns[0]["id"]))
        assert shown["unmanaged"], shown
        cuts = cut_everything(topo)
        time.sleep(1)
        forget(topo)
        time.sleep(SUSPEND_AFTER + 3)
        restore_everything(topo, cuts)
        before = fw.counts()
        assert pp.ping(4).startswith("NOREPLY")
        fw.assert_acted("dropped", since=before)
        time.sleep(2)
    finally:
        pp.close()
    ip = IPv6 if family == "v6" else IP
    mine = topo.addr[racks_on][family]
    pkts = [p for p in cap.packets() if TCP in p and p[ip].src == mine]
    syns = [p for p in pkts if p[TCP].flags & 0x02]
    assert len(syns) == 1, [p.summary() for p in syns]
    assert syns[0][TCP].flags & 0x12 == 0x02, syns[0].summary()
    offer = bytes(syns[0][TCP])[20:4 * syns[0][TCP].dataofs]
    assert racks_option(offer), offer.hex()
    data = [p for p in pkts if len(bytes(p[TCP].payload)) > 0]
    assert data, "the capture saw no data segment"
    bad = reconnection_syns(pkts)
    assert not bad, [p.summary() for p in bad]
    print(f"\n{family} {box}, rackd on {racks_on.upper()} only: "
          f"{len(pkts)} segments sent, 1 handshake SYN, none re-opening; "
          f"R {fw.counts()}")


# --- a flow forgotten alone ------------------------------------------------------

@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
def test_a_flow_forgotten_alone_is_reopened(topo, family):
    """R forgets one flow (conntrack -D: a per-flow idle timeout, a table
    evicting entries) while another flow of the same path stays known and
    keeps the path answering heartbeats, so nothing is suspended. The
    forgotten flow's socket retransmits unanswered; rackd's sweep sees its
    retransmission timeouts in a row and re-opens it alone with a
    reconnection SYN, which R admits; its transfer completes, exact."""
    box = forgetting_box(topo)
    config = "sweep_interval = 1s\n"
    ra = topo.start_rackd("a", config=config)
    rb = topo.start_rackd("b", config=config)
    other_port = PORT + 1
    size = 12 * MB
    forgotten = racks.start_transfer(topo, family, size, PORT, rate=RATE,
                                     timeout=90)
    kept = racks.start_transfer(topo, family, size, other_port, rate=RATE,
                                timeout=90)
    try:
        racks.wait_states(ra, "connected", 10, remote_port=PORT)
        racks.wait_states(ra, "connected", 10, remote_port=other_port)
        time.sleep(1.0)
        before = box.counts()
        fam = "ipv6" if family == "v6" else "ipv4"
        said = topo.r.run(["conntrack", "-D", "-f", fam, "-p", "tcp",
                           "--orig-port-dst", str(PORT)]).stderr
        assert "1 flow entries have been deleted" in said, said
        assert not any(f"dport={PORT} " in e for e in conntrack_tcp(topo)), \
            conntrack_tcp(topo)
        assert any(f"dport={other_port} " in e for e in conntrack_tcp(topo))
        testbed.wait_until(
            lambda: ra.status()["reconnects_stalled"] +
            rb.status()["reconnects_stalled"] >= 1, 20,
            "the forgotten flow re-opened alone")
        racks.check_both_ways(*forgotten, size, 90)
        racks.check_both_ways(*kept, size, 90)
        after = box.counts()
    finally:
        testbed.terminate([p.proc for p in forgotten + kept])
    # Its segments were mid-stream to R until its SYN re-opened it.
    assert after["dropped"] > before["dropped"], (before, after)
    assert after["reopen_syn"] > before["reopen_syn"], (before, after)
    for r in (ra, rb):
        assert r.status()["suspensions"] == 0, r.status()
    print(f"\n{family}: one flow forgotten alone; re-opened (stalled: A "
          f"{ra.status()['reconnects_stalled']}, B "
          f"{rb.status()['reconnects_stalled']}); R {before} -> {after}")
