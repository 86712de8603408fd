"""The benchmark report: a line per row on the terminal, a Markdown table,
a PNG of the ratios, and a description of the machine."""

import os
import platform


def _fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def _cell(summary):
    if not summary:
        return "-"
    return (f"{_fmt(summary['median'])} ({_fmt(summary['min'])}-"
            f"{_fmt(summary['max'])}, n={summary['n']})")


def _met(row):
    return {True: "yes", False: "**no**", None: "-"}[row["met"]]


def print_figure(fig):
    for r in fig["rows"]:
        ratio = "" if r["ratio"] is None else f"  ratio {r['ratio']:.3f}"
        goal = f"  goal {r['goal']}: {_met(r)}" if r["goal"] else ""
        print(f"  {r['label']}: plain {_cell(r['plain'])}, racks "
              f"{_cell(r['racks'])}{ratio}{goal}", flush=True)


def markdown(results):
    lines = [f"# racks benchmark {results['stamp']}"
             f"{' (quick)' if results['quick'] else ''}", "",
             f"{results['machine']}; {results['seconds']} s in all.", "",
             "Medians of alternated runs (plain, racks, racks, plain, ...), "
             "with min-max and the number of runs; ratio = racks / plain.",
             ""]
    for fig in results["figures"]:
        lines += [f"## {fig['title']}", "",
                  f"Unit: {fig['unit']}; {fig['seconds']} s.", "",
                  "| | plain | racks | ratio | goal | met |",
                  "|---|---|---|---|---|---|"]
        for r in fig["rows"]:
            lines.append(f"| {r['label']} | {_cell(r['plain'])} | "
                         f"{_cell(r['racks'])} | {_fmt(r['ratio'])} | "
                         f"{r['goal'] or '-'} | {_met(r)} |")
        lines.append("")
        for note in fig.get("notes", []):
            lines.append(f"- {note}")
        if fig.get("notes"):
            lines.append("")
    return "\n".join(lines)


def machine():
    cpus = os.cpu_count()
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"Linux {platform.release()}, {cpus} x {model}"


def plot(results, path):
    """Ratios to plain TCP, one bar per row that has one; False without
    matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [(f["name"], r) for f in results["figures"] for r in f["rows"]
            if r["ratio"] is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(10, 0.4 * len(rows) + 1.5))
    labels = [f"{name}: {r['label']}" for name, r in rows]
    ratios = [r["ratio"] for _, r in rows]
    # A row without a plain column is a ratio itself (spliced figure).
    scale = [r["plain"]["median"] if r["plain"] else 1 for _, r in rows]
    lo = [r["ratio"] - r["racks"]["min"] / s for (_, r), s in zip(rows, scale)]
    hi = [r["racks"]["max"] / s - r["ratio"] for (_, r), s in zip(rows, scale)]
    colors = ["tab:green" if r["met"] is not False else "tab:red"
              for _, r in rows]
    ax.barh(range(len(rows)), ratios, xerr=[[max(0, x) for x in lo],
                                            [max(0, x) for x in hi]],
            color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    runs = sorted({r["racks"]["n"] for _, r in rows})
    ax.set_xlabel("racks / plain TCP (median; bars: min-max of the racks "
                  f"runs; n = {', '.join(map(str, runs))} runs)")
    ax.set_title(f"racks vs plain TCP, {results['stamp']}"
                 f"{' (quick)' if results['quick'] else ''}; red: goal missed")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
