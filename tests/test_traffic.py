"""Real traffic through hosts running rackd: what it records, what it
leaves alone, and that it never gets in the way.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B::

    A (rackd) ---- R ---- B (rackd)
"""

import signal

import pytest

import racks
import testbed
from testbed import expected_sha256, start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001


@pytest.fixture
def both(topo):
    """rackd on A and on B."""
    return topo, topo.start_rackd("a"), topo.start_rackd("b")


def assert_stream_intact(client, server_reports, sent, received=0):
    assert client["sent_bytes"] == sent
    assert client["sent_sha256"] == expected_sha256(sent, testbed.CLIENT_SEED)
    report = server_reports[0]
    assert report["recv_bytes"] == sent
    assert report["recv_sha256"] == client["sent_sha256"]
    if received:
        assert client["recv_bytes"] == received
        assert client["recv_sha256"] == report["sent_sha256"]
        assert report["sent_sha256"] == expected_sha256(received,
                                                        testbed.SERVER_SEED)


@pytest.mark.bulk
def test_200mb_both_ways_intact_and_data_never_queued(both):
    """The core performance rule: only the handshake crosses user space."""
    topo, ra, rb = both
    size = 200 * MB
    server = start_xfer_server(topo.b, PORT, send=size)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, size,
                               recv=True, timeout=120).result(180)
    assert_stream_intact(client, server.results(), size, size)
    for rackd in (ra, rb):
        status = rackd.status()
        # The handshake and the set-up messages, nothing of the ~10^5
        # data segments.
        assert status["syn"] == 1 and status["synack"] == 1, status
        assert status["edp_setup_ok"] == 1, status
        assert status["packets_queued"] <= 6, status
        assert racks.data_packets_queued(status) == 0, status
        assert status["packets_malformed"] == 0
    print(f"\n200 MB each way: {client['seconds']:.2f} s, "
          f"{2 * size * 8 / client['seconds'] / 1e9:.2f} Gb/s total")


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_connections_listed_with_their_addresses(both, family):
    topo, ra, rb = both
    a_addr, b_addr = topo.addr["a"][family], topo.addr["b"][family]
    server = start_xfer_server(topo.b, PORT)
    # Paced so that the connection is still open while we look.
    client = start_xfer_client(topo.a, b_addr, PORT, 4 * MB, rate=4 * MB,
                               announce=True)
    local_addr, local_port = client.connected()
    assert local_addr == a_addr
    on_a = racks.wait_states(ra, "connected", remote_port=PORT)
    on_b = racks.wait_states(rb, "connected", local_port=PORT)
    assert len(on_a) == 1 and len(on_b) == 1, (on_a, on_b)
    a_end = racks.endpoint(a_addr, local_port)
    b_end = racks.endpoint(b_addr, PORT)
    assert on_a[0]["local"] == a_end and on_a[0]["remote"] == b_end
    assert on_b[0]["local"] == b_end and on_b[0]["remote"] == a_end
    assert on_a[0]["direction"] == "outgoing"
    assert on_b[0]["direction"] == "incoming"
    for conn in on_a + on_b:
        assert conn["state"] == "connected"
        assert conn["peer"] == "racks"
        assert conn["tcp_state"] == "established"
        assert isinstance(conn["id"], int)
    # Both ends saw the same handshake.
    sa = ra.ctl_json("show", on_a[0]["id"])
    sb = rb.ctl_json("show", on_b[0]["id"])
    assert sa["local_isn"] == sb["remote_isn"]
    assert sa["remote_isn"] == sb["local_isn"]
    for show in (sa, sb):
        assert show["local_mss"] > 0 and show["remote_mss"] > 0
        assert show["window_scaling"] is True
        assert show["sack"] is True and show["timestamps"] is True
    assert_stream_intact(client.result(), server.results(), 4 * MB)


def test_kill_9_mid_transfer_does_not_stop_traffic(both):
    """bypass: with its listener gone the queue lets packets through."""
    topo, ra, rb = both
    size = 60 * MB
    server = start_xfer_server(topo.b, PORT, count=2)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, size,
                               rate=30 * MB, announce=True)
    client.connected()
    ra.kill(signal.SIGKILL)
    rb.kill(signal.SIGKILL)
    ra.proc.wait(timeout=5)
    rb.proc.wait(timeout=5)
    # The stale tables stay, and still divert SYNs to a queue nobody reads.
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    first = client.result(60)
    # A brand-new connection works too: its SYN passes the empty queue.
    second = testbed.xfer_client(topo.a, topo.addr["b"]["v4"], PORT, 5 * MB)
    reports = server.results()
    assert first["sent_sha256"] == reports[0]["recv_sha256"]
    assert first["sent_bytes"] == size == reports[0]["recv_bytes"]
    assert second["sent_sha256"] == reports[1]["recv_sha256"]
    # A restarted rackd replaces the stale table and works again.
    again = topo.start_rackd("a")
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    testbed.xfer_client(topo.a, topo.addr["b"]["v4"], PORT + 1, 0, check=False)
    assert again.status()["syn"] >= 1


def test_loopback_traffic_is_not_diverted(topo):
    rackd = topo.start_rackd("a")
    server = start_xfer_server(topo.a, PORT, bind="127.0.0.1")
    testbed.xfer_client(topo.a, "127.0.0.1", PORT, MB)
    server.results()
    status = rackd.status()
    assert status["packets_queued"] == 0
    assert status["connections"] == 0
    # The positive control, in the same counters: the same transfer to B
    # is diverted (its SYN and SYN-ACK) and tracked.
    server = start_xfer_server(topo.b, PORT)
    testbed.xfer_client(topo.a, topo.addr["b"]["v4"], PORT, MB)
    server.results()
    status = rackd.status()
    assert status["syn"] == 1 and status["synack"] == 1, status
    assert status["connections_total"] == 1, status


def test_ports_and_exclude_policy(topo):
    """Only SYNs to `ports` and not from/to `exclude` reach user space."""
    conf = (f"ports = {PORT}, 6000-6010\n"
            f"exclude = {topo.addr['b']['v6']}/128\n")
    rackd = topo.start_rackd("a", config=conf)
    b4, b6 = topo.addr["b"]["v4"], topo.addr["b"]["v6"]
    for port, addr in [(PORT, b4), (6005, b4), (7000, b4), (PORT, b6)]:
        server = start_xfer_server(topo.b, port)
        testbed.xfer_client(topo.a, addr, port, 1000)
        server.results()
    remotes = sorted(c["remote"] for c in rackd.connections())
    assert remotes == sorted([racks.endpoint(b4, PORT),
                              racks.endpoint(b4, 6005)])
    assert rackd.status()["packets_queued"] == 4


def test_unanswered_handshake_expires(topo):
    rackd = topo.start_rackd("a", config="syn_timeout = 1s\n")
    topo.cut_silent("b")
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, 10,
                               connect_timeout=3)
    testbed.wait_until(lambda: rackd.status()["connections"] == 1, 5,
                       "the SYN to be tracked")
    assert rackd.connections()[0]["state"] == "handshake"
    testbed.wait_until(lambda: rackd.status()["connections_expired"] >= 1, 5,
                       "the handshake to expire")
    client.result(15, check=False)
    topo.restore_silent("b")


def test_closed_connections_are_forgotten(both):
    topo, ra, rb = both
    server = start_xfer_server(topo.b, PORT)
    testbed.xfer_client(topo.a, topo.addr["b"]["v4"], PORT, MB)
    server.results()
    # B closed last (LAST_ACK -> CLOSED): its socket is gone, and so is
    # the entry; A holds TIME_WAIT, which the kernel still reports.
    testbed.wait_until(lambda: rb.status()["connections"] == 0 or
                       rb.connections() == [], 5, "B to forget the connection")
    assert rb.status()["connections_closed"] == 1
    assert [c["tcp_state"] for c in ra.connections()] == ["time-wait"]


MARK_CLIENT = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, int(sys.argv[3], 0))
s.settimeout(5)
s.connect((sys.argv[1], int(sys.argv[2])))
s.sendall(b"marked")
s.close()
"""


def test_packets_with_rackds_mark_are_exempt(topo):
    """rackd's own injected packets carry its mark and are never diverted."""
    rackd = topo.start_rackd("a", config="mark = 0x2a\n")

    def connect_with_mark(mark):
        server = start_xfer_server(topo.b, PORT)
        topo.a.run([testbed.PYTHON, "-c", MARK_CLIENT, topo.addr["b"]["v4"],
                    str(PORT), hex(mark)])
        server.results()
        return rackd.status()

    # The marked SYN is not diverted; B's answer carries no mark, so it is,
    # and finds no handshake to belong to. The next mark is rackd's too
    # (what it sends past its splices); any other is not.
    status = connect_with_mark(0x2a)
    assert status["syn"] == 0 and status["synack_unmatched"] == 1, status
    assert status["connections_total"] == 0
    status = connect_with_mark(0x2b)
    assert status["syn"] == 0 and status["synack_unmatched"] == 2, status
    assert status["connections_total"] == 0
    status = connect_with_mark(0x2c)
    assert status["syn"] == 1 and status["connections_total"] == 1, status
