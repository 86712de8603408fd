"""A handshake in any order (issue 21): whatever order the SYN with racks'
offer, its plain retransmission, the SYN-ACKs with and without the option,
duplicates of each and the set-up messages arrive in, no connection stays
in `handshake`. Within setup_timeout (5 s) and a little, each end is
`connected`, `adopting` or released with its reason, and the bytes of the
connection arrive whole both ways.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B;
tests/tools/disorder in R (an NFQUEUE fed by R's forward chain) delays,
duplicates and reorders the segments its rules pick, and its counters
prove that it did::

    A (client) ---- R (disorder) ---- B (echo server)

The kernel has no netem: disorder holds a segment's verdict until its due
time (later segments overtake it) and sends copies through raw sockets.
"""

import json
import subprocess
import time

import pytest

import racks
import testbed

pytestmark = pytest.mark.timing

PORT = 5001
SETUP_TIMEOUT = 5.0        # racks.conf's default setup_timeout
SLACK = 2.0
ECHOCHECK = str(testbed.TOOLS / "echocheck.py")
MANYCONN = str(testbed.TOOLS / "manyconn.py")
SETTLED = ("connected", "adopting")


@pytest.fixture(scope="module", autouse=True)
def built():
    testbed.make("test-tools", timeout=120)


# --- what each end says of its connections ----------------------------------------

def settled(conn):
    """An end is done with the handshake: managed or adopting, or
    released with its reason."""
    return conn["state"] in SETTLED or (conn["state"] == "released"
                                        and bool(conn.get("unmanaged")))


def ends(ra, rb):
    """Both ends' entries of the test's connections to PORT."""
    return (racks.conns_between(ra, remote_port=PORT),
            racks.conns_between(rb, local_port=PORT))


def brief(conns):
    return [{k: c[k] for k in ("id", "state", "unmanaged", "adoption",
                               "adopted_for", "local", "remote", "since")
             if k in c} for c in conns]


def wait_settled(ra, rb, count, timeout):
    """Wait until A and B each list COUNT connections to PORT, all settled;
    returns (seconds it took, A's list, B's list). On a timeout the
    message quotes both ends' entries that are not settled."""
    t0 = time.monotonic()
    last = {}

    def done():
        on_a, on_b = ends(ra, rb)
        last.update(a=on_a, b=on_b)
        return len(on_a) == count and len(on_b) == count and \
            all(settled(c) for c in on_a + on_b)

    testbed.wait_until(done, timeout, lambda: (
        f"{count} connections settled on both ends; not settled: A "
        f"{brief([c for c in last['a'] if not settled(c)])}, B "
        f"{brief([c for c in last['b'] if not settled(c)])} (A lists "
        f"{len(last['a'])}, B {len(last['b'])})"), interval=0.1)
    return time.monotonic() - t0, last["a"], last["b"]


def assert_none_in_handshake(ra, rb):
    on_a, on_b = ends(ra, rb)
    stuck = [("A", c) for c in on_a if c["state"] == "handshake"] + \
        [("B", c) for c in on_b if c["state"] == "handshake"]
    assert not stuck, f"left in handshake: {stuck}"
    return on_a, on_b


def states(conns):
    out = {}
    for c in conns:
        key = c["state"] + (f":{c['unmanaged']}" if c.get("unmanaged") else "")
        out[key] = out.get(key, 0) + 1
    return out


# --- one connection, one order --------------------------------------------------

def echo_server(topo):
    proc = topo.b.popen([testbed.PYTHON, ECHOCHECK, "server", "--port",
                         str(PORT), "--bind", "::"])
    assert testbed.read_line(proc, 10, "echocheck server") == "READY"
    return proc


def echo_client(topo, family, seconds, rate=32 * 1024):
    """One checked echo stream A -> B for SECONDS: its first bytes leave
    as soon as connect() returns, beside racks' set-up messages."""
    host = topo.addr["b"][family]
    to = f"[{host}]:{PORT}:1" if family == "v6" else f"{host}:{PORT}:1"
    return topo.a.popen([testbed.PYTHON, ECHOCHECK, "client", "--to", to,
                         "--seconds", str(seconds), "--rate", str(rate)])


def echo_result(client, server, timeout=60):
    """The client's and the server's reports: the stream arrived whole,
    and came back whole."""
    try:
        out, err = client.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("echocheck client still running") from None
    lines = out.splitlines()
    assert lines, err
    report = json.loads(lines[-1])["conns"][0]
    assert client.returncode == 0 and "error" not in report, (report, err)
    served = json.loads(testbed.read_line(server, 10, "echocheck server"))
    assert "error" not in served and served["checked"] == report["sent"] \
        == report["echoed"] > 0, (served, report)
    return report


# Each order: disorder's rule, and what its counters must show it did:
# (kinds, action, at least).
ORDERS = {
    # The SYN with the offer reaches B right beside the kernel's plain
    # retransmission (1 s), just ahead of it: what issue 21 saw on a
    # fresh IPv6 network (R resolving its neighbour held the offer).
    "offer_beside_plain_syn": (
        "kinds=syn_opt,count=1,delay=3000,next=before",
        [("syn_opt", "delayed", 1), ("syn", "seen", 1)]),
    # ...just behind it.
    "offer_just_behind_plain_syn": (
        "kinds=syn_opt,count=1,delay=3000,next=after",
        [("syn_opt", "delayed", 1), ("syn_opt", "reordered", 1),
         ("syn", "seen", 1)]),
    # The offer reaches B 0.9 s late and B's SYN-ACK with the option is
    # held 0.3 s more: A's plain retransmission (1 s) crosses it, B
    # answers that too, and A hears its SYN-ACKs after retransmitting.
    "offer_and_synack_crossing_retransmission": (
        ["kinds=syn_opt,count=1,delay=900",
         "kinds=synack_opt,count=1,delay=300"],
        [("syn_opt", "delayed", 1), ("synack_opt", "delayed", 1),
         ("syn", "seen", 1)]),
    # ...300 ms behind it.
    "offer_behind_plain_syn": (
        "kinds=syn_opt,count=1,delay=1300",
        [("syn_opt", "delayed", 1), ("syn_opt", "reordered", 1),
         ("syn", "seen", 1)]),
    # ...and after the plain handshake completed and data flowed.
    "offer_after_plain_handshake": (
        "kinds=syn_opt,count=1,delay=2500",
        [("syn_opt", "delayed", 1), ("syn_opt", "reordered", 1),
         ("syn", "seen", 1)]),
    # B's SYN-ACK with the option reaches A beside its retransmission:
    # just ahead of it, just behind it, 500 ms behind it.
    "synack_offer_beside_retransmission": (
        "kinds=synack_opt,count=1,delay=3000,next=before",
        [("synack_opt", "delayed", 1),
         (("synack", "synack_opt"), "seen", 2)]),
    "synack_offer_just_behind_retransmission": (
        "kinds=synack_opt,count=1,delay=3000,next=after",
        [("synack_opt", "delayed", 1), ("synack_opt", "reordered", 1),
         (("synack", "synack_opt"), "seen", 2)]),
    "synack_offer_behind_retransmission": (
        "kinds=synack_opt,count=1,delay=1500",
        [("synack_opt", "delayed", 1), ("synack_opt", "reordered", 1),
         (("synack", "synack_opt"), "seen", 2)]),
    # Copies of the SYN with the offer: at once, and after the handshake.
    "offer_duplicated": (
        "kinds=syn_opt,count=1,dup=2",
        [("syn_opt", "duplicated", 2)]),
    "offer_duplicated_late": (
        "kinds=syn_opt,count=1,dup=1,dup_delay=400",
        [("syn_opt", "duplicated", 1)]),
    # A stale copy of the offer long after set-up finished.
    "offer_copy_after_setup": (
        "kinds=syn_opt,count=1,dup=1,dup_delay=2000",
        [("syn_opt", "duplicated", 1)]),
    # Copies of the SYN-ACK with the option.
    "synack_duplicated": (
        "kinds=synack_opt,count=1,dup=2",
        [("synack_opt", "duplicated", 2)]),
    "synack_duplicated_late": (
        "kinds=synack_opt,count=1,dup=1,dup_delay=400",
        [("synack_opt", "duplicated", 1)]),
    "synack_copy_after_setup": (
        "kinds=synack_opt,count=1,dup=1,dup_delay=2000",
        [("synack_opt", "duplicated", 1)]),
    # The handshake's third segment behind the client's first data.
    "ack_behind_data": (
        "kinds=ack,count=1,delay=600",
        [("ack", "delayed", 1), ("ack", "reordered", 1)]),
    # Every set-up message (KEY, CONFIRM, DONE) behind data, both ways.
    "setup_behind_data": (
        "kinds=setup,delay=500",
        [("setup", "delayed", 2), ("setup", "reordered", 2)]),
    # Set-up messages duplicated, the copies late.
    "setup_duplicated": (
        "kinds=setup,dup=1,dup_delay=300",
        [("setup", "duplicated", 2)]),
}


# Every order in both families; make check runs them all in IPv4 and
# the issue's own (the offer beside its plain retransmission) in IPv6
# too, the rest of IPv6 in make check-slow (each waits out its deadline:
# some 10 s, in turn with the other timing tests).
V6_IN_CHECK = {"offer_beside_plain_syn", "offer_just_behind_plain_syn",
               "offer_and_synack_crossing_retransmission"}
ORDER_CASES = [pytest.param(order, family, id=f"{order}-{family}",
                            marks=() if family == "v4" or order in V6_IN_CHECK
                            else pytest.mark.slow)
               for family in ("v4", "v6") for order in ORDERS]


@pytest.mark.parametrize("order, family", ORDER_CASES)
def test_handshake_in_any_order(topo, family, order):
    """One connection A -> B whose handshake or set-up disorder reorders
    as ORDER says: disorder acted as asked; within setup_timeout + 2 s
    both ends are connected, adopting or released with a reason, neither
    in handshake; the echoed stream arrives whole both ways."""
    rule, expect = ORDERS[order]
    ra = topo.start_rackd("a")
    rb = topo.start_rackd("b")
    box = topo.disorder(rule)
    server = echo_server(topo)
    deadline = SETUP_TIMEOUT + SLACK
    # The clock runs from the first SYN, not from connect() returning.
    t0 = time.monotonic()
    client = echo_client(topo, family, deadline + 3)
    assert testbed.read_line(client, 10, "echocheck client") == "CONNECTED 1"
    connected = time.monotonic() - t0
    try:
        took, _, _ = wait_settled(ra, rb, 1, t0 + deadline - time.monotonic())
        # Settled is not the end of it: at the deadline, with everything
        # disorder held let go, nobody went back.
        time.sleep(max(0.0, t0 + deadline - time.monotonic()))
        stats = box.stats()
        on_a, on_b = assert_none_in_handshake(ra, rb)
        assert all(settled(c) for c in on_a + on_b), \
            (brief(on_a), brief(on_b))
    finally:
        stats = box.stats()
        print(f"\n{family} {order} ({rule}): disorder "
              f"{ {k: v for k, v in stats['kinds'].items() if v['seen']} }")
    assert stats["held"] == 0, stats
    for kinds, action, at_least in expect:
        box.assert_acted(kinds, action, at_least)
    assert stats["inject_errors"] == 0 and stats["kernel_user_drops"] == 0, \
        stats
    report = echo_result(client, server)
    print(f"connect() returned after {connected:.2f} s, both ends settled "
          f"{connected + took:.2f} s after the first SYN: A {states(on_a)}, "
          f"B {states(on_b)}; echoed {report['echoed']} bytes, longest gap "
          f"{report['max_gap']} s")


# --- a hundred connections through a disordering router ------------------------------

# Some 10 % of the handshake segments (SYN, SYN-ACK, the third segment)
# and set-up messages: half held 100 to 1500 ms (later ones overtake
# them; a SYN or SYN-ACK held past the kernel's first RTO, 1 s, meets
# its plain retransmission), half passed with a copy 300 ms later (5.3 %
# of the 95 % left).
MANY_RULES = ["kinds=handshake+setup,prob=5,delay=100,jitter=1400",
              "kinds=handshake+setup,prob=5.3,dup=1,dup_delay=300"]


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_a_hundred_handshakes_in_disorder(topo, family):
    """100 connections opened A -> B at once through R delaying,
    duplicating and reordering some 10 % of their handshake segments and
    set-up messages: within 15 s every one is managed or named on both
    ends, none left in handshake, and each echoes its own bytes."""
    n = 100
    ra = topo.start_rackd("a")
    rb = topo.start_rackd("b")
    box = topo.disorder(MANY_RULES, seed=21)
    server = topo.b.popen([testbed.PYTHON, MANYCONN, "serve", str(PORT)])
    assert testbed.read_line(server, 10, "manyconn server") == "READY"
    client = topo.a.popen([testbed.PYTHON, MANYCONN, "connect",
                           topo.addr["b"][family], str(PORT), str(n),
                           "--timeout", "30"], stdin=subprocess.PIPE)
    opened = json.loads(testbed.read_line(client, 60, "connections opened"))
    assert opened["connected"] == n, opened
    t0 = time.monotonic()

    def managed_or_named(c):
        return c["state"] in ("connected", "suspended") or \
            bool(c.get("unmanaged"))

    last = {}

    def done():
        on_a, on_b = ends(ra, rb)
        last.update(a=on_a, b=on_b)
        return len(on_a) == n and len(on_b) == n and \
            all(managed_or_named(c) for c in on_a + on_b)

    try:
        testbed.wait_until(done, 15, lambda: (
            f"{n} connections managed or named on both ends: A "
            f"{states(last['a'])}, B {states(last['b'])}; not yet: A "
            f"{brief([c for c in last['a'] if not managed_or_named(c)])[:5]}"
            f", B "
            f"{brief([c for c in last['b'] if not managed_or_named(c)])[:5]}"),
            interval=0.5)
    finally:
        stats = box.stats()
        print(f"\n{family}: disorder rules {stats['rules']}; kinds "
              f"{ {k: v for k, v in stats['kinds'].items() if v['seen']} }")
    took = time.monotonic() - t0
    on_a, on_b = assert_none_in_handshake(ra, rb)
    # The scenario happened: segments of the handshake and set-up were
    # held, copied, and overtaken.
    assert box.assert_rule_acted(0, at_least=10)
    assert box.assert_rule_acted(1, at_least=10)
    box.assert_acted("handshake", "delayed", at_least=5)
    box.assert_acted("handshake", "duplicated", at_least=5)
    box.assert_acted("setup", "delayed", at_least=2)
    box.assert_acted(["handshake", "setup"], "reordered", at_least=5)
    assert stats["inject_errors"] == 0 and stats["kernel_user_drops"] == 0, \
        stats
    # Once the tool holds nothing more, nothing went back either.
    testbed.wait_until(lambda: box.stats()["held"] == 0, 5,
                       "disorder to let go of every held segment")
    on_a, on_b = assert_none_in_handshake(ra, rb)
    assert all(managed_or_named(c) for c in on_a + on_b), \
        (states(on_a), states(on_b))
    assert time.monotonic() - t0 < 15
    client.stdin.write("echo\n")
    client.stdin.flush()
    echoed = json.loads(testbed.read_line(client, 90, "echo round"))
    assert echoed["echoed"] == n and not echoed["bad"], echoed
    stats = box.stats()
    print(f"all {n} managed or named {took:.1f} s after the last connect() "
          f"returned (connect() took {opened['seconds']} s): A "
          f"{states(on_a)}, B {states(on_b)}; each echoed its own bytes; "
          f"disorder delayed {box.counts('delayed', stats=stats)}, "
          f"duplicated {box.counts('duplicated', stats=stats)}, reordered "
          f"{box.counts('reordered', stats=stats)}, held at most "
          f"{stats['held_max']}")
    client.stdin.close()
    testbed.terminate([client, server])


# --- the tool itself: what it counts is what the wire shows ------------------------------

def checksum_ok(pkt):
    """Whether a captured TCP segment's checksum is right (Scapy
    recomputes it when it is deleted)."""
    from scapy.all import TCP
    l3 = pkt.payload.copy()
    want = l3[TCP].chksum
    del l3[TCP].chksum
    return l3.__class__(bytes(l3))[TCP].chksum == want


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_disorder_does_what_it_counts(topo, tmp_path, family):
    """Without rackd: disorder holds a plain SYN 1.3 s, copies a SYN-ACK
    twice and holds one data segment 300 ms, and the captures on A and B
    show exactly that: the SYN arrives 0.3 s behind its own retransmission
    (its timestamp older), three identical SYN-ACKs with valid checksums,
    the data segment behind later ones; the counters say the same."""
    from scapy.all import TCP
    box = topo.disorder(["kinds=syn,count=1,delay=1300",
                         "kinds=synack,count=1,dup=2",
                         "kinds=data,skip=2,count=1,delay=300"])
    caps = {h: testbed.Capture(topo.ns(h), tmp_path / f"{h}.pcap",
                               f"tcp port {PORT}") for h in "ab"}
    server = echo_server(topo)
    client = echo_client(topo, family, 3, rate=64 * 1024)
    assert testbed.read_line(client, 10, "echocheck client") == "CONNECTED 1"
    report = echo_result(client, server)
    stats = box.stop()
    pkts = {h: cap.packets() for h, cap in caps.items()}
    kinds = stats["kinds"]
    assert [r["acted"] for r in stats["rules"]] == [1, 1, 1], stats["rules"]
    assert kinds["syn"]["delayed"] == 1 and kinds["syn"]["reordered"] == 1
    assert kinds["synack"]["duplicated"] == 2
    assert kinds["data"]["delayed"] == 1 and kinds["data"]["reordered"] >= 1
    assert stats["held"] == 0 and stats["inject_errors"] == 0, stats
    # The SYN: its retransmission first, the original 0.3 s behind it.
    syns = [p for p in pkts["b"] if p[TCP].flags == "S"]
    assert len(syns) == 2 and syns[0][TCP].seq == syns[1][TCP].seq, syns
    ts = [dict(p[TCP].options)["Timestamp"][0] for p in syns]
    assert ts[1] < ts[0], ts
    gap = float(syns[1].time - syns[0].time)
    assert 0.15 < gap < 0.6, gap
    # The SYN-ACK and its two copies, all valid.
    synacks = [p for p in pkts["a"] if p[TCP].flags == "SA"]
    assert len(synacks) == 3 and len({p[TCP].seq for p in synacks}) == 1, \
        synacks
    assert all(checksum_ok(p) for p in synacks)
    # The data segment held: behind a later one of its direction.
    line = [entry for entry in box.log() if " data " in entry]
    assert len(line) == 1, box.log()
    words = line[0].split()
    src, seq = words[2], int(words[6])
    sport = int(src.rsplit(":", 1)[1])
    dst = "b" if sport != PORT else "a"
    flow = [p[TCP].seq for p in pkts[dst]
            if p[TCP].sport == sport and len(p[TCP].payload)]
    assert seq in flow, (seq, flow[:20])
    assert max(flow[:flow.index(seq)]) > seq, (seq, flow[:20])
    print(f"\n{family}: SYN {gap:.2f} s behind its retransmission, "
          f"{len(synacks)} SYN-ACKs, data seq {seq} from {src} behind "
          f"{flow.index(seq)} segment(s); echoed {report['echoed']} bytes")
