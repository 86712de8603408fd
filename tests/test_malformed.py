"""Malformed packets crafted with Scapy: rackd accepts them unmodified,
counts them by reason, and keeps working.

Topology: A (rackd) -- R -- B (sends the crafted SYN-ACKs with Scapy).
"""

import pytest

import racks
import testbed

CRAFT = str(testbed.TOOLS / "craft.py")
PORT = 5001

# case -> the rejection reason rackd must count for it
EXPECTED = {
    "opt_len0": "tcp_option",
    "opt_len1": "tcp_option",
    "opt_overrun": "tcp_option",
    "mss_len3": "tcp_option",
    "ts_len8": "tcp_option",
    "sack_len9": "tcp_option",
    "exp_short": "tcp_option",
    "doff_beyond": "tcp_header",
    "doff_small": "tcp_header",
}


def craft(topo, family, cases, count=1):
    dst = topo.addr["a"][family]
    topo.b.run([testbed.PYTHON, CRAFT, dst, str(PORT), *cases,
                "--count", str(count)], timeout=120)


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_each_malformation_is_counted_by_reason(topo, family):
    rackd = topo.start_rackd("a")
    for case, reason in EXPECTED.items():
        before = rackd.status()
        craft(topo, family, [case], count=3)
        testbed.wait_until(
            lambda: rackd.status()["packets_queued"] >= before["packets_queued"] + 3,
            5, f"{case} packets to reach rackd")
        after = rackd.status()
        key = f"malformed_{reason}"
        assert after[key] - before[key] == 3, (case, before, after)
        assert after["packets_malformed"] - before["packets_malformed"] == 3
        assert after["connections"] == 0, "a malformed packet created a connection"
    assert rackd.running


def test_a_flood_of_random_options_is_survived(topo):
    rackd = topo.start_rackd("a")
    craft(topo, "v4", ["random"], count=300)
    testbed.wait_until(lambda: rackd.status()["packets_queued"] >= 300, 10,
                       "the random SYN-ACKs to reach rackd")
    status = rackd.status()
    assert status["packets_queued"] == 300
    assert status["verdicts"] == 300, "every packet must get a verdict"
    # Valid ones answer no SYN of A's (unmatched), the rest were counted.
    assert status["packets_malformed"] + status["synack"] == 300
    assert status["synack_unmatched"] == status["synack"]
    assert status["connections"] == 0
    # And ordinary traffic is tracked exactly as before: A's connection to
    # a plain server is offered racks, answered plain, and (after the
    # three ADOPTs a plain peer may see) released.
    server = testbed.start_xfer_server(topo.b, PORT + 1)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT + 1,
                                       10**6, rate=10**6, announce=True)
    client.connected()
    assert any(c["remote"] == racks.endpoint(topo.addr["b"]["v4"], PORT + 1)
               and c["state"] in ("adopting", "released")
               and "plain_answer" in (c.get("unmanaged"), c.get("adopted_for"))
               for c in rackd.connections()), rackd.connections()
    client.result()
    server.results()
    assert rackd.stop() == 0
