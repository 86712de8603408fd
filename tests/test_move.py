"""Address changes: a connection follows either end to a new address,
authenticated with the key from set-up, and is spliced onto its old
socket by the kernel, every byte delivered exactly once.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B.
A move takes a host's address to a fresh subnet that R routes and retires
the old one (R forgets it), so the old address is unreachable, as after a
real change of network::

    A 10.71.1.2 --x                     (old subnet retired at R)
    A 10.71.3.2 ------ R ------ B 10.71.2.2 (rackd)

R also plays the attacker who knows a connection's id and sequence
numbers, but not its key.
"""

import ipaddress
import json
import time

import pytest

import racks
import testbed
from test_firewall import craft, reconnection_syns

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\nsweep_interval = 1s\n"


def has_rules(ns, chain):
    """Whether chain (always there) holds rules now."""
    out = ns.run(["nft", "list", "chain", "inet", "racks", chain]).stdout
    return "@" in out


def lo_addresses(ns):
    return {a["local"] for link in ns.ip_json("addr", "show", "dev", "lo")
            for a in link.get("addr_info", [])}


def start_transfer(topo, family, size, rate=2 * MB, timeout=60):
    return racks.start_transfer(topo, family, size, PORT, rate, timeout)


def check_transfer(server, client, size, timeout=90):
    return racks.check_both_ways(server, client, size, timeout)


def wait_hold_over(rackd, timeout, **ports):
    """Wait until the connection's hold is over (rackctl show: hold none).
    A resumed socket with data in flight keeps its window closed, and its
    segments cross rackd, until the peer acknowledges its retransmission:
    after a long backoff that is one retransmission timeout away."""
    testbed.wait_until(
        lambda: racks.conn_of(rackd, **ports)["hold"] == "none", timeout,
        lambda: f"hold over: {racks.conn_of(rackd, **ports)}")


@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("mover", ["a", "b"])
def test_end_moves_during_a_cut(topo, family, mover):
    """A (client) or B (server) takes a new address while its link is
    down; after the restore the connection follows it, both ways intact."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 12 * MB
    server, client = start_transfer(topo, family, size)
    racks.wait_states(ra, "connected", remote_port=PORT)
    racks.wait_states(rb, "connected", local_port=PORT)
    old = topo.addr[mover][family]
    subnet = topo.reserve_subnet(mover, family)
    time.sleep(1)
    topo.cut(mover)
    for rackd in (ra, rb):
        racks.wait_states(rackd, "suspended", 5)
    # Suspended: each rackd answers for its peer (rackctl show: hold).
    assert racks.conn_of(ra, remote_port=PORT)["hold"] == "held"
    assert racks.conn_of(rb, local_port=PORT)["hold"] == "held"
    new = topo.move_to_new_subnet(mover, family, new=subnet)
    time.sleep(2)
    topo.restore(mover)
    t_back = time.monotonic()
    mover_rackd, other = (ra, rb) if mover == "a" else (rb, ra)
    ports = {"remote_port": PORT} if mover == "a" else {"local_port": PORT}
    other_ports = {"local_port": PORT} if mover == "a" else {"remote_port": PORT}
    racks.wait_connected_at(other, "wire_remote", new, 10, **other_ports)
    racks.wait_connected_at(mover_rackd, "wire_local", new, 10, **ports)
    reconnected = time.monotonic() - t_back
    mine = racks.conn_of(mover_rackd, **ports)
    theirs = racks.conn_of(other, **other_ports)
    # The sockets keep their endpoints; only the wire moved.
    assert mine["local"].rsplit(":", 1)[0].strip("[]") == old
    assert theirs["remote"].rsplit(":", 1)[0].strip("[]") == old
    assert mine["splice"] == theirs["splice"] == "kernel"
    assert mine["reconnections"] == theirs["reconnections"] == 1
    assert mine["local_address_kept"] is True
    assert old in lo_addresses(topo.ns(mover))
    # The rewriting rules exist while something is spliced, and only then.
    assert has_rules(topo.a, "splice_out") and has_rules(topo.b, "prerouting")
    wait_hold_over(mover_rackd, 10, **ports)
    wait_hold_over(other, 10, **other_ports)
    before = [ra.status(), rb.status()]
    check_transfer(server, client, size)
    # Once resumed, the spliced data never went through rackd.
    after = [ra.status(), rb.status()]
    grew = {k: [a[k] - b[k] for a, b in zip(after, before)]
            for k in before[0] if isinstance(before[0][k], int)
            and any(a[k] != b[k] for a, b in zip(after, before))}
    # (racks' own messages, heartbeats each way, do cross it.)
    data = [racks.data_packets_queued(a) - racks.data_packets_queued(b)
            for a, b in zip(after, before)]
    assert sum(data) < 20, (data, json.dumps(grew))
    assert other.status()["reconnects_accepted"] >= 1
    assert mover_rackd.status()["reconnect_acks_in"] >= 1
    assert mover_rackd.status()["path_migrations"] >= 1
    for rackd in (ra, rb):
        assert rackd.status()["reconnects_refused_mac"] == 0
    # The connection is gone: so are its kept address and map entries.
    testbed.wait_until(lambda: old not in lo_addresses(topo.ns(mover)), 10,
                       "the kept address to go")
    # Map entries live exactly as long as the connections that need them
    # (the end that closed first remembers its socket in TIME_WAIT); the
    # rules go with the last entry, in the next transaction (the listing,
    # the counter and the chain are three reads: they agree once rackd
    # has caught up, which one sweep bounds).
    for rackd in (ra, rb):
        def agree():
            moved = [c for c in rackd.connections()
                     if (c["wire_local"], c["wire_remote"]) !=
                     (c["local"], c["remote"])
                     and c["tcp_state"] not in ("time-wait", "close")]
            return (rackd.status()["spliced"] == len(moved) and
                    has_rules(rackd.ns, "splice_out") == bool(moved))
        testbed.wait_until(agree, 2, lambda: f"splices, rules and connections "
                           f"to agree in {rackd.ns.name}: "
                           f"{rackd.connections()}")
        assert not has_rules(rackd.ns, "output")
    print(f"\n{family}: {mover} moved {old} -> {new} during a cut: "
          f"connected {reconnected:.2f} s after the restore")


@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
def test_make_before_break(topo, family):
    """A gains a new address and then loses its old one, with no cut: both
    ends are connected at the new one within a second of the old one
    going (some 70 ms measured alone, rackctl's polling included), and
    the paced transfer ends within 2 s of its pace."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 12 * MB
    server, client = start_transfer(topo, family, size)
    racks.wait_states(ra, "connected", remote_port=PORT)
    events = topo.b.popen([rb.rackctl, "-S", str(rb.sock), "events"])
    time.sleep(1)
    old_cidr = topo.cidr("a", family)
    new = topo.move_to_new_subnet("a", family, keep_old=True)
    time.sleep(0.5)         # both addresses present: nothing changes
    assert racks.conns_between(ra, remote_port=PORT)[0]["reconnections"] == 0
    t_break = time.monotonic()
    topo.remove_address("a", family, old_cidr)
    racks.wait_connected_at(rb, "wire_remote", new, 5, local_port=PORT)
    racks.wait_connected_at(ra, "wire_local", new, 5, remote_port=PORT)
    moved = time.monotonic() - t_break
    assert moved < 1.0, moved
    # Mobility-aware software hears of it: a reconnect event with the
    # connection's new wire endpoints.
    while True:
        event = json.loads(testbed.read_line(events, 5, "a reconnect event"))
        if event["event"] == "reconnect":
            break
    assert event["wire_remote"].startswith(racks.endpoint(new, 0)[:-1]), event
    assert event["local"].endswith(f":{PORT}"), event
    report = check_transfer(server, client, size)
    # 12 MB at 2 MB/s: 6 s of sending; the move adds next to nothing.
    assert report["seconds"] < size / (2 * MB) + 2, report
    assert ra.status()["addr_suspensions"] == 1
    print(f"\n{family}: make-before-break: connected again {moved * 1000:.0f} "
          f"ms after the old address was removed")


def edpcraft(ns, *specs):
    ns.run([testbed.PYTHON, str(testbed.TESTS_DIR / "tools" / "edpcraft.py"),
            *(",".join(map(str, s)) for s in specs)], timeout=60)


def reconnect_option(conn_id, counter, mac, type_=8):
    body = bytes.fromhex(conn_id) + counter.to_bytes(4, "big") + mac
    raw = bytes([254, 5 + len(body), 0x72, 0x61, 1 << 4 | type_]) + body
    return raw.hex()


def capture_reconnects(ns, iface, pcap):
    """tcpdump in ns of every SYN (reconnections travel in SYNs), listening
    when this returns (testbed.Capture)."""
    return testbed.Capture(ns, pcap, "tcp[tcpflags] & tcp-syn != 0",
                           iface=iface)


def test_forged_and_replayed_reconnections_are_refused(topo, tmp_path):
    """R knows the connection id and both sequence numbers. A
    reconnection under a made-up MAC, in a zero-length segment as rackds
    sent them before reconnections travelled in SYNs, is refused; so is a real one of A's, a SYN captured at R and replayed
    after A moved on (tests/test_firewall.py forges and replays SYNs
    further). B's connection stays where
    A is, and the transfer completes intact."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 16 * MB
    server, client = start_transfer(topo, "v4", size, rate=1 * MB)
    racks.wait_states(ra, "connected", remote_port=PORT)
    theirs = racks.conn_of(rb, local_port=PORT)
    conn_id = theirs["conn_id"]
    a_port = int(theirs["remote"].rsplit(":", 1)[1])
    b4 = topo.addr["b"]["v4"]
    seq, ack = theirs["remote_isn"] + 1, theirs["local_isn"] + 1
    attacker = str(ipaddress.ip_network(f"{b4}/24", strict=False)
                   .network_address + 1)

    # 1. A forgery from R's own address: right id and numbers, no key. A
    # numbered message's MAC is checked before anything else looks at it.
    before = rb.status()
    edpcraft(topo.r, ("raw", attacker, a_port, b4, PORT, seq, ack,
                      reconnect_option(conn_id, 1 << 30, bytes(16))))
    testbed.wait_until(lambda: rb.status()["edp_bad_mac"] ==
                       before["edp_bad_mac"] + 1, 5, "the forgery")
    assert rb.status()["reconnects_accepted"] == 0
    shown = racks.conn_of(rb, local_port=PORT)
    assert shown["wire_remote"] == theirs["remote"]

    # 2. A real move of A, captured on R's side towards B.
    pcap = tmp_path / "moves.pcap"
    dump = capture_reconnects(topo.r, testbed.ROUTER_IFACE["b"], pcap)
    first = topo.move_to_new_subnet("a", "v4")
    racks.wait_connected_at(rb, "wire_remote", first, 5, local_port=PORT)
    second = topo.move_to_new_subnet("a", "v4")
    racks.wait_connected_at(rb, "wire_remote", second, 5, local_port=PORT)
    dump.stop()
    captured = reconnection_syns(pcap, conn_id)
    assert captured, "no reconnection captured"
    old = captured[0]
    from scapy.all import IP, TCP
    assert old[IP].src == first

    # 3. Its SYN replayed from where it was sent, and from R: both refused.
    before = rb.status()
    t = old[TCP]
    opts, pay = bytes(t)[20:4 * t.dataofs], bytes(t.payload)
    craft(topo.r, (first, a_port, b4, PORT, t.seq, 0, "S", opts, pay),
          (attacker, a_port, b4, PORT, t.seq, 0, "S", opts, pay))
    testbed.wait_until(lambda: rb.status()["reconnects_refused_replay"] ==
                       before["reconnects_refused_replay"] + 2, 5,
                       "the replays")
    now = racks.conn_of(rb, local_port=PORT)
    assert now["wire_remote"] == racks.endpoint(second, a_port), now
    assert now["state"] == "connected"
    check_transfer(server, client, size)
    assert rb.status()["reconnects_accepted"] == 2


def test_both_ends_move_and_rackctl_peer_reconnects(topo):
    """Both hosts move during one cut, so neither can find the other by
    itself; `rackctl peer` tells A where B is now."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 8 * MB
    server, client = start_transfer(topo, "v4", size)
    racks.wait_states(ra, "connected", remote_port=PORT)
    conn = racks.conns_between(ra, remote_port=PORT)[0]
    subnets = {h: topo.reserve_subnet(h, "v4") for h in "ab"}
    topo.cut("a")
    topo.cut("b")
    for rackd in (ra, rb):
        racks.wait_states(rackd, "suspended", 5)
    new_a = topo.move_to_new_subnet("a", "v4", new=subnets["a"])
    new_b = topo.move_to_new_subnet("b", "v4", new=subnets["b"])
    topo.restore("a")
    topo.restore("b")
    time.sleep(2)
    assert racks.conns_between(ra, remote_port=PORT)[0]["state"] == "suspended"
    # Bad input first: nothing changes.
    for args, why in ((("peer", str(conn["id"]), "not-an-address"),
                       "is not ADDR"),
                      (("peer", "999999", new_b), "no connection"),
                      (("peer", str(conn["id"]), "fd71::9"), "IPv4")):
        with pytest.raises(testbed.RackdError) as err:
            ra.ctl(*args)
        assert why in str(err.value), err.value
    out = ra.ctl_json("peer", str(conn["id"]), new_b)
    assert out["moved"] == 1
    racks.wait_connected_at(ra, "wire_remote", new_b, 10, remote_port=PORT)
    racks.wait_connected_at(rb, "wire_remote", new_a, 10, local_port=PORT)
    check_transfer(server, client, size)
    assert ra.status()["reconnects_manual"] == 1


@pytest.mark.slow
def test_ten_minute_suspension_with_data_queued_both_ways(topo):
    """A 10-minute cut while both ends have data waiting to be sent."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 8 * MB
    server, client = start_transfer(topo, "v4", size, timeout=900)
    racks.wait_states(ra, "connected", remote_port=PORT)
    time.sleep(1)
    topo.cut_silent("b")
    for rackd in (ra, rb):
        racks.wait_states(rackd, "suspended", 5)
    time.sleep(600)
    for rackd in (ra, rb):
        assert [c["state"] for c in rackd.connections()] == ["suspended"]
    topo.restore_silent("b")
    check_transfer(server, client, size, timeout=120)
