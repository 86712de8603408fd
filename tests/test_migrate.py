"""rackd's part in moving a process to another host (migrate.h), driven
through the control protocol the way rackckpt drives it: export on the
source (the peer holds its socket), then either unexport (the checkpoint
failed: resume in place) or release (forgotten here), and import plus
restored on the destination. The end-to-end moves of real processes with
CRIU are in test_rackckpt.py; here the steps are checked one by one, with
their refusals.

Topology: A -- R -- B, plus C on a subnet of its own where needed::

    A (rackd, source) ---- R ---- B (rackd, peer)
                           |
                           C (rackd, destination)
"""

import signal
import time

import pytest

import racks
import testbed
from testbed import start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\n"


# A control request from an unprivileged process: prints the reply.
AS_NOBODY = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(f"cmd={sys.argv[2]}\\nid=1\\n\\n".encode())
print(s.recv(4096).decode())
"""


def managed_transfer(topo, size, rate=MB, config_b=FAST):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=config_b)
    server = start_xfer_server(topo.b, PORT, send=size, rate=rate, timeout=120)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, size,
                               recv=True, rate=rate, timeout=120,
                               announce=True)
    client.connected()
    cid = racks.wait_states(ra, "connected", remote_port=PORT)[0]["id"]
    return ra, rb, server, client, cid


def ok(reply):
    records, errno, error = reply
    assert errno == 0, error
    return records


def refused(reply, want_errno, text):
    records, errno, error = reply
    assert errno == want_errno, (errno, error)
    assert text in error, error
    return error


def export_until_held(rackd, *ids, timeout=5):
    """Export IDS and ask again until every peer holds its socket; the
    last reply's records."""
    def held():
        recs = ok(racks.ctl_request(rackd, "export",
                                    *[("id", i) for i in ids]))[1:]
        return recs if all(r["acked"] == "true" for r in recs) else None
    return testbed.wait_until(held, timeout, "the peers to hold")


def peer_conn(rb):
    conns = racks.conns_between(rb, local_port=PORT)
    assert len(conns) == 1, conns
    return rb.ctl_json("show", str(conns[0]["id"]))


def test_export_holds_the_peer_and_unexport_resumes():
    """An exported connection's peer holds its socket (zero window, no
    heartbeats, no suspension of its own) for as long as the export lasts;
    unexport resumes it in place and not a byte is lost."""
    size = 6 * MB
    with testbed.Topology.create() as topo:
        ra, rb, server, client, cid = managed_transfer(topo, size)
        recs = export_until_held(ra, cid)
        line = recs[0]["state"]
        assert line.startswith("conn ") and " progress=" in line
        assert " key=" in line
        shown = ra.ctl_json("show", str(cid))
        assert shown["migration"] == "leaving" and shown["peer_holds"]
        peer = peer_conn(rb)
        assert peer["migration"] == "peer-away"
        assert peer["state"] == "suspended"
        # Longer than suspend_after: parked connections are not judged
        # by heartbeats, so neither end aborts nor resumes on its own.
        time.sleep(3)
        assert peer_conn(rb)["state"] == "suspended"
        assert ra.ctl_json("show", str(cid))["state"] == "suspended"
        ok(racks.ctl_request(ra, "unexport", ("id", cid)))
        racks.wait_states(ra, "connected", remote_port=PORT)
        racks.wait_states(rb, "connected", local_port=PORT)
        assert "migration" not in peer_conn(rb)
        racks.check_both_ways(server, client, size)
        sa, sb = ra.status(), rb.status()
        assert sa["migrations_exported"] == sa["migrations_unexported"] == 1
        assert sa["away_acks_in"] >= 1 and sb["away_in"] >= 1
        assert sb["suspend_aborts"] == 0


def test_migration_commands_refuse_bad_requests():
    """Each step refuses what it cannot do, changing nothing: unknown and
    unmanaged connections, a step out of order, import lines that are not
    exports, a restored socket that does not exist."""
    with testbed.Topology.create() as topo:
        ra = topo.start_rackd("a", config=FAST)
        # B without rackd: A's connection is plain, not managed (released
        # once its three ADOPTs went unanswered, about 8 s); it lasts 16 s.
        server = start_xfer_server(topo.b, PORT, send=MB, rate=MB // 16,
                                   timeout=60)
        client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, MB,
                                   recv=True, rate=MB // 16, timeout=60,
                                   announce=True)
        client.connected()
        plain = racks.wait_states(ra, "released", remote_port=PORT,
                                  timeout=12)[0]["id"]
        refused(racks.ctl_request(ra, "export", ("id", plain)), 107,
                "not managed by racks")
        refused(racks.ctl_request(ra, "export", ("id", 999)), 2,
                "no connection with id 999")
        refused(racks.ctl_request(ra, "export"), 22, "missing connection id")
        refused(racks.ctl_request(ra, "export", ("id", "x1")), 22,
                "bad connection id")
        refused(racks.ctl_request(ra, "unexport", ("id", plain)), 22,
                "is not exported")
        refused(racks.ctl_request(ra, "release", ("id", plain)), 22,
                "is not exported")
        refused(racks.ctl_request(ra, "restored", ("id", plain)), 22,
                "was not imported")
        refused(racks.ctl_request(ra, "import"), 22, "no state= line")
        refused(racks.ctl_request(ra, "import", ("state", "garbage")), 22,
                "connection 1: not a 'conn' line")
        # A state-file line (no progress= field) is not an export.
        state_line = ("conn dir=out local=10.9.0.1:1 remote=10.9.0.2:2 "
                      "wire_local=10.9.0.1:1 wire_remote=10.9.0.2:2 "
                      "confirmed=1 kept_local=0 state=connected created=1 "
                      "reconnected=0 reconnections=0 suspensions=0 "
                      "conn_id=0000000000000001 key=" + "00" * 32 +
                      " pk_client=" + "00" * 32 + " pk_server=" + "00" * 32 +
                      " isn_client=1 isn_server=2 hb_out=1 hb_acked=1 "
                      "hb_in=1 rc_base=0 lend=1,1,1460,7 rend=1,2,1460,7")
        refused(racks.ctl_request(ra, "import", ("state", state_line)), 22,
                "no progress field")
        refused(racks.ctl_request(
            ra, "import", ("state", state_line + " progress=5,-1")), 22,
            "bad value for progress")
        # A good line after a bad one: neither is kept.
        good = state_line.replace("conn_id=0000000000000001",
                                  "conn_id=0000000000000002") + \
            " progress=2,3"
        refused(racks.ctl_request(ra, "import", ("state", good),
                                  ("state", "conn x")), 22,
                "connection 2: ")
        assert [c["id"] for c in ra.connections()] == [plain]
        # Imported, its socket never restored: "restored" says so, and
        # release drops it.
        recs = ok(racks.ctl_request(ra, "import", ("state", good)))
        new = recs[1]["id"]
        refused(racks.ctl_request(ra, "restored", ("id", new)), 2,
                "no such socket here")
        assert ra.ctl_json("show", new)["migration"] == "arriving"
        ok(racks.ctl_request(ra, "release", ("id", new)))
        assert [c["id"] for c in ra.connections()] == [plain]
        # Non-root clients may not drive a migration.
        ra.dir.chmod(0o755)
        for cmd in ("export", "unexport", "release", "import", "restored"):
            proc = testbed.run(
                ["setpriv", "--reuid=65534", "--regid=65534",
                 "--clear-groups", testbed.PYTHON, "-c", AS_NOBODY,
                 str(ra.sock), cmd], check=False)
            assert f"'{cmd}' needs root" in proc.stdout, proc
        client.result(60)
        server.results(60)


def test_a_restore_that_never_happens_ends_with_max_suspend():
    """The source releases the connection (its process was checkpointed)
    and nothing restores it: the peer holds its socket for max_suspend,
    then resets it deliberately, and its program sees the error rather
    than waiting forever. Whatever the old socket still sends meanwhile is
    dropped on the peer."""
    size = 64 * MB
    with testbed.Topology.create() as topo:
        ra, rb, server, client, cid = managed_transfer(
            topo, size, rate=MB, config_b=FAST + "max_suspend = 3s\n")
        export_until_held(ra, cid)
        # The checkpointed process is gone from A as far as rackd knows;
        # here it is only stopped, so its socket still retransmits.
        client.proc.send_signal(signal.SIGSTOP)
        try:
            ok(racks.ctl_request(ra, "release", ("id", cid)))
            assert racks.conns_between(ra, remote_port=PORT) == []
            start = time.monotonic()
            testbed.wait_until(lambda: rb.status()["suspend_aborts"] == 1, 10,
                               "B to abort after max_suspend")
            waited = time.monotonic() - start
            assert 2.5 <= waited <= 6, waited
            report = server.next_report(timeout=10)
            assert "error" in report, report
        finally:
            client.proc.send_signal(signal.SIGCONT)
        assert ra.status()["migrations_released"] == 1


# --- whole moves with rackckpt and CRIU ----------------------------------------

RACKCKPT = testbed.REPO / "build" / "rackckpt"
CRIU = testbed.REPO / "build" / "criu" / "sbin" / "criu"
ECHO = str(testbed.TOOLS / "echocheck.py")
ECHO_PORT = 6001


def rackckpt(rackd, *args, timeout=60):
    """rackckpt -S (rackd's socket) ARGS in rackd's namespace."""
    proc = testbed.run(rackd.ns.exec_prefix(nsenter=True) +
                       [str(RACKCKPT), "-S", str(rackd.sock), *map(str, args)],
                       check=False, timeout=timeout)
    return proc


def echo_servers(topo, hosts):
    servers = {}
    for h in hosts:
        p = topo.ns(h).popen([testbed.PYTHON, ECHO, "server", "--port",
                              ECHO_PORT])
        assert testbed.read_line(p, 10, f"echo server on {h}") == "READY"
        servers[h] = p
    return servers


def start_mover(topo, peers, per_peer, seconds, out):
    """The process to move: echocheck's client on A with PER_PEER checked
    connections to each of PEERS, started the way rackckpt(8) says (a
    session of its own, stdio to files, exec'd into A's network
    namespace only)."""
    argv = [testbed.PYTHON, ECHO, "client", "--seconds", seconds,
            "--rate", 32 * 1024]
    for h in peers:
        argv += ["--to", f"{topo.addr[h]['v4']}:{ECHO_PORT}:{per_peer}"]
    return topo.a.popen(argv, stdout=out, stderr=testbed.subprocess.STDOUT,
                        stdin=testbed.subprocess.DEVNULL, nsenter=True,
                        start_new_session=True)


def mover_report(path, timeout):
    def done():
        text = path.read_text()
        lines = [ln for ln in text.splitlines() if ln.startswith('{"conns"')]
        return lines[-1] if lines else None
    import json
    return json.loads(testbed.wait_until(done, timeout,
                                         f"the moved process's report in {path}"))


def kill_if_alive(pid):
    """The restored process is not our child: ours to end by pid."""
    import os
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_process_with_16_connections_moves_to_another_subnet(tmp_path):
    """Issue 6, test 1: a process with 16 connections to 4 peer hosts
    (each running rackd and a program that checks every byte and echoes
    it) is dumped on A and restored on C, in another subnet. Every
    connection carries on with not a byte lost, duplicated or changed,
    either way, and the peers' programs never notice."""
    peers = "bdef"
    with testbed.Topology.create() as topo:
        for h in "cdef":
            topo.add_host(h)
        rk = {h: topo.start_rackd(h, config=FAST) for h in "abcdef"}
        servers = echo_servers(topo, peers)
        out = tmp_path / "mover.out"
        mover = start_mover(topo, peers, 4, 10, open(out, "w"))
        try:
            testbed.wait_until(
                lambda: len(racks.wait_states(rk["a"], "connected",
                                              remote_port=ECHO_PORT)) == 16,
                10, "16 managed connections on A")
            time.sleep(2)                   # streams in full flow
            ckpt = tmp_path / "ckpt"
            dump = rackckpt(rk["a"], "dump", mover.pid, ckpt)
            assert dump.returncode == 0, dump.stderr
            assert "16 connection(s) exported" in dump.stdout
            mover.wait(10)                  # dumped: its pid is free again
            assert racks.conns_between(rk["a"], remote_port=ECHO_PORT) == []
            assert not [t for t in testbed.tables(topo.a) if "CRIU" in t]
            restore = rackckpt(rk["c"], "restore", ckpt)
            assert restore.returncode == 0, restore.stderr
            print(restore.stdout.strip())
            assert "16 connection(s) connected again" in restore.stdout
            report = mover_report(out, 60)
        finally:
            kill_if_alive(mover.pid)
        bad = [c for c in report["conns"] if "error" in c]
        assert len(report["conns"]) == 16 and not bad, bad
        print("longest pause of each stream (s):",
              sorted(c["max_gap"] for c in report["conns"]))
        import json
        for h, p in servers.items():
            got = [json.loads(testbed.read_line(p, 10, f"echo on {h}"))
                   for _ in range(4)]
            assert all("error" not in g for g in got), got
            sent = {c["id"]: c["sent"] for c in report["conns"]}
            assert all(g["checked"] == sent[g["id"]] for g in got), got
            # The peer follows C, in its own subnet now.
            for c in racks.conns_between(rk[h], local_port=ECHO_PORT):
                assert c["wire_remote"].startswith(topo.addr["c"]["v4"])
        status = rk["c"].status()
        assert status["migrations_imported"] == status["migrations_arrived"] == 16
        assert rk["a"].status()["migrations_released"] == 16


def test_a_dumped_process_never_restored_is_reset_after_max_suspend(tmp_path):
    """Issue 6, test 4: dumped on A and never restored, the process's
    connections are held by their peers for max_suspend and then reset
    deliberately: the peer's program sees an error, not a hang."""
    with testbed.Topology.create() as topo:
        rk = {"a": topo.start_rackd("a", config=FAST),
              "b": topo.start_rackd("b", config=FAST + "max_suspend = 3s\n")}
        servers = echo_servers(topo, "b")
        out = tmp_path / "mover.out"
        mover = start_mover(topo, "b", 2, 60, open(out, "w"))
        try:
            testbed.wait_until(
                lambda: len(racks.wait_states(rk["a"], "connected",
                                              remote_port=ECHO_PORT)) == 2,
                10, "2 managed connections on A")
            dump = rackckpt(rk["a"], "dump", mover.pid, tmp_path / "ckpt")
            assert dump.returncode == 0, dump.stderr
            mover.wait(10)
            start = time.monotonic()
            import json
            got = [json.loads(testbed.read_line(servers["b"], 15, "echo"))
                   for _ in range(2)]
            waited = time.monotonic() - start
        finally:
            kill_if_alive(mover.pid)
        assert all("error" in g for g in got), got
        assert 2 <= waited <= 8, waited
        assert rk["b"].status()["suspend_aborts"] == 2


def test_a_moved_process_moves_again_and_back(tmp_path):
    """A to C, then back from C to A: the second export is of spliced
    connections (socket on A's old address, kept on C's lo; wire from
    C's), and the way back ends unspliced, on A's own address again,
    with C's kept address gone."""
    with testbed.Topology.create() as topo:
        topo.add_host("c")
        rk = {h: topo.start_rackd(h, config=FAST) for h in "abc"}
        servers = echo_servers(topo, "b")
        out = tmp_path / "mover.out"
        mover = start_mover(topo, "b", 2, 12, open(out, "w"))
        pid = mover.pid
        a_v4 = topo.addr["a"]["v4"]
        try:
            testbed.wait_until(
                lambda: len(racks.wait_states(rk["a"], "connected",
                                              remote_port=ECHO_PORT)) == 2,
                10, "2 managed connections on A")
            for hop, (src, dst) in enumerate((("a", "c"), ("c", "a"))):
                time.sleep(1.5)
                ckpt = tmp_path / f"ckpt{hop}"
                dump = rackckpt(rk[src], "dump", pid, ckpt)
                assert dump.returncode == 0, dump.stderr
                assert "2 connection(s) exported" in dump.stdout
                if hop == 0:
                    mover.wait(10)
                restore = rackckpt(rk[dst], "restore", ckpt)
                assert restore.returncode == 0, restore.stderr
                assert "2 connection(s) connected again" in restore.stdout
                conns = racks.conns_between(rk[dst], remote_port=ECHO_PORT)
                assert len(conns) == 2
                for c in conns:
                    assert c["local"].startswith(a_v4 + ":")
                    want = topo.addr[dst]["v4"] + ":"
                    assert c["wire_local"].startswith(want), c
            # Back home: nothing spliced, A's address no longer on C.
            shown = [rk["a"].ctl_json("show", str(c["id"])) for c in conns]
            assert all(s["splice"] == "none" for s in shown), shown
            lo = topo.ns("c").ip_json("addr", "show", "dev", "lo")[0]
            assert a_v4 not in [x["local"] for x in lo["addr_info"]]
            report = mover_report(out, 60)
        finally:
            kill_if_alive(pid)
        assert not [c for c in report["conns"] if "error" in c], report
        import json
        got = [json.loads(testbed.read_line(servers["b"], 10, "echo"))
               for _ in range(2)]
        assert all("error" not in g for g in got), got


def test_iperf3_client_moves_to_another_host_mid_test(tmp_path):
    """A real program: an iperf3 client (control and data connection) is
    moved from A to C three seconds into a 10 s test at 50 Mbit/s. Both
    ends finish without an error and count the same bytes."""
    import json
    with testbed.Topology.create() as topo:
        topo.add_host("c")
        rk = {h: topo.start_rackd(h, config=FAST) for h in "abc"}
        server = topo.b.popen(["iperf3", "-s", "-1", "-J"])
        testbed.wait_until(
            lambda: "5201" in topo.b.run(["ss", "-ltn"]).stdout, 10,
            "iperf3 to listen")
        out = tmp_path / "client.json"
        client = topo.a.popen(
            ["iperf3", "-c", topo.addr["b"]["v4"], "-t", "10", "-b", "50M",
             "-J"], stdout=open(out, "w"), stderr=testbed.subprocess.STDOUT,
            stdin=testbed.subprocess.DEVNULL, nsenter=True,
            start_new_session=True)
        try:
            testbed.wait_until(
                lambda: len(racks.wait_states(rk["a"], "connected",
                                              remote_port=5201)) == 2,
                10, "iperf3's two managed connections")
            time.sleep(3)
            dump = rackckpt(rk["a"], "dump", client.pid, tmp_path / "ckpt")
            assert dump.returncode == 0, dump.stderr
            assert "2 connection(s) exported" in dump.stdout
            client.wait(10)
            restore = rackckpt(rk["c"], "restore", tmp_path / "ckpt")
            assert restore.returncode == 0, restore.stderr
            srv = json.loads(server.communicate(timeout=60)[0])
            text = testbed.wait_until(
                lambda: out.read_text().rstrip().endswith("}") and
                out.read_text(), 30, "the client's JSON report")
        finally:
            kill_if_alive(client.pid)
        cli = json.loads(text)
        assert "error" not in srv and "error" not in cli, (srv, cli)
        sent = cli["end"]["sum_sent"]["bytes"]
        assert sent > 30 * 2**20
        assert srv["end"]["sum_received"]["bytes"] == sent
        assert rk["c"].status()["migrations_arrived"] == 2
