"""No silent failure: what rackd says when its reconnections go unanswered
on a path that otherwise works.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B. R
runs a middlebox that drops racks' reconnections and nothing else (a box
that drops SYNs carrying data or unknown options does this to them)::

    A (old address retired, then a new subnet) ---- R (drops RECONNECT) ---- B

A moves with its first connection (make-before-break): the reconnection
never arrives. A second connection, opened from A's new address, is managed
and its heartbeats are answered on the same pair of addresses: the path
works, only the reconnections are lost. rackd logs that once with the likely
cause, counts it in `rackctl status` (reconnects_unanswered) and `rackctl
show` gives the attempts and what answered them. Once the box stops
dropping, the next reconnection is accepted and no byte is lost.
"""

import pytest

import racks
import testbed
from testbed import start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\nsweep_interval = 1s\n"
RECONNECT = 0x18            # racks option version 1, type 8 (RECONNECT)

DROP_RECONNECTS = f"""table inet mbox {{
    chain pass {{
        type filter hook forward priority 0; policy accept;
        tcp option @254,16,16 0x7261 tcp option @254,32,8 {RECONNECT:#04x} counter drop
    }}
}}
"""


def transfer(topo, family, port, size):
    server = start_xfer_server(topo.b, port, send=size, rate=MB, timeout=90)
    client = start_xfer_client(topo.a, topo.addr["b"][family], port, size,
                               recv=True, rate=MB, announce=True,
                               timeout=90)
    client.connected()
    return server, client


def one_conn(rackd, port):
    conns = racks.conns_between(rackd, remote_port=port)
    assert len(conns) == 1, conns
    return rackd.ctl_json("show", str(conns[0]["id"]))


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_unanswered_reconnections_on_a_working_path_are_reported(topo, family):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    testbed.nft_file(topo.r, DROP_RECONNECTS)
    assert "counter packets 0" in testbed.nft(topo.r, "list chain inet mbox pass")
    size = 12 * MB
    first = transfer(topo, family, PORT, size)
    racks.wait_states(ra, "connected", remote_port=PORT)
    assert one_conn(ra, PORT)["reconnect_attempts"] == 0

    old = topo.cidr("a", family)
    topo.move_to_new_subnet("a", family, keep_old=True)
    topo.remove_address("a", family, old)
    # A second connection from the new address: managed, its heartbeats
    # answered on the pair of addresses the first one moved to.
    second = transfer(topo, family, PORT + 1, 4 * MB)
    racks.wait_states(ra, "connected", remote_port=PORT + 1, timeout=10)

    testbed.wait_until(
        lambda: ra.status()["reconnects_unanswered"] == 1, 15,
        lambda: f"A to report the unanswered reconnections: {ra.status()}"
                f"\n{one_conn(ra, PORT)}\n{ra.log()[-3000:]}")
    listed = racks.conns_between(ra, remote_port=PORT)[0]
    assert listed["reconnect_answer"] == "heartbeats_only", listed
    assert listed["reconnect_attempts"] >= 4, listed
    shown = one_conn(ra, PORT)
    assert shown["state"] == "suspended", shown
    assert shown["peer_confirmed"] is False, shown
    assert shown["reconnect_answer"] == "heartbeats_only", shown
    assert shown["reconnect_pending"] >= 4, shown
    assert shown["reconnect_pending_ms"] >= 2000, shown
    assert shown["reconnect_answers"] == 0, shown
    warned = [line for line in ra.log().splitlines()
              if "unanswered for" in line]
    assert len(warned) == 1 and "middlebox" in warned[0], warned
    dropped = testbed.nft(topo.r, "list chain inet mbox pass")
    assert "counter packets 0 " not in dropped, dropped

    # The box stops dropping: the next reconnection goes through.
    testbed.nft(topo.r, "flush chain inet mbox pass")
    testbed.wait_until(
        lambda: one_conn(ra, PORT)["state"] == "connected", 10,
        lambda: f"the first connection to reconnect: {one_conn(ra, PORT)}")
    shown = one_conn(ra, PORT)
    assert shown["reconnect_answer"] == "accepted", shown
    assert shown["reconnect_answers"] == 1, shown
    assert shown["reconnect_pending"] == 0, shown
    # Said once, not once per attempt.
    assert ra.status()["reconnects_unanswered"] == 1
    racks.check_both_ways(*first, size)
    racks.check_both_ways(*second, 4 * MB)
