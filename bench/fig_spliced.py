"""The spliced figure: one iperf3 connection's bulk throughput after a
make-before-break move of A against the same connection before it.

Each run has a topology of its own (a stopped rackd leaves its splices'
rewrites behind, figures._moved_once), in which, alternating the order:
plain TCP for scale (no rackd); with rackd on A and B, one iperf3
connection A->B and one B->A, A moving half-way (its new address added,
the old one removed, the connection spliced onto the new one); and the
same connection without a move, the control, whose second half against
its first shows this machine's noise. A figure is the median of the 1 s
intervals on each side of the move, the interval of the move and the
next left out.
"""

import json
import statistics
import time

import figures
import testbed

PORT = figures.IPERF_PORT + 2
MARGIN_S = 0.5          # iperf3's clock starts this much after ours, at most


def _intervals(out):
    """[(start, end, Gb/s)] of an iperf3 -J report."""
    return [(i["sum"]["start"], i["sum"]["end"],
             i["sum"]["bits_per_second"] / 1e9)
            for i in json.loads(out)["intervals"]]


def _halves(intervals, t_before, t_after):
    """Medians of the intervals that ended before t_before and began
    after t_after (iperf3's seconds), the first (slow start) left out."""
    before = [g for s, e, g in intervals[1:] if e <= t_before]
    after = [g for s, e, g in intervals[1:] if s >= t_after]
    if len(before) < 2 or len(after) < 2:
        raise testbed.TestbedError(f"too few intervals around the move: "
                                   f"{len(before)} before, {len(after)} "
                                   "after")
    return statistics.median(before), statistics.median(after)


def _run(topo, secs, reverse, move=None):
    """One iperf3 connection A->B (B->A with reverse) for secs; at half
    time move() (None: nothing, the control). Returns (before, after,
    Gb/s) medians; without a move before / after are the two halves."""
    server = topo.b.popen(["iperf3", "-s", "-1", "-p", str(PORT)])
    try:
        time.sleep(0.3)
        t0 = time.monotonic()
        client = topo.a.popen(["iperf3", "-c", topo.addr["b"]["v4"], "-p",
                               str(PORT), "-t", str(secs), "-i", "1", "-J"]
                              + (["-R"] if reverse else []))
        time.sleep(secs / 2)
        t_move = time.monotonic() - t0
        if move:
            move()
        t_done = time.monotonic() - t0
        out, err = client.communicate(timeout=secs + 30)
        if client.returncode:
            raise testbed.TestbedError(f"iperf3: {err.strip() or out[-200:]}")
    finally:
        testbed.terminate([server])
    intervals = _intervals(out)
    before, after = _halves(intervals, t_move - MARGIN_S, t_done + MARGIN_S)
    return before, after, [g for _, _, g in intervals[1:]]


def _move(topo, ra, rb):
    """A's make-before-break move (tests/racks.py move_and_splice),
    both ends spliced."""
    def move():
        old = topo.cidr("a", "v4")
        topo.move_to_new_subnet("a", "v4", keep_old=True)
        topo.remove_address("a", "v4", old)
        testbed.wait_until(lambda: ra.status()["spliced"] >= 1 and
                           rb.status()["spliced"] >= 1, 10, "the splice")
    return move


def _once(quick, secs, order, v, notes):
    """One run in a topology of its own; appends to v's lists."""
    with testbed.Topology.create() as topo:
        for reverse in (False, True):
            d = "B->A" if reverse else "A->B"
            v[f"plain {d}"] += _run(topo, secs, reverse)[2]
        ra = topo.start_rackd("a", debug=False, path="queue")
        rb = topo.start_rackd("b", debug=False, path="queue")
        for kind in order:
            for reverse in (False, True):
                d = "B->A" if reverse else "A->B"
                setups = rb.status()["edp_setup_ok"]
                queued = [r.status()["packets_queued"] for r in (ra, rb)]
                before, after, _ = _run(topo, secs, reverse,
                                        _move(topo, ra, rb)
                                        if kind == "move" else None)
                if rb.status()["edp_setup_ok"] - setups < 2:
                    raise testbed.TestbedError("iperf3's connections were "
                                               "not managed by racks")
                queued = [r.status()["packets_queued"] - q
                          for r, q in zip((ra, rb), queued)]
                v[f"{kind} {d}"].append(after / before)
                if kind == "move":
                    v[f"spliced {d}"].append(after)
                    notes.append(f"{d} moved: {before:.1f} -> {after:.1f} "
                                 f"Gb/s; packets queued meanwhile (the "
                                 f"move's messages and held segments, "
                                 f"none of the bulk after it) A "
                                 f"{queued[0]}, B {queued[1]}")
        for r in (ra, rb):
            r.stop(timeout=15)


def spliced(bench):
    secs, runs = (8, 1) if bench.quick else (20, 3)
    keys = [f"{k} {d}" for k in ("move", "control", "spliced", "plain")
            for d in ("A->B", "B->A")]
    v = {k: [] for k in keys}
    notes = []
    bench.plain()
    for i in range(runs):
        _once(bench.quick, secs, ("move", "control") if i % 2 == 0
              else ("control", "move"), v, notes)
    rows = []
    for d in ("A->B", "B->A"):
        r = figures.row(f"{d}: after / before A's move, same connection",
                        None, v[f"move {d}"], ">= 0.97",
                        lambda _, x: x["median"] >= 0.97)
        r["ratio"] = round(r["racks"]["median"], 3)
        rows.append(r)
    for d in ("A->B", "B->A"):
        r = figures.row(f"control {d}: second half / first half, no move",
                        None, v[f"control {d}"])
        r["ratio"] = round(r["racks"]["median"], 3)
        rows.append(r)
    for d in ("A->B", "B->A"):
        rows.append(figures.row(f"{d} Gb/s: plain TCP against the spliced "
                                "connection after the move", v[f"plain {d}"],
                                v[f"spliced {d}"]))
    return {"name": "spliced", "title": "A spliced connection against "
            f"itself before its move (iperf3, {secs} s, A moves half-way, "
            "make-before-break; medians of 1 s intervals)",
            "unit": "ratio (Gb/s in the last rows)", "runs": runs,
            "rows": rows,
            "notes": notes + [
                "The ratio rows hold after / before of each run (racks "
                "column); the control rows are the same without a move, "
                "the noise within which a ratio cannot be told from 1.00. "
                "The plain rows' plain column is every 1 s interval of "
                "plain TCP in the same topologies, their racks column the "
                "spliced connection's median after the move."]}
