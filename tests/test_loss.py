"""Every connection between two racks hosts ends up protected on a lossy
path: lost SYNs, SYN-ACKs and set-up messages delay its protection, never
cancel it, and a connection racks cannot protect says why.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B; R
drops 1 % of the packets it forwards, both ways: data at random, and
exactly one in a hundred of the SYNs and SYN-ACKs and of racks' messages
(testbed's netem), so that every run loses some of each; R's counters
show it did::

    A (N clients) ---- R (1 % loss) ---- B (echo server)

One process on A opens N connections at once (tests/tools/manyconn.py);
once its rackd has had a few seconds, at least 999 in 1000 are managed and
every other one is named with its reason; then each one echoes its own
bytes through the lossy path, unchanged.
"""

import json
import subprocess
import time

import pytest

import testbed

PORT = 5001
TOOL = str(testbed.TOOLS / "manyconn.py")


def managed_and_reasons(rackd, port):
    conns = [c for c in rackd.connections()
             if c["remote"].endswith(f":{port}")]
    managed = sum(c["state"] in ("connected", "suspended") for c in conns)
    others = [c for c in conns if c["state"] not in ("connected", "suspended")]
    return len(conns), managed, others


def run(topo, family, n, settle):
    ra = topo.start_rackd("a")
    rb = topo.start_rackd("b")
    boxes = {host: topo.netem(host, loss_pct=1) for host in ("a", "b")}
    server = topo.b.popen([testbed.PYTHON, TOOL, "serve", str(PORT)])
    assert testbed.read_line(server, 10, "manyconn server") == "READY"
    client = topo.a.popen([testbed.PYTHON, TOOL, "connect",
                           topo.addr["b"][family], str(PORT), str(n),
                           "--timeout", "60"], stdin=subprocess.PIPE)
    opened = json.loads(testbed.read_line(client, 90, "connections opened"))
    assert opened["connected"] == n, opened
    t0 = time.monotonic()

    def enough():
        total, managed, _ = managed_and_reasons(ra, PORT)
        return total == n and managed * 1000 >= 999 * n

    testbed.wait_until(enough, settle, lambda: "999 in 1000 managed: "
                       f"{managed_and_reasons(ra, PORT)[:2]}", interval=0.5)
    took = time.monotonic() - t0
    # Give stragglers the rest of their set-up, then judge.
    time.sleep(2)
    total, managed, others = managed_and_reasons(ra, PORT)
    assert all(c.get("unmanaged") for c in others), others
    client.stdin.write("echo\n")
    client.stdin.flush()
    echoed = json.loads(testbed.read_line(client, 120, "echo round"))
    assert echoed["echoed"] == n and not echoed["bad"], echoed
    # The scenario happened: on each link R lost handshake segments (B's
    # SYN-ACKs toward A, A's SYNs toward B) and racks' set-up messages.
    lost = {host: box.counts() for host, box in boxes.items()}
    for box in boxes.values():
        box.assert_acted("syn")
        box.assert_acted("racks")
    reasons = {}
    for c in others:
        reasons[c["unmanaged"]] = reasons.get(c["unmanaged"], 0) + 1
    print(f"\n{family}: {n} connections through 1 % loss: {managed} managed "
          f"{took:.1f} s after the last connect() returned (999 in 1000 "
          f"reached), others: {reasons or 'none'}; every one echoed its "
          f"bytes unchanged; R lost toward A {lost['a']}, toward B "
          f"{lost['b']}")
    client.stdin.close()
    testbed.terminate([client, server])


@pytest.mark.timing
@pytest.mark.parametrize("family", ["v4", "v6"])
def test_a_hundred_connections_through_one_percent_loss_are_managed(topo,
                                                                    family):
    run(topo, family, 100, 15)


@pytest.mark.timing
@pytest.mark.slow
def test_a_thousand_connections_through_one_percent_loss_are_managed(topo):
    run(topo, "v4", 1000, 30)
