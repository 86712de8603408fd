"""rackd built with AddressSanitizer and UndefinedBehaviorSanitizer
(`make asan`) through real traffic, malformed packets, control requests
and a clean shutdown: no report, no leak.

Topology: A (ASan rackd) -- R -- B (ASan rackd).
"""

import subprocess

import pytest

import testbed
from test_edp import BURST, ECHO_CLOSE, SILENT, start_py_server

ASAN_RACKD = testbed.REPO / "build" / "asan" / "rackd"
SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=66",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=67",
}
REPORT_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


@pytest.fixture
def asan_rackds(topo):
    if not ASAN_RACKD.exists():
        pytest.fail(f"{ASAN_RACKD} missing: run `make asan`")
    return [topo.start_rackd(h, binary=str(ASAN_RACKD), env=SAN_ENV,
                             config="sweep_interval = 200ms\n"
                                    "suspend_after = 1s\n")
            for h in ("a", "b")]


@pytest.mark.bulk
def test_sanitized_rackd_survives_everything_and_exits_clean(topo, asan_rackds):
    ra, rb = asan_rackds
    # An events subscriber, left connected until rackd shuts down.
    topo.a.popen([ra.rackctl, "-S", str(ra.sock), "events"])
    server = testbed.start_xfer_server(topo.b, 5001, send=20 * 2**20, count=3)
    for family in ("v4", "v6", "v4"):
        report = testbed.xfer_client(topo.a, topo.addr["b"][family], 5001,
                                     20 * 2**20, recv=True)
        assert report["recv_bytes"] == 20 * 2**20
    server.results()
    topo.b.run([testbed.PYTHON, str(testbed.TOOLS / "craft.py"),
                topo.addr["a"]["v4"], "5001", "opt_len0", "doff_beyond",
                "random", "--count", "20"], timeout=60)
    # 200 set-ups at once, a probe answered, and hostile set-up messages.
    start_py_server(topo.b, SILENT, port=5002)
    start_py_server(topo.b, ECHO_CLOSE, port=5003)
    burst = topo.a.popen([testbed.PYTHON, "-c", BURST, "200",
                          topo.addr["b"]["v4"], "5002"], stdin=subprocess.PIPE)
    assert testbed.read_line(burst, 60, "burst").split()[1] == "200"
    testbed.wait_until(lambda: rb.status()["edp_setup_ok"] >= 203, 20,
                       "the burst's set-ups")
    probe = topo.a.run([testbed.default_rackctl(), "probe",
                        f"{topo.addr['b']['v4']}:5003"]).stdout
    assert "enhanced" in probe
    topo.b.run([testbed.PYTHON, str(testbed.TOOLS / "edpcraft.py"),
                f"forged-key,{topo.addr['b']['v4']},5002,{topo.addr['a']['v4']},40000",
                f"syn-bad-version,{topo.addr['b']['v4']},40001,{topo.addr['a']['v4']},5003"],
               timeout=60)
    burst.stdin.write("\n")
    burst.stdin.flush()
    # A transfer held through a cut and resumed.
    server = testbed.start_xfer_server(topo.b, 5004, timeout=60)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"]["v4"], 5004,
                                       4 * 2**20, rate=2**20, announce=True,
                                       timeout=60)
    client.connected()
    topo.cut_silent("b")
    testbed.wait_until(lambda: ra.status()["suspended"] >= 1, 10,
                       "a suspension")
    import time
    time.sleep(2)
    topo.restore_silent("b")
    assert client.result(60)["sent_bytes"] == 4 * 2**20
    assert server.results()[0]["recv_bytes"] == 4 * 2**20
    # A moves (make-before-break) under a transfer, a reload while it is
    # spliced, a forged reconnection and a refused `rackctl peer`. The
    # transfer lasts 16 s: still running at the restart below, however
    # slowly the sanitized rackds get there.
    server = testbed.start_xfer_server(topo.b, 5005, timeout=60)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"]["v4"], 5005,
                                       16 * 2**20, rate=2**20, announce=True,
                                       timeout=60)
    client.connected()
    testbed.wait_until(lambda: any(c["remote"].endswith(":5005") and
                                   c["state"] == "connected"
                                   for c in ra.connections()), 10,
                       "the transfer's set-up")
    old = topo.cidr("a", "v4")
    new = topo.move_to_new_subnet("a", "v4", keep_old=True)
    topo.remove_address("a", "v4", old)
    # (The cut's re-opening counted reconnections already: wait for this
    # one's new address.)
    testbed.wait_until(lambda: any(new in c["wire_remote"]
                                   for c in rb.connections()), 10,
                       "the reconnection")
    rb.ctl("reload")
    moved = [c for c in rb.connections() if new in c["wire_remote"]]
    assert moved, rb.connections()
    conn_id = rb.ctl_json("show", str(moved[0]["id"]))["conn_id"]
    option = bytes([254, 33, 0x72, 0x61, 0x18]) + bytes.fromhex(conn_id) + \
        bytes(20)
    topo.r.run([testbed.PYTHON, str(testbed.TOOLS / "edpcraft.py"),
                f"raw,{new},40000,{topo.addr['b']['v4']},5005,1,1,{option.hex()}"],
               timeout=60)
    # Reconnection SYNs: a forged one, one cut short (marker, half a
    # message) and one whose marker alone is left.
    from test_firewall import craft, numbered, rcsyn_options
    forged = numbered(conn_id, 1 << 30, bytes(16), 8)
    craft(topo.r, *((new, 40000, topo.addr["b"]["v4"], 5005, 1, 0, "S",
                     rcsyn_options(), pay) for pay in (forged, forged[:20],
                                                       b"")))
    testbed.wait_until(lambda: rb.status()["reconnects_malformed"] >= 2, 5,
                       "the short reconnection SYNs")
    with pytest.raises(testbed.RackdError):
        ra.ctl("peer", "999999", topo.addr["b"]["v4"])
    testbed.wait_until(lambda: ra.status()["packets_malformed"] > 0, 5,
                       "malformed packets to reach rackd")
    # A restart under the spliced transfer: the state file written, the
    # table handed over, read back and taken over.
    assert ra.status()["spliced"] >= 1 and client.proc.poll() is None, \
        "the transfer ended before the restart"
    assert ra.stop(timeout=15) == 0
    assert not any(m in ra.log() for m in REPORT_MARKERS), ra.log()
    ra.start()
    assert ra.status()["state_restored"] >= 1
    assert client.result(60)["sent_bytes"] == 16 * 2**20
    assert server.results()[0]["recv_bytes"] == 16 * 2**20
    for rackd in (ra, rb):
        rackd.ctl("list")
        rackd.ctl("status")
        for conn in rackd.connections():
            try:
                rackd.ctl("show", conn["id"])
            except testbed.RackdError as err:  # closed since the list
                assert "no connection with id" in str(err), err
        rackd.ctl("reload")
    for rackd in (ra, rb):
        code = rackd.stop(timeout=15)
        log = rackd.log()
        assert not any(m in log for m in REPORT_MARKERS), log
        assert code == 0, log


@pytest.mark.bulk
def test_sanitized_rackds_through_a_migration(tmp_path):
    """Export, unexport, a refused import, then a process moved from A to
    C with rackckpt (release on A, import and restored on C, the peer
    away and following), under ASan/UBSan on all three hosts."""
    from test_migrate import (FAST, echo_servers, kill_if_alive,
                              mover_report, rackckpt, start_mover)
    import racks
    with testbed.Topology.create() as topo:
        topo.add_host("c")
        rk = {h: topo.start_rackd(h, binary=str(ASAN_RACKD), env=SAN_ENV,
                                  config=FAST + "sweep_interval = 200ms\n")
              for h in "abc"}
        servers = echo_servers(topo, "b")
        out = tmp_path / "mover.out"
        mover = start_mover(topo, "b", 2, 8, open(out, "w"))
        try:
            testbed.wait_until(
                lambda: len(racks.wait_states(rk["a"], "connected",
                                              remote_port=6001)) == 2,
                10, "2 managed connections on A")
            ids = [c["id"] for c in racks.conns_between(rk["a"],
                                                        remote_port=6001)]
            records, errno, _ = racks.ctl_request(
                rk["a"], "export", *[("id", i) for i in ids])
            assert errno == 0 and len(records) == 3
            assert racks.ctl_request(rk["a"], "unexport",
                                     *[("id", i) for i in ids])[1] == 0
            assert racks.ctl_request(rk["c"], "import",
                                     ("state", "conn x=1"))[1] == 22
            racks.wait_states(rk["a"], "connected", remote_port=6001)
            dump = rackckpt(rk["a"], "dump", mover.pid, tmp_path / "ckpt")
            assert dump.returncode == 0, dump.stderr
            mover.wait(10)
            restore = rackckpt(rk["c"], "restore", tmp_path / "ckpt")
            assert restore.returncode == 0, restore.stderr
            report = mover_report(out, 60)
        finally:
            kill_if_alive(mover.pid)
        assert not [c for c in report["conns"] if "error" in c], report
        servers["b"].kill()
        for rackd in rk.values():
            code = rackd.stop(timeout=15)
            log = rackd.log()
            assert not any(m in log for m in REPORT_MARKERS), log
            assert code == 0, log
