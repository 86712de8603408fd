"""The benchmark's own parts (make bench): its statistics, its report and
its C tools across the test-bed. The benchmark itself runs minutes and
measures; these tests only show that its pieces compute what they claim.

Topology (tools test): the standard A -- R -- B, no rackd; the http
figure's test runs nginx in B and ab in A, with rackd on the queue and
the BPF path (the topology's cgroup).
"""

import json
import subprocess
import sys
import time

import pytest

import testbed

BENCH = testbed.REPO / "bench"
sys.path.insert(0, str(BENCH))

import report  # noqa: E402
import stats  # noqa: E402


def test_percentiles_summaries_and_ratios():
    values = [5, 1, 4, 2, 3]
    assert stats.percentile(values, 0) == 1
    assert stats.percentile(values, 50) == 3
    assert stats.percentile(values, 100) == 5
    assert stats.percentile([10, 20], 25) == 12.5
    assert stats.summary(values) == {"median": 3, "min": 1, "max": 5, "n": 5}
    assert stats.ratio(3.0, 2.0) == 1.5 and stats.ratio(1.0, 0) is None
    assert stats.spread([9, 10, 11]) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        stats.percentile([], 50)


def results():
    row = {"label": "1 flow", "plain": stats.summary([10.0, 11.0, 9.0]),
           "racks": stats.summary([9.5, 10.0, 9.0]), "ratio": 0.95,
           "spread": 0.1, "better": "higher", "goal": ">= 0.97",
           "met": False}
    only = {"label": "detection (s)", "plain": None,
            "racks": stats.summary([0.36, 0.37]), "ratio": None,
            "spread": 0.03, "better": "lower", "goal": None, "met": None}
    return {"stamp": "20261122-000000", "quick": True, "seconds": 1.0,
            "machine": "test", "figures": [
                {"name": "throughput", "title": "Bulk", "unit": "Gb/s",
                 "runs": 3, "seconds": 1.0, "rows": [row, only]}]}


def test_report_states_runs_spread_and_missed_goals(tmp_path):
    md = report.markdown(results())
    assert "| 1 flow | 10.00 (9.00-11.00, n=3) | 9.50 (9.00-10.00, n=3) " \
           "| 0.950 | >= 0.97 | **no** |" in md
    assert "| detection (s) | - | 0.365 (0.360-0.370, n=2) | - | - | - |" in md
    png = tmp_path / "r.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.fail("python3-matplotlib not installed: packaging/deps.sh "
                    "must install it", pytrace=False)
    assert report.plot(results(), png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.timing
def test_tools_measure_across_the_testbed(topo):
    testbed.make("bench-tools", timeout=120)
    tools = testbed.REPO / "build" / "bench"
    b4 = topo.addr["b"]["v4"]
    for tool, port, args in (("rr", 7001, ["1", "500", "50"]),
                             ("connbench", 7002, ["100", "latency"])):
        server = topo.b.popen([str(tools / tool), "server", str(port)])
        assert testbed.read_line(server, 10, tool) == "READY"
        out = topo.a.run([str(tools / tool), "client", b4, str(port), *args])
        result = json.loads(out.stdout)
        assert 0 < result["p50_us"] < 10000, result
        assert result["count"] == int(args[-2] if tool == "rr" else args[0])
        testbed.terminate([server])
    # Nobody listening: a clear error, exit 1.
    bad = topo.a.run([str(tools / "rr"), "client", b4, "7009", "1", "10"],
                     check=False)
    assert bad.returncode == 1 and bad.stderr.strip()


def test_nfqfloor_diverts_handshakes_and_leaves_no_trace(topo):
    """The floor tool queues every SYN and SYN-ACK of A and accepts them:
    connections still open, its counter moves, and SIGTERM removes its
    table (bench/tools/nfqfloor.c)."""
    testbed.make("bench-tools", timeout=120)
    tools = testbed.REPO / "build" / "bench"
    floor = topo.a.popen([str(tools / "nfqfloor"), "4300"])
    try:
        assert testbed.read_line(floor, 10, "nfqfloor") == "READY"
        assert "table inet racks_floor" in testbed.tables(topo.a)
        server = topo.b.popen([str(tools / "connbench"), "server", "7002"])
        assert testbed.read_line(server, 10, "connbench") == "READY"
        out = topo.a.run([str(tools / "connbench"), "client",
                          topo.addr["b"]["v4"], "7002", "20", "latency"])
        assert json.loads(out.stdout)["count"] == 20
        testbed.terminate([server])
        listing = testbed.nft(topo.a, "list chain inet racks_floor divert")
        # SYN out and SYN-ACK in for each of the 20 connections.
        assert "packets 40 " in listing, listing
    finally:
        testbed.terminate([floor])
    assert floor.returncode == 0, floor.stderr.read()
    assert "table inet racks_floor" not in testbed.tables(topo.a)
    bad = topo.a.run([str(tools / "nfqfloor"), "x"], check=False)
    assert bad.returncode == 1 and "invalid queue number" in bad.stderr


def test_chain_variants_are_valid_tables_without_those_chains(topo):
    """The chains figure loads the golden table minus some base chains:
    each variant loads, and lacks exactly the chains it names."""
    import figures
    for label, removed in figures.CHAIN_VARIANTS.items():
        text = figures._table_without(removed)
        testbed.nft_file(topo.a, text)
        listing = testbed.nft(topo.a, "list table inet racks")
        for chain in ("output", "splice_out", "prerouting"):
            assert (f"chain {chain} {{" in listing) == (chain not in removed), \
                (label, chain)
        testbed.nft(topo.a, "delete table inet racks")


def test_a_row_that_never_got_there_says_so():
    """The load figures' single-run rows (figures.one): a value is a
    one-run summary, a missing one (nothing ever connected again) shows
    as "-" with its goal missed, never as a zero that would pass."""
    import figures
    ok = figures.one("restore -> all connected (s)", 1.5, "all connected",
                     lambda _, r: True, plain=None)
    assert ok["racks"] == {"median": 1.5, "min": 1.5, "max": 1.5, "n": 1}
    assert ok["met"] is True and ok["plain"] is None
    never = figures.one("restore -> all connected (s)", None,
                        "all connected", lambda _, r: True)
    assert never["racks"] is None and never["met"] is False
    failed = figures.one("reset (of 10)", 3, "0", lambda _, r: r["max"] == 0,
                         plain=0)
    assert failed["met"] is False and failed["ratio"] is None
    md = report.markdown({"stamp": "x", "quick": True, "seconds": 1.0,
                          "machine": "test", "figures": [
                              {"name": "moved", "title": "Moved",
                               "unit": "s", "runs": 1, "seconds": 1.0,
                               "rows": [ok, never, failed]}]})
    assert "| restore -> all connected (s) | - | - | - | all connected " \
           "| **no** |" in md
    assert "| reset (of 10) | 0.000 (0.000-0.000, n=1) | 3.00 (3.00-3.00, " \
           "n=1) | - | 0 | **no** |" in md


def capture_syns(ns, pcap):
    proc = ns.popen(["tcpdump", "-i", "eth0", "-U", "--immediate-mode",
                     "-w", str(pcap), "tcp[tcpflags] == tcp-syn"],
                    stdout=subprocess.DEVNULL)
    time.sleep(1)
    return proc


def test_synflood_offers_racks_exactly_as_rackd_does(topo, tmp_path):
    """synflood's SYNs (sent from R, spoofed from a prefix R blackholes)
    carry the very option bytes a rackd client adds to its SYN, and B's
    rackd takes every one as an offer: it answers each with racks' option
    and records a connection for it. With --plain, rackd sees none of
    them (only offers are diverted) while B's capture holds every one
    (the control)."""
    testbed.need_tools("tcpdump")
    testbed.make("bench-tools", timeout=120)
    from scapy.all import TCP, rdpcap
    tools = testbed.REPO / "build" / "bench"
    prefix = "10.71.192.0/18"
    topo.r.ip("route", "add", "blackhole", prefix)
    rb = topo.start_rackd("b")
    topo.start_rackd("a")
    server = topo.b.popen([str(tools / "connfleet"), "serve", "7300"],
                          stdin=subprocess.PIPE)
    assert testbed.read_line(server, 10, "connfleet") == "READY"
    pcap = tmp_path / "syns.pcap"
    dump = capture_syns(topo.b, pcap)
    # A real client's offer, through A's rackd.
    real = topo.a.popen([str(tools / "connfleet"), "connect",
                         topo.addr["b"]["v4"], "7300", "1"],
                        stdin=subprocess.PIPE)
    assert json.loads(testbed.read_line(real, 10, "connfleet"))[
        "connected"] == 1
    before = rb.status()
    out = topo.r.run([str(tools / "synflood"), topo.addr["b"]["v4"], "7300",
                      "100", "2", prefix])
    flood = json.loads(out.stdout)
    assert flood["option"] is True and flood["errors"] == 0, flood
    assert 190 <= flood["sent"] <= 201, flood
    testbed.wait_until(lambda: rb.status()["syn"] - before["syn"] ==
                       flood["sent"], 10, "every flood SYN at B's rackd")
    after = rb.status()
    assert after["edp_synack_offered"] - before["edp_synack_offered"] == \
        flood["sent"], after
    assert after["connections_total"] - before["connections_total"] == \
        flood["sent"], after
    plain = json.loads(topo.r.run([str(tools / "synflood"),
                                   topo.addr["b"]["v4"], "7300", "100", "1",
                                   prefix, "--plain"]).stdout)
    assert plain["option"] is False and plain["sent"] >= 95, plain
    time.sleep(0.5)
    # A plain SYN is not diverted at all (only offers are): rackd saw
    # none of them, while the capture below holds every one.
    final = rb.status()
    assert final["syn"] == after["syn"], final
    assert final["edp_synack_offered"] == after["edp_synack_offered"]
    testbed.terminate([dump, real, server])
    syns = [p for p in rdpcap(str(pcap)) if TCP in p]
    a4 = topo.addr["a"]["v4"]
    offered = [bytes(p[TCP])[20:4 * p[TCP].dataofs] for p in syns
               if p["IP"].src == a4]
    flooded = [bytes(p[TCP])[20:4 * p[TCP].dataofs] for p in syns
               if p["IP"].src.startswith("10.71.") and p["IP"].src != a4]
    assert len(offered) == 1 and len(flooded) == flood["sent"] + \
        plain["sent"], (len(offered), len(flooded))
    # racks' option (and its NOPs) first, then a Linux SYN's own options:
    # header, flags (host keys), no host pair (the hosts never met), a
    # nonce of its own each (not compared), NOP NOP.
    head = bytes([254, 18, 0x72, 0x61, 0x11, 1, 0, 0, 0, 0])
    assert offered[0][:10] == head and offered[0][18:20] == bytes([1, 1])
    with_option = [o for o in flooded if len(o) == 40]
    assert len(with_option) == flood["sent"]
    assert all(o[:10] == head and o[18:20] == bytes([1, 1])
               for o in with_option)
    assert len({o[10:18] for o in with_option}) == len(with_option)
    assert all(len(o) == 20 and o[0] == 2 for o in flooded
               if o not in with_option)


@pytest.mark.bulk
def test_http_figure_measures_managed_connections_and_fails_loudly(
        topo, monkeypatch):
    """The http figure (bench/fig_http.py) in one short run of each mode:
    nginx in B and ab in A, plain against racks on the queue path and on
    the BPF path. Every row is there with numbers, and the rackds'
    counters show that the racks runs' connections were managed. A run
    that cannot count is an error, never a number: ab against a server
    that is not listening, a 404 for every request, and racks' client
    facing no racks server (its counter stays put) each raise."""
    testbed.need_tools("nginx", "ab", "ss")
    testbed.make("bench-tools", timeout=120)
    import figures  # noqa: F401  (first: it imports fig_http for RUN)
    import fig_http
    assert figures.RUN["http"] is fig_http.http
    topo.use_cgroup()
    bench = figures.Bench(topo, quick=True)
    try:
        fig = fig_http.http(bench, runs=1, requests=300)
        rates = [r for r in fig["rows"] if "suspended" not in r["label"]]
        assert [r["label"] for r in rates] == [
            "racks <-> racks, queue (requests/s)",
            "racks <-> racks, BPF (requests/s)",
            "racks <-> racks, BPF, until rackd had set up every "
            "connection (requests/s)",
            "racks client -> plain server, BPF (requests/s)",
            "racks client -> plain server, BPF, until rackd had set up "
            "every connection (requests/s)",
            "control: plain against plain (plain again in the racks "
            "column)"], rates
        for r in rates:
            assert r["plain"]["n"] == r["racks"]["n"] == 1, r
            assert r["plain"]["median"] > 0 and r["racks"]["median"] > 0, r
            assert isinstance(r["ratio"], float) and r["ratio"] > 0, r
        goal = rates[1]
        assert goal["goal"] == ">= 0.9" and goal["met"] in (True, False)
        # Both racks <-> racks modes count suspensions (a healthy path
        # has none; the count is a number, whatever it is).
        suspended = [r for r in fig["rows"] if "suspended" in r["label"]]
        assert [r["label"].split(":")[0] for r in suspended] == [
            "racks <-> racks, queue", "racks <-> racks, BPF"], suspended
        assert all(r["racks"]["n"] == 1 and r["goal"] == "0" and
                   r["plain"] is None for r in suspended), suspended
        for mode, (_, _, counters, _, _) in fig_http.MODES.items():
            [got] = fig["managed"][mode]
            assert set(got) == set(counters), (mode, got)
            assert all(n >= 0.95 * 300 for n in got.values()), (mode, got)

        # Nobody listening: ab fails, the figure raises.
        url = f"http://{topo.addr['b']['v4']}:{fig_http.HTTP_PORT}/"
        with pytest.raises(fig_http.AbError, match="exited"):
            fig_http.ab(topo.a, url + fig_http.FILE_NAME, 20)
        # Answers, but 404s: not a measurement either. The positive
        # control: the same server serves the figure's file.
        server = fig_http.Nginx(topo.b, topo.addr["b"]["v4"])
        try:
            with pytest.raises(fig_http.AbError, match="non-2xx 20"):
                fig_http.ab(topo.a, url + "missing", 20)
            assert fig_http.ab(topo.a, url + fig_http.FILE_NAME, 20)[
                "rps"] > 0
        finally:
            server.close()

        class NoServer:
            def __init__(self, *args):
                pass

            def close(self):
                pass
        with monkeypatch.context() as m:
            m.setattr(fig_http, "Nginx", NoServer)
            with pytest.raises(fig_http.AbError, match="exited"):
                fig_http.http(bench, runs=1, requests=50)
        # racks silently off: rackd on A alone on the queue path, whose
        # edp_setup_ok cannot grow against a server without rackd.
        with monkeypatch.context() as m:
            m.setattr(fig_http, "MODES", {"racks off": (
                ("a",), "queue", {"a": "edp_setup_ok"}, None, None)})
            with pytest.raises(testbed.TestbedError,
                               match="not managed by racks"):
                fig_http.http(bench, runs=1, requests=100)
    finally:
        bench.close()
