"""Network-namespace test-bed for racks.

Builds small networks out of Linux network namespaces and veth pairs, runs
programs inside them (rackd, nft and the stdlib tools in tests/tools:
xfer.py for byte streams, pinger.py for ICMP echo, tundelay.py for delay;
the NFQUEUE middleboxes wintrack and disorder, see QueueTool)
and takes them down again. The standard topology is two hosts and a router::

      ns A (host)              ns R (router)              ns B (host)
    +--------------+   +----------------------------+   +--------------+
    |         eth0 |---| ra                      rb |---| eth0         |
    | 10.71.1.2/24 |   | 10.71.1.1/24  10.71.2.1/24 |   | 10.71.2.2/24 |
    | fd71:1::2/64 |   | fd71:1::1/64  fd71:2::1/64 |   | fd71:2::2/64 |
    +--------------+   +----------------------------+   +--------------+
      default via R      forwards IPv4 and IPv6          default via R

Everything the router does to a link (cut it with or without carrier loss,
delay it, lose packets) happens inside R, so rackd in A or B sees only what
a real host would see. Nothing here touches the host's own network
configuration or nft ruleset; only 10.71.0.0/16 and fd71::/16 are used, and
only inside the namespaces.

Usage::

    with Topology.create() as topo:
        server = start_xfer_server(topo.b, 5001, send=10**6)
        result = xfer_client(topo.a, topo.addr["b"]["v4"], 5001, 10**6)
        assert result["sent_sha256"] == expected_sha256(10**6, 0)

Readiness is always polled with a deadline (``wait_until``), never slept.

The test machines' kernel (6.18, no modules) lacks sch_netem, and Debian's
ping is not installed: link delay is emulated by tools/tundelay.py and ping
by tools/pinger.py, both standard-library Python.
"""

import importlib.util
import ipaddress
import itertools
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent
TOOLS = TESTS_DIR / "tools"
PYTHON = "/usr/bin/python3"
KILL_GRACE = 3.0          # seconds between SIGTERM and SIGKILL at teardown
NS_PATTERN = re.compile(r"^rk(\d+)x\d+[a-z]$")


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_xfer = _load_tool("xfer")
expected_sha256 = _xfer.expected_sha256
CLIENT_SEED = _xfer.CLIENT_SEED
SERVER_SEED = _xfer.SERVER_SEED


# --- errors and polling ---------------------------------------------------------

class TestbedError(RuntimeError):
    """Something in the test-bed itself went wrong."""

    __test__ = False       # not a pytest test class despite its name


class CommandError(TestbedError):
    """A command failed; the message carries command, exit code and output."""

    def __init__(self, cmd, returncode, stdout="", stderr="", note=""):
        self.cmd = cmd
        self.returncode = returncode
        self.stdout = stdout or ""
        self.stderr = stderr or ""
        text = f"command {shlex.join(map(str, cmd))!r} {note or f'exited {returncode}'}"
        if self.stderr.strip():
            text += f"\n--- stderr ---\n{self.stderr.rstrip()}"
        if self.stdout.strip():
            text += f"\n--- stdout ---\n{self.stdout.rstrip()[-4000:]}"
        super().__init__(text)


def need_tools(*tools):
    """Fail (never skip) the calling test when a program it drives is not
    installed: packaging/deps.sh installs every one of them, so a missing
    one is a defect of the install step, and a skip would hide it (a bare
    machine is where it shows: make check-fresh)."""
    import pytest
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: packaging/deps.sh "
                    f"must install it", pytrace=False)


def need_criu(criu):
    """Fail when CRIU 4.2.1 was not built into build/criu (deps.sh does)."""
    import pytest
    if not Path(criu).exists():
        pytest.fail(f"{criu} missing: packaging/deps.sh builds CRIU "
                    f"(packaging/build-criu.sh)", pytrace=False)


def make(*args, timeout=300, **kw):
    """Run ``make -s -C REPO ARGS`` (subprocess.run's keywords: check=True
    by default) under a lock of the tree's, so that parallel test
    processes never build the same file at once (make check builds
    everything first: then this only finds it up to date)."""
    import fcntl
    kw.setdefault("check", True)
    lock = REPO / "build" / ".make.lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        return subprocess.run(["make", "-s", "-C", str(REPO), *args],
                              timeout=timeout, **kw)


def wait_until(predicate, timeout, what, interval=0.05):
    """Poll predicate() until it returns a true value, which is returned.

    Raises TimeoutError naming ``what`` (a string, or a callable that builds
    the message, e.g. with the last error seen) after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            detail = what() if callable(what) else what
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {detail}")
        time.sleep(interval)


def run(cmd, check=True, timeout=30, capture=True, input=None):
    """Run cmd (a list, or a str split with shlex) in the host namespace."""
    argv = shlex.split(cmd) if isinstance(cmd, str) else [str(c) for c in cmd]
    try:
        proc = subprocess.run(argv, capture_output=capture, text=True,
                              timeout=timeout, input=input)
    except subprocess.TimeoutExpired as exc:
        raise CommandError(argv, None, _text(exc.stdout), _text(exc.stderr),
                           note=f"timed out after {timeout}s") from None
    except FileNotFoundError:
        raise CommandError(argv, None, note="not found: is it installed?") from None
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stdout, proc.stderr)
    return proc


def _text(data):
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


# --- processes ---------------------------------------------------------------------

def terminate(procs, grace=KILL_GRACE):
    """SIGTERM every live Popen in procs, SIGKILL what is left after grace s.

    Signals go to each process's own pid only.
    """
    live = [p for p in procs if p.poll() is None]
    for proc in live:
        _signal(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in live:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL)
            proc.wait()
    for proc in procs:
        _close_pipes(proc)


def _signal(proc, sig):
    if proc.poll() is None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass


def _close_pipes(proc):
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe:
            pipe.close()


def read_line(proc, timeout, what, pipe=None):
    """Next line of proc's stdout pipe (or of pipe, e.g. proc.stderr),
    waiting at most timeout seconds.

    Reads the file descriptor byte by byte, so nothing is left in Python's
    buffers: a later ``proc.communicate()`` still sees every later line.
    Fails with the process's stderr if it exits first.
    """
    fd = (pipe or proc.stdout).fileno()
    deadline = time.monotonic() + timeout
    line = bytearray()
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TestbedError(f"{what}: printed no line within {timeout:g}s"
                               f" (got {bytes(line)!r})")
        byte = os.read(fd, 1)
        if not byte:
            raise TestbedError(_exit_report(proc, what))
        line += byte
    return line.decode(errors="replace").rstrip("\n")


def _exit_report(proc, what):
    """Why proc closed its stdout: exit code and stderr."""
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        return f"{what}: closed its stdout but is still running"
    stderr = _drain(proc.stderr).rstrip()
    return f"{what}: exited {proc.returncode}" + \
        (f"\n--- stderr ---\n{stderr}" if stderr else "")


def _drain(pipe):
    if pipe is None or pipe.closed:
        return ""
    try:
        return _text(pipe.read())
    except (OSError, ValueError):
        return ""


# --- namespaces ------------------------------------------------------------------

class Netns:
    """A named network namespace and the processes started in it."""

    def __init__(self, name):
        self.name = name
        self.procs = []      # Popens started here, killed by kill_processes()
        self.rackds = []     # every Rackd created for this namespace
        # A cgroup v2 directory its programs join before they start (the
        # BPF path: Topology.use_cgroup), or None.
        self.cgroup = None

    def __repr__(self):
        return f"Netns({self.name!r})"

    def exec_prefix(self, nsenter=False):
        """Command prefix that runs a program inside the namespace.

        ``ip netns exec`` (the default) also gives the program a private
        mount namespace with the namespace's own /sys; ``nsenter --net``
        enters only the network namespace, which CRIU needs to dump it.
        Both exec the program, so its pid is the child's pid. With a
        cgroup (the BPF path), a shell first writes its own pid to the
        cgroup's cgroup.procs, then execs the rest (same pid again), so
        every socket the program makes runs the cgroup's programs.
        """
        join = (["sh", "-c", 'echo $$ > "$0" && exec "$@"',
                 str(self.cgroup / "cgroup.procs")] if self.cgroup else [])
        if nsenter:
            return join + ["nsenter", f"--net=/run/netns/{self.name}"]
        return join + ["ip", "netns", "exec", self.name]

    def run(self, cmd, check=True, timeout=30, capture=True, input=None):
        """Run cmd inside the namespace; a str is split with shlex (no shell).

        Raises CommandError (command, exit code, stderr) if check and it fails.
        """
        argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        return run(self.exec_prefix() + argv, check=check, timeout=timeout,
                   capture=capture, input=input)

    def popen(self, cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              nsenter=False, **kw):
        """Start cmd inside the namespace; it is killed at teardown.

        The Popen's pid is the program's own (see exec_prefix). A str is
        split with shlex (no shell). Text mode unless text=False is passed.
        """
        argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        kw.setdefault("text", True)
        proc = subprocess.Popen(self.exec_prefix(nsenter) + [str(a) for a in argv],
                                stdout=stdout, stderr=stderr, **kw)
        self.procs.append(proc)
        return proc

    def ip(self, *args, check=True):
        """Run ``ip -n NAME ARGS`` (no exec needed)."""
        return run(["ip", "-n", self.name, *args], check=check)

    def ip_batch(self, lines, family=None):
        """Run several ip commands in one ``ip -n NAME [-4|-6] -batch -``.

        Batch lines take no options: pass family "-6" for e.g. ``rule add``,
        whose family cannot be told from its arguments.
        """
        opts = [family] if family else []
        return run(["ip", "-n", self.name, *opts, "-batch", "-"],
                   input="\n".join(lines) + "\n")

    def ip_json(self, *args):
        """Parsed output of ``ip -n NAME -j ARGS``."""
        return json.loads(self.ip("-j", *args).stdout or "[]")

    def sysctl(self, key, value):
        """Set one sysctl inside the namespace."""
        self.sysctls({key: value})

    def sysctls(self, settings):
        """Set several sysctls inside the namespace in one process."""
        self.run(["sysctl", "-q", "-w"] +
                 [f"{key}={value}" for key, value in settings.items()])

    def operstate(self, ifname):
        """IFLA_OPERSTATE of ifname: 'UP', 'DOWN', 'LOWERLAYERDOWN', ..."""
        return self.ip_json("link", "show", "dev", ifname)[0]["operstate"]

    def kill_processes(self, grace=KILL_GRACE):
        """Terminate every process started with popen (see terminate)."""
        terminate(self.procs, grace)
        self.procs.clear()


def option_path():
    """The option path the test-bed's rackds take unless a test says
    otherwise: RACKS_OPTION_PATH ("bpf", "queue", "auto"), or None
    (rackd's default: auto, attached at the cgroup2 mount's root)."""
    return os.environ.get("RACKS_OPTION_PATH") or None


def cgroup2_mount():
    """The first cgroup v2 mount (NOTES.md: /sys/fs/cgroup/unified)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[2] == "cgroup2":
                return Path(fields[1])
    raise TestbedError("no cgroup v2 mounted")


def remove_cgroup(path, timeout=10):
    """Kill what is left in cgroup PATH (only the test-bed's programs
    are ever in it), wait until it is empty, remove it."""
    procs = path / "cgroup.procs"
    try:
        if procs.read_text().split():
            (path / "cgroup.kill").write_text("1")
        wait_until(lambda: not procs.read_text().split(), timeout,
                   f"{path} to empty")
        path.rmdir()
    except FileNotFoundError:
        pass


def _as_netns(ns):
    return ns if isinstance(ns, Netns) else Netns(ns)


def namespace_names():
    """Names of all network namespaces (``ip netns list``)."""
    out = run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def delete_namespace(name):
    """Delete a namespace if it exists."""
    if name in namespace_names():
        run(["ip", "netns", "delete", name])


def own_namespace_names():
    """Names of the test-bed namespaces this process made and still has
    (other test processes, e.g. pytest-xdist's other workers, make and
    delete theirs meanwhile)."""
    prefix = f"rk{os.getpid()}x"
    return [name for name in namespace_names() if name.startswith(prefix)]


def remove_stale_namespaces():
    """Delete test-bed namespaces left by test processes that no longer exist.

    Only names are removed (``ip netns delete``); nothing is killed. A
    live process's namespaces stay, whoever's they are: parallel workers
    of one run each call this at start.
    """
    removed = []
    for name in namespace_names():
        match = NS_PATTERN.match(name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            run(["ip", "netns", "delete", name], check=False)
            removed.append(name)
    return removed


# --- nftables, ICMP echo ------------------------------------------------------------

def nft(ns, cmd, check=True):
    """Run one nft command inside ns (a str is passed as one argument, so
    ``nft(ns, "list table inet racks")`` works); returns stdout."""
    args = [cmd] if isinstance(cmd, str) else list(cmd)
    return _as_netns(ns).run(["nft", *args], check=check).stdout


def nft_file(ns, text, check=True):
    """Load a ruleset fragment (``nft -f -``) inside ns."""
    return _as_netns(ns).run(["nft", "-f", "-"], input=text, check=check).stdout


def tables(ns):
    """Lines of ``nft list tables`` inside ns, e.g. ['table inet racks']."""
    return [line.strip() for line in nft(ns, "list tables").splitlines()
            if line.strip()]


def nft_counters(ns, table, family="inet"):
    """{name: packets} of every named counter of TABLE in ns."""
    out = json.loads(nft(ns, ["-j", "list", "counters", "table", family, table]))
    return {o["counter"]["name"]: o["counter"]["packets"]
            for o in out["nftables"] if "counter" in o}


class Middlebox:
    """One nft table in a namespace (R, usually) playing a middlebox, every
    rule of which that acts counting into a named counter: a test proves
    with ``assert_acted`` that the box acted before it believes what it
    saw (tests/README.md: a rule that never matched proves nothing).

    Made by the Topology's middlebox helpers (``drop_first_syn``,
    ``drop_option_syns``, ``strip_option``, ``firewall``, the loss of
    ``netem``, ``cut_silent``) or directly from a ruleset text of a test's
    own, whose named counters it finds itself.
    """

    def __init__(self, ns, table, ruleset, family="inet"):
        self.ns = _as_netns(ns)
        self.table, self.family = table, family
        nft_file(self.ns, ruleset)
        self.names = tuple(self.counts())
        if not self.names:
            raise TestbedError(f"middlebox {family} {table} in {self.ns.name} "
                               f"has no named counter: it could not prove "
                               f"that it acted")

    def __repr__(self):
        return f"Middlebox({self.ns.name}, {self.family} {self.table})"

    def counts(self):
        """{counter name: packets counted so far}."""
        return nft_counters(self.ns, self.table, self.family)

    def count(self, name=None):
        """Packets counter NAME counted so far (the one counter by default)."""
        return self.counts()[self._name(name)]

    def _name(self, name):
        if name is not None:
            return name
        if len(self.names) != 1:
            raise ValueError(f"{self!r} has counters {self.names}: name one")
        return self.names[0]

    def listing(self):
        return nft(self.ns, ["list", "table", self.family, self.table])

    def assert_acted(self, name=None, at_least=1, since=None):
        """Assert that counter NAME (the box's one counter by default)
        counted at least at_least packets more than since (an earlier
        counts() or count(), else 0); returns how many it counted."""
        name = self._name(name)
        base = since.get(name, 0) if isinstance(since, dict) else (since or 0)
        moved = self.counts()[name] - base
        if moved < at_least:
            raise AssertionError(
                f"{self!r}: counter {name!r} moved {moved}, expected at least "
                f"{at_least}: the box did not act as the test needs\n"
                f"{self.listing()}")
        return moved

    def remove(self):
        """Delete the table (no-op if it is gone)."""
        if f"table {self.family} {self.table}" in tables(self.ns):
            nft(self.ns, ["delete", "table", self.family, self.table])


class QueueTool:
    """A user-space middlebox of tests/tools (wintrack, disorder: both on
    nfqbox.c) serving an NFQUEUE in a namespace (R, usually): an nft
    table TABLE whose forward chain (at PRIORITY: after the test-bed's
    loss rules at 0) sends every TCP segment through chain 'judge' to the
    tool's queue. The queue rule has no bypass: a dead tool stalls every
    flow, so a test fails closed. The tool's counters are JSON in a
    stats file, rewritten on SIGUSR1 with a 'generation' that counts the
    writes; ``stats()`` asks for fresh ones. Its files live in WORKDIR
    (a fresh temp dir by default, removed by ``close()``)."""

    BINARY = None          # a subclass's build/tests/<tool>
    QUEUE = None

    def __init__(self, ns, args=(), table=None, priority=10, workdir=None,
                 timeout=10):
        self.ns = _as_netns(ns)
        self.name = Path(self.BINARY).name
        self.table = table or self.name
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix=f"{self.name}-"))
        self.log_path = self.dir / f"{self.name}.log"
        self.stats_path = self.dir / f"{self.name}.json"
        nft_file(self.ns, f"""table inet {self.table} {{
    chain forward {{
        type filter hook forward priority {priority}; policy accept;
        meta l4proto tcp counter jump judge
    }}
    chain judge {{
    }}
}}
""")
        if f"table inet {self.table}" not in tables(self.ns):
            raise TestbedError(f"table inet {self.table} not made in "
                               f"{self.ns.name}")
        self.proc = self.ns.popen(
            [str(self.BINARY), "--queue", str(self.QUEUE), "--log",
             str(self.log_path), "--stats", str(self.stats_path), *args,
             self.table, "judge"])
        line = read_line(self.proc, timeout, f"{self.name} in {self.ns.name}")
        if not line.startswith("READY "):
            raise TestbedError(f"{self.name} said {line!r}, not READY")
        self.ready = line.split()[1:]
        self.how = self.ready[0]
        # The queue rule is in place: native, or the xt target, whose
        # flags nft cannot print (test_wintrack.py shows it has no
        # bypass: a dead wintrack stalls flows).
        judge = json.loads(nft(self.ns, ["-j", "list", "chain", "inet",
                                         self.table, "judge"]))
        exprs = [e for item in judge["nftables"] if "rule" in item
                 for e in item["rule"]["expr"]]
        if not ({"xt": {"type": "target", "name": "NFQUEUE"}} in exprs or
                any("queue" in e and "bypass" not in str(e) for e in exprs)):
            raise TestbedError(f"{self.name}: no queue rule without bypass "
                               f"in judge: {exprs}")
        self.generation = self._read()["generation"]

    def __repr__(self):
        return f"{type(self).__name__}({self.ns.name}, inet {self.table})"

    def _read(self):
        return json.loads(self.stats_path.read_text())

    def stats(self):
        """Fresh counters: SIGUSR1, then the next generation of the file."""
        want = self.generation + 1
        os.kill(self.proc.pid, signal.SIGUSR1)
        stats = wait_until(
            lambda: (s := self._read())["generation"] >= want and s, 5,
            f"{self.name}'s stats after SIGUSR1")
        self.generation = stats["generation"]
        return stats

    def log(self):
        """The tool's log, one line per segment it dropped or acted on."""
        try:
            return self.log_path.read_text().splitlines()
        except FileNotFoundError:
            return []

    def queued(self):
        """Packets the forward chain sent to the tool (its counter)."""
        listing = nft(self.ns, f"list chain inet {self.table} forward")
        return int(listing.split("counter packets ")[1].split()[0])

    def stop(self):
        """Stop the tool (SIGTERM: it writes its counters, lets go what it
        holds); its last counters."""
        terminate([self.proc])
        if self.proc in self.ns.procs:
            self.ns.procs.remove(self.proc)
        return self._read()

    def close(self):
        """Stop it, remove its table and (if it made it) its directory."""
        if self.proc.poll() is None:
            self.stop()
        if f"table inet {self.table}" in tables(self.ns):
            nft(self.ns, ["delete", "table", "inet", self.table])
        self.remove_files()

    def remove_files(self):
        """Remove its directory if it made it (its process gone)."""
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class Disorder(QueueTool):
    """tests/tools/disorder in R: delays, duplicates and reorders the TCP
    segments its rules pick (see disorder.c: kinds syn_opt, syn,
    synack_opt, synack, ack, setup, message, data, other; aliases
    handshake, racks, all; a rule such as
    "kinds=syn_opt,count=1,delay=1200"). Like a Middlebox, it proves that
    it acted: ``assert_acted(kind, action)`` with action 'delayed',
    'duplicated' or 'reordered' (per kind), or ``assert_rule_acted(i)``.

    Made with ``Topology.disorder(rules)``, torn down with the topology."""

    BINARY = REPO / "build" / "tests" / "disorder"
    QUEUE = 8
    KINDS = ("syn_opt", "syn", "synack_opt", "synack", "ack", "setup",
             "message", "data", "other")
    ALIASES = {"handshake": ("syn_opt", "syn", "synack_opt", "synack", "ack"),
               "racks": ("setup", "message"), "all": KINDS}

    def __init__(self, ns, rules, seed=1, **kw):
        if isinstance(rules, str):
            rules = [rules]
        self.rules = list(rules)
        args = ["--seed", str(seed)]
        for rule in self.rules:
            args += ["--rule", rule]
        super().__init__(ns, args, **kw)

    def counts(self, action, kinds="all", stats=None):
        """How many segments of KINDS (a kind, an alias or a list) the
        tool counted under ACTION ('seen', 'passed', 'delayed',
        'duplicated', 'reordered') so far."""
        stats = stats or self.stats()
        names = self.ALIASES.get(kinds, (kinds,)) if isinstance(kinds, str) \
            else [k for name in kinds for k in self.ALIASES.get(name, (name,))]
        return sum(stats["kinds"][k][action] for k in names)

    def assert_acted(self, kinds, action, at_least=1, since=None):
        """Assert that the tool counted at least at_least segments of
        KINDS under ACTION more than since (an earlier stats()); returns
        how many."""
        stats = self.stats()
        base = self.counts(action, kinds, since) if since else 0
        moved = self.counts(action, kinds, stats) - base
        if moved < at_least:
            raise AssertionError(
                f"{self!r}: {action} {kinds} moved {moved}, expected at "
                f"least {at_least}: the tool did not act as the test "
                f"needs\nrules {self.rules}\n{json.dumps(stats['kinds'])}")
        return moved

    def assert_rule_acted(self, index=0, at_least=1):
        """Assert that rule INDEX acted on at least at_least segments."""
        rule = self.stats()["rules"][index]
        if rule["acted"] < at_least:
            raise AssertionError(f"{self!r}: rule {rule['rule']!r} acted "
                                 f"{rule['acted']} times (matched "
                                 f"{rule['matched']}), expected at least "
                                 f"{at_least}")
        return rule["acted"]


def assert_counter_moved(ns, table, name, at_least=1, since=0, family="inet"):
    """Assert that named counter NAME of TABLE in ns counted at least
    at_least packets more than since; returns how many."""
    now = nft_counters(ns, table, family)[name]
    if now - since < at_least:
        raise AssertionError(
            f"counter {name!r} of {family} {table} in {_as_netns(ns).name} "
            f"moved {now - since}, expected at least {at_least}:\n"
            f"{nft(ns, ['list', 'table', family, table])}")
    return now - since


PINGER = TOOLS / "pinger.py"


def ping_stats(ns, addr, count=1, interval=0.2, timeout=1.0):
    """Ping addr from ns with tools/pinger.py (the machines have no ping).

    Returns its report: {"sent", "received", "rtt_ms": [...], "errors"}.
    """
    proc = _as_netns(ns).run([PYTHON, str(PINGER), str(addr), "--count", str(count),
                              "--interval", str(interval), "--timeout", str(timeout)],
                             check=False, timeout=count * (interval + timeout) + 10)
    if proc.returncode not in (0, 1) or not proc.stdout.startswith("{"):
        raise CommandError(proc.args, proc.returncode, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def ping(ns, addr, timeout=1.0):
    """True if one echo request from ns to addr is answered within timeout s."""
    return ping_stats(ns, addr, timeout=timeout)["received"] == 1


def wait_for_ping(ns, addr, timeout=10):
    """Poll until addr answers a ping from ns."""
    wait_until(lambda: ping(ns, addr), timeout,
               f"{addr} to answer ping from {_as_netns(ns).name}")


def ping_rtt_ms(ns, addr, count=5, interval=0.05, timeout=2.0):
    """Average round-trip time in ms of count pings; all must be answered."""
    stats = ping_stats(ns, addr, count, interval, timeout)
    if stats["received"] != count:
        raise TestbedError(f"{stats['received']} of {count} pings from "
                           f"{_as_netns(ns).name} to {addr} answered: {stats}")
    return sum(stats["rtt_ms"]) / count


# --- captures -------------------------------------------------------------------

class Capture:
    """tcpdump in a namespace writing a pcap file, read back with Scapy.

    Made, it has waited until tcpdump says it is listening (its filter in
    place): nothing that matches is missed from then on, and a test may
    send at once. ``packets()`` stops it once the file has stopped growing
    and fails if the kernel dropped any packet the filter matched (a
    capture with holes proves no negative).
    """

    def __init__(self, ns, path, expr, iface="eth0", timeout=10):
        self.ns = _as_netns(ns)
        self.path = Path(path)
        self.expr = expr
        self.proc = self.ns.popen(["tcpdump", "--immediate-mode", "-i", iface,
                                   "-U", "-n", "-B", "16384", "-w",
                                   str(self.path), expr],
                                  stdout=subprocess.DEVNULL)
        what = f"tcpdump in {self.ns.name} ({expr})"
        deadline = time.monotonic() + timeout
        while True:
            line = read_line(self.proc, max(0.1, deadline - time.monotonic()),
                             what, pipe=self.proc.stderr)
            if "listening on" in line:
                break
        self.stats = None

    def stop(self):
        """Stop tcpdump once the file has stopped growing; returns its
        counts {'captured', 'received', 'dropped'} (by the kernel)."""
        if self.stats is not None:
            return self.stats
        sizes = [-2, -1]
        while sizes[-1] != sizes[-2]:
            time.sleep(0.3)
            sizes.append(self.path.stat().st_size)
        _signal(self.proc, signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            terminate([self.proc])
            err = ""
        if self.proc in self.ns.procs:
            self.ns.procs.remove(self.proc)
        # "12 packets captured", "... received by filter", "... dropped by kernel"
        self.stats = {key: int(m.group(1)) for key, pattern in (
            ("captured", r"(\d+) packets? captured"),
            ("received", r"(\d+) packets? received by filter"),
            ("dropped", r"(\d+) packets? dropped by kernel"))
            if (m := re.search(pattern, err or ""))}
        return self.stats

    def packets(self, lossless=True):
        """Every captured packet (Scapy), tcpdump stopped first; with
        lossless, fails if the kernel dropped packets for the capture."""
        from scapy.all import rdpcap
        stats = self.stop()
        if lossless and stats.get("dropped"):
            raise AssertionError(f"tcpdump in {self.ns.name} ({self.expr}): "
                                 f"the kernel dropped {stats['dropped']} "
                                 f"packets: {stats}")
        return rdpcap(str(self.path))


# --- xfer -------------------------------------------------------------------------

XFER = TOOLS / "xfer.py"


class XferServer:
    """tests/tools/xfer.py server running in a namespace (see start_xfer_server)."""

    def __init__(self, ns, proc, port):
        self.ns = ns
        self.proc = proc
        self.port = port

    def next_report(self, timeout=60):
        """The report of the next connection to finish (for count=0 servers).

        Do not mix with results(), which reads what is left.
        """
        return json.loads(read_line(self.proc, timeout, f"xfer server in {self.ns.name}"))

    def results(self, timeout=60):
        """Wait for the server to exit; return its per-connection reports.

        Raises TestbedError with stderr if it fails or outlives timeout.
        """
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestbedError(f"xfer server in {self.ns.name} still running "
                               f"after {timeout}s") from None
        reports = _json_lines(out)
        if self.proc.returncode != 0:
            raise TestbedError(f"xfer server in {self.ns.name} exited "
                               f"{self.proc.returncode}: {err.strip()}\n{reports}")
        return reports


class XferClient:
    """tests/tools/xfer.py client running in a namespace."""

    def __init__(self, ns, proc, argv):
        self.ns = ns
        self.proc = proc
        self.argv = argv

    def connected(self, timeout=10):
        """With announce=True: wait for 'CONNECTED ADDR PORT', return (addr, port)."""
        line = read_line(self.proc, timeout, f"xfer client in {self.ns.name}")
        word, addr, port = line.split()
        if word != "CONNECTED":
            raise TestbedError(f"unexpected xfer client output: {line!r}")
        return addr, int(port)

    def result(self, timeout=60, check=True):
        """Wait for the client to exit and return its JSON report.

        With check, a non-zero exit raises TestbedError with stderr.
        """
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestbedError(f"xfer client in {self.ns.name} still running "
                               f"after {timeout}s: {shlex.join(self.argv)}") from None
        reports = _json_lines(out)
        if check and self.proc.returncode != 0:
            raise TestbedError(f"xfer client in {self.ns.name} exited "
                               f"{self.proc.returncode}: {err.strip()}\n"
                               f"command: {shlex.join(self.argv)}\n{reports}")
        report = reports[-1] if reports else {}
        report["returncode"] = self.proc.returncode
        report["stderr"] = err
        return report


def _json_lines(text):
    return [json.loads(line) for line in (text or "").splitlines()
            if line.startswith("{")]


def start_xfer_server(ns, port, *, bind=None, send=None, count=1,
                      seed=SERVER_SEED, rate=None, timeout=None, ready_timeout=10):
    """Start an xfer server in ns and wait until it prints READY."""
    argv = [PYTHON, str(XFER), "server", "--port", str(port),
            "--count", str(count), "--seed", str(seed)]
    argv += _opt("--bind", bind) + _opt("--send", send) + _opt("--rate", rate)
    argv += _opt("--timeout", timeout)
    proc = ns.popen(argv)
    line = read_line(proc, ready_timeout, f"xfer server in {ns.name}")
    if line != "READY":
        raise TestbedError(f"xfer server in {ns.name} said {line!r}, not READY")
    return XferServer(ns, proc, port)


def start_xfer_client(ns, host, port, nbytes, *, seed=CLIENT_SEED, recv=False,
                      bind=None, rate=None, connect_timeout=10, timeout=60,
                      announce=False):
    """Start an xfer client in ns (returns at once; see XferClient)."""
    argv = [PYTHON, str(XFER), "client", host, str(port), "--bytes", str(nbytes),
            "--seed", str(seed), "--connect-timeout", str(connect_timeout),
            "--timeout", str(timeout)]
    argv += _opt("--bind", bind) + _opt("--rate", rate)
    argv += ["--recv"] if recv else []
    argv += ["--announce"] if announce else []
    return XferClient(ns, ns.popen(argv), argv)


def xfer_client(ns, host, port, nbytes, *, check=True, wait=60, **kw):
    """Run an xfer client to completion; return its JSON report."""
    return start_xfer_client(ns, host, port, nbytes, **kw).result(wait, check)


def _opt(flag, value):
    return [] if value is None else [flag, str(value)]


# --- rackd ------------------------------------------------------------------------

class RackdError(TestbedError):
    """rackd or rackctl misbehaved; the message includes rackd's log."""


def default_rackd():
    return os.environ.get("RACKD") or str(REPO / "build" / "rackd")


def default_rackctl():
    return os.environ.get("RACKCTL") or str(REPO / "build" / "rackctl")


class Rackd:
    """One rackd running in the foreground inside a namespace.

    Usually made by ``Topology.start_rackd``; one made directly is still
    registered in ``ns.rackds``, so the topology's close() stops it too.
    Files live in a private temp dir: racks.conf (when config text is given;
    otherwise ``-c`` names the non-existent none.conf, meaning built-in
    defaults), the control socket rackd.sock, the state file state (unless
    args give -s) and rackd.log (stdout+stderr). stop() then start() is a
    restart that takes the connections over.
    """

    def __init__(self, ns, config=None, args=(), binary=None, rackctl=None,
                 env=None, debug=True):
        self.ns = ns
        self.binary = binary or default_rackd()
        self.rackctl = rackctl or default_rackctl()
        self.dir = Path(tempfile.mkdtemp(prefix=f"rackd-{ns.name}-"))
        self.sock = self.dir / "rackd.sock"
        # Its own state file: a restart of this Rackd (stop, start) takes
        # its connections over, another Rackd knows nothing of them.
        self.state = self.dir / "state"
        self.log_path = self.dir / "rackd.log"
        self.conf = self.dir / ("racks.conf" if config is not None else "none.conf")
        if config is not None:
            self.conf.write_text(config)
        self.args = [str(a) for a in args]
        self.env = env
        # Debug logs help when a test fails, but cost ~100 us per
        # connection: timing measurements run without them.
        self.debug = debug
        self.proc = None
        self._final_log = None
        self.nsenter = False     # start with nsenter --net (the BPF path)
        ns.rackds.append(self)

    def __repr__(self):
        return f"Rackd({self.ns.name}, pid={self.pid})"

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def command(self):
        return [self.binary, "-f", *(["-d"] if self.debug else []),
                "-c", str(self.conf),
                "-S", str(self.sock),
                *([] if "-s" in self.args else ["-s", str(self.state)]),
                *self.args]

    def start(self, timeout=10):
        """Start rackd and wait until ``rackctl status`` answers."""
        for tool in (self.binary, self.rackctl):
            if not os.access(tool, os.X_OK):
                raise RackdError(f"{tool} is not an executable: run make first "
                                 f"(or set RACKD / RACKCTL)")
        env = {**os.environ, **self.env} if self.env else None
        with open(self.log_path, "w") as log:
            self.proc = self.ns.popen(self.command, stdout=log,
                                      stderr=subprocess.STDOUT, env=env,
                                      nsenter=self.nsenter)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=10):
        def ready():
            if self.proc.poll() is not None:
                raise RackdError(self._describe(
                    f"exited {self.proc.returncode} before it was ready"))
            return self._ctl_proc("status").returncode == 0

        try:
            wait_until(ready, timeout, f"rackd in {self.ns.name} to answer status")
        except TimeoutError as exc:
            raise RackdError(self._describe(str(exc))) from None

    def _ctl_proc(self, *args, timeout=10):
        return run([self.rackctl, "-S", str(self.sock), *args],
                   check=False, timeout=timeout)

    def ctl(self, *args, timeout=10):
        """Run ``rackctl -S SOCK ARGS``; return stdout, raise on failure."""
        proc = self._ctl_proc(*map(str, args), timeout=timeout)
        if proc.returncode != 0:
            raise RackdError(self._describe(
                f"rackctl {shlex.join(map(str, args))} exited {proc.returncode}: "
                f"{proc.stderr.strip() or proc.stdout.strip()}"))
        return proc.stdout

    def ctl_json(self, *args, timeout=10):
        """rackctl ARGS --json, parsed."""
        out = self.ctl(*args, "--json", timeout=timeout)
        try:
            return json.loads(out)
        except json.JSONDecodeError as exc:
            raise RackdError(f"rackctl {' '.join(map(str, args))} --json printed "
                             f"invalid JSON ({exc}):\n{out}") from None

    def status(self):
        return self.ctl_json("status")

    def connections(self):
        return self.ctl_json("list")

    def kill(self, sig=signal.SIGKILL):
        """Send sig to rackd's pid."""
        if self.running:
            os.kill(self.proc.pid, sig)

    def stop(self, timeout=5):
        """SIGTERM rackd and wait; return its exit code.

        If it does not exit within timeout it is SIGKILLed and RackdError
        raised: a clean shutdown is part of rackd's contract.
        """
        if self.proc is None:
            return None
        self.kill(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.proc.wait()
            raise RackdError(self._describe(
                f"did not exit within {timeout}s of SIGTERM; killed")) from None

    def log(self):
        """Everything rackd printed so far."""
        if self._final_log is not None:
            return self._final_log
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def close(self, keep_files=False):
        """Teardown: stop rackd (SIGTERM, then SIGKILL), keep its log text,
        remove the temp dir unless keep_files."""
        if self.proc is not None:
            terminate([self.proc])
        self._final_log = self.log()
        if not keep_files:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _describe(self, problem):
        return (f"rackd in {self.ns.name}: {problem}\n"
                f"command: {shlex.join(self.command)}\n"
                f"--- rackd log ({self.log_path}) ---\n{self.log().rstrip()}")


# --- the A -- R -- B topology ------------------------------------------------------

_counter = itertools.count(1)

HOST_SYSCTLS = {
    "net.ipv6.conf.all.accept_dad": 0,
    "net.ipv6.conf.default.accept_dad": 0,
    "net.ipv6.conf.all.keep_addr_on_down": 1,
    "net.ipv6.conf.default.keep_addr_on_down": 1,
    "net.ipv4.conf.all.promote_secondaries": 1,
    "net.ipv4.conf.default.promote_secondaries": 1,
}
ROUTER_SYSCTLS = {
    **HOST_SYSCTLS,
    "net.ipv4.ip_forward": 1,
    "net.ipv6.conf.all.forwarding": 1,
    "net.ipv6.conf.default.forwarding": 1,
    "net.ipv4.conf.all.rp_filter": 0,
    "net.ipv4.conf.default.rp_filter": 0,
}

HOST_IFACE = "eth0"
ROUTER_IFACE = {"a": "ra", "b": "rb"}     # add_host(X): "rX"
SUBNET = {"a": 1, "b": 2}                 # third octet / second v6 group
NETEM_RULE_PREF = 1000
# The fifth byte of racks' option 254 in a reconnection SYN: version 1,
# type 8 (edp/option.h).
RECONNECTION_MARKER = 0x18


def v4_net(n):
    return ipaddress.ip_network(f"10.71.{n}.0/24")


def v6_net(n):
    return ipaddress.ip_network(f"fd71:{n}::/64")   # reads like 10.71.n


class Topology:
    """Host A -- router R -- host B (see the module docstring's diagram).

    Build with ``Topology.create()``; ``close()`` (or leaving a ``with``
    block) kills every process started through it and deletes the
    namespaces. Attributes:

    - ``a``, ``r``, ``b``: the Netns of each node; ``ns(host)`` by name.
    - ``addr[host]``: {'v4': ..., 'v6': ...}, the current addresses of
      'a' and 'b' (without prefix length); ``prefix[host]`` their lengths.
    - ``rackds``: every Rackd made for its namespaces (``start_rackd``).
    - ``queue_tools``: the NFQUEUE middleboxes made for it (``disorder``),
      whose files go with it.
    - ``tag``: the namespaces are tag + 'a' / 'r' / 'b', with tag
      ``rk<pid>x<n>``, so topologies of one or several test processes
      coexist, and leftovers of dead ones are recognised.
    """

    def __init__(self, tag=None):
        tag = tag or f"rk{os.getpid()}x{next(_counter)}"
        self.tag = tag
        self.a, self.r, self.b = (Netns(tag + x) for x in "arb")
        self._nodes = {"a": self.a, "r": self.r, "b": self.b}
        self._subnet = dict(SUBNET)        # host -> its first subnet's number
        self.addr = {h: {"v4": str(self._host_ip(v4_net(n))),
                         "v6": str(self._host_ip(v6_net(n)))}
                     for h, n in SUBNET.items()}
        self.prefix = {h: {"v4": 24, "v6": 64} for h in SUBNET}
        self._next_subnet = itertools.count(max(SUBNET.values()) + 1)
        self._netem_procs = {}
        self.queue_tools = []
        self._created = []
        self._closed = False
        # The BPF path (use_cgroup): the child cgroup every node's
        # programs run in, made and removed by the topology.
        self.cgroup = None

    def __repr__(self):
        return f"Topology({self.tag})"

    @property
    def namespaces(self):
        """Names of the network namespaces this topology created."""
        return list(self._created)

    @property
    def nodes(self):
        """Its hosts' and router's Netns objects (A, R, B and added hosts)."""
        return list(self._nodes.values())

    # construction ---------------------------------------------------------

    @classmethod
    def create(cls, timeout=10):
        """Build the topology and wait until A pings B over IPv4 and IPv6.

        Anything built before a failure is torn down again.
        """
        topo = cls()
        try:
            if option_path() == "bpf":
                topo.use_cgroup()
            topo._build()
            topo.wait_reachable(timeout=timeout)
        except BaseException:
            topo.close()
            raise
        return topo

    def _build(self):
        for ns in (self.a, self.r, self.b):
            run(["ip", "netns", "add", ns.name])
            self._created.append(ns.name)
            ns.ip("link", "set", "lo", "up")
        self.a.sysctls(HOST_SYSCTLS)
        self.b.sysctls(HOST_SYSCTLS)
        self.r.sysctls(ROUTER_SYSCTLS)
        for host in SUBNET:
            self._build_link(host)

    def _build_link(self, host):
        """veth R:r<host> <-> host:eth0, addresses and the default route."""
        ns, rif = self.ns(host), self.router_iface(host)
        self.r.ip("link", "add", rif, "type", "veth",
                  "peer", "name", HOST_IFACE, "netns", ns.name)
        n = self._subnet[host]
        self.r.ip_batch([
            f"link set {rif} up",
            f"addr add {self._router_ip(v4_net(n))}/24 dev {rif}",
            f"addr add {self._router_ip(v6_net(n))}/64 dev {rif} nodad",
        ])
        ns.ip_batch([
            f"link set {HOST_IFACE} up",
            f"addr add {self.addr[host]['v4']}/24 dev {HOST_IFACE}",
            f"addr add {self.addr[host]['v6']}/64 dev {HOST_IFACE} nodad",
            f"route add default via {self._router_ip(v4_net(n))} dev {HOST_IFACE}",
            f"route add default via {self._router_ip(v6_net(n))} dev {HOST_IFACE}",
        ])

    @staticmethod
    def _host_ip(net):
        return net.network_address + 2

    @staticmethod
    def _router_ip(net):
        return net.network_address + 1

    # lookup -------------------------------------------------------------

    def ns(self, name):
        """The Netns of 'a', 'r', 'b' or a host from add_host()."""
        try:
            return self._nodes[name]
        except KeyError:
            raise ValueError(f"no node {name!r}: use one of "
                             f"{', '.join(sorted(self._nodes))}") from None

    @property
    def hosts(self):
        """Every host's name ('a', 'b', then add_host()'s), not R."""
        return list(self._subnet)

    def router_iface(self, host):
        """R's interface facing host ('a' -> 'ra')."""
        if host not in self._subnet:
            raise ValueError(f"no host {host!r}: use one of "
                             f"{', '.join(self._subnet)}")
        return "r" + host

    def add_host(self, name, timeout=10):
        """One more host, NAME (a letter other than a, b, r), on a fresh
        subnet of its own behind R (10.71.N.2/24, fd71:N::2/64); returns
        its Netns once it pings A. Torn down with the topology."""
        if not re.fullmatch(r"[c-qs-z]", name) or name in self._nodes:
            raise ValueError(f"host name {name!r}: one free letter c-z, not r")
        n = next(self._next_subnet)
        ns = Netns(self.tag + name)
        ns.cgroup = self.cgroup
        run(["ip", "netns", "add", ns.name])
        self._created.append(ns.name)
        self._nodes[name] = ns
        self._subnet[name] = n
        self.addr[name] = {"v4": str(self._host_ip(v4_net(n))),
                           "v6": str(self._host_ip(v6_net(n)))}
        self.prefix[name] = {"v4": 24, "v6": 64}
        ns.ip("link", "set", "lo", "up")
        ns.sysctls(HOST_SYSCTLS)
        self._build_link(name)
        self.wait_reachable(src=name, dst="a", timeout=timeout)
        return ns

    # --- a host on another host's own segment (tests/test_hostile.py) ---

    LAN_HOST_NUMBER = 66     # its address in the segment: 10.71.N.66

    def add_lan_host(self, name, beside="a", timeout=10):
        """One more host, NAME (a free letter), on BESIDE's own L2 segment,
        as an attacker on the same LAN would be: a macvlan (bridge mode)
        on R's interface towards BESIDE, moved into NAME's namespace as
        its eth0, with 10.71.N.66/24 and fd71:N::66/64 of BESIDE's subnet.

        It talks to BESIDE directly (ARP/ND on the shared wire), but not
        to R: a macvlan never reaches its own lower device. Everything
        else of the topology is unchanged (R's interface, cuts, moves).
        Returns its Netns once it pings BESIDE in both families."""
        if not re.fullmatch(r"[c-qs-z]", name) or name in self._nodes:
            raise ValueError(f"host name {name!r}: one free letter c-z, not r")
        rif, n = self.router_iface(beside), self._subnet[beside]
        ns = Netns(self.tag + name)
        ns.cgroup = self.cgroup
        run(["ip", "netns", "add", ns.name])
        self._created.append(ns.name)
        self._nodes[name] = ns
        self.addr[name] = {
            "v4": str(v4_net(n).network_address + self.LAN_HOST_NUMBER),
            "v6": str(v6_net(n).network_address + self.LAN_HOST_NUMBER)}
        self.prefix[name] = {"v4": 24, "v6": 64}
        ns.ip("link", "set", "lo", "up")
        ns.sysctls(HOST_SYSCTLS)
        mv = f"m{name}"
        self.r.ip("link", "add", "link", rif, "name", mv, "type", "macvlan",
                  "mode", "bridge")
        self.r.ip("link", "set", mv, "netns", ns.name)
        ns.ip_batch([
            f"link set {mv} name {HOST_IFACE}",
            f"link set {HOST_IFACE} up",
            f"addr add {self.addr[name]['v4']}/24 dev {HOST_IFACE}",
            f"addr add {self.addr[name]['v6']}/64 dev {HOST_IFACE} nodad",
        ])
        for family in ("v4", "v6"):
            wait_for_ping(ns, self.addr[beside][family], timeout)
        return ns

    def other(self, host):
        self.router_iface(host)
        return "b" if host == "a" else "a"

    def wait_reachable(self, src="a", dst="b", timeout=10, families=("v4", "v6")):
        """Poll until src pings dst's current address in every family."""
        for family in families:
            wait_for_ping(self.ns(src), self.addr[dst][family], timeout)

    # link faults ----------------------------------------------------------

    def cut(self, host, timeout=5):
        """Set R's interface facing host down; return once host sees
        carrier loss (its eth0 is no longer operationally UP)."""
        self.r.ip("link", "set", self.router_iface(host), "down")
        wait_until(lambda: self.ns(host).operstate(HOST_IFACE) != "UP",
                   timeout, f"{host}:{HOST_IFACE} to lose carrier")

    def restore(self, host, timeout=5):
        """Undo cut(host); wait until both ends of the link are up."""
        rif = self.router_iface(host)
        self.r.ip("link", "set", rif, "up")
        wait_until(lambda: self.r.operstate(rif) == "UP"
                   and self.ns(host).operstate(HOST_IFACE) == "UP",
                   timeout, f"link {rif} <-> {host}:{HOST_IFACE} to come up")

    def cut_silent(self, host):
        """Drop every frame on R's interface facing host, both directions,
        with the carrier kept up (a netdev nft table inside R). Returns
        its Middlebox: counter 'cut' counts the frames it dropped."""
        rif = self.router_iface(host)
        return Middlebox(self.r, f"testbed_cut_{rif}", f"""table netdev testbed_cut_{rif} {{
  counter cut {{ }}
  chain ingress {{
    type filter hook ingress device "{rif}" priority -500; policy drop;
    counter name "cut" drop
  }}
  chain egress {{
    type filter hook egress device "{rif}" priority -500; policy drop;
    counter name "cut" drop
  }}
}}
""", family="netdev")

    def restore_silent(self, host):
        """Undo cut_silent(host)."""
        table = f"table netdev testbed_cut_{self.router_iface(host)}"
        if table in tables(self.r):
            nft(self.r, f"delete {table}")

    def netem(self, host, delay_ms=0, loss_pct=0):
        """Impair the link from R toward host: fixed delay and loss.

        The kernel has no sch_netem, so loss is an nft table in R (see
        _add_loss: its counters say what it lost, ``lost(host)``) and
        delay goes through tools/tundelay.py (policy routing in R sends
        packets bound for host through a TUN device that holds them
        delay_ms). Only packets R forwards are delayed; R's own are not.
        Calling it again replaces the previous settings. Returns the loss
        Middlebox (None without loss).
        """
        self.clear_netem(host)
        box = self._add_loss(host, loss_pct) if loss_pct else None
        if delay_ms:
            self._add_delay(host, delay_ms)
        return box

    def clear_netem(self, host):
        """Remove netem(host)'s delay and loss."""
        rif = self.router_iface(host)
        self._remove_delay(host)
        table = f"table inet testbed_loss_{rif}"
        if table in tables(self.r):
            nft(self.r, f"delete {table}")

    def lost(self, host):
        """What netem(host)'s loss dropped so far: {'syn': SYNs and
        SYN-ACKs, 'racks': other segments carrying racks' option (set-up
        messages, heartbeats, ADOPTs), 'other': everything else}, and
        'seen': every packet it judged."""
        return nft_counters(self.r, f"testbed_loss_{self.router_iface(host)}")

    def _add_loss(self, host, loss_pct):
        """R loses loss_pct % of what it sends toward host (forwarded or
        its own). Everything but the handshake and racks' messages is lost
        at random ('other'); SYNs and SYN-ACKs ('syn') and segments with
        racks' option ('racks') lose exactly one in N = round(100 /
        loss_pct) of their kind, the first at N / 2 (the 51st at 1 %), so
        that a test of a hundred handshakes surely loses some (at random,
        600 such packets at 1 % lose none in 0.24 % of the runs), and one
        of a few flows loses none. A counter per kind, and 'seen' for
        every packet judged."""
        if not 0 < loss_pct <= 100:
            raise ValueError(f"loss_pct must be in (0, 100], not {loss_pct}")
        rif = self.router_iface(host)
        every = max(1, round(100 / loss_pct))
        chance = "" if loss_pct == 100 else \
            f"numgen random mod 10000 < {round(loss_pct * 100)} "
        table = f"testbed_loss_{rif}"
        return Middlebox(self.r, table, f"""table inet {table} {{
  counter seen {{ }}
  counter syn {{ }}
  counter racks {{ }}
  counter other {{ }}
  chain forward {{
    type filter hook forward priority 0; policy accept;
    oifname "{rif}" counter name "seen" jump judge
  }}
  chain output {{
    type filter hook output priority 0; policy accept;
    oifname "{rif}" counter name "seen" jump judge
  }}
  chain judge {{
    tcp flags & (syn | rst) == syn goto lose_syn
    tcp option @254,16,16 0x7261 goto lose_racks
    {chance}counter name "other" drop
  }}
  chain lose_syn {{
    numgen inc mod {every} {every // 2} counter name "syn" drop
  }}
  chain lose_racks {{
    numgen inc mod {every} {every // 2} counter name "racks" drop
  }}
}}
""")

    def _netem_table(self, host):
        """R's policy-routing table for the link to host (101 for A)."""
        return 100 + self._subnet[host]

    def _add_delay(self, host, delay_ms):
        tun, table = f"t{host}", self._netem_table(host)
        proc = self.r.popen([PYTHON, str(TOOLS / "tundelay.py"),
                             "--dev", tun, "--delay-ms", str(delay_ms)])
        self._netem_procs[host] = proc
        line = read_line(proc, 10, f"tundelay in {self.r.name}")
        if line != "READY":
            raise TestbedError(f"tundelay said {line!r}, not READY")
        from_iface = self.router_iface(self.other(host))
        self.r.ip("link", "set", tun, "up")
        for family in ("-4", "-6"):
            self.r.ip_batch([
                f"route add default dev {tun} table {table}",
                f"rule add iif {from_iface} lookup {table} pref {NETEM_RULE_PREF}",
            ], family)

    def _remove_delay(self, host):
        proc = self._netem_procs.pop(host, None)
        if proc is None:
            return
        from_iface = self.router_iface(self.other(host))
        table = self._netem_table(host)
        for family in ("-4", "-6"):
            self.r.ip(family, "rule", "del", "iif", from_iface, "lookup",
                      str(table), "pref", str(NETEM_RULE_PREF), check=False)
        terminate([proc])      # its TUN device and routes vanish with it
        self.r.procs.remove(proc)

    # middleboxes in R (each a Middlebox: its counters prove it acted) -----

    def drop_first_syn(self, table="mbox"):
        """R drops the first SYN of every flow, either family, as a lossy
        path or a box that drops SYNs with unknown options would; the
        kernel's retransmission passes. Counter 'dropped'."""
        rules = "\n".join(
            f"""    tcp flags & (syn|ack) == syn {ip} saddr . tcp sport @seen{n} accept
    tcp flags & (syn|ack) == syn add @seen{n} {{ {ip} saddr . tcp sport timeout 60s }} counter name "dropped" drop"""
            for ip, n in (("ip", 4), ("ip6", 6)))
        return Middlebox(self.r, table, f"""table inet {table} {{
  counter dropped {{ }}
  set seen4 {{ type ipv4_addr . inet_service; flags timeout; }}
  set seen6 {{ type ipv6_addr . inet_service; flags timeout; }}
  chain pass {{
    type filter hook forward priority 0; policy accept;
{rules}
  }}
}}
""")

    def drop_option_syns(self, table="mbox"):
        """R drops every SYN (not SYN-ACK) that carries option 254, as a
        box that drops SYNs with unknown options does. Counter
        'dropped'."""
        return Middlebox(self.r, table, f"""table inet {table} {{
  counter dropped {{ }}
  chain pass {{
    type filter hook forward priority 0; policy accept;
    tcp flags & (syn|ack) == syn tcp option 254 exists counter name "dropped" drop
  }}
}}
""")

    def strip_option(self, synack=False, table="mbox"):
        """R blanks option 254 (nft `reset tcp option`: NOPs, the data
        offset unchanged) on every SYN, and with synack on SYN-ACKs too.
        Counter 'stripped'."""
        flags = "(syn|rst|fin) == syn" if synack else "(syn|ack) == syn"
        return Middlebox(self.r, table, f"""table inet {table} {{
  counter stripped {{ }}
  chain pass {{
    type filter hook forward priority mangle; policy accept;
    tcp flags & {flags} tcp option 254 exists counter name "stripped" reset tcp option 254
  }}
}}
""")

    def disorder(self, rules, seed=1, **kw):
        """tests/tools/disorder in R, serving R's forwarded TCP segments
        with RULES (a rule string or a list; see Disorder). Returns the
        Disorder once it is READY; its process ends with the topology."""
        tool = Disorder(self.r, rules, seed=seed, **kw)
        self.queue_tools.append(tool)
        return tool

    def firewall(self, strict=True, nat=False, table="fw"):
        """R as a stateful firewall in its forward chain; with nat it also
        masquerades toward B (B sees R's address and port). Counters::

            invalid      ct state invalid, dropped
            syn_new      a new flow admitted by its SYN
            dropped      anything else, dropped by a strict policy
                         (an open one counts it and lets it pass)
            masqueraded  a new flow masqueraded (nat only)
        """
        postrouting = """  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "rb" counter name "masqueraded" masquerade
  }
""" if nat else ""
        return Middlebox(self.r, table, f"""table inet {table} {{
  counter syn_new {{ }}
  counter invalid {{ }}
  counter dropped {{ }}
{"  counter masqueraded { }" if nat else ""}
  chain forward {{
    type filter hook forward priority filter; policy {"drop" if strict else "accept"};
    ct state invalid counter name "invalid" drop
    ct state established,related accept
    meta l4proto {{ icmp, ipv6-icmp }} accept
    tcp flags & (syn | ack | fin | rst) == syn ct state new counter name "syn_new" accept
    counter name "dropped"
  }}
{postrouting}}}
""")

    def forgetting_box(self, nat=None, forward_port=None, table="forget"):
        """R as a strict stateful firewall that can be made to forget its
        flows (``forget()``; or its own conntrack timeouts), the middlebox
        of tests/test_forget.py. Forward chain, policy drop::

            ct state invalid                      counter invalid     drop
            ct state established,related                              accept
            icmp, icmpv6                                              accept
            SYN, new, racks' reconnection marker  counter reopen_syn
            SYN (of syn|ack|fin|rst), new         counter syn_new     accept
            (everything else)                     counter dropped

        With nat ("masquerade", "random" or "fully-random": the port R
        gives a flow it forgot and sees anew is then random) it
        masquerades towards B (counter masqueraded) and drops what B
        sends to R's own address outside a flow it tracks (input: counter
        unsolicited; ct state new or invalid, e.g. out of the window R
        tracks: a NAT that forgot stays silent rather than resetting). With
        forward_port as well, B's connections to R's address and that
        port go to A's (counter forwarded). Returns its Middlebox."""
        masq = {"masquerade": "masquerade", "random": "masquerade random",
                "fully-random": "masquerade fully-random"}
        if nat is not None and nat not in masq:
            raise ValueError(f"nat {nat!r}: one of {', '.join(masq)}")
        if forward_port and not nat:
            raise ValueError("a port forward is a NAT's: give nat too")
        b = self.router_iface("b")
        counters = ["syn_new", "reopen_syn", "invalid", "dropped"]
        chains = [f"""  chain forward {{
    type filter hook forward priority filter; policy drop;
    ct state invalid counter name "invalid" drop
    ct state established,related accept
    meta l4proto {{ icmp, ipv6-icmp }} accept
    tcp flags & (syn | ack | fin | rst) == syn ct state new tcp option @254,32,8 {RECONNECTION_MARKER:#x} counter name "reopen_syn"
    tcp flags & (syn | ack | fin | rst) == syn ct state new counter name "syn_new" accept
    counter name "dropped"
  }}
"""]
        if nat:
            counters += ["masqueraded", "unsolicited"]
            chains.append(f"""  chain input {{
    type filter hook input priority filter; policy accept;
    iifname "{b}" meta l4proto tcp ct state new,invalid counter name "unsolicited" drop
  }}
  chain postrouting {{
    type nat hook postrouting priority srcnat; policy accept;
    oifname "{b}" counter name "masqueraded" {masq[nat]}
  }}
""")
        if forward_port:
            counters.append("forwarded")
            chains.append(f"""  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname "{b}" meta nfproto ipv4 tcp dport {forward_port} counter name "forwarded" dnat ip to {self.addr['a']['v4']}
    iifname "{b}" meta nfproto ipv6 tcp dport {forward_port} counter name "forwarded" dnat ip6 to {self.addr['a']['v6']}
  }}
""")
        return Middlebox(self.r, table, f"table inet {table} {{\n" +
                         "".join(f"  counter {c} {{ }}\n" for c in counters) +
                         "".join(chains) + "}\n")

    def conntrack_tcp(self):
        """R's TCP conntrack entries, one line each (``conntrack -L``)."""
        out = self.r.run(["conntrack", "-L", "-p", "tcp"]).stdout
        return [line for line in out.splitlines() if line.strip()]

    def forget(self):
        """R forgets every flow it tracks (``conntrack -F`` in R's netns
        only). Fails unless R knew some TCP flow before and knows none
        after; returns the entries it forgot."""
        known = self.conntrack_tcp()
        if not known:
            raise TestbedError(f"R ({self.r.name}) had no TCP flow to forget")
        said = self.r.run(["conntrack", "-F"]).stderr
        left = self.conntrack_tcp()
        if "table has been emptied" not in said or left:
            raise TestbedError(f"conntrack -F in {self.r.name}: {said.strip()}"
                               f"; left: {left}")
        return known

    # addresses -------------------------------------------------------------

    def remove_address(self, host, family, cidr, retire=True):
        """Remove cidr ('ADDR/PREFIX') from host's eth0. With retire, R
        also forgets that subnet (its side's address), so that the old
        address is unreachable from anywhere, as after a real move."""
        iface = ipaddress.ip_interface(cidr)
        self.ns(host).ip_batch([f"addr del {iface} dev {HOST_IFACE}"])
        if retire:
            gateway = self._router_ip(iface.network)
            self.r.ip_batch([f"addr del {gateway}/{iface.network.prefixlen} "
                             f"dev {self.router_iface(host)}"])

    def cidr(self, host, family):
        """host's current address of family with its prefix length."""
        return f"{self.addr[host][family]}/{self.prefix[host][family]}"

    def reserve_subnet(self, host, family):
        """A fresh subnet on R's side towards host, for a later move of
        host there; returns host's address in it as 'ADDR/PREFIX'.

        IPv6 needs this before a cut: an address added while R's
        interface is down does not answer neighbour solicitations after
        it comes up again."""
        n = next(self._next_subnet)
        net = v4_net(n) if family == "v4" else v6_net(n)
        nodad = " nodad" if family == "v6" else ""
        self.r.ip_batch([f"addr replace {self._router_ip(net)}/{net.prefixlen} "
                         f"dev {self.router_iface(host)}{nodad}"])
        return f"{self._host_ip(net)}/{net.prefixlen}"

    def move_to_new_subnet(self, host, family, keep_old=False, new=None):
        """host's address of family moves to a fresh subnet (new, from
        reserve_subnet, or one made now), which R routes; unless keep_old,
        the old subnet is retired (removed from host and R). Returns the
        new address."""
        old = self.cidr(host, family)
        new = new or self.reserve_subnet(host, family)
        self._move_address(host, family, new, keep_old=True)
        if not keep_old:
            self.remove_address(host, family, old)
        return self.addr[host][family]

    def change_address(self, host, v4=None, v6=None, keep_old=False):
        """Give host new addresses; return {'v4': ..., 'v6': ...}.

        v4 / v6 are 'ADDR' or 'ADDR/PREFIX' (default /24 and /64), in the
        current or any other subnet; R gets the subnet's first address on
        its side if the subnet is new to it, and host's default route moves
        to that gateway with the new address as preferred source. With
        neither given, both families move to a fresh subnet
        (10.71.N.2/24, fd71:N::2/64). The old addresses are removed unless
        keep_old. topo.addr is updated.
        """
        self.router_iface(host)
        if v4 is None and v6 is None:
            n = next(self._next_subnet)
            v4, v6 = f"{self._host_ip(v4_net(n))}/24", f"{self._host_ip(v6_net(n))}/64"
        for family, value in (("v4", v4), ("v6", v6)):
            if value is not None:
                self._move_address(host, family, value, keep_old)
        return dict(self.addr[host])

    def _move_address(self, host, family, value, keep_old):
        default_prefix = 24 if family == "v4" else 64
        iface = ipaddress.ip_interface(value if "/" in value
                                       else f"{value}/{default_prefix}")
        if f"v{iface.version}" != family:
            raise ValueError(f"{value!r} is not an IP{family} address")
        gateway = self._router_ip(iface.network)
        if gateway == iface.ip:
            raise ValueError(f"{iface} collides with R's side {gateway}")
        nodad = " nodad" if family == "v6" else ""
        self.r.ip_batch([f"addr replace {gateway}/{iface.network.prefixlen} "
                         f"dev {self.router_iface(host)}{nodad}"])
        ns, old = self.ns(host), f"{self.addr[host][family]}/{self.prefix[host][family]}"
        lines = [f"addr replace {iface} dev {HOST_IFACE}{nodad}",
                 f"route replace default via {gateway} dev {HOST_IFACE} src {iface.ip}"]
        if not keep_old and ipaddress.ip_interface(old) != iface:
            lines.append(f"addr del {old} dev {HOST_IFACE}")
        ns.ip_batch(lines)
        self.addr[host][family] = str(iface.ip)
        self.prefix[host][family] = iface.network.prefixlen

    # rackd -------------------------------------------------------------------

    def use_cgroup(self):
        """The BPF path: a child cgroup of the cgroup2 mount, for this
        topology alone, which every program its nodes start joins
        (Netns.exec_prefix); rackd's sock_ops program is attached there
        (bpf_cgroup). Removed at close(), after what is left in it is
        killed. Call it before anything starts: a program started
        before stays outside (its sockets get no option). Returns it."""
        if self.cgroup is None:
            self.cgroup = cgroup2_mount() / f"racks-test-{self.tag}"
            self.cgroup.mkdir()
            for ns in self._nodes.values():
                ns.cgroup = self.cgroup
        return self.cgroup

    def start_rackd(self, host, config=None, args=(), binary=None, env=None,
                    rackctl=None, timeout=10, debug=True, path=None):
        """Start rackd in host ('a', 'b' or 'r'); return it once ready.

        PATH, racks' option path ("bpf", "queue", "auto"; None: the
        RACKS_OPTION_PATH environment variable, else rackd's default),
        is added to its configuration as kernel_option, with bpf_cgroup
        for "bpf" and "auto" (the topology's cgroup, use_cgroup), unless
        CONFIG already names kernel_option."""
        path = path or option_path()
        if path and "kernel_option" not in (config or ""):
            extra = f"kernel_option = {path}\n"
            if path != "queue":
                extra += f"bpf_cgroup = {self.use_cgroup()}\n"
            config = (config or "") + ("\n" if config and not config.endswith("\n")
                                       else "") + extra
        rackd = Rackd(self.ns(host), config=config, args=args, binary=binary,
                      rackctl=rackctl, env=env, debug=debug)
        # The cgroup is under /sys/fs/cgroup, which `ip netns exec` hides
        # (it mounts a /sys of its own): nsenter keeps it in sight.
        rackd.nsenter = bool(path and path != "queue")
        return rackd.start(timeout)

    @property
    def rackds(self):
        return [r for ns in self._nodes.values() for r in ns.rackds]

    def logs(self):
        """All rackd logs of this topology, for assertion messages."""
        return "\n".join(f"--- rackd in {r.ns.name} (pid {r.pid}) ---\n{r.log()}"
                         for r in self.rackds)

    # teardown --------------------------------------------------------------

    def close(self):
        """Stop rackds and every tracked process, delete the namespaces.

        Idempotent; safe after a half-finished create(). rackd temp dirs
        (config, socket, log) are removed unless RACKS_TEST_KEEP is set;
        their logs stay readable through Rackd.log().
        """
        if self._closed:
            return
        self._closed = True
        keep = bool(os.environ.get("RACKS_TEST_KEEP"))
        for rackd in self.rackds:
            rackd.close(keep_files=keep)
        for ns in self._nodes.values():
            ns.kill_processes()
        for tool in self.queue_tools:
            tool.remove_files()
        for ns in {r.ns.name: r.ns for r in self.rackds}.values():
            self._drop_racks_table(ns)
        if self.cgroup is not None:
            remove_cgroup(self.cgroup)
        existing = namespace_names()
        for name in self._created:
            if name in existing:
                run(["ip", "netns", "delete", name], check=False)
        self._netem_procs.clear()

    @staticmethod
    def _drop_racks_table(ns):
        try:
            if "table inet racks" in tables(ns):
                nft(ns, "delete table inet racks", check=False)
        except TestbedError:
            pass       # the namespace goes away next anyway

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
