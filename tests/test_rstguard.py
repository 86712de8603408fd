"""Resets of a managed connection: the peer's reach the socket at once;
a middlebox's (here R's own stack answering segments it no longer maps,
as a masquerading NAT does after it forgot the flow) are held back while
the path is probed, and dropped once it answers (rstguard.h).

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B::

    A (rackd) ---- R [masquerade A, strict; flushed] ---- B (rackd)
"""

import subprocess
import time

import pytest

import racks
import testbed
from test_firewall import install_middlebox

PORT = 5003

# B accepts one connection, reads one line, then aborts it (SO_LINGER 0:
# a RST from B's kernel, the peer's own).
ABORTER = r"""
import socket, struct, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("READY", flush=True)
c, _ = s.accept()
c.recv(100)
print("ABORT", flush=True)
sys.stdin.readline()
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.close()
print("DONE", flush=True)
"""

# A connects, says hello, and reports how long the reset took to reach it.
READER = r"""
import socket, sys, time
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(b"hello\n")
print("CONNECTED", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
try:
    data = s.recv(100)
    print("EOF" if not data else "DATA", flush=True)
except ConnectionResetError:
    print(f"RESET {time.monotonic() - t0:.3f}", flush=True)
except socket.timeout:
    print("TIMEOUT", flush=True)
"""


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_the_peers_reset_reaches_the_socket_at_once(topo, family):
    """A managed connection that B's application aborts: A's application
    sees the reset at once (it has the peer's TTL), nothing held back."""
    ra = topo.start_rackd("a")
    rb = topo.start_rackd("b")
    server = topo.b.popen([testbed.PYTHON, "-c", ABORTER,
                           topo.addr["b"][family], str(PORT)],
                          stdin=subprocess.PIPE)
    client = None
    try:
        assert testbed.read_line(server, 10, "aborter") == "READY"
        client = topo.a.popen([testbed.PYTHON, "-c", READER,
                               topo.addr["b"][family], str(PORT)],
                              stdin=subprocess.PIPE)
        assert testbed.read_line(client, 10, "reader") == "CONNECTED"
        racks.wait_states(ra, "connected", remote_port=PORT)
        # The peer's TTL is learnt from an answered heartbeat.
        testbed.wait_until(lambda: ra.status()["heartbeat_acks_in"] >= 1,
                           10, "an answered heartbeat on A")
        assert testbed.read_line(server, 10, "aborter") == "ABORT"
        client.stdin.write("\n")
        client.stdin.flush()
        time.sleep(0.2)
        server.stdin.write("\n")
        server.stdin.flush()
        assert testbed.read_line(server, 10, "aborter") == "DONE"
        line = testbed.read_line(client, 10, "reader's verdict")
        assert line.startswith("RESET "), line
        assert float(line.split()[1]) < 1.0, line
        st = ra.status()
        assert st["resets_held"] == 0, st
    finally:
        testbed.terminate([p for p in (server, client) if p])


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_a_forgetting_nats_resets_are_held_back(topo, family):
    """R masquerades A and is flushed under a busy transfer: R's own stack
    answers B's segments with resets (TTL 64, where A's arrive with 63).
    B holds them back; the path re-opens; the transfer completes intact
    both ways, and B's rackd counted what it held and dropped."""
    box = install_middlebox(topo, strict=True, nat=True)
    ra = topo.start_rackd("a")
    rb = topo.start_rackd("b")
    size = 16 * 1024 * 1024
    server, client = racks.start_transfer(topo, family, size, PORT,
                                          rate=1024 * 1024, timeout=90)
    racks.wait_states(ra, "connected", remote_port=PORT)
    racks.wait_states(rb, "connected", local_port=PORT)
    testbed.wait_until(lambda: rb.status()["heartbeat_acks_in"] >= 1, 10,
                       "an answered heartbeat on B")
    box.assert_acted("masqueraded")
    fam = "ipv6" if family == "v6" else "ipv4"
    topo.r.run(["conntrack", "-F", "-f", fam])
    assert "dport=" not in topo.r.run(["conntrack", "-L", "-f", fam],
                                      check=False).stdout
    testbed.wait_until(lambda: rb.status()["resets_held"] >= 1, 10,
                       "B holding back R's reset")
    racks.check_both_ways(server, client, size, 90)
    st = rb.status()
    assert st["resets_dropped"] >= 1 and st["resets_delivered"] == 0, st
    assert ra.status()["path_reopens"] >= 1
