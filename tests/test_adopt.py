"""Adoption: connections whose handshake did not carry racks become
managed later, when both ends run rackd (rackd/engine/adopt.h), and then
survive a cut with a move like any other; a peer without rackd sees only
the few segments adoption allows, and nothing else changes for it.

Topology: the standard A -- R -- B (see testbed.py). R plays the
middleboxes that defeat racks' offer (it drops every flow's first SYN, or
strips racks' option), or loses 1 % of every packet.
"""

import json
import time

import pytest

import racks
import testbed
from testbed import start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\nsweep_interval = 1s\n"


def middlebox(kind, family):
    """R's nft table for KIND (as tests/test_edp.py's MIDDLEBOXES, for
    either family); its one counter says whether it acted."""
    ip = "ip" if family == "v4" else "ip6"
    addr = "ipv4_addr" if family == "v4" else "ipv6_addr"
    if kind == "drop_first_syn":
        return f"""table inet mbox {{
    set seen {{ type {addr} . inet_service; flags timeout; }}
    chain pass {{
        type filter hook forward priority 0; policy accept;
        tcp flags & (syn|ack) == syn {ip} saddr . tcp sport @seen accept
        tcp flags & (syn|ack) == syn add @seen {{ {ip} saddr . tcp sport timeout 60s }} counter drop
    }}
}}
"""
    assert kind == "strip_option"
    return """table inet mbox {
    chain pass {
        type filter hook forward priority 0; policy accept;
        tcp flags & (syn|ack) == syn tcp option 254 exists counter reset tcp option 254
    }
}
"""


def box_acted(topo):
    counted = testbed.nft(topo.r, "list chain inet mbox pass")
    assert "counter packets 0 " not in counted and "counter packets" in \
        counted, counted


def conn_of(rackd, **ports):
    conns = racks.conns_between(rackd, **ports)
    assert len(conns) == 1, conns
    return rackd.ctl_json("show", str(conns[0]["id"]))


def start_transfer(topo, family, size, rate=2 * MB, timeout=90):
    server = start_xfer_server(topo.b, PORT, send=size, rate=rate,
                               timeout=timeout)
    client = start_xfer_client(topo.a, topo.addr["b"][family], PORT, size,
                               recv=True, rate=rate, announce=True,
                               timeout=timeout)
    client.connected()
    return server, client


def wait_connected_at(rackd, wire_key, addr, timeout, **ports):
    def ready():
        conns = racks.conns_between(rackd, **ports)
        return conns and conns[0]["state"] == "connected" and \
            conns[0][wire_key].rsplit(":", 1)[0].strip("[]") == addr and \
            conns[0]
    return testbed.wait_until(ready, timeout,
                              lambda: f"{wire_key} {addr}: {rackd.connections()}")


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
    wait_connected_at(rb, "wire_remote", new, 10, local_port=PORT)
    mine = wait_connected_at(ra, "wire_local", new, 10, remote_port=PORT)
    assert mine["reconnections"] == 1, mine
    racks.check_both_ways(server, client, size)


def assert_adopted(rackd, why, **ports):
    shown = conn_of(rackd, **ports)
    assert shown["state"] == "connected" and shown["peer"] == "racks", shown
    assert shown["adoption"] == "adopted", shown
    assert shown["adopted_for"] == why, shown
    assert "unmanaged" not in shown, shown
    return shown


@pytest.mark.parametrize("family", ["v4", "v6"])
@pytest.mark.parametrize("box,why", [("drop_first_syn", "syn_retransmitted"),
                                     ("strip_option", "plain_answer")])
def test_defeated_offer_is_adopted_and_survives_a_move(topo, family, box, why):
    """Through a box that defeats the offer in the handshake, the
    connection is adopted within a second and then follows A's move
    during a cut, both streams intact."""
    testbed.nft_file(topo.r, middlebox(box, family))
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 16 * MB
    server, client = start_transfer(topo, family, size)
    t0 = time.monotonic()
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    took = time.monotonic() - t0
    box_acted(topo)
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
    cut_move_restore(topo, ra, rb, family, server, client, size)
    print(f"\n{family} {box}: adopted {took:.2f} s after connect()")


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


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_restart_without_state_file_adopts_again(topo, family):
    """B's rackd restarts without its state file: it no longer knows the
    connection A manages; its scan adopts it, A (which still holds the
    old key) agrees, since B names exactly its sequence numbers, and the
    connection, managed with a new key, survives a cut with a move."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 24 * MB
    server, client = start_transfer(topo, family, size)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    before = conn_of(ra, remote_port=PORT)
    assert "adoption" not in before
    assert rb.stop() == 0
    rb.state.unlink(missing_ok=True)
    rb.start()
    racks.wait_states(rb, "connected", 5, local_port=PORT)
    racks.wait_states(ra, "connected", 5, remote_port=PORT)
    mine = assert_adopted(ra, "peer_forgot", remote_port=PORT)
    theirs = assert_adopted(rb, "predates_rackd", local_port=PORT)
    assert mine["key_fingerprint"] == theirs["key_fingerprint"] != \
        before["key_fingerprint"]
    assert ra.status()["adopt_readopted"] == 1
    time.sleep(1)
    cut_move_restore(topo, ra, rb, family, server, client, size)
