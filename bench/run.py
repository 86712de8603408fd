#!/usr/bin/python3
"""make bench: racks-managed TCP against plain TCP between the same
namespaced hosts, in the same run.

Topology: the test-bed's A -- R -- B (tests/testbed.py). Every figure
alternates plain and racks runs (plain, racks, racks, plain, ...) so that
drift on the machine hits both alike, and reports medians, their spread
and racks / plain. "plain" means no rackd on the hosts at all; "racks"
means rackd on both (unless a figure says otherwise).

usage: run.py [--quick] [--only NAME[,NAME]] [--out DIR]

Writes DIR/bench-STAMP.json, DIR/bench-STAMP.md and DIR/bench-STAMP.png
and copies them to DIR/latest.*. Quick mode (make bench QUICK=1) runs
fewer and shorter trials.
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests"))
sys.path.insert(0, str(BENCH))

import figures  # noqa: E402
import report  # noqa: E402
import testbed  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer, shorter trials (about 5 minutes)")
    ap.add_argument("--only", default="",
                    help="comma-separated figure names: " +
                    ", ".join(figures.NAMES))
    ap.add_argument("--out", default=str(BENCH / "results"))
    args = ap.parse_args()
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in figures.NAMES]
    if unknown:
        ap.error(f"unknown figure(s) {', '.join(unknown)}; known: "
                 f"{', '.join(figures.NAMES)}")
    return args, only or list(figures.NAMES)


def main():
    args, names = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    started = time.monotonic()
    results = {"stamp": stamp, "quick": args.quick, "figures": []}
    testbed.remove_stale_namespaces()
    with testbed.Topology.create() as topo:
        # Every program of the topology in a cgroup of its own, where a
        # rackd on the BPF path attaches its sock_ops program.
        topo.use_cgroup()
        bench = figures.Bench(topo, args.quick)
        try:
            for name in names:
                t0 = time.monotonic()
                print(f"== {name}", flush=True)
                try:
                    fig = figures.RUN[name](bench)
                except Exception as err:   # report it, go on with the rest
                    print(f"  {name} failed: {err}", flush=True)
                    fig = {"name": name, "title": f"{name}: FAILED",
                           "unit": "-", "runs": 0, "rows": [],
                           "notes": [f"failed: {str(err).splitlines()[0]}"]}
                    results["failed"] = results.get("failed", 0) + 1
                    bench.plain()
                fig["seconds"] = round(time.monotonic() - t0, 1)
                results["figures"].append(fig)
                report.print_figure(fig)
        finally:
            bench.close()
    results["seconds"] = round(time.monotonic() - started, 1)
    results["machine"] = report.machine()
    base = out / f"bench-{stamp}"
    base.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    base.with_suffix(".md").write_text(report.markdown(results))
    made = [base.with_suffix(".json"), base.with_suffix(".md")]
    if report.plot(results, base.with_suffix(".png")):
        made.append(base.with_suffix(".png"))
    for path in made:
        shutil.copyfile(path, out / f"latest{path.suffix}")
    print(f"\n{len(results['figures'])} figure(s) in {results['seconds']} s; "
          f"report: {base.with_suffix('.md')}")
    return 1 if results.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
