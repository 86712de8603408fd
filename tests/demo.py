#!/usr/bin/python3
"""make demo: racks on two namespaced hosts, seen by a new user.

Builds A -- R -- B, starts rackd on A and B, moves 100 MB from A to B
while showing what each rackd sees, verifies the bytes, and cleans up.
"""

import sys
import time

import testbed
from testbed import expected_sha256, start_xfer_client, start_xfer_server

MB = 1024 * 1024
SIZE = 100 * MB
PORT = 5001


# A server that accepts and reads until EOF, as many do.
LISTENER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); print("READY", flush=True)
while True:
    c, _ = s.accept()
    while c.recv(4096):
        pass
    c.close()
"""


def say(text=""):
    print(text, flush=True)


def show(rackd, *args):
    for line in rackd.ctl(*args).rstrip().splitlines():
        say(f"    {line}")


def main():
    say("racks demo: two hosts with rackd, one router in between\n")
    with testbed.Topology.create() as topo:
        a4, b4 = topo.addr["a"]["v4"], topo.addr["b"]["v4"]
        say(f"  A {a4} ---- R ---- B {b4}   (network namespaces {topo.a.name}, "
            f"{topo.r.name}, {topo.b.name})\n")
        ra = topo.start_rackd("a")
        rb = topo.start_rackd("b")
        st = ra.status()
        say(f"rackd {st['version']} running on A and B "
            f"(queue {st['queue']}, {st['queue_mode']} NFQUEUE target)\n")

        say(f"A sends {SIZE // MB} MB to B (paced so we can watch)...")
        server = start_xfer_server(topo.b, PORT)
        client = start_xfer_client(topo.a, b4, PORT, SIZE, rate=40 * MB,
                                   announce=True)
        client.connected()
        time.sleep(0.5)
        say("\n  rackctl list on A:")
        show(ra, "list")
        say("\n  rackctl list on B:")
        show(rb, "list")
        conn = ra.connections()[0]
        say(f"\n  rackctl show {conn['id']} on A:")
        show(ra, "show", conn["id"])
        sa = ra.ctl_json("show", conn["id"])
        sb = rb.ctl_json("show", rb.connections()[0]["id"])
        same = (sa["conn_id"] == sb["conn_id"] and
                sa["key_fingerprint"] == sb["key_fingerprint"])
        say(f"\n  both ends agree on the connection's key: "
            f"id {sa['conn_id']} / {sb['conn_id']}, fingerprint "
            f"{sa['key_fingerprint']} / {sb['key_fingerprint']}"
            f"{'' if same else '  MISMATCH'}")

        result = client.result(120)
        report = server.results()[0]
        ok = (report["recv_sha256"] == result["sent_sha256"] ==
              expected_sha256(SIZE, testbed.CLIENT_SEED))
        say(f"\n  {report['recv_bytes']} bytes received, sha256 "
            f"{report['recv_sha256'][:16]}... {'identical' if ok else 'MISMATCH'}")
        segments = SIZE // 1448
        for name, rackd in (("A", ra), ("B", rb)):
            s = rackd.status()
            say(f"  rackd on {name}: {s['packets_queued']} packets queued "
                f"(handshake and key set-up) of about {segments} segments; "
                f"the data never left the kernel")

        say("\nA plain host (no rackd) connecting to B sees an ordinary "
            "connection:")
        rb_before = rb.status()["edp_released"]
        ra.stop()
        server = start_xfer_server(topo.b, PORT + 1)
        testbed.xfer_client(topo.a, b4, PORT + 1, MB)
        server.results()
        say(f"  B released it: edp_released went from {rb_before} to "
            f"{rb.status()['edp_released']} (peer none, never diverted again)")

        say(f"\nThe classic probe: rackctl probe {b4}:{PORT + 2}")
        probe_server = topo.b.popen([testbed.PYTHON, "-c", LISTENER,
                                     str(PORT + 2)])
        testbed.read_line(probe_server, 10, "listener")
        out = topo.a.run([testbed.default_rackctl(), "probe",
                          f"{b4}:{PORT + 2}"]).stdout.strip()
        say(f"  {out}")
        say("\ncleaning up (rackd removes its table on exit)")
        rb.stop()
        left = [t for t in testbed.tables(topo.a) + testbed.tables(topo.b)
                if "racks" in t]
        say(f"  tables left behind: {left or 'none'}")
    say("done.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
