"""A server of short connections (issue 23's web-server workload): the
connections close faster than rackd's sweep forgets them, and none of
that may look like a failed path.

    A (client: N connections, one request each) -- R -- B (server)

Before the fix, once a burst of short connections was over, every
connection on the path was closed (TIME_WAIT or gone) until the next
sweep (10 s): heartbeats found no carrier, went unsent, the path fell
silent for suspend_after (5 s) and rackd suspended thousands of closed
connections and sent each a reconnection SYN (and could take more than
15 s to stop). Now a heartbeat carrier found closed asks for the sweep at
once, and a path whose connections all closed is not suspended.
"""

import time

import testbed

PORT = 5301
N = 300

SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(128)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.recv(100)
    c.sendall(b"ok\n")
    c.close()
"""

CLIENT = r"""
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = 0
for _ in range(n):
    c = socket.create_connection((host, port), timeout=10)
    c.sendall(b"get\n")
    ok += c.recv(100) == b"ok\n"
    c.close()
print(ok, flush=True)
"""


def test_closed_short_connections_never_suspend_their_path(topo):
    # A sweep interval far beyond the test: a sweep seen is an early one.
    conf = "sweep_interval = 60s\n"
    ra, rb = topo.start_rackd("a", conf), topo.start_rackd("b", conf)
    server = topo.b.popen([testbed.PYTHON, "-c", SERVER, str(PORT)])
    testbed.read_line(server, 10, "the server")
    client = topo.a.popen([testbed.PYTHON, "-c", CLIENT,
                           topo.addr["b"]["v4"], str(PORT), str(N)])
    assert testbed.read_line(client, 60, "the client's count") == str(N)
    # Each one was managed: set up on both ends.
    testbed.wait_until(lambda: all(r.status()["edp_setup_ok"] >= N
                                   for r in (ra, rb)), 20,
                       f"{N} connections set up on both ends")
    # Longer than suspend_after (5 s) and two heartbeat intervals.
    time.sleep(8)
    st = {side: r.status() for side, r in (("a", ra), ("b", rb))}
    keys = ("suspensions", "suspended", "reconnects_sent", "sweeps",
            "heartbeat_carriers_closed", "suspend_skipped_all_closed",
            "connections", "heartbeats_out", "connections_closed")
    shown = {side: {k: s.get(k) for k in keys} for side, s in st.items()}
    for side, s in st.items():
        assert s["suspensions"] == s["suspended"] == 0, shown
        assert s["reconnects_sent"] == 0, shown
    # The positive control: heartbeats did meet closed carriers (the
    # scenario happened), and the sweep they asked for ran, long before
    # its interval, and forgot the closed ones (those in TIME_WAIT stay
    # listed, off their path, until the kernel lets them go).
    assert sum(s["heartbeat_carriers_closed"] for s in st.values()) >= 1, \
        shown
    assert all(s["sweeps"] >= 1 for s in st.values()), shown
    assert sum(s["connections_closed"] for s in st.values()) >= N // 2, shown
    for r in (ra, rb):
        assert "suspended" not in r.log()
