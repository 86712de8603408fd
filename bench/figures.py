"""The benchmark's figures. Each takes a Bench and returns a dict:

    {"name", "title", "unit", "rows": [{"label", "plain", "racks",
     "ratio", "goal", "met"}, ...], "runs", "notes"}

where plain / racks are stats.summary() dicts of the runs (or None when a
row has only racks values) and met is True, False or None (no goal).
"""

import json
import os
import subprocess
import threading
import time

import racks as rk
import stats
import testbed

BUILD = testbed.REPO / "build" / "bench"
IPERF_PORT = 5201
RR_PORT = 7001
CONN_PORT = 7002
TICK_PORT = 7003
CHAINS_PORT = 7004
FLOOR_QUEUE = 4300
MB = 1024 * 1024


class Bench:
    """The topology, rackd on or off per host, and the servers in B."""

    def __init__(self, topo, quick):
        self.topo = topo
        self.quick = quick
        self.rackds = {}
        self.floors = []
        self.servers = []
        for tool in ("rr", "connbench", "nfqfloor", "connfleet", "synflood"):
            if not (BUILD / tool).exists():
                raise SystemExit(f"{BUILD / tool} missing: make bench-tools")

    # rackd --------------------------------------------------------------

    def racks(self, hosts=("a", "b"), config=None, path="queue"):
        """rackd running on exactly hosts (fresh, with config), racks'
        option on PATH ("queue": every SYN and SYN-ACK through NFQUEUE;
        "bpf": the sock_ops program, run.py puts every program of the
        topology in its cgroup)."""
        self.plain()
        for h in hosts:
            self.rackds[h] = self.topo.start_rackd(h, config=config,
                                                   debug=False, path=path)
        return [self.rackds[h] for h in hosts]

    def plain(self):
        for rackd in self.rackds.values():
            rackd.stop(timeout=15)
        self.rackds = {}
        testbed.terminate(self.floors)
        self.floors = []

    def floor(self, hosts=("a", "b")):
        """nfqfloor (no rackd) on exactly hosts: every SYN and SYN-ACK
        through NFQUEUE and straight back (bench/tools/nfqfloor.c)."""
        self.plain()
        for h in hosts:
            proc = self.topo.ns(h).popen([str(BUILD / "nfqfloor"),
                                          str(FLOOR_QUEUE)])
            self.floors.append(proc)
            line = testbed.read_line(proc, 10, "nfqfloor")
            if line != "READY":
                raise testbed.TestbedError(f"nfqfloor in {h}: {line!r}")

    def close(self):
        self.plain()
        testbed.terminate(self.servers)

    # servers in B -------------------------------------------------------

    def serve(self, argv, ready="READY"):
        proc = self.topo.b.popen(argv)
        if ready:
            line = testbed.read_line(proc, 10, argv[0])
            if line != ready:
                raise testbed.TestbedError(f"{argv}: {line!r}")
        self.servers.append(proc)
        return proc

    def run_json(self, ns, argv, timeout=120):
        out = ns.run(argv, timeout=timeout).stdout
        return json.loads(out.strip().splitlines()[-1])

    def alternate(self, runs, modes, measure):
        """Call measure(mode) runs times per mode, in an order that
        alternates (A B B A A B ...); return {mode: [values]}."""
        values = {m: [] for m in modes}
        for i in range(runs):
            order = modes if i % 2 == 0 else list(reversed(modes))
            for mode in order:
                values[mode].append(measure(mode))
        return values


def row(label, plain, racks, goal=None, check=None, better="higher"):
    """A figure row from lists of plain and racks values."""
    p = stats.summary(plain) if plain else None
    r = stats.summary(racks)
    ratio = stats.ratio(r["median"], p["median"]) if p else None
    return {"label": label, "plain": p, "racks": r,
            "ratio": None if ratio is None else round(ratio, 3),
            "spread": round(stats.spread(racks), 3), "better": better,
            "goal": goal, "met": None if check is None else bool(check(ratio, r))}


# 1. bulk throughput ------------------------------------------------------

def _iperf(bench, mode, secs, parallel, reverse, failures):
    """One iperf3 run against a fresh one-off server; Gb/s received. A run
    that hangs is retried once and counted (iperf3 itself hangs now and
    then, with or without racks)."""
    topo = bench.topo
    for attempt in range(2):
        server = topo.b.popen(["iperf3", "-s", "-1", "-p", str(IPERF_PORT)])
        time.sleep(0.3)
        argv = ["iperf3", "-c", topo.addr["b"]["v4"], "-p", str(IPERF_PORT),
                "-t", str(secs), "-P", str(parallel), "-J"] + \
            (["-R"] if reverse else [])
        try:
            out = topo.a.run(argv, timeout=secs + 30)
            return json.loads(out.stdout)["end"]["sum_received"][
                "bits_per_second"] / 1e9
        except testbed.CommandError as err:
            failures.append(f"{mode}, {parallel} flow(s)"
                            f"{' reverse' if reverse else ''}: "
                            f"{str(err).splitlines()[0]}")
        finally:
            testbed.terminate([server])
    raise testbed.TestbedError(f"iperf3 failed twice: {failures[-1]}")


def throughput(bench):
    secs, runs = (3, 3) if bench.quick else (10, 4)
    rows, failures = [], []
    for parallel in (1, 4):
        for reverse in (False, True):
            def measure(mode):
                if mode == "racks":
                    ra, rb = bench.racks()
                    before = rb.status()["edp_setup_ok"]
                else:
                    bench.plain()
                gbps = _iperf(bench, mode, secs, parallel, reverse, failures)
                if mode == "racks" and \
                        rb.status()["edp_setup_ok"] - before < parallel + 1:
                    raise testbed.TestbedError("iperf3's connections were "
                                               "not managed by racks")
                return gbps
            v = bench.alternate(runs, ["plain", "racks"], measure)
            label = f"{parallel} flow{'s' if parallel > 1 else ''}, " \
                    f"{'B->A' if reverse else 'A->B'}"
            rows.append(row(label, v["plain"], v["racks"], ">= 0.97",
                            lambda ratio, r: ratio >= 0.97))
    # The same measurement with plain TCP on both sides: how far from 1.00
    # the ratio of two identical configurations lands on this machine.
    bench.plain()
    v = bench.alternate(runs, ["plain", "again"], lambda mode: _iperf(
        bench, "plain", secs, 1, False, failures))
    rows.append(row("control: plain against plain, 1 flow, A->B (plain "
                    "again in the racks column)", v["plain"], v["again"]))
    return {"name": "throughput", "title": "Bulk throughput (iperf3, "
            f"{secs} s streams)", "unit": "Gb/s", "runs": runs, "rows": rows,
            "notes": [f"retried: {f}" for f in failures] + [
                "The control row compares plain TCP with itself: its "
                "distance from 1.00 is the noise of this machine, the "
                "margin within which a racks ratio cannot be told from "
                "1.00."]}


# 2. request / response latency ---------------------------------------------

def latency(bench):
    topo = bench.topo
    count, runs = (5000, 3) if bench.quick else (20000, 5)
    bench.serve([str(BUILD / "rr"), "server", str(RR_PORT)])
    rows = []
    for size in (1, 1024):
        results = {}

        def measure(mode):
            if mode == "racks":
                bench.racks()
            else:
                bench.plain()
            out = bench.run_json(topo.a, [str(BUILD / "rr"), "client",
                                          topo.addr["b"]["v4"], str(RR_PORT),
                                          str(size), str(count), "2000"])
            results.setdefault(mode, []).append(out)
            return out["p50_us"]
        v = bench.alternate(runs, ["plain", "racks"], measure)
        rows.append(row(f"{size} B p50", v["plain"], v["racks"], "<= 1.05",
                        lambda ratio, r: ratio <= 1.05, better="lower"))
        rows.append(row(f"{size} B p99",
                        [o["p99_us"] for o in results["plain"]],
                        [o["p99_us"] for o in results["racks"]],
                        better="lower"))
    bench.plain()
    return {"name": "latency", "title": "Request/response latency (TCP_NODELAY, "
            f"{count} round trips per run)", "unit": "µs", "runs": runs,
            "rows": rows}


# 2b. what the table's base chains cost -----------------------------------------

# The table rackd installs with the default configuration, as test_ruleset
# keeps it (the xt queue rule is added apart, so nothing is diverted here).
GOLDEN = testbed.REPO / "tests" / "golden" / "ruleset-default-xt.nft"
CHAIN_VARIANTS = {
    # label: base chains removed from the table
    "whole table": (),
    "without splice_out": ("splice_out",),
    "without prerouting": ("prerouting",),
    "output only": ("splice_out", "prerouting"),
}


def _table_without(chains):
    text = GOLDEN.read_text()
    for chain in chains:
        start = text.index(f"\tchain {chain} {{")
        end = text.index("\n\t}\n", start) + len("\n\t}\n")
        text = text[:start] + text[end:]
    return text


def chains(bench):
    """The table alone (no rackd) on A and B, whole and without some of its
    base chains: 1-byte round trips. No packet of these flows is diverted,
    so the difference to plain is the hook calls and their rules."""
    topo = bench.topo
    count, runs = (5000, 3) if bench.quick else (20000, 5)
    bench.plain()
    bench.serve([str(BUILD / "rr"), "server", str(CHAINS_PORT)])

    def measure(mode):
        for ns in (topo.a, topo.b):
            testbed.nft(ns, "delete table inet racks", check=False)
            if mode != "plain":
                testbed.nft_file(ns, _table_without(CHAIN_VARIANTS[mode]))
        out = bench.run_json(topo.a, [str(BUILD / "rr"), "client",
                                      topo.addr["b"]["v4"], str(CHAINS_PORT),
                                      "1", str(count), "2000"])
        return out["p50_us"]
    try:
        v = bench.alternate(runs, ["plain"] + list(CHAIN_VARIANTS), measure)
    finally:
        for ns in (topo.a, topo.b):
            testbed.nft(ns, "delete table inet racks", check=False)
    rows = [row(f"{label} (1 B p50)", v["plain"], v[label], better="lower")
            for label in CHAIN_VARIANTS]
    return {"name": "chains", "title": "What the table costs, chain by chain "
            f"(no rackd; 1-byte round trips, {count} per run)", "unit": "µs",
            "runs": runs, "rows": rows,
            "notes": ["output diverts outgoing handshakes, prerouting takes "
                      "racks' messages before any rewrite and incoming "
                      "handshakes after it, splice_out rewrites moved "
                      "connections: each is a base chain, which every "
                      "packet of the host pays a hook call for, rules or "
                      "not."]}


# 3. connection set-up ------------------------------------------------------

COMBOS = {
    # label: hosts running rackd, goal on the ratio to plain<->plain
    "racks <-> racks": (("a", "b"), "<= 1.3", lambda r, _: r <= 1.3),
    "racks client -> plain server": (("a",), None, None),
    "plain client -> racks server": (("b",), "<= 1.05", lambda r, _: r <= 1.05),
    # The BPF path (issue 23): racks' option written by the kernel.
    "racks <-> racks, BPF": (("a", "b"), "<= 1.1", lambda r, _: r <= 1.1),
    "racks client -> plain server, BPF": (("a",), "<= 1.02",
                                          lambda r, _: r <= 1.02),
    "plain client -> racks server, BPF": (("b",), "<= 1.02",
                                          lambda r, _: r <= 1.02),
}


# The server's table without rackd (nothing queued): what its hooks alone
# cost a plain client's connect. Label: base chains removed.
B_TABLES = {
    "server with racks' table, no rackd": (),
    "server with only the output and prerouting chains": ("splice_out",),
}


def connect(bench):
    topo = bench.topo
    count, rate_count, runs = (300, 1000, 3) if bench.quick else (1000, 2000, 5)
    # Thousands of short connections a run: the client's TIME_WAIT
    # sockets must not use up its ports (A is the test-bed's namespace).
    topo.a.sysctls({"net.ipv4.tcp_tw_reuse": 1,
                    "net.ipv4.ip_local_port_range": "1024 65535"})
    bench.serve([str(BUILD / "connbench"), "server", str(CONN_PORT)])
    modes = ["plain"] + list(COMBOS) + ["floor"] + list(B_TABLES)

    def client(mode_count, kind, port=CONN_PORT):
        return bench.run_json(topo.a, [str(BUILD / "connbench"), "client",
                                       topo.addr["b"]["v4"], str(port),
                                       str(mode_count), kind])

    def bpf_client(mode_count, kind):
        """On the BPF path a server of its own, started after B's program
        is attached: a listener made before gets the program's flag only
        where rackd's listener iterator loads (Linux 6.10 with BTF:
        bpf/README.md), and the rows must not depend on it."""
        server = bench.serve([str(BUILD / "connbench"), "server",
                              str(CONN_PORT + 1)])
        try:
            return client(mode_count, kind, CONN_PORT + 1)
        finally:
            testbed.terminate([server])
            bench.servers.remove(server)

    def measure(mode):
        testbed.nft(topo.b, "delete table inet racks", check=False)
        if mode == "plain":
            bench.plain()
        elif mode == "floor":
            bench.floor()
        elif mode in B_TABLES:
            bench.plain()
            testbed.nft_file(topo.b, _table_without(B_TABLES[mode]))
        elif mode.endswith("BPF"):
            bench.racks(COMBOS[mode][0], path="bpf")
            return bpf_client(count, "latency")["p50_us"]
        else:
            bench.racks(COMBOS[mode][0])
        return client(count, "latency")["p50_us"]
    try:
        v = bench.alternate(runs, modes, measure)
    finally:
        testbed.nft(topo.b, "delete table inet racks", check=False)
    rows = [row(f"{m} (connect p50)", v["plain"], v[m], COMBOS[m][1],
                COMBOS[m][2], better="lower") for m in COMBOS]
    # What any option exchange in the handshake through NFQUEUE costs:
    # four trips through user space that do nothing (nfqfloor on A and B).
    rows.append(row("NFQUEUE floor: 4 trips, accept only (connect p50)",
                    v["plain"], v["floor"], better="lower"))
    rows.append(row("racks <-> racks against that floor (floor in the plain "
                    "column)", v["floor"], v["racks <-> racks"],
                    better="lower"))
    # What a plain client pays for the server's table alone, nothing
    # diverted: the floor of "plain client -> racks server".
    for label in B_TABLES:
        rows.append(row(f"plain client -> {label} (connect p50)",
                        v["plain"], v[label], better="lower"))

    setup_msgs = []
    caught_up = {"racks": [], "racks, BPF": []}

    def rate(mode):
        if mode == "plain":
            bench.plain()
            return client(rate_count, "rate")["per_second"]
        rackds = bench.racks(path="bpf" if mode == "racks, BPF" else "queue")
        before = [r.status() for r in rackds]
        per_second = (bpf_client if mode == "racks, BPF" else client)(
            rate_count, "rate")["per_second"]
        # The kernel's rate is not racks' until both rackds have set up
        # every connection (on the BPF path rackd learns of each one
        # after the kernel made it): the rate counting that catch-up too.
        ended = time.monotonic()
        try:
            testbed.wait_until(lambda: all(
                r.status()["edp_setup_ok"] - b["edp_setup_ok"] >= rate_count
                for r, b in zip(rackds, before)), 60,
                "every connection set up")
            late = time.monotonic() - ended
            caught_up[mode].append(
                rate_count / (rate_count / per_second + late))
        except TimeoutError:
            caught_up[mode].append(0.0)
        after = [r.status() for r in rackds]
        # Set-up messages each end sent per connection set up, and how
        # the keys were made (the first between two hosts: a handshake).
        setup_msgs.append({
            "client": (after[0]["edp_setup_msgs_out"] -
                       before[0]["edp_setup_msgs_out"]) /
            max(1, after[0]["edp_setup_ok"] - before[0]["edp_setup_ok"]),
            "server": (after[1]["edp_setup_msgs_out"] -
                       before[1]["edp_setup_msgs_out"]) /
            max(1, after[1]["edp_setup_ok"] - before[1]["edp_setup_ok"]),
            "mode": mode,
            "queued": after[0]["packets_queued"] - before[0]["packets_queued"],
            "derived": after[0]["edp_keyed_derived"] -
            before[0]["edp_keyed_derived"],
            "syn_queued": after[0]["syn"] - before[0]["syn"],
            "set_up": after[0]["edp_setup_ok"] - before[0]["edp_setup_ok"]})
        return per_second
    r = bench.alternate(runs, ["plain", "racks", "racks, BPF"], rate)
    rows.append(row("racks <-> racks, connections/s sustained", r["plain"],
                    r["racks"]))
    rows.append(row("racks <-> racks, BPF, connections/s sustained",
                    r["plain"], r["racks, BPF"], ">= 0.9",
                    lambda x, _: x >= 0.9))
    for mode, label in (("racks", "racks <-> racks"),
                        ("racks, BPF", "racks <-> racks, BPF")):
        rows.append(row(f"{label}, connections/s until both rackds set up "
                        "every one (0: not within 60 s)", r["plain"],
                        caught_up[mode]))
    msgs_note = "Set-up messages per connection (racks <-> racks, rate " \
        "runs): " + "; ".join(
            f"{m['mode']}: client {m['client']:.2f}, server "
            f"{m['server']:.2f}, {m['derived']} of {m['set_up']} keys "
            f"derived, {m['queued']} packets queued on the client "
            f"({m['syn_queued']} SYNs)"
            for m in setup_msgs)
    bench.plain()
    return {"name": "connect", "title": "Connection set-up (connect() until "
            f"it returns; {count} per run, 2 ms apart)", "unit": "µs or /s",
            "runs": runs, "rows": rows,
            "notes": [msgs_note,
                      "The floor row is the least a handshake carrying an "
                      "option exchange through NFQUEUE can cost on this "
                      "kernel: no rackd, each SYN and SYN-ACK makes its "
                      "four trips through user space and is accepted "
                      "unchanged. A goal below it is out of reach for any "
                      "NFQUEUE design.",
                      "The last two rows put racks' table (its golden "
                      "copy, without the queue rule: nothing reaches user "
                      "space) on the server with no rackd: what its hook "
                      "calls alone cost a plain client. A server must see "
                      "incoming SYNs and outgoing SYN-ACKs, so the output "
                      "and prerouting hooks are the least any design "
                      "needs; their ratio bounds what \"plain client -> "
                      "racks server\" can reach."]}


# 4 and 5: failure detection and reconnection --------------------------------

TICKER = """
import socket, sys, time
if sys.argv[1] == "server":
    s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(sys.argv[2]))); s.listen(); print("READY", flush=True)
    while True:
        c, _ = s.accept()
        while (data := c.recv(4096)):
            print(f"{time.time():.6f}", flush=True)
else:
    s = socket.create_connection((sys.argv[2], int(sys.argv[3])))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print("CONNECTED", flush=True)
    while True:
        s.send(b"x"); time.sleep(0.005)
"""


class Ticker:
    """A byte every 5 ms from A to B; B prints each arrival's wall time."""

    def __init__(self, bench):
        self.bench = bench
        topo = bench.topo
        self.server = topo.b.popen([testbed.PYTHON, "-u", "-c", TICKER,
                                    "server", str(TICK_PORT)])
        assert testbed.read_line(self.server, 10, "ticker") == "READY"
        self.client = topo.a.popen([testbed.PYTHON, "-c", TICKER, "client",
                                    topo.addr["b"]["v4"], str(TICK_PORT)])
        assert testbed.read_line(self.client, 10, "ticker") == "CONNECTED"

    def first_after(self, t, timeout):
        """Wall time of the first byte B received after wall time t."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = testbed.read_line(self.server, deadline - time.monotonic(),
                                     "a tick")
            if float(line) > t:
                return float(line)
        raise testbed.TestbedError("no tick after the restore")

    def drain(self):
        """Forget the ticks received so far."""
        import select
        while select.select([self.server.stdout], [], [], 0)[0]:
            if not self.server.stdout.readline():
                break

    def close(self):
        testbed.terminate([self.client, self.server])


def events(rackd):
    return rackd.ns.popen([rackd.rackctl, "-S", str(rackd.sock), "events"])


def wait_event(proc, kind, timeout):
    deadline = time.monotonic() + timeout
    while True:
        ev = json.loads(testbed.read_line(proc, deadline - time.monotonic(),
                                          f"a {kind} event"))
        if ev["event"] == kind:
            return ev["time_ms"] / 1000


def detection(bench):
    topo = bench.topo
    rows = []
    for label, setting, runs in (("default suspend_after = 5s", "5s",
                                  2 if bench.quick else 5),
                                 ("fastest suspend_after = 500ms", "500ms",
                                  3 if bench.quick else 10)):
        ms = 5000 if setting == "5s" else 500
        ra, rb = bench.racks(config=f"suspend_after = {setting}\n")
        ticker = Ticker(bench)
        values = []
        for _ in range(runs):
            ev = events(ra)
            time.sleep(ms / 1000 + 0.3)
            t0 = time.time()
            topo.cut_silent("b")
            values.append(wait_event(ev, "suspend", ms / 1000 + 10) - t0)
            topo.restore_silent("b")
            wait_event(ev, "resume", 10)
            testbed.terminate([ev])
        ticker.close()
        goal = ms / 1000 + ms / 3000
        rows.append(row(f"{label}: cut -> suspended (s)", None, values,
                        f"<= {goal:.2f} s (suspend_after + 1 heartbeat)",
                        lambda _, r, g=goal: r["max"] <= g, better="lower"))
    bench.plain()
    return {"name": "detection", "title": "Failure detection (silent cut in R)",
            "unit": "s", "runs": None, "rows": rows}


def rtt_ms(topo):
    out = testbed.ping_rtt_ms(topo.a, topo.addr["b"]["v4"], count=5)
    return out


def reconnection(bench):
    topo = bench.topo
    runs = 5 if bench.quick else 20
    rows = []
    config = "suspend_after = 1s\n"
    for delay in (0, 20):
        for kind in ("silent", "carrier"):
            ra, rb = bench.racks(config=config)
            if delay:
                topo.netem("a", delay_ms=delay)
                topo.netem("b", delay_ms=delay)
            rtt = rtt_ms(topo)
            ticker = Ticker(bench)
            connected, first = [], []
            for _ in range(runs):
                ev = events(ra)
                time.sleep(0.3)
                if kind == "silent":
                    topo.cut_silent("b")
                else:
                    topo.cut("a")
                wait_event(ev, "suspend", 10)
                time.sleep(1)
                ticker.drain()
                t0 = time.time()
                if kind == "silent":
                    topo.restore_silent("b")
                else:
                    topo.restore("a")
                connected.append(wait_event(ev, "resume", 10) - t0)
                first.append(ticker.first_after(t0, 10) - t0)
                testbed.terminate([ev])
            ticker.close()
            topo.clear_netem("a")
            topo.clear_netem("b")
            where = "silent restore in R" if kind == "silent" else \
                "A's carrier returns"
            goal = (2 * rtt / 1000 + (1.0 if kind == "silent" else 0.05))
            for what, values in (("connected", connected),
                                 ("first byte", first)):
                p50 = stats.percentile(values, 50)
                p95 = stats.percentile(values, 95)
                r = row(f"{delay} ms one-way, {where}: restore -> {what} "
                        f"(s; p50 {p50 * 1000:.0f} ms = {p50 * 1000 / rtt:.1f} "
                        f"RTT, p95 {p95 * 1000:.0f} ms)", None, values,
                        f"<= {goal:.3f} s" if what == "connected" else None,
                        (lambda _, r, g=goal: r["median"] <= g)
                        if what == "connected" else None, better="lower")
                r["rtt_ms"] = round(rtt, 2)
                r["p95"] = p95
                rows.append(r)
    bench.plain()
    return {"name": "reconnection", "title": "Reconnection after a restore "
            f"({runs} trials each; RTT measured with ICMP)", "unit": "s",
            "runs": runs, "rows": rows}


# 7. CPU per transferred gigabyte ----------------------------------------------

def _cpu_busy():
    """Seconds the whole machine spent busy (all CPUs, /proc/stat)."""
    fields = open("/proc/stat").readline().split()[1:]
    user, nice, system, idle, iowait, irq, softirq = map(int, fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid):
    """utime + stime of pid, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu(bench):
    topo = bench.topo
    gbytes, runs = (1, 3) if bench.quick else (4, 5)
    bench.serve(["iperf3", "-s", "-p", str(IPERF_PORT + 1)], ready=None)
    time.sleep(0.5)
    daemon = {}

    def measure(mode):
        rackds = bench.racks() if mode == "racks" else (bench.plain() or [])
        before = (_cpu_busy(), sum(_proc_cpu(r.pid) for r in rackds))
        topo.a.run(["iperf3", "-c", topo.addr["b"]["v4"], "-p",
                    str(IPERF_PORT + 1), "-n", f"{gbytes}G", "-J"],
                   timeout=300)
        busy = _cpu_busy() - before[0]
        if rackds:
            own = sum(_proc_cpu(r.pid) for r in rackds) - before[1]
            daemon.setdefault(mode, []).append(own / gbytes)
        return busy / gbytes
    v = bench.alternate(runs, ["plain", "racks"], measure)
    bench.plain()
    rows = [row("whole machine, CPU seconds per GB", v["plain"], v["racks"],
                better="lower"),
            row("both rackds, CPU seconds per GB", None, daemon["racks"],
                better="lower")]
    return {"name": "cpu", "title": f"CPU per transferred gigabyte (iperf3 "
            f"-n {gbytes}G A->B; /proc/stat covers the sender, receiver, "
            "router and kernel alike)", "unit": "CPU s / GB", "runs": runs,
            "rows": rows}


# 6. scale --------------------------------------------------------------------

HOLDER = """
import resource, selectors, socket, sys
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
mode, port, n = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
socks = []
if mode == "server":
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port)); s.listen(4096); print("READY", flush=True)
    while len(socks) < n:
        socks.append(s.accept()[0])
else:
    for _ in range(n):
        socks.append(socket.create_connection((sys.argv[2], port)))
print("HOLDING", len(socks), flush=True)
sys.stdin.readline()
"""


def _rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _hold_conns(bench, n, port):
    topo = bench.topo
    server = topo.b.popen([testbed.PYTHON, "-c", HOLDER, "server", "",
                           str(port), str(n)], stdin=subprocess.PIPE)
    assert testbed.read_line(server, 10, "holder") == "READY"
    client = topo.a.popen([testbed.PYTHON, "-c", HOLDER, "client",
                           topo.addr["b"]["v4"], str(port), str(n)],
                          stdin=subprocess.PIPE)
    testbed.read_line(client, 600, "connections")
    return server, client


def scale(bench):
    topo = bench.topo
    n, idle, moving = (2000, 10, 300) if bench.quick else (10000, 60, 1000)
    rows = []
    ra, rb = bench.racks(config="suspend_after = 2s\n")
    base_rss = _rss_kib(ra.pid)
    t0 = time.monotonic()
    procs = _hold_conns(bench, n, 7100)
    testbed.wait_until(lambda: ra.status()["edp_setup_ok"] >= n, 600,
                       "set-ups")
    setup_s = time.monotonic() - t0
    rss = _rss_kib(ra.pid)
    rows.append(row(f"{n} managed connections: rackd resident memory (MiB; "
                    f"{base_rss / 1024:.1f} MiB without)", None,
                    [rss / 1024], "<= 64 MiB for 10,000",
                    lambda _, r: r["max"] * 10000 / n <= 64, better="lower"))
    rows.append(row(f"{n} managed connections: opened and set up (s)", None,
                    [setup_s], better="lower"))
    cpu0 = _proc_cpu(ra.pid)
    time.sleep(idle)
    per_min = (_proc_cpu(ra.pid) - cpu0) * 60 / idle
    rows.append(row(f"{n} idle connections: rackd CPU s per minute "
                    "(heartbeats)", None, [per_min], better="lower"))
    topo.cut_silent("b")
    testbed.wait_until(lambda: ra.status()["suspended"] >= n, 60,
                       "all suspended")
    time.sleep(1)
    resumes = ra.status()["resumes"]
    t0 = time.monotonic()
    topo.restore_silent("b")
    testbed.wait_until(lambda: ra.status()["resumes"] - resumes >= n, 120,
                       "all resumed")
    rows.append(row(f"{n} connections after a common cut: restore -> all "
                    "resumed (s)", None, [time.monotonic() - t0],
                    better="lower"))
    for p in procs:
        testbed.terminate([p])
    bench.plain()

    ra, rb = bench.racks()
    procs = _hold_conns(bench, moving, 7200)
    testbed.wait_until(lambda: rb.status()["edp_setup_ok"] >= moving, 300,
                       "set-ups")
    accepted = rb.status()["reconnects_accepted"]
    old = topo.cidr("a", "v4")
    topo.move_to_new_subnet("a", "v4", keep_old=True)
    t0 = time.monotonic()
    topo.remove_address("a", "v4", old)
    testbed.wait_until(lambda: rb.status()["reconnects_accepted"] - accepted
                       >= moving, 120, "all reconnected")
    took = time.monotonic() - t0
    big = moving >= 1000
    rows.append(row(f"{moving} connections reconnecting at once after A's "
                    "address change (s)", None, [took],
                    "<= 2 s" if big else None,
                    (lambda _, r: r["max"] <= 2.0) if big else None,
                    better="lower"))
    for p in procs:
        testbed.terminate([p])
    bench.plain()
    return {"name": "scale", "title": "Scale (one run each)", "unit": "see rows",
            "runs": 1, "rows": rows}


# 8. load: many connections moved at once, a SYN flood ----------------------

MOVE_PORT = 7400
FLOOD_PORT = 7300
CUT_S = 12
FLOOD_PREFIX = "10.71.192.0/18"     # spoofed sources; R blackholes them
MIB = 1024.0


def one(label, value, goal=None, check=None, better="lower", plain=None):
    """A row of a single run (or none: value None when it never got
    there), with an optional plain value."""
    r = row(label, [plain] if plain is not None else None,
            [value if value is not None else 0], goal, check, better)
    if value is None:
        r["racks"] = None
        r["ratio"] = None
        r["met"] = False if goal else None
    return r


class Events:
    """`rackctl events` of one rackd, read in a thread: the ids of the
    connections resumed since start() and when (Unix seconds)."""

    def __init__(self, rackd):
        self.proc = events(rackd)
        self.resumed = {}
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for line in self.proc.stdout:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "resume":
                    self.resumed[ev["id"]] = ev["time_ms"] / 1000
                elif ev.get("event") == "suspend":
                    self.resumed.pop(ev["id"], None)
        except (ValueError, OSError):
            pass            # closed by close()

    def close(self):
        testbed.terminate([self.proc])


def _moved_once(bench, mode, n, family="v4"):
    """One run: N idle connections, a CUT_S cut of A's link; with racks A
    moves meanwhile (plain TCP cannot follow a move: its run has the
    same cut and no move, the least an echo after the restore costs).
    Returns {"connected": s or None, "echoed": s or None, "failed": k,
    "detail": ...}, times counted from the restore.

    Each run has a topology of its own: a stopped rackd leaves its
    splices' rewrites behind for the next one (rackd(8)), and those of
    a run's connections would take over the next run's connections that
    happen to reuse their ports."""
    bench.plain()
    with testbed.Topology.create() as topo:
        rackds = [topo.start_rackd(h, debug=False) for h in "ab"] \
            if mode == "racks" else []
        try:
            return _moved_in(topo, rackds, n, family)
        except (testbed.TestbedError, TimeoutError) as err:
            return {"connected": None, "echoed": None, "failed": n,
                    "detail": f"failed: {str(err).splitlines()[0]}"}


def _moved_to(rackd, key, addr):
    """rackd's connections on MOVE_PORT connected with KEY at addr."""
    return sum(c["state"] == "connected" and
               c[key].rsplit(":", 1)[0].strip("[]") == addr
               for c in rackd.ctl_json("list", timeout=120)
               if MOVE_PORT in (int(c["local"].rsplit(":", 1)[1]),
                                int(c["remote"].rsplit(":", 1)[1])))


def _moved_in(topo, rackds, n, family):
    fleet = rk.Fleet(topo.b, topo.a, topo.addr["b"][family], MOVE_PORT, n)
    out = {"connected": None, "echoed": None, "failed": n, "detail": ""}
    evs = []
    try:
        if fleet.opened["connected"] != n:
            raise testbed.TestbedError(f"connfleet: {fleet.opened}")
        if rackds:
            ra, rb = rackds
            testbed.wait_until(
                lambda: rk.fleet_states(ra, MOVE_PORT) == {"connected": n}
                and rk.fleet_states(rb, MOVE_PORT) == {"connected": n},
                60 + n / 50, f"{n} connections managed", interval=1)
            evs = [Events(ra), Events(rb)]
            subnet = topo.reserve_subnet("a", family)
        cut = time.monotonic()
        topo.cut("a")
        if rackds:
            new = topo.move_to_new_subnet("a", family, new=subnet)
        time.sleep(max(0.0, CUT_S - (time.monotonic() - cut)))
        restored = time.time()
        topo.restore("a")
        if rackds:
            deadline = time.monotonic() + 120 + n / 50
            while time.monotonic() < deadline:
                if all(len(e.resumed) >= n for e in evs) or \
                        fleet.status()["open"] < n:
                    break
                time.sleep(0.2)
            try:
                moved = [_moved_to(r, k, new) for r, k in
                         ((ra, "wire_local"), (rb, "wire_remote"))]
                st = [r.ctl_json("status", timeout=120) for r in rackds]
            except testbed.TestbedError as err:
                out["detail"] = ("a rackd did not answer: "
                                 f"{str(err).splitlines()[0]}")
            else:
                if all(len(e.resumed) >= n for e in evs) and \
                        moved == [n, n]:
                    out["connected"] = max(max(e.resumed.values())
                                           for e in evs) - restored
                out["detail"] = (
                    f"connected at the new address A {moved[0]}, B "
                    f"{moved[1]}; A reconnects_sent "
                    f"{st[0]['reconnects_sent']}, reconnect_acks_in "
                    f"{st[0]['reconnect_acks_in']}; B reconnects_accepted "
                    f"{st[1]['reconnects_accepted']}, spliced "
                    f"{st[1]['spliced']}")
        echo = fleet.echo(60)
        done = time.time()
        out["failed"] = n - echo["ok"]
        if echo["ok"] == n:
            out["echoed"] = done - restored
        out["detail"] += (f"{'; ' if out['detail'] else ''}echo: ok "
                          f"{echo['ok']}, reset {echo['reset']}, timeout "
                          f"{echo['timeout']}, closed {echo['closed']}")
        return out
    finally:
        for e in evs:
            e.close()
        fleet.close()


def moved(bench):
    """N connections moved at once: restore -> all connected."""
    sizes = (1000,) if bench.quick else (1000, 10000)
    rows, notes = [], []
    for n in sizes:
        p = _moved_once(bench, "plain", n)
        r = _moved_once(bench, "racks", n)
        rows.append(one(f"{n} connections moved at once: restore -> all "
                        "connected on both ends (s)", r["connected"],
                        "all connected", lambda _, x: True))
        rows.append(one(f"{n} connections moved at once: restore -> all "
                        "echoed (s; plain: the same cut, no move)",
                        r["echoed"], "all echo", lambda _, x: True,
                        plain=p["echoed"]))
        rows.append(one(f"{n} connections moved at once: reset, closed or "
                        f"silent (of {n})", r["failed"], "0",
                        lambda _, x: x["max"] == 0, plain=p["failed"]))
        notes.append(f"{n}, racks: {r['detail']}")
        notes.append(f"{n}, plain: {p['detail']}")
    return {"name": "moved", "title": f"Connections moved at once (idle; a "
            f"{CUT_S} s cut of A's link, A moves meanwhile; one run each)",
            "unit": "s or connections", "runs": 1, "rows": rows,
            "notes": notes + [
                "All connected: every connection's resume event on both "
                "ends (rackctl events), then each one connected at A's new "
                "address in rackctl list; echoed: every connection sent a "
                "token of its own and read it back (connfleet). A row "
                "without a value never got there: the notes say what "
                "became of the connections."]}


def _vm(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _flood_once(bench, mode, rate, secs, m, family="v4"):
    """One flood of `rate`/s for secs seconds from R against B's server
    port, M real connections from A spread over it; what B's rackd went
    through and what became of the real connections within 15 s."""
    topo = bench.topo
    rackds = bench.racks() if mode == "racks" else (bench.plain() or [])
    server = rk.fleet_server(topo.b, FLOOD_PORT)
    out = {}
    fleet = flood = None
    try:
        if rackds:
            ra, rb = rackds
            pid = rb.pid
            rss0 = _vm(pid, "VmRSS")
            cpu0 = _proc_cpu(pid)
            st0 = rb.status()
        peak = {"backlog": 0, "entries": 0}
        stop = threading.Event()

        def sample():
            while rackds and not stop.is_set():
                for q in rk.nfqueue_stats(rb.ns):
                    peak["backlog"] = max(peak["backlog"], q["total"])
                try:
                    peak["entries"] = max(peak["entries"], rb.ctl_json(
                        "status", timeout=5)["connections"])
                except testbed.TestbedError:
                    pass        # busy: the next sample
                stop.wait(0.5)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        flood = topo.r.popen([str(BUILD / "synflood"),
                              topo.addr["b"][family], FLOOD_PORT, rate, secs,
                              FLOOD_PREFIX])
        t0 = time.monotonic()
        time.sleep(min(1.0, secs / 5))
        pace = int((secs - 2 * min(1.0, secs / 5)) * 1000 / m)
        fleet = rk.Fleet(topo.b, topo.a, topo.addr["b"][family], FLOOD_PORT,
                         m, window=m, pace_ms=pace, timeout=secs + 60,
                         server=False)
        opened_at = time.monotonic()
        report = json.loads(testbed.read_line(flood, secs + 30, "synflood"))
        flood_s = time.monotonic() - t0
        stop.set()
        sampler.join()
        out["achieved"] = report["rate"]
        out["opened"] = fleet.opened["connected"]
        if rackds:
            out["cpu_pct"] = 100 * (_proc_cpu(pid) - cpu0) / flood_s
            out["rss_before"] = rss0 / MIB
            out["rss_after"] = _vm(pid, "VmRSS") / MIB
            out["rss_peak"] = _vm(pid, "VmHWM") / MIB
            st = rb.status()
            out["entries"] = st["connections"]
            out["syns"] = st["syn"] - st0["syn"]
            out["queue"] = rk.nfqueue_stats(rb.ns)
            out["peak"] = peak
            # Real connections: managed within 15 s of being opened.
            time.sleep(max(0.0, 15 - (time.monotonic() - opened_at)))
            states = {}
            for c in ra.ctl_json("list", timeout=60):
                if c["remote"].endswith(f":{FLOOD_PORT}"):
                    key = c["state"] + (f" ({c['unmanaged']})"
                                        if c.get("unmanaged") else "")
                    states[key] = states.get(key, 0) + 1
            out["managed"] = states.get("connected", 0)
            out["states"] = states
            out["entries_later"] = rb.ctl_json("status",
                                               timeout=60)["connections"]
            out["later_s"] = time.monotonic() - t0 - flood_s
        return out
    finally:
        testbed.terminate([p for p in (flood,) if p])
        if fleet:
            fleet.close()
        testbed.terminate([server])
        bench.plain()


def synflood(bench):
    """SYN flood at N/s with the offer: rackd's memory, CPU, and the real
    connections it still manages."""
    topo = bench.topo
    rates, secs, m = ((10000,), 5, 20) if bench.quick else \
        ((1000, 10000, 50000), 10, 50)
    topo.r.ip("route", "replace", "blackhole", FLOOD_PREFIX)
    rows, notes = [], []
    try:
        for rate in rates:
            p = _flood_once(bench, "plain", rate, secs, m)
            r = _flood_once(bench, "racks", rate, secs, m)
            at = f"SYN flood at {rate}/s with the offer ({r['achieved']:.0f}/s"\
                 " achieved)"
            rows += [
                one(f"{at}: real connections opened (of {m})", r["opened"],
                    f"{m}", lambda _, x, m=m: x["min"] == m, better="higher",
                    plain=p["opened"]),
                one(f"{at}: real connections managed 15 s after the last "
                    f"opened (of {m})",
                    r["managed"], f"{m}", lambda _, x, m=m: x["min"] == m,
                    better="higher"),
                one(f"{at}: rackd connection entries at its end (most seen "
                    f"{r['peak']['entries']})", r["entries"]),
                one(f"{at}: rackd resident memory after (MiB; before "
                    f"{r['rss_before']:.1f}, peak {r['rss_peak']:.1f})",
                    r["rss_after"]),
                one(f"{at}: rackd CPU (% of one core)", r["cpu_pct"]),
            ]
            q = r["queue"][0] if r["queue"] else {}
            notes.append(f"{rate}/s for {secs} s: B's rackd saw {r['syns']} "
                         f"SYNs, and kept {r['entries_later']} entries "
                         f"{r['later_s']:.0f} s after the flood; its queue's "
                         "largest backlog "
                         f"{r['peak']['backlog']} (dropped {q.get('dropped')}, "
                         f"user_dropped {q.get('user_dropped')}); the real "
                         f"connections in A's rackd (state, why unmanaged): "
                         f"{r['states']}; plain: "
                         f"{p['opened']} of {m} opened")
    finally:
        topo.r.ip("route", "del", "blackhole", FLOOD_PREFIX, check=False)
    return {"name": "synflood", "title": "SYN flood with racks' offer (from "
            f"random sources in {FLOOD_PREFIX}, blackholed at R, against B's "
            f"server port; {m} real connections from A meanwhile; one run "
            "each)", "unit": "see rows", "runs": 1, "rows": rows,
            "notes": notes + [
                "Measured on B (the racks server): rackd's VmRSS and VmHWM "
                "(/proc/PID/status), its utime + stime over the flood, "
                "`rackctl status` connections. Real connections: "
                "connfleet on A, paced over the flood; managed = "
                "connected in A's `rackctl list` 15 s after they were "
                "opened. Plain: no rackd anywhere, the same flood."]}


# 9. the middlebox forgot the flow ---------------------------------------------

FORGOT_CUT_S = 7        # past the default suspend_after (5 s): suspended
FORGOT_WAIT_S = 15      # a restore with no byte through within this: never


def _forgot_once(bench, nat, racks_on):
    """One run: a ticker (a byte every 5 ms, A to B) through R's strict
    firewall or NAT (testbed.Topology.forgetting_box), rackd on both ends
    with its default configuration or none; R cuts everything for
    FORGOT_CUT_S, forgets every flow meanwhile (conntrack -F) and
    restores. Returns the seconds from the restore to the first byte at
    B, or None when none came within FORGOT_WAIT_S."""
    topo = bench.topo
    rackds = bench.racks() if racks_on else (bench.plain() or [])
    box = topo.forgetting_box(nat=nat)
    ticker = Ticker(bench)
    evs = []
    try:
        if rackds:
            rk.wait_states(rackds[0], "connected", 10, remote_port=TICK_PORT)
        evs = [events(r) for r in rackds]
        time.sleep(0.5)
        cuts = [topo.cut_silent(h) for h in "ab"]
        t_cut = time.monotonic()
        for ev in evs:
            wait_event(ev, "suspend", FORGOT_CUT_S + 3)
        topo.forget()
        time.sleep(max(0.0, FORGOT_CUT_S - (time.monotonic() - t_cut)))
        ticker.drain()
        for c in cuts:
            c.assert_acted("cut")
        t0 = time.time()
        for h in "ab":
            topo.restore_silent(h)
        try:
            return ticker.first_after(t0, FORGOT_WAIT_S) - t0
        except testbed.TestbedError:
            return None
    finally:
        for h in "ab":
            topo.restore_silent(h)
        testbed.terminate(evs)
        ticker.close()
        box.remove()
        bench.plain()


def forgot(bench):
    """Middlebox forgot the flow: restore -> data flowing."""
    runs = 3 if bench.quick else 5
    rows, notes = [], []
    for nat, what in ((None, "strict firewall"), ("masquerade", "NAT")):
        plain = _forgot_once(bench, nat, False)
        values = [_forgot_once(bench, nat, True) for _ in range(runs)]
        got = [v for v in values if v is not None]
        label = (f"middlebox forgot the flow: restore -> data flowing (s; "
                 f"{what}{'; plain TCP never recovers' if plain is None else ''})")
        if got:
            r = row(label, [plain] if plain is not None else None, got,
                    "<= 2.00 s", lambda _, x: x["median"] <= 2.0 and
                    len(got) == runs, better="lower")
        else:
            r = one(label, None, "<= 2.00 s", lambda _, x: False)
        rows.append(r)
        notes.append(f"{what}: racks {len(got)} of {runs} runs had data "
                     f"flowing again within {FORGOT_WAIT_S} s of the "
                     f"restore ({', '.join('never' if v is None else f'{v:.3f}' for v in values)}); "
                     + ("plain TCP: no byte within "
                        f"{FORGOT_WAIT_S} s of the restore: it never "
                        "recovers (R drops every segment of a flow it "
                        "forgot: each is mid-stream to it)" if plain is None
                        else f"plain TCP: data again {plain:.3f} s after "
                        "the restore"))
    return {"name": "forgot", "title": "Middlebox forgot the flow (R cuts "
            f"everything for {FORGOT_CUT_S} s and flushes its conntrack "
            "table meanwhile; no move; default configuration)", "unit": "s",
            "runs": runs, "rows": rows,
            "notes": notes + [
                "A byte every 5 ms from A to B (v4); the figure is the time "
                "from R's restore to the first byte at B. R's policy admits "
                "a new flow only by its SYN (tests/test_forget.py); plain "
                "TCP's row has no value when its connection never "
                "delivered again."]}


import fig_http  # noqa: E402  (bench/fig_http.py uses the helpers above)

RUN = {
    "throughput": throughput,
    "latency": latency,
    "chains": chains,
    "connect": connect,
    "detection": detection,
    "reconnection": reconnection,
    "cpu": cpu,
    "scale": scale,
    "moved": moved,
    "synflood": synflood,
    "forgot": forgot,
    "http": fig_http.http,
    "spliced": lambda bench: __import__("fig_spliced").spliced(bench),
}
NAMES = tuple(RUN)
