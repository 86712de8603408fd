"""Adoption: connections whose handshake did not carry racks become
managed later, when both ends run rackd (rackd/engine/adopt.h), and then
survive a cut with a move like any other; a peer without rackd sees only
the few segments adoption allows, and nothing else changes for it.

Topology: the standard A -- R -- B (see testbed.py). R plays the
middleboxes that defeat racks' offer (it drops every flow's first SYN, or
strips racks' option). Loss (1 % at R, offering SYNs lost among the rest)
is tests/test_loss.py's.
"""

import json
import subprocess
import time

import pytest

import racks
import testbed

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\nsweep_interval = 1s\n"


def middlebox(topo, kind):
    """R's box that defeats the offer (testbed.Topology's, both families):
    drop_first_syn, drop_option_syns or strip_option. Its counter says
    whether it acted (Middlebox.assert_acted)."""
    return getattr(topo, kind)()


def start_transfer(topo, family, size, rate=2 * MB, timeout=90):
    return racks.start_transfer(topo, family, size, PORT, rate, timeout)


def cut_move_restore(topo, ra, rb, family, server, client, size):
    """A's link goes down, A takes a new address, the link comes back:
    the connection follows A, both streams arrive intact."""
    subnet = topo.reserve_subnet("a", family)
    topo.cut("a")
    for rackd in (ra, rb):
        racks.wait_states(rackd, "suspended", 5)
    new = topo.move_to_new_subnet("a", family, new=subnet)
    time.sleep(1)
    topo.restore("a")
    racks.wait_connected_at(rb, "wire_remote", new, 10, local_port=PORT)
    mine = racks.wait_connected_at(ra, "wire_local", new, 10, remote_port=PORT)
    assert mine["reconnections"] == 1, mine
    return racks.check_both_ways(server, client, size)


def assert_adopted(rackd, why, **ports):
    shown = racks.conn_of(rackd, **ports)
    assert shown["state"] == "connected" and shown["peer"] == "racks", shown
    assert shown["adoption"] == "adopted", shown
    assert shown["adopted_for"] == why, shown
    assert "unmanaged" not in shown, shown
    return shown


@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("box,why", [("drop_first_syn", "syn_retransmitted"),
                                     ("drop_option_syns", "syn_retransmitted"),
                                     ("strip_option", "plain_answer")])
def test_defeated_offer_is_adopted_and_survives_a_move(topo, family, box, why):
    """Through a box that defeats the offer in the handshake, the
    connection is adopted within a second and then follows A's move
    during a cut, both streams intact."""
    mbox = middlebox(topo, box)
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 16 * MB
    server, client = start_transfer(topo, family, size)
    t0 = time.monotonic()
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    took = time.monotonic() - t0
    # Within a second of connect() returning (0.7 s measured alone: the
    # ADOPT round of 550 ms, then set-up).
    assert took < 1.0, took
    mbox.assert_acted()
    mine = assert_adopted(ra, why, remote_port=PORT)
    # B never saw racks in the handshake: A's ADOPT told it.
    theirs = assert_adopted(rb, "handshake_unseen", local_port=PORT)
    assert mine["key_fingerprint"] == theirs["key_fingerprint"]
    for rackd in (ra, rb):
        st = rackd.status()
        assert st["adopt_completed"] == 1 and st["adopt_failed"] == 0, st
    # Only B learnt (A saw the handshake): one elicitation round or two.
    assert ra.status()["adopt_learnt"] == 0
    assert rb.status()["adopt_learnt"] == 1
    time.sleep(1)
    if box == "drop_option_syns":
        # It would drop the reconnection's SYN too (rcsyn.c): that is
        # test_move's business, not adoption's.
        mbox.remove()
    report = cut_move_restore(topo, ra, rb, family, server, client, size)
    # A dropped first SYN costs connect() the kernel's first RTO (1 s),
    # with or without racks (a retransmission offering racks again would
    # cost a box that drops such SYNs 2 s more); adoption follows within
    # a second. Stripping the option costs nothing.
    if box.startswith("drop"):
        assert 0.9 < report["connect_seconds"] < 1.5, report
    else:
        assert report["connect_seconds"] < 0.5, report
    print(f"\n{family} {box}: connect() took {report['connect_seconds']:.2f}"
          f" s, adopted {took:.2f} s after it returned")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_connection_older_than_rackd_is_adopted(topo, family):
    """Both rackds start after the connection opened: each finds it in its
    start-up scan (predates_rackd), learns its sequence numbers from the
    socket, and they agree; then it survives a cut with a move."""
    size = 16 * MB
    server, client = start_transfer(topo, family, size)
    time.sleep(0.5)
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    t0 = time.monotonic()
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    took = time.monotonic() - t0
    mine = assert_adopted(ra, "predates_rackd", remote_port=PORT)
    theirs = assert_adopted(rb, "predates_rackd", local_port=PORT)
    assert mine["key_fingerprint"] == theirs["key_fingerprint"]
    for rackd in (ra, rb):
        st = rackd.status()
        assert st["adopt_learnt"] == 1 and st["adopt_completed"] == 1, st
        assert st["adopt_rounds"] >= 2, st
    # Learning over: no flow is diverted any more.
    for ns in (topo.a, topo.b):
        testbed.wait_until(lambda: "@adopt" not in ns.run(
            ["nft", "list", "chain", "inet", "racks", "output"]).stdout, 5,
            "the adoption rules to go")
    time.sleep(1)
    cut_move_restore(topo, ra, rb, family, server, client, size)
    print(f"\n{family}: adopted {took:.2f} s after both rackds started")


@pytest.mark.parametrize("family,down", [("v4", 0), ("v6", 0), ("v4", 2.5)])
def test_restart_without_state_file_adopts_again(topo, family, down):
    """B's rackd restarts without its state file: it no longer knows the
    connection A manages; its scan adopts it, A (which still holds the
    old key) agrees, since B names exactly its sequence numbers, and the
    connection, managed with a new key, survives a cut with a move. An
    ADOPT never releases a keyed connection by itself: A first asks B with
    a heartbeat under the old key, and adopts again only once that goes
    unanswered. With B's rackd down longer than suspend_after, A has
    suspended the connection meanwhile: B's segments, which A's socket
    takes, resume it first (an ADOPT never resumes anything)."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 24 * MB
    server, client = start_transfer(topo, family, size)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    before = racks.conn_of(ra, remote_port=PORT)
    assert "adoption" not in before
    assert rb.stop() == 0
    rb.state.unlink(missing_ok=True)
    if down:
        time.sleep(down)
        # Suspended (B's kernel's data resumes it now and then).
        assert racks.conn_of(ra, remote_port=PORT)["suspensions"] >= 1
    rb.start()
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    mine = assert_adopted(ra, "peer_forgot", remote_port=PORT)
    theirs = assert_adopted(rb, "predates_rackd", local_port=PORT)
    assert mine["key_fingerprint"] == theirs["key_fingerprint"] != \
        before["key_fingerprint"]
    assert ra.status()["adopt_readopted"] == 1
    # It asked B under the old key first, and B could not answer.
    assert ra.status()["adopt_readopt_asked"] >= 1
    time.sleep(1)
    cut_move_restore(topo, ra, rb, family, server, client, size)


def l3_src(p):
    from scapy.all import IP, IPv6
    return p[IP].src if IP in p else p[IPv6].src


def adopts_in(pkts, src):
    """The segments from SRC carrying racks' option, by option type."""
    from test_edp import racks_options_in
    from scapy.all import TCP
    out = []
    for p in racks_options_in(p for p in pkts if l3_src(p) == src):
        raw = bytes(p[TCP])
        opts = raw[20:(raw[12] >> 4) * 4]
        at = opts.index(bytes([254]))
        out.append((opts[at + 4] & 0x0f, p))
    return out


# TcpExt counters (nstat) that an idle connection's ordinary life moves:
# a handshake, a short echo each way, delayed and pure ACKs, fast-path hits.
ORDINARY_TCPEXT = {f"TcpExt{name}" for name in (
    "TCPPureAcks", "TCPOrigDataSent", "TCPDelivered", "TCPHPAcks",
    "TCPHPHits", "DelayedACKs", "TCPRcvCoalesce", "TCPAutoCorking",
    "TCPBacklogCoalesce", "TCPHystartTrainDetect", "TCPHystartTrainCwnd")}


@pytest.mark.timing
@pytest.mark.parametrize("racks_side", ["client", "server"])
def test_plain_peer_sees_at_most_three_adopts(topo, tmp_path, racks_side):
    """rackd on one end only. Client side: its offer is answered plain,
    it asks for adoption; server side: rackd starts after the connection
    opened, learns it from its own socket, asks. Either way the plain end
    sees exactly three ADOPTs (zero-length, in its window), answers each
    with at most one pure ACK, and its socket is unharmed (its bytes echo
    unchanged both ways afterwards); the connection ends up unmanaged,
    adoption_unanswered, never asked again. The connection is idle, so
    every segment the plain host sends is its kernel's reaction."""
    from scapy.all import TCP
    from test_edp import Capture
    racks_host, plain_host = ("a", "b") if racks_side == "client" else ("b", "a")
    cap = Capture(topo.ns(plain_host), tmp_path / "plain.pcap")
    plain_before = json.loads(
        topo.ns(plain_host).run(["nstat", "-azs", "-j"]).stdout)["kernel"]
    rackd = topo.start_rackd("a", config=FAST) if racks_side == "client" \
        else None
    tool = str(testbed.TOOLS / "manyconn.py")
    server = topo.b.popen([testbed.PYTHON, tool, "serve", str(PORT)])
    assert testbed.read_line(server, 10, "manyconn server") == "READY"
    client = topo.a.popen([testbed.PYTHON, tool, "connect",
                           topo.addr["b"]["v4"], str(PORT), "1",
                           "--timeout", "30"], stdin=subprocess.PIPE)
    opened = json.loads(testbed.read_line(client, 30, "connection opened"))
    assert opened["connected"] == 1, opened
    if rackd is None:
        time.sleep(0.5)
        rackd = topo.start_rackd("b", config=FAST)
    ports = {"remote_port": PORT} if racks_side == "client" else \
        {"local_port": PORT}
    conns = racks.wait_states(rackd, "released", 12, **ports)
    shown = rackd.ctl_json("show", str(conns[0]["id"]))
    assert shown["adoption"] == "unanswered", shown
    assert shown["unmanaged"] == "adoption_unanswered", shown
    assert shown["adopted_for"] == ("plain_answer" if racks_side == "client"
                                    else "predates_rackd"), shown
    st = rackd.status()
    assert st["adopt_started"] == 1 and st["adopt_unanswered"] == 1, st
    assert st["adopt_msgs_out"] == 3, st
    assert st["adopt_learnt"] == (0 if racks_side == "client" else 1), st
    # Never again: wait past where a fourth would have gone.
    time.sleep(3)
    assert rackd.status()["adopt_msgs_out"] == 3
    client.stdin.write("echo\n")
    client.stdin.flush()
    echoed = json.loads(testbed.read_line(client, 30, "echo round"))
    assert echoed["echoed"] == 1 and not echoed["bad"], echoed
    pkts = cap.packets()
    seen = adopts_in(pkts, topo.addr[racks_host]["v4"])
    types = [t for t, _ in seen]
    # The client's offer on its first SYN, then three ADOPTs (type 12).
    assert types == ([1] if racks_side == "client" else []) + [12] * 3, types
    adopts = [p for t, p in seen if t == 12]
    assert all(len(bytes(p[TCP].payload)) == 0 for p in adopts)
    times = [round(float(p.time) - float(adopts[0].time), 2) for p in adopts]
    assert times[1] == pytest.approx(1, abs=0.2) and \
        times[2] == pytest.approx(4, abs=0.3), times
    # The plain kernel's reaction to each: what it sent within 200 ms.
    plain = topo.addr[plain_host]["v4"]
    answers = [[q for q in pkts if l3_src(q) == plain and
                0 <= float(q.time) - float(p.time) < 0.2] for p in adopts]
    assert all(len(a) <= 1 for a in answers), answers
    assert all(q.sprintf("%TCP.flags%") == "A" and not bytes(q[TCP].payload)
               for a in answers for q in a), answers
    after = json.loads(
        topo.ns(plain_host).run(["nstat", "-azs", "-j"]).stdout)["kernel"]
    grew = {k: after[k] - plain_before.get(k, 0) for k in after
            if k.startswith("TcpExt") and after[k] != plain_before.get(k, 0)}
    # Nothing else changes for it: the TcpExt counters that moved are
    # those of an ordinary idle connection's life (its handshake, the
    # echo, the pure ACKs); none of a reset, an abort, a drop, a
    # challenge, a retransmission or a segment out of order. The echo
    # moved some (the positive control: nstat counts).
    assert grew.get("TcpExtTCPPureAcks", 0) >= 1 and \
        grew.get("TcpExtTCPOrigDataSent", 0) >= 1, grew
    assert set(grew) <= ORDINARY_TCPEXT, sorted(set(grew) - ORDINARY_TCPEXT)
    print(f"\nplain {plain_host}: ADOPTs at {times} s, answered with "
          f"{[len(a) for a in answers]} pure ACK(s); TcpExt counters that "
          f"moved on it: {grew}")
    client.stdin.close()
    testbed.terminate([client, server])


@pytest.mark.timing
def test_many_connections_older_than_rackd_are_adopted(topo):
    """500 idle connections open before either rackd starts: the start-up
    scans adopt them all (learning in batches, their flows written to the
    adopt sets 64 a transaction: eight transactions, not 500), within a
    few seconds; every connection still works."""
    tool = str(testbed.TOOLS / "manyconn.py")
    count = 500
    server = topo.b.popen([testbed.PYTHON, tool, "serve", str(PORT)])
    assert testbed.read_line(server, 10, "manyconn server") == "READY"
    client = topo.a.popen([testbed.PYTHON, tool, "connect",
                           topo.addr["b"]["v4"], str(PORT), str(count),
                           "--timeout", "60"], stdin=subprocess.PIPE)
    opened = json.loads(testbed.read_line(client, 90, "connections opened"))
    assert opened["connected"] == count, opened
    monitors = {h: racks.NftMonitor(topo.ns(h)) for h in "ab"}
    t0 = time.monotonic()
    ra = topo.start_rackd("a", debug=False)
    rb = topo.start_rackd("b", debug=False)
    for rackd, ports in ((ra, {"remote_port": PORT}),
                         (rb, {"local_port": PORT})):
        testbed.wait_until(
            lambda: len([c for c in racks.conns_between(rackd, **ports)
                         if c["state"] == "connected"]) == count, 20,
            lambda: json.dumps({s: sum(1 for c in rackd.connections()
                                       if c["state"] == s)
                                for s in ("adopting", "setup", "connected",
                                          "released")}))
    took = time.monotonic() - t0
    for rackd in (ra, rb):
        st = rackd.status()
        assert st["adopt_completed"] == st["adopt_learnt"] == count, st
    # Within a few seconds of both starting (0.9 s measured alone).
    assert took < 5, took
    # The flows joined the adopt sets in learning batches of ADOPT_BATCH
    # (256: 256 and 244), each written in transactions of at most
    # FLOWSET_CHUNK (64) flows (nft/flowset.c): eight (nine if a batch is
    # cut otherwise), not five hundred.
    joins = {}
    for host, monitor in monitors.items():
        joins[host] = [
            sum(line.startswith("add element inet racks adopt4 ")
                for line in lines)
            for _, lines in monitor.transactions("rackd")]
        joins[host] = [n for n in joins[host] if n]
        monitor.stop()
        assert sum(joins[host]) == count and max(joins[host]) <= 64 and \
            len(joins[host]) <= 9, (host, joins[host])
    client.stdin.write("echo\n")
    client.stdin.flush()
    echoed = json.loads(testbed.read_line(client, 120, "echo round"))
    assert echoed["echoed"] == count and not echoed["bad"], echoed
    print(f"\n{count} connections older than rackd: all adopted in "
          f"{took:.1f} s ({ra.status()['adopt_rounds']} elicitations on A); "
          f"flows joining the adopt sets per transaction: {joins}")


def adopt_option(x_own, x_peer, flags=0):
    """An ADOPT option's bytes, as hex for tools/edpcraft.py's raw case."""
    body = x_own.to_bytes(4, "big") + x_peer.to_bytes(4, "big") + \
        bytes([flags]) + bytes(7)
    return (bytes([254, 21, 0x72, 0x61, 0x1c]) + body).hex()


def test_forged_adopts_change_nothing(topo):
    """R, on the path, knows the endpoints but not the sequence numbers the
    connection started with. Its ADOPTs to B, in A's name, for the managed
    connection (wrong numbers) and for a flow without a socket, are
    refused: the connection stays managed with the same key, and no entry
    is made for the other flow."""
    from test_edp import edpcraft
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 8 * MB
    server, client = start_transfer(topo, "v4", size, rate=1 * MB)
    racks.wait_states(ra, "connected", remote_port=PORT)
    racks.wait_states(rb, "connected", local_port=PORT)
    before = racks.conn_of(rb, local_port=PORT)
    assert before["state"] == "connected"
    a4, b4 = topo.addr["a"]["v4"], topo.addr["b"]["v4"]
    aport = int(before["remote"].rsplit(":", 1)[1])
    st0 = rb.status()
    edpcraft(topo.r,
             ("raw", a4, aport, b4, PORT, 1000, 0,
              adopt_option(12345, 67890)),
             ("raw", a4, aport, b4, PORT, 1000, 0,
              adopt_option(12345, 67890, flags=1)),
             ("raw", a4, 40123, b4, PORT, 1000, 0,
              adopt_option(1, 2)))
    testbed.wait_until(lambda: rb.status()["adopt_msgs_in"] ==
                       st0["adopt_msgs_in"] + 3, 5, "the forged ADOPTs")
    st = rb.status()
    assert st["adopt_readopted"] == st["adopt_started"] == 0, st
    # Not the connection's numbers: an ADOPT that could change nothing is
    # refused before anything is asked about where it sits (and no
    # heartbeat is sent to ask the peer).
    assert st["edp_unexpected"] - st0["edp_unexpected"] == 2, st
    assert st["edp_bad_seq"] == st0["edp_bad_seq"], st
    assert st["adopt_readopt_asked"] == st0["adopt_readopt_asked"], st
    assert st["edp_unknown_conn"] - st0["edp_unknown_conn"] == 1, st
    after = racks.conn_of(rb, local_port=PORT)
    assert after["state"] == "connected" and "adoption" not in after
    assert after["key_fingerprint"] == before["key_fingerprint"]
    assert len(rb.connections()) == 1
    racks.check_both_ways(server, client, size)


def test_adopted_connection_survives_a_restart_with_its_state(topo):
    """An adopted connection is managed like any other: A's rackd restarts
    with its state file and takes it over, same key (its virtual ISNs and
    counter bases are in the file), and it still survives a cut with a
    move."""
    mbox = middlebox(topo, "strip_option")
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 24 * MB
    server, client = start_transfer(topo, "v4", size)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    before = assert_adopted(ra, "plain_answer", remote_port=PORT)
    mbox.assert_acted()
    assert ra.stop() == 0
    ra.start()
    assert ra.status()["state_restored"] == 1
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    after = racks.conn_of(ra, remote_port=PORT)
    for field in ("local", "remote", "key_fingerprint", "direction"):
        assert after[field] == before[field], (field, before, after)
    time.sleep(1)
    cut_move_restore(topo, ra, rb, "v4", server, client, size)


@pytest.mark.bulk
def test_busy_connection_is_learnt(topo):
    """Both rackds start in the middle of a transfer at 20 MB/s each way:
    every segment read is a lower bound of the numbers, the largest ones
    settle within a few rounds, and both ends agree (the key exchange
    proves it); the bytes arrive intact."""
    size = 100 * MB
    server, client = start_transfer(topo, "v4", size, rate=20 * MB)
    time.sleep(0.5)
    ra = topo.start_rackd("a", debug=False)
    rb = topo.start_rackd("b", debug=False)
    racks.wait_states(ra, "connected", 6, remote_port=PORT)
    racks.wait_states(rb, "connected", 6, local_port=PORT)
    mine = assert_adopted(ra, "predates_rackd", remote_port=PORT)
    theirs = assert_adopted(rb, "predates_rackd", local_port=PORT)
    assert mine["key_fingerprint"] == theirs["key_fingerprint"]
    rounds = [r.status()["adopt_rounds"] for r in (ra, rb)]
    samples = [r.status()["adopt_samples"] for r in (ra, rb)]
    # A few rounds: two measured (the fewest learning takes), at most half
    # of the eight after which it gives up (ADOPT_MAX_ROUNDS).
    assert all(2 <= n <= 4 for n in rounds), rounds
    racks.check_both_ways(server, client, size)
    print(f"\nbusy: learnt in {rounds} rounds from {samples} samples")


@pytest.mark.timing
def test_reload_while_learning_keeps_the_flow_diverted(topo):
    """A reload re-creates the table with empty sets: the flows being
    learnt go back in with the new table, so learning goes on.

    The connection is idle and older than both rackds, so B learns it
    only from the challenge ACKs its socket answers elicitations with;
    B's kernel sends at most one every 2 s (tcp_invalid_ratelimit), so
    learning takes B four rounds (2.2 s) instead of two: the reload
    lands while the flow is in the set, deterministically. Right after
    it, the table is another one (its handle), the flow is in its adopt
    set and still being learnt (learning starts once, so the reload put
    it there), and learning then ends in adoption."""
    topo.b.sysctl("net.ipv4.tcp_invalid_ratelimit", 2000)
    tool = str(testbed.TOOLS / "manyconn.py")
    server = topo.b.popen([testbed.PYTHON, tool, "serve", str(PORT)])
    assert testbed.read_line(server, 10, "manyconn server") == "READY"
    client = topo.a.popen([testbed.PYTHON, tool, "connect",
                           topo.addr["b"]["v4"], str(PORT), "1",
                           "--timeout", "30"], stdin=subprocess.PIPE)
    opened = json.loads(testbed.read_line(client, 30, "connection opened"))
    assert opened["connected"] == 1, opened

    def in_adopt_set():
        listing = testbed.nft(topo.b, "list set inet racks adopt4")
        return f" . {PORT} . " in listing and listing

    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    testbed.wait_until(in_adopt_set, 5, "B to start learning the flow")
    table = racks.table_handle(topo.b)
    assert rb.status()["adopt_learnt"] == 0
    rb.ctl("reload")
    assert racks.table_handle(topo.b) != table, "the reload kept the table"
    assert in_adopt_set(), "the flow is not in the new table's adopt set"
    st = rb.status()
    assert st["adopt_learnt"] == 0 and st["adopt_started"] == 1, st
    racks.wait_states(ra, "connected", 10, remote_port=PORT)
    racks.wait_states(rb, "connected", 10, local_port=PORT)
    assert_adopted(rb, "predates_rackd", local_port=PORT)
    st = rb.status()
    assert st["adopt_learnt"] == st["adopt_started"] == 1, st
    assert st["adopt_rounds"] >= 4, st
    client.stdin.write("echo\n")
    client.stdin.flush()
    echoed = json.loads(testbed.read_line(client, 30, "echo round"))
    assert echoed["echoed"] == 1 and not echoed["bad"], echoed
    client.stdin.close()
    testbed.terminate([client, server])


@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("case", ["stripped", "predates"])
def test_adoption_passes_a_window_tracking_firewall(topo, family, case):
    """R tracks TCP windows as OpenBSD pf does (tests/tools/wintrack.c,
    --strict), and, in front of that, strips racks' option from SYNs; or
    the connection is older than both rackds. It is adopted and managed,
    and wintrack drops nothing: ADOPTs, the challenge ACKs learning draws
    from the sockets and set-up all sit inside the window."""
    from test_wintrack import Wintrack, summary
    testbed.make("test-tools", timeout=120)
    mbox = middlebox(topo, "strip_option") if case == "stripped" else None
    wt = Wintrack(topo, strict=True)
    size = 8 * MB
    if case == "predates":
        server, client = start_transfer(topo, family, size, rate=1 * MB)
        time.sleep(0.5)
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    if case == "stripped":
        server, client = start_transfer(topo, family, size, rate=1 * MB)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    if case == "stripped":
        mbox.assert_acted()
        assert_adopted(ra, "plain_answer", remote_port=PORT)
        assert rb.status()["adopt_learnt"] == 1
    else:
        assert_adopted(ra, "predates_rackd", remote_port=PORT)
        assert ra.status()["adopt_learnt"] == rb.status()["adopt_learnt"] == 1
    racks.check_both_ways(server, client, size)
    stats = wt.stats()
    print(f"\n{family}: wintrack {summary(stats)}")
    assert not wt.drops(), "\n".join(wt.drops()[:40])
    wt.check_clean(stats)
    assert stats["racks_accepted"] >= 3, stats


def test_adopted_connection_moves_through_a_window_tracking_firewall(topo):
    """A connection older than both rackds, adopted (nobody saw its
    handshake: the window scale its reconnection SYN announces comes from
    the socket's tcp_info), follows A's move during a cut through
    wintrack --strict, which tracks the new flow from that SYN: nothing
    dropped, every byte checked."""
    from test_wintrack import Wintrack, summary
    testbed.make("test-tools", timeout=120)
    wt = Wintrack(topo, strict=True)
    size = 16 * MB
    server, client = start_transfer(topo, "v4", size, rate=1 * MB)
    time.sleep(0.5)
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    shown = assert_adopted(ra, "predates_rackd", remote_port=PORT)
    # The socket's options, as the handshake agreed them.
    assert shown["local_wscale"] and shown["remote_wscale"], shown
    time.sleep(1)
    cut_move_restore(topo, ra, rb, "v4", server, client, size)
    stats = wt.stats()
    print(f"\nwintrack {summary(stats)}")
    assert not wt.drops(), "\n".join(wt.drops()[:40])
    wt.check_clean(stats)
    assert stats["flows_created"] >= 2, stats
