"""The http figure: short connections through a real web server and a
real load generator from Debian (issue 23). nginx in B serves a 1 KiB
file, ApacheBench (ab) in A fetches it without keep-alive: one TCP
connection per request, so the figure is what a connection costs a web
server, set-up and teardown included, in requests per second.

    ns A: ab -n N -c 8 ----> R ----> ns B: nginx, listening on B's v4

Modes, alternated like every figure (Bench.alternate): plain (no rackd),
racks <-> racks on the queue path (every SYN and SYN-ACK through
NFQUEUE), racks <-> racks on the BPF path (racks' option written by
B's and A's sock_ops program), a racks client on the BPF path against a
plain server, and plain again (the control row: this machine's noise).
On the BPF path rackd learns of a connection after the kernel has set
it up and may still be at work when ab ends: a second row counts the
time until rackd had set up every connection. nginx starts afresh for
every run, after the run's rackds: a listener made before B's program is
attached would get the program's flag only through rackd's listener
iterator (bpf/README.md), and the rows must not depend on it.

A run whose ab fails, reports a failed request or a non-2xx response
raises (AbError): it is never averaged in. A racks run whose connections
the rackds did not manage (their counters did not grow by the number of
requests) raises too, so the figure cannot pass with racks silently off.

figures.py imports this module for its RUN table: import figures first.
"""

import re
import shutil
import tempfile
import time
from pathlib import Path

import testbed
from figures import row

HTTP_PORT = 8080
FILE_NAME = "1k.bin"
FILE_SIZE = 1024
CONCURRENCY = 8
# Share of a run's requests that must show as managed connections in the
# counters below (a few may close before a busy rackd sets them up).
MANAGED_SHARE = 0.95

# mode: (hosts running rackd, option path, {host: the counter that must
# grow by one per connection there}, goal, check). A connection of
# racks <-> racks is managed once both ends set it up (edp_setup_ok); a
# racks client facing a plain server releases it once its program's
# record says so (bpf_records_plain).
MODES = {
    "racks <-> racks, queue": (("a", "b"), "queue",
                               {"a": "edp_setup_ok", "b": "edp_setup_ok"},
                               None, None),
    "racks <-> racks, BPF": (("a", "b"), "bpf",
                             {"a": "edp_setup_ok", "b": "edp_setup_ok"},
                             ">= 0.9", lambda r, _: r >= 0.9),
    "racks client -> plain server, BPF": (("a",), "bpf",
                                          {"a": "bpf_records_plain"},
                                          None, None),
}
# The plain runs: none of racks on either host; "plain again" is the
# control row's second column.
PLAIN = ("plain", "plain again")
# How long rackd may take after ab's end to account for every connection.
CATCH_UP_S = 30
# A counter that stops moving this long has caught up as far as it will.
STALL_S = 2.0

NGINX_CONF = """\
# nginx for make bench (bench/fig_http.py): everything in {dir}.
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen {addr}:{port};
        root {dir}/www;
    }}
}}
"""


class AbError(testbed.TestbedError):
    """An ab run that must not count: it failed, or a request did."""


class Nginx:
    """nginx serving FILE_NAME in ns (a temp dir for everything it
    writes), in the foreground; ready once it listens."""

    def __init__(self, ns, addr, port=HTTP_PORT):
        self.ns, self.port = ns, port
        self.dir = Path(tempfile.mkdtemp(prefix="racks-nginx-"))
        # nginx's workers run as nobody: they must read the file.
        self.dir.chmod(0o755)
        (self.dir / "www").mkdir(mode=0o755)
        (self.dir / "www" / FILE_NAME).write_bytes(b"r" * FILE_SIZE)
        conf = self.dir / "nginx.conf"
        conf.write_text(NGINX_CONF.format(dir=self.dir, addr=addr, port=port))
        self.proc = ns.popen(["nginx", "-p", str(self.dir), "-e",
                              str(self.dir / "error.log"), "-c", str(conf),
                              "-g", "daemon off;"])
        try:
            testbed.wait_until(self._listening, 10, f"nginx on :{port}")
        except TimeoutError:
            self.close()
            raise

    def _listening(self):
        if self.proc.poll() is not None:
            raise testbed.TestbedError(
                f"nginx exited {self.proc.returncode}: "
                f"{self.proc.stderr.read().strip()} {self.error_log()}")
        out = self.ns.run(["ss", "-Hltn", f"sport = :{self.port}"]).stdout
        return bool(out.strip())

    def error_log(self):
        try:
            return (self.dir / "error.log").read_text().strip()
        except OSError:
            return ""

    def close(self):
        testbed.terminate([self.proc])
        shutil.rmtree(self.dir, ignore_errors=True)


def ab(ns, url, requests, concurrency=CONCURRENCY):
    """ab without keep-alive (one connection per request) from ns:
    {"rps": requests per second, "seconds": its time taken}. Raises
    AbError when ab fails, or any request failed or was answered other
    than 2xx."""
    out = ns.run(["ab", "-q", "-n", str(requests), "-c", str(concurrency),
                  url], check=False, timeout=120 + requests / 100)
    text = out.stdout

    def field(name):
        m = re.search(rf"^{name}:\s+([0-9.]+)", text, re.M)
        return float(m.group(1)) if m else None
    head = f"ab -n {requests} -c {concurrency} {url}"
    if out.returncode != 0:
        raise AbError(f"{head}: exited {out.returncode}: "
                      f"{(out.stderr.strip() or text.strip())[-300:]}")
    rps, done = field("Requests per second"), field("Complete requests")
    failed, non2xx = field("Failed requests"), field("Non-2xx responses")
    if rps is None or done != requests or failed != 0 or non2xx:
        raise AbError(f"{head}: complete {done}, failed {failed}, non-2xx "
                      f"{non2xx or 0}: not a measurement\n{text[-600:]}")
    return {"rps": rps, "seconds": field("Time taken for tests")}


def _catch_up(rackds, counters, before, requests):
    """Wait until every counter grew by requests (or stopped moving):
    ({host: growth}, seconds from now until the last of them got there).
    On the BPF path rackd learns of a connection from the program's ring
    buffer, after the kernel has set it up, and sends racks' set-up
    messages then: at ab's end it may be far behind."""
    t0 = time.monotonic()
    grown, moved = {}, t0
    while True:
        now = time.monotonic()
        got = {h: rackds[h].status()[c] - before[h]
               for h, c in counters.items()}
        if got != grown:
            grown, moved = got, now
        if min(got.values()) >= requests or now - moved >= STALL_S or \
                now - t0 >= CATCH_UP_S:
            return got, moved - t0
        time.sleep(0.05)


def measure_http(bench, runs, requests, concurrency=CONCURRENCY):
    """The runs themselves, for plain, plain again (the control) and
    every MODES entry: {mode: [requests/s]}, and per racks mode and run
    "caught" (requests/s counting rackd's catch-up), "managed" ({host:
    growth of its counter}), "lag" (catch-up s) and "suspended"
    (connections the rackds suspended, summed over the hosts)."""
    topo = bench.topo
    # Thousands of short connections a run: the client's TIME_WAIT
    # sockets must not use up its ports (A is the test-bed's namespace).
    topo.a.sysctls({"net.ipv4.tcp_tw_reuse": 1,
                    "net.ipv4.ip_local_port_range": "1024 65535"})
    url = f"http://{topo.addr['b']['v4']}:{HTTP_PORT}/{FILE_NAME}"
    per_run = {k: {m: [] for m in MODES}
               for k in ("caught", "managed", "lag", "suspended")}

    def measure(mode):
        if mode in PLAIN:
            bench.plain()
        else:
            hosts, path, counters = MODES[mode][:3]
            rackds = dict(zip(hosts, bench.racks(hosts, path=path)))
            start = {h: r.status() for h, r in rackds.items()}
            before = {h: start[h][c] for h, c in counters.items()}
        server = Nginx(topo.b, topo.addr["b"]["v4"])
        try:
            out = ab(topo.a, url, requests, concurrency)
        finally:
            server.close()
        if mode in PLAIN:
            return out["rps"]
        got, lag = _catch_up(rackds, counters, before, requests)
        # A healthy path suspends nothing: a suspension here is a
        # false one, worth a row of its own.
        suspended = sum(r.status()["suspensions"] - start[h]["suspensions"]
                        for h, r in rackds.items())
        # Stopped at once: what rackd does with thousands of closed
        # connections later (until its sweep) is no part of this run.
        bench.plain()
        for key, value in (("managed", got), ("lag", lag),
                           ("suspended", suspended),
                           ("caught", requests / (out["seconds"] + lag))):
            per_run[key][mode].append(value)
        short = {h: n for h, n in got.items()
                 if n < MANAGED_SHARE * requests}
        if short:
            raise testbed.TestbedError(
                f"{mode}: for {requests} requests " + ", ".join(
                    f"{counters[h]} of {h.upper()}'s rackd grew by {n}"
                    for h, n in short.items()) +
                ": the connections were not managed by racks")
        return out["rps"]
    try:
        values = bench.alternate(runs, list(PLAIN) + list(MODES), measure)
    finally:
        bench.plain()
    return values, per_run


def http(bench, runs=None, requests=None):
    """Requests per second of nginx and ab, one request per connection:
    plain against racks on both of its paths."""
    runs = runs or (3 if bench.quick else 5)
    # Plain TCP serves 10,000 to 20,000 requests a second here: fewer a
    # run end before the machine's noise averages out. More take the
    # queue path (or the BPF path's catch-up) past suspend_after (5 s),
    # where rackd, still holding the closed connections until its sweep,
    # suspends them all (its heartbeats ride on closed connections) and
    # a rackd busy reconnecting thousands may take over 15 s to stop.
    requests = requests or 10000
    v, per_run = measure_http(bench, runs, requests)
    managed, lags = per_run["managed"], per_run["lag"]
    rows = []
    for m, (hosts, path, _, goal, check) in MODES.items():
        rows.append(row(f"{m} (requests/s)", v["plain"], v[m], goal, check))
        if path == "bpf":
            rows.append(row(f"{m}, until rackd had set up every "
                            "connection (requests/s)", v["plain"],
                            per_run["caught"][m]))
        if len(hosts) > 1:
            rows.append(row(f"{m}: connections suspended during a run "
                            f"(of {requests}, both ends)", None,
                            per_run["suspended"][m], "0",
                            lambda _, r: r["max"] == 0, better="lower"))
    # The same runs with plain TCP on both sides: how far from 1.00 the
    # ratio of two identical configurations lands on this machine.
    rows.append(row("control: plain against plain (plain again in the "
                    "racks column)", v["plain"], v["plain again"]))
    return {"name": "http", "title": "Short connections through a real web "
            f"server (nginx in B, ab -c {CONCURRENCY} in A, one request "
            f"for {FILE_SIZE} B per connection; {requests} per run)",
            "unit": "requests/s", "runs": runs, "rows": rows,
            "managed": managed,
            "notes": [
                "Managed connections per racks run (counters that must "
                f"grow by at least {MANAGED_SHARE:.0%} of the {requests} "
                "requests, or the run fails): " + "; ".join(
                    f"{m}: " + ", ".join(
                        f"{c} on {h.upper()} " + "/".join(
                            str(g[h]) for g in managed[m])
                        for h, c in MODES[m][2].items())
                    for m in MODES),
                "The \"until rackd had set up every connection\" rows "
                "divide the requests by ab's time plus the time rackd "
                "took after ab's end until its counters above had grown "
                "by the number of requests: what a rate sustained for "
                "longer than rackd's buffers would show. On the BPF path "
                "the kernel sets connections up without rackd, which "
                "learns of them from the program's ring buffer and "
                "finishes racks' set-up after them. Seconds rackd took "
                "after ab's end: " + "; ".join(
                    f"{m}: " + ", ".join(f"{x:.2f}" for x in lags[m])
                    for m in MODES) + ".",
                "Suspended connections: the rackds' suspensions counters "
                "over a run (ab and rackd's catch-up; the rackds stop "
                "right after). The path between A and B never breaks "
                "here, so every suspension is a false one.",
                "The control row compares plain TCP with itself: its "
                "distance from 1.00 is the noise of this machine.",
                "The queue path is the fallback and has no goal: each "
                "connection's SYN and SYN-ACK cross user space on both "
                "hosts. The BPF path's goal is the issue's connections/s "
                "goal (>= 0.9 of plain)."]}
