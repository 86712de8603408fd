"""Moves followed through the middleboxes people have: a strict stateful
firewall, a masquerading NAT, and both at once. A reconnection opens with
a real handshake (a SYN and a SYN-ACK that the rackds craft and consume,
then a third segment), so these admit it as the new flow it is.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B,
the middlebox in R's forward path::

    A 10.71.1.2 --x                                (old subnet retired)
    A 10.71.3.2 ---- R [firewall / NAT] ---- B 10.71.2.2

The strict policy at R (forward chain, policy drop)::

    ct state invalid        counter invalid  drop
    ct state established,related            accept
    icmp, icmpv6                            accept
    SYN (of syn|ack|fin|rst), ct state new  counter syn_new  accept
    (everything else)       counter dropped  (policy drop)

A segment in the middle of a flow R never saw open, as the zero-length
RECONNECT of earlier rackds was, ends in `dropped`: each test shows it
with one such segment from the mover's new address (and that the peer's
rackd never heard of it), and that the move's SYNs went through
`syn_new`. Every transfer is checked byte for byte (sha256) both ways; an
ssh session counts lines through the cut.

An idle connection's moved flow reaches ESTABLISHED in R's conntrack
from the reconnection's three segments alone; a middlebox that blanks
option 254 on SYNs does not stop a reconnection either.

R also plays the attacker who knows a connection's id (it saw it pass)
but not its key: forged and replayed reconnection SYNs change nothing,
and B's kernel never sees them (no SYN-ACK, no RST, no half-open socket).
"""

import ipaddress
import json
import subprocess
import threading
import time

import pytest

import racks
import testbed
from test_programs import (IPERF_PORT, SSH_PORT, iperf_result, start_sshd,
                           stop_sshd, wait_listening)
from testbed import start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\nsweep_interval = 1s\n"
CUT_SECONDS = 15
COUNT = 300                 # ssh counter lines, one per 100 ms
RATE = 1 * MB               # bytes/s each way: the transfer spans the cut
SIZE = 8 * MB
# Paced by the clock, a transfer catches up on a cut at full speed: what
# move_through's has beyond the cut's worth lasts 8 s more, while the test
# looks.
MOVE_SIZE = (CUT_SECONDS + 8) * MB

def install_middlebox(topo, strict=True, nat=False):
    """R's firewall (testbed.Topology.firewall: the policy above, with
    named counters); checked to be in place before it is relied on.
    Returns its Middlebox."""
    box = topo.firewall(strict=strict, nat=nat)
    listing = box.listing()
    assert ("policy drop" in listing) == strict, listing
    assert ("masquerade" in listing) == nat, listing
    return box


def counter(topo, name):
    return testbed.nft_counters(topo.r, "fw")[name]


def count_invalid_at(topo, addr):
    """A table of R's that counts (ahead of the firewall, which drops them)
    the invalid packets to or from addr: the mover's old address. Its
    peer may re-open the path to that address while the mover moves on
    (rackd(8), Re-opening); R takes those SYNs, crossing the mover's own
    reconnection, for invalid on a flow it still tracks, and drops them,
    harmlessly: the move goes on over the new flow. Counter 'invalid'."""
    ip = "ip6" if ":" in addr else "ip"
    box = testbed.Middlebox(topo.r, "fwold", f"""table inet fwold {{
  counter invalid {{ }}
  chain forward {{
    type filter hook forward priority filter - 1; policy accept;
    ct state invalid {ip} saddr {addr} counter name "invalid"
    ct state invalid {ip} daddr {addr} counter name "invalid"
  }}
}}
""")
    assert f"{ip} saddr {addr}" in box.listing(), box.listing()
    return box


def counters(topo):
    return {n: counter(topo, n) for n in ("syn_new", "invalid", "dropped")}


class Counter:
    """ssh from A to B over family, printing a counter every 100 ms."""

    def __init__(self, topo, key, tmp, family, count=COUNT):
        self.stderr_path = tmp / "ssh.stderr"
        argv = ["ssh", "-F", "/dev/null", "-i", str(key), "-n", "-T",
                "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null",
                "-o", "ServerAliveInterval=0", "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR",
                "-p", str(SSH_PORT), f"root@{topo.addr['b'][family]}",
                f"i=0; while [ $i -lt {count} ]; do echo $i; i=$((i+1)); "
                f"sleep 0.1; done"]
        self.count = count
        with open(self.stderr_path, "w") as err:
            self.proc = topo.a.popen(argv, stdin=subprocess.DEVNULL,
                                     stderr=err)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def check(self, timeout):
        """Every line once, in order, and a clean exit."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"ssh still running; {len(self.lines)} "
                                 f"lines, last {self.lines[-1:]}") from None
        self.reader.join(10)
        stderr = self.stderr_path.read_text()
        assert self.lines == [str(i) for i in range(self.count)], \
            (len(self.lines), stderr)
        assert code == 0, stderr


def host_of(endpoint):
    return endpoint.rsplit(":", 1)[0].strip("[]")


def managed(rackd, side):
    """The ssh and transfer connections in rackd (A: by remote port, B: by
    local port)."""
    key = "remote_port" if side == "a" else "local_port"
    return [c for port in (SSH_PORT, PORT)
            for c in racks.conns_between(rackd, **{key: port})]


def wait_all(rackd, side, pred, timeout, what):
    def ready():
        conns = managed(rackd, side)
        return conns if len(conns) == 2 and all(map(pred, conns)) else None
    return testbed.wait_until(ready, timeout, lambda: f"{what}: "
                              f"{json.dumps(managed(rackd, side), indent=1)}")


SCAPY_SEND = """
import sys
from scapy.all import IP, IPv6, TCP, Raw, conf, send
conf.verb = 0
for spec in sys.argv[1:]:
    kind, src, sport, dst, dport, seq, ack, flags, opts, pay = spec.split(",")
    l3 = (IPv6 if ":" in dst else IP)(src=src, dst=dst)
    opts, pay = bytes.fromhex(opts), bytes.fromhex(pay)
    tcp = TCP(sport=int(sport), dport=int(dport), flags=flags, seq=int(seq),
              ack=int(ack), window=65535, options=[])
    tcp.dataofs = 5 + len(opts) // 4
    send(l3 / tcp / Raw(opts + pay))
"""


def craft(ns, *segments):
    """Send crafted TCP segments from ns: (src, sport, dst, dport, seq,
    ack, flags, option bytes, payload bytes), options raw (scapy would
    re-validate them)."""
    specs = [",".join(["seg", *map(str, s[:7]), s[7].hex(), s[8].hex()])
             for s in segments]
    ns.run([testbed.PYTHON, "-c", SCAPY_SEND, *specs], timeout=60)


def numbered(conn_id, counter, mac, type_):
    """A numbered racks option (edp/option.h), padded to 36 bytes."""
    body = bytes.fromhex(conn_id) + counter.to_bytes(4, "big") + mac
    raw = bytes([254, 5 + len(body), 0x72, 0x61, 1 << 4 | type_]) + body
    return raw + b"\x01" * (-len(raw) % 4)


def rcsyn_options(marker=True):
    """The 28 option bytes of a reconnection SYN: MSS, NOP WS, SACKPERM
    TS, racks' marker (blanked to NOPs when not marker)."""
    opts = bytes([2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10]) + bytes(8)
    tail = bytes([254, 5, 0x72, 0x61, 0x18, 1, 1, 1]) if marker \
        else b"\x01" * 8
    return opts + tail


def mid_stream_probe(topo, mover, family, peer_rackd, strict):
    """One zero-length ACK with racks' option, as the RECONNECT of earlier
    rackds, from the mover's new address on a flow R never saw open: a
    strict R drops it, and the peer's rackd never sees it; an open one
    (even masquerading) lets it through. Its option says version 2, which
    the peer's rackd counts apart from anything else
    (edp_rejected_version)."""
    before, heard = counter(topo, "dropped"), peer_rackd.status()
    src, dst = topo.addr[mover][family], topo.addr[topo.other(mover)][family]
    option = bytearray(numbered("00" * 8, 1, bytes(16), 8))
    option[4] = 2 << 4 | 8
    craft(topo.ns(mover), (src, 47000, dst, PORT if mover == "a" else 47001,
                           1000, 1000, "A", bytes(option), b""))
    testbed.wait_until(lambda: counter(topo, "dropped") > before, 5,
                       "R to count the mid-stream segment")
    if not strict:
        testbed.wait_until(lambda: peer_rackd.status()["edp_rejected_version"]
                           > heard["edp_rejected_version"], 5,
                           "it to arrive")
        return
    time.sleep(0.5)
    now = peer_rackd.status()
    assert now["edp_rejected_version"] == heard["edp_rejected_version"], \
        (heard["edp_rejected_version"], now["edp_rejected_version"])


def move_through(topo, tmp_path, family, mover, strict=True, nat=False):
    """An ssh session and a bulk transfer both ways, both managed; the
    mover's link is cut for CUT_SECONDS, during which it moves to a fresh
    subnet; both continue intact. Returns R's counters before and after."""
    box = install_middlebox(topo, strict=strict, nat=nat)
    at_old = count_invalid_at(topo, topo.addr[mover][family])
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    rackd = {"a": ra, "b": rb}
    sshd, key = start_sshd(topo, tmp_path)
    procs = []
    try:
        session = Counter(topo, key, tmp_path, family)
        procs.append(session.proc)
        server = start_xfer_server(topo.b, PORT, send=MOVE_SIZE, rate=RATE,
                                   timeout=60)
        client = start_xfer_client(topo.a, topo.addr["b"][family], PORT,
                                   MOVE_SIZE, recv=True, rate=RATE,
                                   announce=True, timeout=60)
        procs += [server.proc, client.proc]
        client.connected()
        for side in "ab":
            wait_all(rackd[side], side, lambda c: c["state"] == "connected",
                     15, "connected")
        testbed.wait_until(lambda: len(session.lines) > 5, 15,
                           "the first counter lines")
        before = counters(topo)
        old_before = at_old.count("invalid")

        subnet = topo.reserve_subnet(mover, family)
        topo.cut(mover)
        t_cut = time.monotonic()
        for side in "ab":
            wait_all(rackd[side], side, lambda c: c["state"] == "suspended",
                     5, "suspended")
        new = topo.move_to_new_subnet(mover, family, new=subnet)
        time.sleep(max(0.0, CUT_SECONDS - (time.monotonic() - t_cut)))
        topo.restore(mover)
        t_back = time.monotonic()

        def moved(c):
            return c["state"] == "connected" and c["reconnections"] >= 1
        wire = "wire_local"
        other = topo.other(mover)

        # Both ends at once: the paced transfer catches up on the cut at
        # full speed, and may be over (its connections closed) soon after.
        def both():
            mine, theirs = managed(rackd[mover], mover), \
                managed(rackd[other], other)
            ok = (len(mine) == len(theirs) == 2 and
                  all(moved(c) and host_of(c[wire]) == new for c in mine)
                  and all(map(moved, theirs)))
            return ok and theirs
        peer = testbed.wait_until(
            both, 10, lambda: f"connected from {new}, the peer following: "
            f"{json.dumps(managed(rackd[mover], mover), indent=1)}\n"
            f"{json.dumps(managed(rackd[other], other), indent=1)}")
        took = time.monotonic() - t_back
        if not nat:
            assert all(host_of(c["wire_remote"]) == new for c in peer), peer

        session.check(60)
        racks.check_both_ways(server, client, MOVE_SIZE, 60)
        after = counters(topo)
        # Not the move's: the peer's re-opening SYNs to the old address.
        after["invalid_at_old_address"] = (at_old.count("invalid") -
                                           old_before)
        mid_stream_probe(topo, mover, family, rackd[topo.other(mover)],
                         strict)
    finally:
        stop_sshd(sshd)
        testbed.terminate(procs)
    for r in (ra, rb):
        st = r.status()
        assert st["reconnects_refused_mac"] == 0, st
        assert st["reconnects_malformed"] == 0, st
    st = rackd[mover].status()
    # The handshake completed: answered by a SYN-ACK, a third segment.
    assert st["reconnect_acks_in"] >= 2 and st["reconnect_acks_out"] >= 2, st
    if nat:
        # R masqueraded both connections, then both moved flows.
        box.assert_acted("masqueraded", at_least=4)
    print(f"\n{family}, {mover} moved to {new} through "
          f"{'NAT + ' if nat else ''}{'strict' if strict else 'open'} R: "
          f"connected again {took:.2f} s after the restore; R: {before} -> "
          f"{after}")
    return before, after, peer


@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("mover", ["a", "b"])
def test_strict_firewall_follows_a_move(topo, tmp_path, family, mover):
    """R admits new flows only by a SYN. The mover's reconnection SYNs
    (one per connection, and their retries) are new flows it admits."""
    before, after, _ = move_through(topo, tmp_path, family, mover)
    assert after["syn_new"] >= before["syn_new"] + 2, (before, after)
    assert after["invalid"] - after["invalid_at_old_address"] == \
        before["invalid"], (before, after)


def unacked_bytes(ns, port):
    """The most bytes in flight (unacknowledged) of ns's sockets to or
    from port, from ss: unacked segments times the socket's MSS."""
    out = ns.run(["ss", "-Htin", "(", "sport", "=", f":{port}", "or",
                  "dport", "=", f":{port}", ")"]).stdout
    most = 0
    for line in out.split("\n"):
        fields = dict(f.split(":", 1) for f in line.split() if ":" in f
                      and f.split(":", 1)[0] in ("unacked", "mss"))
        if "unacked" in fields and "mss" in fields:
            most = max(most, int(fields["unacked"]) * int(fields["mss"]))
    return most


def test_a_move_that_lost_a_full_window_passes_window_tracking(topo, tmp_path):
    """B uploads to A at full speed (iperf3) when its link is cut: a whole
    congestion window, far more than 64 KiB, is lost in the cut. B moves;
    its reconnection SYN opens the moved flow at R at B's snd_nxt, and R
    knows A's window only from A's SYN-ACK (a SYN's, unscaled). A's
    acknowledgements, of B's snd_una, lie more than that below what R saw
    sent, and R drops them ("ACK is under the lower bound"), unless A's
    answer to the reconnection (RECONNECT_ACK, with the handshake's own
    numbers and a window R scales) widened R's view first. Without it the
    upload never moves again; with it, it goes on at full speed."""
    install_middlebox(topo, strict=True)
    at_old = count_invalid_at(topo, topo.addr["b"]["v4"])
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    port = int(IPERF_PORT)
    procs = []
    try:
        with open(tmp_path / "iperf3-server.log", "w") as log:
            server = topo.a.popen(["iperf3", "-s", "-1", "-p", str(port)],
                                  stdout=log, stderr=subprocess.STDOUT)
        procs.append(server)
        wait_listening(topo.a, port, server, "iperf3 -s")
        t_start = time.monotonic()
        client = topo.b.popen(["iperf3", "-c", topo.addr["a"]["v4"], "-p",
                               str(port), "-t", "20", "-i", "1", "-w", "4M",
                               "--json"])
        procs.append(client)
        testbed.wait_until(lambda: len([
            c for c in racks.conns_between(rb, remote_port=port)
            if c["state"] == "connected"]) == 2, 10, "both managed")
        subnet = topo.reserve_subnet("b", "v4")
        # The scenario: more than a SYN's window lost in the cut (R's
        # bound is the larger of that and 66,000 bytes). Cut while a full
        # window is in flight; iperf3 pauses now and then (2 cores), and
        # a cut that caught it idle lost nothing: the link comes back
        # and the next one is tried.
        for attempt in range(3):
            testbed.wait_until(
                lambda: unacked_bytes(topo.b, port) > 4 * 66000, 10,
                "a full window in flight")
            topo.cut("b")
            testbed.wait_until(lambda: all(
                c["state"] == "suspended"
                for c in racks.conns_between(rb, remote_port=port)), 5,
                "suspended")
            lost = unacked_bytes(topo.b, port)
            if lost > 2 * 66000:
                break
            topo.restore("b")
            testbed.wait_until(lambda: all(
                c["state"] == "connected"
                for c in racks.conns_between(rb, remote_port=port)), 10,
                "connected again")
        assert lost > 2 * 66000, (attempt, lost)
        topo.move_to_new_subnet("b", "v4", new=subnet)
        time.sleep(2)
        topo.restore("b")
        t_back = time.monotonic() - t_start
        report = iperf_result(client, 60)
        server.wait(15)
        assert server.returncode == 0, \
            (tmp_path / "iperf3-server.log").read_text()
    finally:
        testbed.terminate(procs)
    # Seconds of the upload that began 3 s after the restore or later:
    # data flowed again, not a stalled socket's nothing.
    late = [i["sum"]["bytes"] for i in report["intervals"]
            if i["sum"]["start"] >= t_back + 3]
    assert late and min(late) > 1 << 20, (t_back, late)
    sent = report["end"]["sum_sent"]["bytes"]
    received = report["end"]["sum_received"]["bytes"]
    assert abs(sent - received) <= sent * 0.01, (sent, received)
    assert rb.status()["reconnects_sent"] >= 1
    # R dropped nothing of the moved flow (before the fix: every segment
    # of A's, 60 to 110 of them, and B's reconnections forever after).
    # Only A's re-opening SYNs towards B's old address may be invalid at
    # R (count_invalid_at): A suspends during the cut too, and on a slow
    # machine re-opens before B's reconnection reaches it.
    assert counter(topo, "invalid") == at_old.count("invalid"), \
        (counter(topo, "invalid"), at_old.count("invalid"))
    print(f"\nlost in the cut: {lost} B in flight; after the move: "
          f"{[round(b / 1e6) for b in late]} MB/s")


@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("strict", [False, True], ids=["open", "strict"])
def test_nat_follows_a_move(topo, tmp_path, family, strict):
    """R masquerades towards B; A moves from one NATed subnet to another.
    B follows A to whatever address and port R gave the new flow."""
    before, after, peer = move_through(topo, tmp_path, family, "a",
                                       strict=strict, nat=True)
    gateway = str(ipaddress.ip_interface(
        f"{topo.addr['b'][family]}/{topo.prefix['b'][family]}")
        .network.network_address + 1)
    for c in peer:
        # B's sockets and wire: R's address, the port R chose.
        assert host_of(c["remote"]) == gateway, c
        assert host_of(c["wire_remote"]) == gateway, c
    if strict:
        assert after["syn_new"] >= before["syn_new"] + 2, (before, after)


def test_stripped_marker_still_reconnects(topo):
    """A middlebox blanks option 254 on every SYN (nft `reset tcp option
    254`: NOPs, data offset unchanged) once the connection is managed: the
    reconnection's marker is gone, its message at the fixed offset is
    still found and followed."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    server = start_xfer_server(topo.b, PORT, send=SIZE, rate=2 * RATE,
                               timeout=60)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, SIZE,
                               recv=True, rate=2 * RATE, announce=True,
                               timeout=60)
    client.connected()
    racks.wait_states(ra, "connected", remote_port=PORT)
    strip = topo.strip_option(synack=True, table="strip")
    new = racks.move_and_splice(topo, "a", ra)
    c = testbed.wait_until(
        lambda: [c for c in racks.conns_between(rb, local_port=PORT)
                 if c["state"] == "connected" and
                 host_of(c["wire_remote"]) == new], 10, "B following A")
    racks.check_both_ways(server, client, SIZE, 60)
    strip.assert_acted()            # the reconnection's SYN and SYN-ACK
    assert c[0]["reconnections"] == 1


def reconnection_syns(pcap, conn_id):
    """The reconnection SYNs of conn_id in a capture, oldest first."""
    from scapy.all import TCP, rdpcap
    out = []
    for pkt in rdpcap(str(pcap)):
        tcp = pkt[TCP]
        pay = bytes(tcp.payload)
        if tcp.flags & 0x12 == 0x02 and len(pay) >= 33 and \
                pay[:5] == bytes([254, 33, 0x72, 0x61, 0x18]) and \
                pay[5:13].hex() == conn_id:
            out.append(pkt)
    return out


def test_forged_and_replayed_reconnection_syns_are_refused(topo, tmp_path):
    """R knows the connection id and where A's socket is. A reconnection
    SYN under a made-up MAC is refused, to the connection's port and to a
    listener's; so is A's real one, captured at R and replayed after A
    moved on, with and without its marker. The connection stays where A
    is, and B's kernel answers none of them: no SYN-ACK, no RST, no
    half-open socket."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    listener = start_xfer_server(topo.b, PORT + 1, timeout=60)
    server = start_xfer_server(topo.b, PORT, send=SIZE, rate=RATE,
                               timeout=60)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, SIZE,
                               recv=True, rate=RATE, announce=True,
                               timeout=60)
    client.connected()
    racks.wait_states(ra, "connected", remote_port=PORT)
    theirs = racks.conns_between(rb, local_port=PORT)[0]
    theirs = rb.ctl_json("show", str(theirs["id"]))
    conn_id = theirs["conn_id"]
    a_port = int(theirs["remote"].rsplit(":", 1)[1])
    b4 = topo.addr["b"]["v4"]
    attacker = str(ipaddress.ip_network(f"{b4}/24", strict=False)
                   .network_address + 1)
    iface = testbed.ROUTER_IFACE["b"]

    # Everything B sends with SYN or RST, captured at R from now on.
    answers = testbed.Capture(
        topo.r, tmp_path / "answers.pcap",
        f"src host {b4} and (tcp[tcpflags] & (tcp-syn|tcp-rst) != 0)",
        iface=iface)

    # 1. Forgeries from R: right id, a plausible sequence number, no key.
    before = rb.status()
    forged = numbered(conn_id, 1 << 30, bytes(16), 8)
    craft(topo.r, (attacker, a_port, b4, PORT, 1000, 0, "S",
                   rcsyn_options(), forged),
          (attacker, a_port, b4, PORT + 1, 1000, 0, "S", rcsyn_options(),
           forged),
          (attacker, a_port + 1, b4, PORT + 1, 1000, 0, "S",
           rcsyn_options(marker=False), forged))
    testbed.wait_until(lambda: rb.status()["reconnects_refused_mac"] ==
                       before["reconnects_refused_mac"] + 3, 5,
                       "the forgeries refused")
    mine = rb.ctl_json("show", str(theirs["id"]))
    assert mine["wire_remote"] == theirs["remote"], mine
    half_open = topo.b.run(["ss", "-Htn", "state", "syn-recv"]).stdout
    assert not half_open.strip(), half_open

    # 2. A real move of A, its SYN captured on R's side towards B.
    moves = testbed.Capture(topo.r, tmp_path / "moves.pcap",
                            "tcp[tcpflags] & tcp-syn != 0", iface=iface)
    first = racks.move_and_splice(topo, "a", ra)
    testbed.wait_until(lambda: host_of(rb.ctl_json(
        "show", str(theirs["id"]))["wire_remote"]) == first, 5, "B at first")
    second = topo.move_to_new_subnet("a", "v4")
    testbed.wait_until(lambda: host_of(rb.ctl_json(
        "show", str(theirs["id"]))["wire_remote"]) == second, 5,
        "B at second")
    moves.stop()
    captured = reconnection_syns(moves.path, conn_id)
    assert captured, "no reconnection SYN captured"
    from scapy.all import IP, TCP
    old = captured[0]
    assert old[IP].src == first

    # 3. Replayed from where it was sent and from R, with its marker and
    # with the marker blanked: all refused.
    replayed_at = time.time()
    before = rb.status()
    opts, pay = bytes(old[TCP])[20:48], bytes(old[TCP].payload)
    blank = opts[:20] + b"\x01" * 8
    t = old[TCP]
    craft(topo.r, (first, t.sport, b4, PORT, t.seq, 0, "S", opts, pay),
          (attacker, t.sport, b4, PORT, t.seq, 0, "S", opts, pay),
          (attacker, t.sport, b4, PORT, t.seq, 0, "S", blank, pay))
    testbed.wait_until(lambda: rb.status()["reconnects_refused_replay"] ==
                       before["reconnects_refused_replay"] + 3, 5,
                       "the replays refused")
    now = rb.ctl_json("show", str(theirs["id"]))
    assert host_of(now["wire_remote"]) == second, now
    assert now["state"] == "connected"
    st = rb.status()
    # The two real moves were accepted (a retransmitted SYN of theirs may
    # be accepted again), none of the replays.
    assert before["reconnects_accepted"] >= 2, before
    assert st["reconnects_accepted"] == before["reconnects_accepted"], st
    # None of them was taken for a new connection's SYN.
    assert st["syn"] == before["syn"], (before["syn"], st["syn"])
    racks.check_both_ways(server, client, SIZE, 60)
    testbed.terminate([listener.proc])

    # B's own SYN-ACKs answered only A's two real moves, before any replay
    # (the capture ran throughout: they are its positive control); its
    # kernel answered nothing, never with a RST.
    pkts = answers.packets()
    rsts = [p for p in pkts if p[TCP].flags & 0x04]
    assert not rsts, [p.summary() for p in rsts]
    kernel = [p for p in pkts if bytes(p[TCP].payload)[:4] !=
              bytes([254, 33, 0x72, 0x61])]
    assert not kernel, [p.summary() for p in kernel]
    moved = [p for p in pkts if p[TCP].flags & 0x12 == 0x12]
    early = {p[IP].dst for p in moved if float(p.time) < replayed_at}
    assert early == {first, second}, [p.summary() for p in pkts]
    # The replays came from first and from R; an answer to either after
    # them would be an accepted replay. A SYN-ACK to second later is A's
    # own (a retransmitted reconnection SYN, or its path re-opened).
    late = [p for p in moved if float(p.time) >= replayed_at and
            p[IP].dst != second]
    assert not late, [(p.summary(), float(p.time), replayed_at)
                      for p in late]


IDLE_SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
assert c.recv(5) == b"ping\\n"
c.sendall(b"pong\\n")
c.recv(1)
"""

IDLE_CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
print("connected", flush=True)
sys.stdin.readline()
c.sendall(b"ping\\n")
print(c.recv(5).decode().strip(), flush=True)
"""


def conntrack(ns, needle):
    """R's conntrack entries (/proc/net/nf_conntrack) mentioning needle."""
    text = ns.run(["cat", "/proc/net/nf_conntrack"]).stdout
    return [line for line in text.splitlines() if needle in line]


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_idle_connection_is_established_after_the_move(topo, family):
    """An idle connection (nothing to send) moves make-before-break
    through the strict firewall: the reconnection's SYN, SYN-ACK and third
    segment alone take R's conntrack entry for the new flow to
    ESTABLISHED, and the application's next bytes pass."""
    install_middlebox(topo)
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    b = topo.addr["b"][family]
    server = topo.b.popen([testbed.PYTHON, "-c", IDLE_SERVER, b, str(PORT)])
    assert testbed.read_line(server, 10, "idle server") == "listening"
    client = topo.a.popen([testbed.PYTHON, "-c", IDLE_CLIENT, b, str(PORT)],
                          stdin=subprocess.PIPE)
    assert testbed.read_line(client, 10, "idle client") == "connected"
    racks.wait_states(ra, "connected", remote_port=PORT)
    syn_before = counter(topo, "syn_new")
    new = racks.move_and_splice(topo, "a", ra, family)
    testbed.wait_until(lambda: ra.status()["reconnect_acks_out"] == 1, 5,
                       "the third segment")
    assert counter(topo, "syn_new") == syn_before + 1
    # /proc prints IPv6 addresses in full (%pI6).
    entries = conntrack(topo.r, f"src={ipaddress.ip_address(new).exploded} ")
    assert len(entries) == 1, entries
    assert " ESTABLISHED " in entries[0] and "[ASSURED]" in entries[0], \
        entries
    assert counter(topo, "invalid") == 0
    # The third segment is a heartbeat at the handshake's numbers: B's
    # rackd takes it as one, in its window.
    assert rb.status()["edp_bad_seq"] == 0, rb.status()
    client.stdin.write("go\n")
    client.stdin.flush()
    assert testbed.read_line(client, 10, "pong") == "pong"
    print(f"\n{family}: R's entry for the moved flow: {entries[0]}")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_plain_server_behind_the_strict_firewall_is_unaffected(topo, family):
    """rackd on A only; B is a plain server behind R's strict policy. A's
    offer is answered plain, A asks for adoption three times (in-window
    zero-length segments of the established flow), nobody answers, and
    the connection is left alone: R drops nothing of it (invalid and
    dropped stay 0), the transfer is byte-exact both ways, and A says why
    it does not protect the connection."""
    install_middlebox(topo, strict=True)
    ra = topo.start_rackd("a", config=FAST)
    size = 12 * MB
    server = start_xfer_server(topo.b, PORT, send=size, rate=RATE,
                               timeout=90)
    client = start_xfer_client(topo.a, topo.addr["b"][family], PORT, size,
                               recv=True, rate=RATE, announce=True,
                               timeout=90)
    client.connected()
    conns = racks.wait_states(ra, "released", 15, remote_port=PORT)
    shown = ra.ctl_json("show", str(conns[0]["id"]))
    assert shown["unmanaged"] == "adoption_unanswered", shown
    assert shown["adopted_for"] == "plain_answer", shown
    assert ra.status()["adopt_msgs_out"] == 3
    racks.check_both_ways(server, client, size)
    seen = counters(topo)
    assert seen["syn_new"] == 1, seen
    assert seen["invalid"] == 0 and seen["dropped"] == 0, seen
