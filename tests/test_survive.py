"""Surviving link failures with unchanged addresses: failure detection by
heartbeats or carrier loss, the zero-window hold, and resumption, with
every byte delivered exactly once.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B.
R cuts the path to B either silently (packets dropped, no carrier change)
or by taking its interface down (B's link loses carrier)::

    A (rackd) ---- R ---x--- B (rackd)
"""

import json
import time

import pytest

import racks
import testbed
from testbed import expected_sha256, start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\n"


def states(rackd):
    return [c["state"] for c in rackd.connections()]


def wait_all(rackd, state, timeout, what=""):
    testbed.wait_until(lambda: states(rackd) and all(s == state for s in
                                                     states(rackd)),
                       timeout, lambda: f"{what or state}: {rackd.connections()}")


def cut(topo, mode):
    (topo.cut_silent if mode == "silent" else topo.cut)("b")


def restore(topo, mode):
    (topo.restore_silent if mode == "silent" else topo.restore)("b")


def bulk_through_cut(topo, ra, rb, family, mode, cut_seconds, size=24 * MB):
    """A paced transfer both ways that a cut interrupts; returns timings."""
    server = start_xfer_server(topo.b, PORT, send=size, rate=2 * MB,
                               timeout=cut_seconds + 60)
    client = start_xfer_client(topo.a, topo.addr["b"][family], PORT, size,
                               recv=True, rate=2 * MB, announce=True,
                               timeout=cut_seconds + 60)
    client.connected()
    racks.wait_states(ra, "connected", remote_port=PORT)
    racks.wait_states(rb, "connected", local_port=PORT)
    time.sleep(1)
    cut(topo, mode)
    t_cut = time.monotonic()
    for rackd in (ra, rb):
        wait_all(rackd, "suspended", 5)
    detected = time.monotonic() - t_cut
    for ns in (topo.a, topo.b):       # added with the first hold
        assert "@held4" in testbed.nft(ns, "list chain inet racks output")
    time.sleep(cut_seconds - detected)
    assert states(ra) == states(rb) == ["suspended"]
    restore(topo, mode)
    t_back = time.monotonic()
    # The counter, not the list: resumed, the transfer may finish and its
    # connection be forgotten before we look.
    for rackd in (ra, rb):
        testbed.wait_until(lambda: rackd.status()["resumes"] >= 1, 5,
                           "resumption")
    resumed = time.monotonic() - t_back
    report = racks.check_both_ways(server, client, size,
                                   size // MB + cut_seconds + 60)
    for rackd in (ra, rb):
        st = rackd.status()
        assert st["suspensions"] == 1 and st["resumes"] == 1, st
        assert st["hold_clamped"] == 0, "snd_una was misread"
    # Data flows again at once: the backed-off retransmission timer was
    # wound back (RFC 6069), not waited for. Sending at 2 MB/s takes
    # size / 2 MB seconds; the cut adds its length, and little else.
    sending = size / (2 * MB)
    assert report["seconds"] < sending + cut_seconds + 3, report["seconds"]
    assert ra.status()["resume_kicks"] + rb.status()["resume_kicks"] > 0
    return detected, resumed


@pytest.mark.timing
@pytest.mark.parametrize("family, mode", [("v4", "silent"), ("v6", "silent"),
                                          ("v4", "carrier")])
def test_link_cut_during_a_transfer_is_survived(topo, family, mode):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    detected, resumed = bulk_through_cut(topo, ra, rb, family, mode, 8)
    print(f"\n{family} {mode} cut of 8 s: both suspended {detected:.2f} s "
          f"after the cut, connected {resumed:.2f} s after the restore")
    if mode == "carrier":
        assert rb.status()["link_suspensions"] == 1
    # The held-flow rules went with the last hold.
    for ns in (topo.a, topo.b):
        assert "@held4" not in testbed.nft(ns, "list chain inet racks output")


@pytest.mark.timing
@pytest.mark.slow
@pytest.mark.parametrize("family", ["v4", "v6"])
def test_thirty_second_cut_during_a_transfer(topo, family):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    detected, resumed = bulk_through_cut(topo, ra, rb, family, "silent", 30)
    print(f"\n{family}: 30 s cut: suspended after {detected:.2f} s, "
          f"resumed {resumed:.2f} s after the restore")


def shorten_tcp_timeouts(topo):
    """tcp_retries2 = 3: plain TCP gives up on a dead path in ~3 s."""
    for ns in (topo.a, topo.b):
        ns.sysctl("net.ipv4.tcp_retries2", 3)


KEEPALIVE_CLIENT = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 2)
print("CONNECTED", flush=True)
sys.stdin.readline()          # the test says when the cut is over
try:
    s.sendall(b"ping")
    print("REPLY", s.recv(100).decode(), flush=True)
except OSError as e:
    print("ERROR", e.errno, flush=True)
"""

ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(); print("READY", flush=True)
while True:
    c, _ = s.accept()
    try:
        while data := c.recv(100):
            c.sendall(b"pong:" + data)
    except OSError:
        pass
    c.close()
"""


def keepalive_pair(topo, port):
    """An echo server in B and a connected keepalive client in A."""
    server = topo.b.popen([testbed.PYTHON, "-c", ECHO, str(port)])
    assert testbed.read_line(server, 10, "echo") == "READY"
    client = topo.a.popen([testbed.PYTHON, "-c", KEEPALIVE_CLIENT,
                           topo.addr["b"]["v4"], str(port)],
                          stdin=testbed.subprocess.PIPE)
    assert testbed.read_line(client, 10, "client") == "CONNECTED"
    return client


def keepalive_through_cut(topo, seconds, port):
    client = keepalive_pair(topo, port)
    time.sleep(0.5)
    topo.cut_silent("b")
    time.sleep(seconds)
    topo.restore_silent("b")
    time.sleep(1.5)
    client.stdin.write("\n")
    client.stdin.flush()
    return testbed.read_line(client, 30, "the client's outcome")


def test_keepalive_connection_dies_without_racks_and_survives_with_it(topo):
    """SO_KEEPALIVE with 1 s probes and tcp_retries2 = 3: a 6 s cut kills
    the connection without racks; with racks the probes are answered."""
    shorten_tcp_timeouts(topo)
    without = keepalive_through_cut(topo, 6, PORT)
    assert without.startswith("ERROR"), without
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    with_racks = keepalive_through_cut(topo, 6, PORT + 1)
    assert with_racks == "REPLY pong:ping", (with_racks, ra.status(),
                                            rb.status())
    assert ra.status()["hold_answers"] > 0


@pytest.mark.timing
def test_bulk_transfer_dies_without_racks_and_survives_with_it(topo):
    """tcp_retries2 = 3: retransmissions give up during a 6 s cut."""
    shorten_tcp_timeouts(topo)
    server = start_xfer_server(topo.b, PORT, timeout=30)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, 16 * MB,
                               rate=2 * MB, announce=True, timeout=30)
    client.connected()
    time.sleep(1)
    topo.cut_silent("b")
    time.sleep(6)
    topo.restore_silent("b")
    died = client.result(60, check=False)
    assert died["returncode"] != 0, "plain TCP should not survive this cut"
    server.proc.kill()
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    bulk_through_cut(topo, ra, rb, "v4", "silent", 6, size=16 * MB)


def test_suspension_longer_than_max_suspend_is_aborted_deliberately(topo):
    conf = "suspend_after = 500ms\nmax_suspend = 2s\n"
    ra = topo.start_rackd("a", config=conf)
    rb = topo.start_rackd("b", config=conf)
    client = keepalive_pair(topo, PORT)
    racks.wait_states(ra, "connected", remote_port=PORT)
    topo.cut_silent("b")
    wait_all(ra, "suspended", 5)
    testbed.wait_until(lambda: ra.status()["suspend_aborts"] == 1, 6,
                       "max_suspend to abort the connection")
    client.stdin.write("\n")
    client.stdin.flush()
    outcome = testbed.read_line(client, 10, "the client")
    assert outcome == "ERROR 104", outcome      # ECONNRESET, deliberately
    topo.restore_silent("b")


CLOSER = """
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
print("CONNECTED", flush=True)
sys.stdin.readline()
s.sendall(b"last words " * 1000)
s.close()                     # while suspended
print("CLOSED", flush=True)
"""

READER = """
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); print("READY", flush=True)
c, _ = s.accept()
data = b""
while chunk := c.recv(65536):
    data += chunk
print("EOF", len(data), data == b"last words " * 1000, flush=True)
"""


def test_socket_closed_while_suspended_delivers_data_and_eof(topo):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    reader = topo.b.popen([testbed.PYTHON, "-c", READER, str(PORT)])
    assert testbed.read_line(reader, 10, "reader") == "READY"
    closer = topo.a.popen([testbed.PYTHON, "-c", CLOSER, topo.addr["b"]["v4"],
                           str(PORT)], stdin=testbed.subprocess.PIPE)
    assert testbed.read_line(closer, 10, "closer") == "CONNECTED"
    racks.wait_states(ra, "connected", remote_port=PORT)
    topo.cut_silent("b")
    wait_all(ra, "suspended", 5)
    closer.stdin.write("\n")
    closer.stdin.flush()
    assert testbed.read_line(closer, 10, "closer") == "CLOSED"
    time.sleep(3)
    topo.restore_silent("b")
    assert testbed.read_line(reader, 30, "reader") == "EOF 11000 True"


@pytest.mark.bulk
def test_a_hundred_connections_through_one_cut(topo):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    n, size = 100, MB
    server = start_xfer_server(topo.b, PORT, count=n, timeout=60)
    # Slow enough (12 s each) that none is done before the cut, however
    # long starting a hundred clients takes on a busy machine.
    clients = [start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, size,
                                 rate=size // 12, announce=True, timeout=60)
               for _ in range(n)]
    for c in clients:
        c.connected()
    testbed.wait_until(lambda: sum(s == "connected" for s in states(ra)) == n,
                       10, "all connected")
    topo.cut_silent("b")
    testbed.wait_until(lambda: sum(s == "suspended" for s in states(ra)) == n,
                       5, "all suspended")
    time.sleep(3)
    topo.restore_silent("b")
    for c in clients:
        report = c.result(60)
        assert report["sent_bytes"] == size
    reports = server.results(60)
    assert len(reports) == n
    want = expected_sha256(size, testbed.CLIENT_SEED)
    assert all(r["recv_bytes"] == size and r["recv_sha256"] == want
               for r in reports)
    st = ra.status()
    # Every connection was suspended and resumed at least once; a path
    # restored in one direction before the other may flap once more.
    assert st["suspensions"] >= n and st["resumes"] == st["suspensions"], st


def test_events_stream_tells_what_happened(topo):
    """`rackctl events` prints one JSON line per event, as it happens."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    events = topo.a.popen([ra.rackctl, "-S", str(ra.sock), "events"])
    # The subscription is served before any connection exists.
    testbed.wait_until(lambda: ra.status()["ctl_requests"] >= 2, 5,
                       "the subscription")
    server = start_xfer_server(topo.b, PORT)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, 2 * MB,
                               rate=MB, announce=True, timeout=60)
    client.connected()

    def next_event():
        return json.loads(testbed.read_line(events, 15, "an event"))

    seen = [next_event()]
    topo.cut_silent("b")
    seen.append(next_event())
    topo.restore_silent("b")
    seen.append(next_event())
    client.result(60)
    server.results()
    assert [e["event"] for e in seen] == ["connected", "suspend", "resume"]
    assert len({e["id"] for e in seen}) == 1
    assert len({e["conn_id"] for e in seen}) == 1
    assert seen[0]["local"].startswith(topo.addr["a"]["v4"] + ":")
    assert seen[0]["remote"] == f"{topo.addr['b']['v4']}:{PORT}"
    assert all(isinstance(e["time_ms"], int) for e in seen)
