"""The benchmark's own parts (make bench): its statistics, its report and
its C tools across the test-bed. The benchmark itself runs minutes and
measures; these tests only show that its pieces compute what they claim.

Topology (tools test): the standard A -- R -- B, no rackd.
"""

import json
import sys

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
