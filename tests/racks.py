"""Helpers shared by the rackd integration tests (on top of testbed.py)."""

import functools
import json
import subprocess

import testbed


@functools.lru_cache(maxsize=None)
def kernel_has_native_queue():
    """True when this kernel accepts nft's native `queue` statement.

    Probed in a scratch namespace so the host's ruleset is never touched.
    """
    name = f"rkprobe{subprocess.os.getpid()}"
    testbed.run(["ip", "netns", "add", name])
    try:
        proc = testbed.run(
            ["ip", "netns", "exec", name, "nft",
             "add table inet probe; "
             "add chain inet probe c { type filter hook output priority 0; }; "
             "add rule inet probe c queue num 1 bypass"], check=False)
        return proc.returncode == 0
    finally:
        testbed.run(["ip", "netns", "delete", name], check=False)


def expected_queue_mode():
    return "native" if kernel_has_native_queue() else "xt"


def racks_tables(ns):
    """The `inet racks` lines of `nft list tables` in ns."""
    return [t for t in testbed.tables(ns) if t == "table inet racks"]


def conns_between(rackd, remote_port=None, local_port=None):
    """Connections in rackd's list, filtered by port."""
    out = []
    for c in rackd.connections():
        if remote_port and not c["remote"].endswith(f":{remote_port}"):
            continue
        if local_port and not c["local"].endswith(f":{local_port}"):
            continue
        out.append(c)
    return out


def wait_states(rackd, state, timeout=5, **ports):
    """Wait until the connections matching ports (see conns_between) exist
    and are all in state; set-up runs beside the connection, so connect()
    returning does not mean it is done. Returns them."""
    def ready():
        conns = conns_between(rackd, **ports)
        return conns if conns and all(c["state"] == state
                                      for c in conns) else None
    return testbed.wait_until(
        ready, timeout,
        lambda: f"{state} connections {ports}: {rackd.connections()}")


def data_packets_queued(status):
    """Packets that reached rackd's queue and were neither a handshake
    segment, a racks set-up message nor a probe's FIN: with the kernel
    fast path intact this is always zero."""
    return (status["packets_queued"] - status["syn"] - status["synack"]
            - status["edp_msgs_in"] - status["edp_probe_fins"]
            - status["packets_malformed"] - status["packets_unexpected"])


def endpoint(addr, port):
    """The "addr:port" / "[addr]:port" form rackctl prints."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def check_both_ways(server, client, size, timeout=90):
    """Wait for an xfer client sending and receiving size bytes (recv=True)
    and its server; assert both streams arrived whole and unchanged, by
    byte count and sha256. Returns the client's report."""
    report = client.result(timeout)
    srv = server.results(60)[0]
    assert report["sent_bytes"] == srv["recv_bytes"] == size
    assert report["sent_sha256"] == srv["recv_sha256"] == \
        testbed.expected_sha256(size, testbed.CLIENT_SEED)
    assert report["recv_bytes"] == size
    assert report["recv_sha256"] == srv["sent_sha256"] == \
        testbed.expected_sha256(size, testbed.SERVER_SEED)
    return report


def conn_of(rackd, **ports):
    """The one connection matching ports (see conns_between), as
    `rackctl show` gives it."""
    conns = conns_between(rackd, **ports)
    assert len(conns) == 1, conns
    return rackd.ctl_json("show", str(conns[0]["id"]))


def start_transfer(topo, family, size, port, rate=2 * 1024 * 1024,
                   timeout=60):
    """An xfer server on B at port sending size bytes at rate, and a client
    on A sending as many and receiving (check_both_ways checks them);
    returns (server, client) once the client is connected."""
    server = testbed.start_xfer_server(topo.b, port, send=size, rate=rate,
                                       timeout=timeout)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"][family], port,
                                       size, recv=True, rate=rate,
                                       announce=True, timeout=timeout)
    client.connected()
    return server, client


def wait_connected_at(rackd, wire_key, addr, timeout, **ports):
    """Wait until the connection is connected with its wire endpoint
    wire_key ('wire_local' / 'wire_remote') at addr; returns it."""
    def ready():
        conns = conns_between(rackd, **ports)
        return conns and conns[0]["state"] == "connected" and \
            conns[0][wire_key].rsplit(":", 1)[0].strip("[]") == addr and \
            conns[0]
    return testbed.wait_until(
        ready, timeout,
        lambda: f"{wire_key} {addr}: {rackd.connections()}")


def move_and_splice(topo, host, rackd, family="v4", timeout=10):
    """host's address of family moves to a new subnet (make-before-break:
    the new one added, then the old one removed), and its one managed
    connection is spliced onto it. Returns the new address."""
    old = topo.cidr(host, family)
    new = topo.move_to_new_subnet(host, family, keep_old=True)
    topo.remove_address(host, family, old)
    testbed.wait_until(lambda: rackd.status()["spliced"] == 1, timeout,
                       "the splice")
    return new


class NftMonitor:
    """`nft monitor` in a namespace: every change to its rulesets, grouped
    by transaction (each ends with a "# new generation N by process PID
    (NAME)" line). Started, it has seen a probe transaction of its own, so
    nothing after is missed (a probe made before it listened is missed:
    it probes again until one is seen)."""

    def __init__(self, ns, timeout=10):
        import itertools
        import threading
        self.ns = ns
        self.proc = ns.popen(["nft", "monitor"])
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        probes = (f"racks_monitor_probe_{id(self)}_{n}"
                  for n in itertools.count())

        def seen():
            probe = next(probes)
            testbed.nft(ns, f"add table inet {probe}; delete table inet {probe}")
            try:
                return testbed.wait_until(
                    lambda: any(probe in line for line in self.lines), 0.5,
                    "the probe")
            except TimeoutError:
                return False
        testbed.wait_until(seen, timeout,
                           f"nft monitor in {ns.name} to see its probe")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def transactions(self, process=None):
        """[(process name, [lines])] of every transaction seen so far,
        only those of PROCESS (a name, e.g. 'rackd') when given."""
        out, pending = [], []
        for line in list(self.lines):
            if line.startswith("# new generation "):
                name = line.rsplit("(", 1)[-1].rstrip(")")
                if process is None or name == process:
                    out.append((name, pending))
                pending = []
            else:
                pending.append(line)
        return out

    def stop(self):
        testbed.terminate([self.proc])
        if self.proc in self.ns.procs:
            self.ns.procs.remove(self.proc)
        self.reader.join(5)


def chain_rules(ns, chain, table="racks", family="inet"):
    """The rules of a chain, each the list of its expressions as nft's
    JSON gives them ({"mangle": ...}, {"jump": ...}, ...)."""
    out = json.loads(testbed.nft(ns, ["-j", "list", "chain", family, table,
                                      chain]))
    return [item["rule"]["expr"] for item in out["nftables"] if "rule" in item]


def verdicts_of(rule):
    """The statements of a rule (chain_rules) that send a packet elsewhere:
    jump, goto, queue (native) or an xt target (NFQUEUE)."""
    return [e for e in rule
            if set(e) & {"jump", "goto", "queue"}
            or ("xt" in e and e["xt"].get("type") == "target")]


def table_handle(ns, table="racks", family="inet"):
    """The kernel's handle of a table: a table made anew gets a new one."""
    out = json.loads(testbed.nft(ns, ["-j", "list", "table", family, table]))
    return next(item["table"]["handle"] for item in out["nftables"]
                if "table" in item)


def ctl_request(rackd, cmd, *pairs, timeout=10):
    """One raw control-protocol request (common/proto.h) to rackd's socket:
    pairs are (key, value), repeated keys allowed. Returns (records, errno,
    error): records a list of dicts, the first for lines before any
    "record=" line."""
    import socket
    body = f"cmd={cmd}\n" + "".join(f"{k}={v}\n" for k, v in pairs) + "\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(rackd.sock))
        s.sendall(body.encode())
        data = b""
        while not data.endswith(b"\n\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    records, errno, error = [{}], None, None
    for line in data.decode().splitlines():
        if not line:
            continue
        key, _, value = line.partition("=")
        if key == "record":
            records.append({})
        elif key == "errno":
            errno = int(value)
        elif key == "error":
            error = value
        else:
            records[-1][key] = value
    return records, errno, error


# --- many connections at once (tests/test_load.py, make bench) --------------
# connfleet (bench/tools/connfleet.c, built by make test-tools) holds
# thousands of idle connections in one process and has each one echo a
# token of its own on command.

FLEET_TOOL = testbed.REPO / "build" / "bench" / "connfleet"


class Fleet:
    """A connfleet echo server in SERVER_NS (unless server is False: one
    listens there already) and N idle connections to it from CLIENT_NS,
    opened at most WINDOW connect()s at a time, one every PACE_MS ms.
    ``opened`` is the client's first report."""

    def __init__(self, server_ns, client_ns, addr, port, n, window=256,
                 timeout=300, pace_ms=0, server=True):
        if not FLEET_TOOL.exists():
            raise testbed.TestbedError(f"{FLEET_TOOL} missing: make "
                                       "test-tools")
        self.port = port
        self.n = n
        self.server = None
        if server:
            self.server = fleet_server(server_ns, port)
        self.client = client_ns.popen(
            [FLEET_TOOL, "connect", addr, port, n, "--window", window,
             "--pace", pace_ms, "--timeout", timeout], stdin=subprocess.PIPE)
        self.opened = json.loads(testbed.read_line(
            self.client, timeout + 30, "connfleet connections"))

    @staticmethod
    def _ask(proc, command, timeout, what):
        proc.stdin.write(command + "\n")
        proc.stdin.flush()
        return json.loads(testbed.read_line(proc, timeout, what))

    def echo(self, seconds=30):
        """Every open connection echoes a token of its own: the report
        (ok / reset / closed / timeout / bad / error, with their ports)."""
        return self._ask(self.client, f"echo {seconds}", seconds + 60,
                         "connfleet echo round")

    def status(self):
        """The client's view without sending: open / reset / closed."""
        return self._ask(self.client, "status", 60, "connfleet status")

    def ports(self):
        """The local ports of the open connections."""
        return self._ask(self.client, "ports", 60, "connfleet ports")["ports"]

    def server_status(self):
        """The server's count of connections reset, closed or open."""
        return self._ask(self.server, "status", 60, "connfleet server status")

    def close(self):
        testbed.terminate([p for p in (self.client, self.server) if p])


def fleet_server(ns, port):
    """A connfleet echo server on [::]:port in ns, once listening."""
    proc = ns.popen([FLEET_TOOL, "serve", port], stdin=subprocess.PIPE)
    line = testbed.read_line(proc, 10, "connfleet server")
    if line != "READY":
        raise testbed.TestbedError(f"connfleet server said {line!r}")
    return proc


def fleet_states(rackd, port, timeout=120):
    """{state: count} of rackd's connections with port at either end
    (``rackctl list`` compares with the kernel's sockets first)."""
    states = {}
    for c in rackd.ctl_json("list", timeout=timeout):
        if c["remote"].endswith(f":{port}") or \
                c["local"].endswith(f":{port}"):
            states[c["state"]] = states.get(c["state"], 0) + 1
    return states


def nfqueue_stats(ns):
    """/proc/net/netfilter/nfnetlink_queue inside ns, one dict per queue:
    queue, portid, total (waiting now), copy_mode, copy_range, dropped
    (queue full, without fail-open), user_dropped (netlink delivery
    failed), id (packets queued so far). A full queue with fail-open
    counts nothing: only total reaching the queue's maxlen shows it."""
    names = ("queue", "portid", "total", "copy_mode", "copy_range",
             "dropped", "user_dropped", "id")
    out = ns.run(["cat", "/proc/net/netfilter/nfnetlink_queue"]).stdout
    return [dict(zip(names, map(int, line.split()[:8])))
            for line in out.splitlines() if line.strip()]


def kernel_counters(ns):
    """nstat's absolute kernel counters inside ns (SNMP and netstat)."""
    out = ns.run(["nstat", "-a", "-z", "-s", "-j"]).stdout
    return json.loads(out)["kernel"]
