"""racks' option written and read by the kernel (issue 23, part 2): rackd
on the BPF path (kernel_option = bpf), its sock_ops program attached to
a child cgroup that the topology makes for its programs::

      ns A (host)              ns R (router)              ns B (host)
    +--------------+   +----------------------------+   +--------------+
    | rackd (bpf)  |---|                            |---| rackd (bpf,  |
    | clients      |   |                            |   |  queue, none)|
    +--------------+   +----------------------------+   +--------------+
          \\_______ topo.use_cgroup(): racks-test-TAG, removed at close ____/

No SYN or SYN-ACK crosses rackd's queue on that path (its `syn` and
`synack` counters stay 0) while racks' option is on the wire, set-up
runs over racks' messages as on the queue path (derived keys after the
first connection), and the fallback says why in `rackctl status`.
"""

import pytest

import racks
import testbed
from testbed import Capture, start_xfer_client, start_xfer_server

from test_trust import check, settled

PORT = 5501
SIZE = 256 * 1024
RATE = SIZE // 2
EXID = (0x7261).to_bytes(2, "big")


@pytest.fixture(scope="module", autouse=True)
def built():
    testbed.make("build/rackd", "build/rackctl", "build/bench/connfleet")


def transfer(topo, src="a", dst="b", family="v4", port=PORT):
    server = start_xfer_server(topo.ns(dst), port, send=SIZE, rate=RATE,
                               timeout=30)
    client = start_xfer_client(topo.ns(src), topo.addr[dst][family], port,
                               SIZE, recv=True, rate=RATE, announce=True,
                               timeout=30)
    client.connected()
    return server, client


def racks_option(raw):
    """Racks' option (kind 254, ExID 0x7261) of a TCP header, or None."""
    hdr = (raw[12] >> 4) * 4
    opts, i = raw[20:hdr], 0
    while i < len(opts):
        if opts[i] in (0, 1):
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        if opts[i] == 254 and opts[i + 2:i + 4] == EXID:
            return opts[i:i + opts[i + 1]]
        i += opts[i + 1]
    return None


def handshake_options(pkts):
    """[(flags, option or None)] of the SYNs and SYN-ACKs captured."""
    from scapy.all import TCP
    out = []
    for p in pkts:
        if TCP in p and p[TCP].flags & 0x02:
            out.append((p.sprintf("%TCP.flags%"), racks_option(bytes(p[TCP]))))
    return out


def bpf_status(rackd):
    st = rackd.status()
    assert st["option_path"] == "bpf", st
    return st


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_derived_connections_with_no_handshake_queued(topo, tmp_path, family):
    """Three connections A -> B on the BPF path: the first runs the host
    handshake, the others derive their keys; no SYN or SYN-ACK is
    queued on either host, and the capture shows racks' option on every
    SYN and SYN-ACK (the positive control of that zero)."""
    ra, rb = topo.start_rackd("a", path="bpf"), topo.start_rackd("b", path="bpf")
    for r in (ra, rb):
        st = bpf_status(r)
        assert "sock_ops program attached to cgroup" in \
            st["option_path_reason"], st
        assert st["bpf_cgroup"] == str(topo.cgroup)
    cap = Capture(topo.a, tmp_path / "a.pcap",
                  f"tcp port {PORT} or tcp port {PORT + 1} or "
                  f"tcp port {PORT + 2}")
    sources = []
    for i in range(3):
        server, client = transfer(topo, family=family, port=PORT + i)
        sa, sb = settled(ra, PORT + i), settled(rb, PORT + i)
        check(server, client)
        assert sa["state"] == sb["state"] == "connected", (sa, sb)
        assert sa["conn_id"] == sb["conn_id"]
        sources.append((sa["key_source"], sb["key_source"]))
    assert sources == [("exchange", "exchange"), ("derived", "derived"),
                       ("derived", "derived")], sources
    hs = handshake_options(cap.packets())
    assert len(hs) >= 6, hs
    # The long form (18 bytes: flags, host pair, nonce), as the queue
    # path writes it.
    assert all(opt is not None and len(opt) == 18 for _, opt in hs), hs
    for r in (ra, rb):
        st = bpf_status(r)
        assert st["syn"] == 0 and st["synack"] == 0, st
        assert st["bpf_records_racks"] >= 3, st
        assert st["edp_keyed_derived"] == 2, st
        assert st["bpf_written_syn"] + st["bpf_written_synack"] >= 3, st
        # Only racks' messages crossed the queue: a few per connection.
        assert st["packets_queued"] <= 60, st
    print(f"\nA: {ra.status()['packets_queued']} queued, "
          f"B: {rb.status()['packets_queued']} queued for 3 connections")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_server_older_than_rackd_answers_racks(topo, tmp_path, family):
    """B's server listens before B's rackd attaches its program, so the
    program's TCP_LISTEN_CB never ran for it: rackd's listener iterator
    (bpf/racks_listeners.bpf.c) gives it the program's flag at start.
    Three connections A -> B then carry racks' option in SYN and SYN-ACK
    alike (the capture), none is queued, and they are managed from their
    handshake: the first exchanges, the next derive (not adopted)."""
    topo.use_cgroup()           # the server runs the program's cgroup
    port = PORT + 10
    server = start_xfer_server(topo.b, port, send=SIZE, rate=RATE, count=3,
                               timeout=30)
    ra, rb = topo.start_rackd("a", path="bpf"), topo.start_rackd("b", path="bpf")
    st = bpf_status(rb)
    assert st["bpf_old_listeners"] == "flagged", st
    assert st["bpf_old_listeners_flagged"] >= 1, st
    assert "listener(s) older than the program now answer racks" in rb.log()
    cap = Capture(topo.a, tmp_path / "a.pcap", f"tcp port {port}")
    sources, reports = [], []
    for i in range(3):
        client = start_xfer_client(topo.a, topo.addr["b"][family], port,
                                   SIZE, recv=True, rate=RATE,
                                   announce=True, timeout=30)
        client.connected()
        sa, sb = settled(ra, port), settled(rb, port)
        reports.append(client.result(60))
        assert sa["state"] == sb["state"] == "connected", (sa, sb)
        assert "adopted_for" not in sb, sb
        sources.append((sa["key_source"], sb["key_source"]))
    assert sources == [("exchange", "exchange"), ("derived", "derived"),
                       ("derived", "derived")], sources
    hs = handshake_options(cap.packets())
    assert [f for f, o in hs if f == "SA" and o is not None] == ["SA"] * 3, hs
    assert all(o is not None for _, o in hs), hs
    st = bpf_status(rb)
    assert st["syn"] == st["synack"] == 0, st
    assert st["bpf_written_synack"] >= 3, st
    for report, srv in zip(reports, server.results(60), strict=True):
        assert report["sent_sha256"] == srv["recv_sha256"]
        assert report["recv_sha256"] == srv["sent_sha256"]


def test_plain_peer(topo, tmp_path):
    """A on the BPF path, B without rackd: A's SYN offers racks, B's
    SYN-ACK does not answer; the connection is released (plain_answer)
    and its bytes arrive; nothing was queued for the handshake."""
    ra = topo.start_rackd("a", path="bpf")
    cap = Capture(topo.a, tmp_path / "a.pcap", f"tcp port {PORT}")
    server, client = transfer(topo)
    sa = settled(ra, PORT)
    check(server, client)
    # Released, then offered adoption, as on the queue path (adopt.h).
    assert sa.get("unmanaged") == "plain_answer" or \
        sa.get("adopted_for") == "plain_answer", sa
    hs = handshake_options(cap.packets())
    assert [f for f, o in hs if o is not None] == ["S"], hs
    assert [f for f, o in hs if o is None] == ["SA"], hs
    st = bpf_status(ra)
    assert st["syn"] == 0 and st["synack"] == 0, st
    assert st["bpf_records_plain"] == 1 and st["bpf_records_racks"] == 0, st


@pytest.mark.parametrize("side", ["client", "server"])
def test_bpf_and_queue_rackds_interoperate(topo, side):
    """One end on the BPF path, the other on the queue path: the same
    option on the wire, so the first connection exchanges and the next
    derives, both directions."""
    bpf_host = "a" if side == "client" else "b"
    queue_host = "b" if bpf_host == "a" else "a"
    rb = topo.start_rackd(bpf_host, path="bpf")
    rq = topo.start_rackd(queue_host, path="queue")
    assert rq.status()["option_path"] == "queue"
    sources = []
    for i in range(2):
        server, client = transfer(topo, port=PORT + i)
        s1, s2 = settled(rb, PORT + i), settled(rq, PORT + i)
        check(server, client)
        assert s1["state"] == s2["state"] == "connected", (s1, s2)
        sources.append(s1["key_source"])
    assert sources == ["exchange", "derived"], sources
    st, sq = bpf_status(rb), rq.status()
    assert st["syn"] == st["synack"] == 0, st
    assert sq["syn"] >= 2 and sq["synack"] >= 2, sq


def test_fallback_said_in_status(topo):
    """No kernel_option at all: the queue path, the default while the BPF
    path is a preview (opt-in); auto with a cgroup that is no cgroup: the
    queue path, and why."""
    rq = testbed.Rackd(topo.a, config=None).start(timeout=10)
    st = rq.status()
    assert st["option_path"] == "queue", st
    assert st["kernel_option"] == "queue", st
    assert st["option_path_reason"] == "kernel_option = queue", st
    bogus = topo.b  # any namespace will do for the second rackd
    ra = topo.start_rackd("b", config="kernel_option = auto\n"
                          "bpf_cgroup = /proc/self\n")
    st = ra.status()
    assert st["option_path"] == "queue", st
    assert st["option_path_reason"].startswith("BPF unusable"), st
    assert "not a cgroup v2 directory" in st["option_path_reason"], st
    assert "BPF unusable" in ra.log()
    # And the queue path works as ever: SYNs queued.
    server, client = transfer(topo, src="a", dst="b")
    settled(rq, PORT)
    check(server, client)
    assert rq.status()["syn"] >= 1
    del bogus


def test_bpf_required_and_unusable_refuses_to_start(topo):
    rackd = testbed.Rackd(topo.a, config="kernel_option = bpf\n"
                          "bpf_cgroup = /nonexistent\n")
    with pytest.raises(testbed.RackdError) as exc:
        rackd.start(timeout=10)
    assert "kernel_option = bpf" in str(exc.value)
    assert "/nonexistent" in str(exc.value)


def test_forged_and_replayed_option_segments(topo, tmp_path):
    """Malformed options on SYNs to a listener of a BPF host are counted
    by the program and answered plain; a replayed offering SYN gets a
    SYN-ACK with a fresh nonce and makes no connection."""
    ra, rb = topo.start_rackd("a", path="bpf"), topo.start_rackd("b", path="bpf")
    a4, b4 = topo.addr["a"]["v4"], topo.addr["b"]["v4"]
    cap = Capture(topo.b, tmp_path / "b.pcap", f"tcp port {PORT}")
    server, client = transfer(topo)
    settled(rb, PORT)
    check(server, client)
    listener = start_xfer_server(topo.b, PORT + 1, count=0)
    before = bpf_status(rb)
    testbed.run(topo.a.exec_prefix() + [
        testbed.PYTHON, str(testbed.TOOLS / "edpcraft.py"),
        *(f"{case},{a4},{40000 + i},{b4},{PORT + 1}" for i, case in enumerate(
            ("syn-bad-length", "syn-bad-version", "syn-bad-type",
             "syn-truncated")))], timeout=60)
    # The captured offering SYN replayed on a new flow (its offer, nonce
    # and host pair verbatim, another source port).
    from scapy.all import IP, TCP, send, conf
    pkts = cap.packets()
    syn = next(p for p in pkts if TCP in p and p[TCP].flags == "S")
    first_synack = next(p for p in pkts if TCP in p and p[TCP].flags == "SA")
    cap2 = Capture(topo.b, tmp_path / "b2.pcap", f"tcp port {PORT + 1}")
    testbed.run(topo.a.exec_prefix() + [testbed.PYTHON, "-c",
        "from scapy.all import IP, TCP, send, conf; conf.verb = 0; "
        f"p = IP(bytes.fromhex('{bytes(syn[IP]).hex()}')); "
        f"p[TCP].sport = 40999; p[TCP].dport = {PORT + 1}; "
        "del p[IP].chksum; del p[TCP].chksum; "
        "send(p)"], timeout=60)
    testbed.wait_until(
        lambda: rb.status()["bpf_parse_bad"] - before["bpf_parse_bad"] >= 4,
        10, lambda: f"B's program to count the malformed offers: "
                    f"{rb.status()}")
    replies = [p for p in cap2.packets() if TCP in p and p[TCP].flags == "SA"
               and p[TCP].dport == 40999]
    assert replies, "B answered the replayed SYN"
    old_nonce = racks_option(bytes(first_synack[TCP]))[10:18]
    new_opt = racks_option(bytes(replies[0][TCP]))
    assert new_opt is not None and new_opt[10:18] != old_nonce
    after = bpf_status(rb)
    assert after["syn"] == after["synack"] == 0, after
    assert after["bpf_records"] == before["bpf_records"], (before, after)
    assert not racks.conns_between(rb, local_port=PORT + 1)
    del conf, send


@pytest.mark.bulk
def test_a_thousand_connections(topo):
    """1,000 connections on the BPF path: every one set up (derived) and
    echoing, none of their handshakes queued, and one set-up message each
    way as on the queue path: the client's CONFIRM finds the server's
    connection although its record may still wait in the server's ring
    (rackd reads the ring before it calls a message's connection
    unknown: bpf_records_pulled), so no CONFIRM is sent again. While
    the burst lasts the program pushes its records without waking rackd,
    which reads them on its round timer (bpf_quiet_records); once quiet,
    a record wakes it again: a last connection after the burst is set up
    at once."""
    ra, rb = topo.start_rackd("a", path="bpf"), topo.start_rackd("b", path="bpf")
    server, client = transfer(topo)
    check(server, client)
    before = {r: r.status() for r in (ra, rb)}
    fleet = racks.Fleet(topo.b, topo.a, topo.addr["b"]["v4"], PORT + 1, 1000)
    try:
        assert fleet.opened["connected"] == 1000, fleet.opened
        states = testbed.wait_until(
            lambda: (lambda s: s if s.get("connected") == 1000 else None)(
                racks.fleet_states(ra, PORT + 1)), 60,
            lambda: f"1,000 connected on A: "
                    f"{racks.fleet_states(ra, PORT + 1)}")
        echoed = fleet.echo()
        assert echoed["ok"] == 1000, echoed
    finally:
        fleet.close()
    msgs = {}
    for name, r in (("A", ra), ("B", rb)):
        st = bpf_status(r)
        assert st["syn"] == st["synack"] == 0, st
        assert st["edp_keyed_derived"] >= 1000, st
        assert st["edp_setup_failed"] == 0 and st["edp_bad_mac"] == 0, st
        assert st["bpf_ringbuf_full"] == 0, st
        d = {k: st[k] - before[r][k] for k in
             ("edp_setup_msgs_out", "edp_unknown_conn", "edp_duplicate",
              "bpf_records_pulled", "bpf_quiet_records", "bpf_events_racks")}
        # No message for a connection whose record was not read yet.
        assert d["edp_unknown_conn"] == 0, (name, d)
        # One each way (A's CONFIRM, B's DONE); a resend only if rackd
        # sat on an answer for SETUP_RETRY_MS (a loaded machine).
        assert 1000 <= d["edp_setup_msgs_out"] <= 1020, (name, d)
        # Most records of the burst woke nobody.
        assert d["bpf_quiet_records"] >= d["bpf_events_racks"] // 2, (name, d)
        msgs[name] = d
    # Quiet again (the rounds stop after OPTPATH_QUIET_ROUNDS ms): the
    # next record wakes rackd, and the connection is set up at once.
    testbed.wait_until(lambda: all(r.status()["bpf_reader"] == "polled"
                                   for r in (ra, rb)), 5, "rounds over")
    quiet = {r: r.status()["bpf_quiet_records"] for r in (ra, rb)}
    server, client = transfer(topo, port=PORT + 2)
    sa, sb = settled(ra, PORT + 2, timeout=2), settled(rb, PORT + 2, timeout=2)
    check(server, client)
    assert sa["state"] == sb["state"] == "connected", (sa, sb)
    assert sa["key_source"] == "derived", sa
    for r in (ra, rb):
        assert r.status()["bpf_quiet_records"] == quiet[r], r.status()
    print(f"\n1,000 on the BPF path: {states}; A drained in "
          f"{ra.status()['bpf_drains']} rounds; {msgs}")


def test_a_bpf_connection_moves(topo):
    """A connection set up on the BPF path is spliced onto A's new
    address (make-before-break) and keeps its bytes."""
    ra, rb = topo.start_rackd("a", path="bpf"), topo.start_rackd("b", path="bpf")
    server, client = transfer(topo)
    sa = settled(ra, PORT)
    assert sa["state"] == "connected", sa
    racks.move_and_splice(topo, "a", ra)
    check(server, client)
    st = bpf_status(ra)
    assert st["spliced"] == 1 and st["syn"] == 0, st
