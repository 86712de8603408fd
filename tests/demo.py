#!/usr/bin/python3
"""make demo: racks on two namespaced hosts, seen by a new user.

Builds A -- R -- B, where R is a strict stateful firewall (a new flow
only by its SYN, everything else dropped), starts rackd on A and B, moves
64 MB from A to B while showing what each rackd sees; halfway, A's link is
cut for 5 seconds and A moves to another network meanwhile. The connection
survives both, its reconnection passing the firewall as a new flow opened
by a SYN; every byte is verified. At the end it says what each rackd did with its
table when it stopped (removed, or left for spliced connections that a
restarted rackd takes over), deletes the namespaces, and shows that no
namespace, table or process of the demo is left.
"""

import re
import sys
import time
from pathlib import Path

import testbed
from testbed import expected_sha256, start_xfer_client, start_xfer_server

MB = 1024 * 1024
SIZE = 64 * MB
RATE = 8 * MB
CUT = 5
PORT = 5001

# R: an ordinary strict stateful policy, as on many routers.
FIREWALL = """table inet demo_fw {
    counter syn_new { }
    counter dropped { }
    chain forward {
        type filter hook forward priority filter; policy drop;
        ct state invalid drop
        ct state established,related accept
        meta l4proto { icmp, ipv6-icmp } accept
        tcp flags & (syn | ack | fin | rst) == syn ct state new counter name "syn_new" accept
        counter name "dropped"
    }
}
"""


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
        testbed.nft_file(topo.r, FIREWALL)
        if "policy drop" not in testbed.nft(topo.r, "list table inet demo_fw"):
            say("R's firewall is not in place")
            return 1
        say("  R is a strict stateful firewall: a new TCP flow only by its "
            "SYN, established\n  ones by conntrack, everything else "
            "dropped (policy drop)\n")
        ra = topo.start_rackd("a")
        rb = topo.start_rackd("b")
        st = ra.status()
        say(f"rackd {st['version']} running on A and B "
            f"(queue {st['queue']}, {st['queue_mode']} NFQUEUE target)\n")

        say(f"A sends {SIZE // MB} MB to B at {RATE // MB} MB/s (paced so we "
            f"can watch)...")
        server = start_xfer_server(topo.b, PORT, timeout=120)
        client = start_xfer_client(topo.a, b4, PORT, SIZE, rate=RATE,
                                   announce=True, timeout=120)
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

        subnet = topo.reserve_subnet("a", "v4")
        say(f"\nR cuts A's link for {CUT} s; meanwhile A leaves {a4} for "
            f"{subnet.split('/')[0]} (its old network is gone for good)")
        topo.cut("a")
        t_cut = time.monotonic()
        testbed.wait_until(lambda: ra.connections()[0]["state"] == "suspended",
                           10, "suspension")
        say(f"  suspended {time.monotonic() - t_cut:.2f} s after the cut; "
            f"the application just sees a pause")
        new = topo.move_to_new_subnet("a", "v4", new=subnet)
        show(ra, "list")
        time.sleep(max(0.0, CUT - (time.monotonic() - t_cut)))
        topo.restore("a")
        t_back = time.monotonic()
        testbed.wait_until(
            lambda: [c for c in rb.connections() if c["state"] == "connected"
                     and c["wire_remote"].startswith(new + ":")], 10,
            "the reconnection")
        say(f"\n  link back: A's rackd reconnected from {new}, authenticated "
            f"with the connection's key, {time.monotonic() - t_back:.2f} s "
            f"later; the kernel splices the new addresses onto the old socket")
        flows = firewall_counter(topo, "syn_new")
        say(f"  R's firewall admitted {flows} new flows by their SYN: the "
            f"connection's own, and its reconnection (a SYN and SYN-ACK\n"
            f"  that the two rackds craft and consume, continuing the "
            f"connection's sequence numbers)")
        ok = flows == 2
        say("  rackctl list on B (the socket still has A's old address; "
            "wire_remote is where A is now):")
        show(rb, "list")
        c = rb.connections()[0]
        say(f"    wire_remote {c['wire_remote']}, reconnections "
            f"{c['reconnections']}, splice "
            f"{rb.ctl_json('show', str(c['id']))['splice']}")

        result = client.result(120)
        report = server.results()[0]
        ok &= (report["recv_sha256"] == result["sent_sha256"] ==
               expected_sha256(SIZE, testbed.CLIENT_SEED))
        say(f"\n  {report['recv_bytes']} bytes received, sha256 "
            f"{report['recv_sha256'][:16]}... {'identical' if ok else 'MISMATCH'}")
        segments = SIZE // 1448
        for name, rackd in (("A", ra), ("B", rb)):
            s = rackd.status()
            say(f"  rackd on {name}: {s['packets_queued']} packets queued of "
                f"about {segments} segments (handshake, key set-up, "
                f"heartbeats, the cut and the reconnection); the data "
                f"otherwise never left the kernel")

        say("\nA plain host (no rackd) connecting to B sees an ordinary "
            "connection:")
        before = rb.status()["packets_queued"]
        ra.stop()
        server = start_xfer_server(topo.b, PORT + 1)
        testbed.xfer_client(topo.a, b4, PORT + 1, MB)
        server.results()
        say(f"  B's rackd never saw it: {rb.status()['packets_queued'] - before} "
            f"packets queued (a SYN without racks' option, and its SYN-ACK, "
            f"stay in the kernel)")

        say(f"\nThe classic probe: rackctl probe {b4}:{PORT + 2}")
        probe_server = topo.b.popen([testbed.PYTHON, "-c", LISTENER,
                                     str(PORT + 2)])
        testbed.read_line(probe_server, 10, "listener")
        out = topo.a.run([testbed.default_rackctl(), "probe",
                          f"{b4}:{PORT + 2}"]).stdout.strip()
        say(f"  {out}")
        rb.stop()
        say("\ncleaning up")
        for name, rackd, ns in (("A", ra, topo.a), ("B", rb, topo.b)):
            ok &= explain_table(name, rackd, ns)
        namespaces = list(topo.namespaces)
        pids = [p.pid for n in topo.nodes for p in n.procs] + \
            [r.proc.pid for r in (ra, rb)]
    ok &= nothing_left(namespaces, pids)
    say("done." if ok else "done, with the problems above.")
    return 0 if ok else 1


def firewall_counter(topo, name):
    out = testbed.nft(topo.r, f"list counter inet demo_fw {name}")
    return int(re.search(r"packets (\d+)", out)[1])


KEPT = re.compile(r"table inet racks left in place for (\d+) spliced and "
                  r"(\d+) held connection")


def explain_table(name, rackd, ns):
    """Say what the stopped rackd on host name did with its table, and
    whether the host's tables agree with it."""
    kept = KEPT.search(rackd.log())
    tables = [t for t in testbed.tables(ns) if "racks" in t]
    if kept:
        say(f"  rackd on {name} stopped and left its table: {kept[1]} spliced "
            f"and {kept[2]} held connection(s) were in its state file (the "
            f"transfer's, just closed: rackd drops a closed connection's "
            f"splice at its next socket sweep); the kernel keeps rewriting "
            f"them while no rackd runs, and a restarted rackd takes them over")
    else:
        say(f"  rackd on {name} stopped and removed its table (nothing "
            f"spliced or held)")
    if bool(kept) != bool(tables):
        say(f"    MISMATCH: tables in {name}'s namespace: {tables or 'none'}")
        return False
    return True


def nothing_left(namespaces, pids):
    """After the topology is closed: none of its namespaces (and so none of
    the tables inside them) and none of the processes it started remain."""
    left_ns = [n for n in namespaces if n in testbed.namespace_names()]
    left_pids = [p for p in pids if alive(p)]
    say(f"  namespaces {', '.join(namespaces)} deleted, and the tables in "
        f"them with them; left: {', '.join(left_ns) or 'none'}")
    say(f"  processes started by the demo: {len(pids)}, still running: "
        f"{', '.join(map(str, left_pids)) or 'none'}")
    return not left_ns and not left_pids


def alive(pid):
    """pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


if __name__ == "__main__":
    sys.exit(main())
