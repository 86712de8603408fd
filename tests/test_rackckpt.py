"""rackckpt: refusals that change nothing, and the `run` wrapper's relay
across a dump on one host and a restore on another.

What needs rackd's export/import (moving racks-managed connections) is
tested elsewhere; here rackd only has to answer, and the moved process
has listening sockets, a loopback connection pair and its standard
streams, which the wrapper relays.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B::

    A: rackd, `rackckpt run -- child`     B: rackd, `rackckpt restore --wait`
       (the wrapper stays here)              (the child runs on here)

Programs that CRIU dumps are started with ``nsenter --net`` (testbed's
``nsenter=True``), as is rackckpt itself: ``ip netns exec`` gives them a
private mount namespace that CRIU does not dump.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import racks
import testbed

RACKCKPT = os.environ.get("RACKCKPT") or str(testbed.REPO / "build" / "rackckpt")
CRIU = testbed.REPO / "build" / "criu" / "sbin" / "criu"
MAN = testbed.REPO / "man" / "rackckpt.8"

# A child to move: a listener on its host's address, a loopback pair it
# talks through, and a numbered line on stdout per round.
CHILD = r"""
import os, socket, sys, time
addr, rounds, code = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
listener = socket.socket()
listener.bind((addr, 0))
listener.listen()
lo = socket.socket()
lo.bind(("127.0.0.1", 0))
lo.listen()
a = socket.create_connection(lo.getsockname())
b, _ = lo.accept()
lo.close()
print(f"ready {os.getpid()} {listener.getsockname()[1]}", flush=True)
for i in range(rounds):
    a.sendall(b"%d\n" % i)
    assert b.recv(64) == b"%d\n" % i
    print(f"tick {i}", flush=True)
    time.sleep(0.02)
sys.exit(code)
"""

# A client holding one connection to a plain (rackd-less) server.
HOLDER = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
print("connected", s.getsockname()[1], flush=True)
time.sleep(120)
"""

LISTENER = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1])))     # IPv4 too (dual stack)
s.listen()
print("listening", flush=True)
conns = []
while True:
    conns.append(s.accept()[0])
"""


def need_criu():
    testbed.need_criu(CRIU)


def rackckpt(*args, ns=None, check=False, timeout=60, env=None):
    prefix = ns.exec_prefix(nsenter=True) if ns else []
    return subprocess.run([*prefix, RACKCKPT, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          check=check, env=env)


def entered(ns, proc):
    """PROC, once it runs in NS: `nsenter --net` enters it before it
    execs, and a loaded machine may show the pid outside it until then."""
    want = os.stat(f"/run/netns/{ns.name}").st_ino
    testbed.wait_until(lambda: os.stat(f"/proc/{proc.pid}/ns/net").st_ino
                       == want, 5, f"{proc.pid} in {ns.name}")
    return proc


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


@pytest.fixture
def sleeper():
    """A process in the host namespace that nothing may touch."""
    proc = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL,
                            start_new_session=True)
    yield proc
    testbed.terminate([proc])


@pytest.fixture
def tmpdir_path():
    path = Path(tempfile.mkdtemp(prefix="rackckpt-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def relay_dir(tmpdir_path, monkeypatch):
    """run and dump agree on a relay directory of the test's own."""
    path = tmpdir_path / "relay"
    monkeypatch.setenv("RACKS_RELAY_DIR", str(path))
    return path


# --- usage, manual page -------------------------------------------------------

def test_help_lists_commands_and_the_man_page_documents_every_option():
    proc = rackckpt("--help", check=True)
    for cmd in ("mpirun", "jobs", "migrate", "evacuate", "dump", "restore",
                "move", "run", "probe", "unlock", "abort"):
        assert re.search(rf"^  {cmd} ", proc.stdout, re.M), proc.stdout
    options = set(re.findall(r"--([a-z][a-z-]+)", proc.stdout))
    assert {"criu", "allow-unmanaged", "wait", "timeout", "relay-fd",
            "relay-env", "relay-loopback-env", "relay-addr", "socket", "to",
            "to-socket", "with", "openmpi", "trees", "pids", "json", "keep",
            "job", "ckpt-dir", "mpirun"} <= options
    page = MAN.read_text()
    documented = {o.replace("\\-", "-") for o in
                  re.findall(r"Fl \\-((?:[a-z]|\\-)+)", page)}
    assert options <= documented, options - documented
    assert set(re.findall(r"^\.It Cm (\w+)", page, re.M)) >= {
        "mpirun", "jobs", "migrate", "evacuate", "dump", "restore", "move",
        "run", "probe", "unlock", "abort", "help"}


def test_man_page_is_lint_clean():
    testbed.need_tools("mandoc")
    proc = subprocess.run(["mandoc", "-T", "lint", "-W", "warning", str(MAN)],
                          capture_output=True, text=True)
    assert proc.stdout == "" and proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("args, message", [
    ([], "usage"),
    (["dump"], "usage: rackckpt dump"),
    (["dump", "12x", "/tmp/d"], "PID must be a process id"),
    (["dump", "1", "/tmp/d", "extra"], "usage: rackckpt dump"),
    (["dump", "--relay-addr", "nowhere", "1", "/tmp/d"], "--relay-addr needs"),
    (["restore"], "usage: rackckpt restore"),
    (["restore", "--timeout", "soon", "/tmp/d"], "--timeout needs seconds"),
    (["restore", "--bogus", "/tmp/d"], "unknown option '--bogus'"),
    (["run"], "usage: rackckpt run"),
    (["run", "--relay-fd", "x", "--", "true"], "--relay-fd needs"),
    (["run", "--relay-loopback-env", "X=1", "--", "true"],
     "--relay-loopback-env needs a variable name"),
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["move", "1", "/tmp/d"], "move needs --to CMD"),
    (["dump", "--to", "ssh c", "1", "/tmp/d"], "options of move"),
    (["move", "--to", "true", "1", "/tmp/a dir"], "paths may only hold"),
    (["dump", "--with", "1x", "2", "/tmp/d"], "--with needs process ids"),
    (["restore", "--wait", "/tmp/a", "/tmp/b"], "--wait takes one DIR"),
    (["probe", "--pids", "12", ], "--pids needs PID:START"),
    (["probe", "--trees", "a,b"], "--trees needs process ids"),
    (["unlock"], "usage: rackckpt unlock DIR..."),
    (["abort"], "usage: rackckpt abort DIR..."),
    (["mpirun"], "usage: rackckpt mpirun"),
    (["mpirun", "--ckpt-dir"], "option --ckpt-dir needs an argument"),
    (["jobs", "x"], "usage: rackckpt jobs"),
    (["migrate", "1", "0"], "usage: rackckpt migrate"),
    (["migrate", "one", "0", "--to", "c"], "JOB must be a job number"),
    (["migrate", "1", "x", "--to", "c"], "RANK must be rank numbers"),
    (["migrate", "1", "0", "--to", "c", "--to", "d"], "one destination"),
    (["migrate", "1", "0", "--to", "c", "--timeout", "0"], "--timeout needs"),
    (["migrate", "--job", "1", "1", "0", "--to", "c"], "--job needs"),
    (["evacuate", "c"], "usage: rackckpt evacuate"),
    (["evacuate", "--job", "x", "a", "--to", "c"], "--job needs a job"),
])
def test_bad_usage_is_exit_2_with_a_message(args, message):
    proc = rackckpt(*args)
    assert proc.returncode == 2, proc
    assert message in proc.stderr, proc.stderr


# --- refusals ------------------------------------------------------------------

def test_dump_refuses_without_criu(sleeper, tmpdir_path):
    target = tmpdir_path / "ckpt"
    proc = rackckpt("dump", "--criu", "/nonexistent/criu", sleeper.pid, target)
    assert proc.returncode == 1
    assert "CRIU not found at /nonexistent/criu" in proc.stderr
    assert "packaging/build-criu.sh" in proc.stderr
    assert "nothing changed" in proc.stderr
    assert alive(sleeper.pid) and not target.exists()


def test_dump_refuses_an_old_criu(sleeper, tmpdir_path):
    fake = tmpdir_path / "criu"
    fake.write_text("#!/bin/sh\necho 'Version: 3.17.1'\n")
    fake.chmod(0o755)
    proc = rackckpt("dump", sleeper.pid, tmpdir_path / "ckpt",
                    env={**os.environ, "RACKS_CRIU": str(fake)})
    assert proc.returncode == 1
    assert "is CRIU 3.17.1; rackckpt needs 4.2 or later" in proc.stderr
    assert alive(sleeper.pid)


def test_dump_and_restore_refuse_without_rackd(sleeper, tmpdir_path):
    need_criu()
    sock = tmpdir_path / "none.sock"
    proc = rackckpt("-S", sock, "dump", sleeper.pid, tmpdir_path / "ckpt")
    assert proc.returncode == 1
    assert f"rackd is not running (no daemon at {sock})" in proc.stderr
    assert alive(sleeper.pid) and not (tmpdir_path / "ckpt").exists()
    proc = rackckpt("-S", sock, "restore", tmpdir_path)
    assert proc.returncode == 1
    assert "rackd is not running" in proc.stderr


def test_dump_refuses_what_is_not_a_process(topo, tmpdir_path):
    need_criu()
    rackd = topo.start_rackd("a")
    proc = rackckpt("-S", rackd.sock, "dump", 4000000, tmpdir_path / "c",
                    ns=topo.a)
    assert proc.returncode == 1
    assert "4000000 is not a process" in proc.stderr


def test_dump_refuses_a_process_that_does_not_lead_its_session(topo,
                                                              tmpdir_path):
    need_criu()
    rackd = topo.start_rackd("a")
    child = entered(topo.a, topo.a.popen(
        ["sleep", "60"], nsenter=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL))
    proc = rackckpt("-S", rackd.sock, "dump", child.pid, tmpdir_path / "c",
                    ns=topo.a)
    assert proc.returncode == 1
    assert "is not the leader of its session" in proc.stderr
    assert alive(child.pid)


def test_dump_refuses_a_process_of_another_namespace(topo, sleeper,
                                                     tmpdir_path):
    need_criu()
    rackd = topo.start_rackd("a")
    proc = rackckpt("-S", rackd.sock, "dump", sleeper.pid, tmpdir_path / "c",
                    ns=topo.a)
    assert proc.returncode == 1
    assert "in another network namespace" in proc.stderr
    assert alive(sleeper.pid)


def test_restore_refuses_an_incomplete_directory(topo, tmpdir_path):
    need_criu()
    rackd = topo.start_rackd("b")
    proc = rackckpt("-S", rackd.sock, "restore", tmpdir_path, ns=topo.b)
    assert proc.returncode == 1
    assert "is not a complete checkpoint" in proc.stderr
    (tmpdir_path / "rackckpt.info").write_text("format=1\nsource_pid=99\n")
    (tmpdir_path / "racks.state").write_text("racks-state 1\nconn x=1\n")
    proc = rackckpt("-S", rackd.sock, "restore", tmpdir_path, ns=topo.b)
    assert proc.returncode == 1
    assert "racks.state is incomplete" in proc.stderr
    # Complete, but the old pid is taken here: CRIU could not restore it.
    sleeper = topo.b.popen(["sleep", "60"], stdout=subprocess.DEVNULL)
    # `ip netns exec` runs first under that pid, then becomes sleep.
    testbed.wait_until(lambda: Path(f"/proc/{sleeper.pid}/comm").read_text()
                       == "sleep\n", 10, "sleep to run")
    (tmpdir_path / "rackckpt.info").write_text(
        f"format=1\nsource_pid={sleeper.pid}\n")
    (tmpdir_path / "racks.state").write_text("racks-state 1\nend 0\n")
    (tmpdir_path / "images").mkdir()
    (tmpdir_path / "images" / "inventory.img").write_bytes(b"")
    proc = rackckpt("-S", rackd.sock, "restore", tmpdir_path, ns=topo.b)
    assert proc.returncode == 1
    assert f"pid {sleeper.pid} is taken on this host by (sleep)" in proc.stderr
    assert "nothing changed" in proc.stderr


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_dump_lists_unmanaged_connections_and_changes_nothing(topo,
                                                              tmpdir_path,
                                                              family):
    """B runs no rackd: A's connection to it is not managed (A's rackd
    asks B to adopt it, unanswered, then releases it)."""
    need_criu()
    rackd = topo.start_rackd("a")
    server = topo.b.popen([testbed.PYTHON, "-c", LISTENER, "5071"])
    testbed.read_line(server, 10, "listener on B")
    holder = topo.a.popen([testbed.PYTHON, "-c", HOLDER,
                           topo.addr["b"][family], "5071"], nsenter=True,
                          stdin=subprocess.DEVNULL, start_new_session=True)
    port = testbed.read_line(holder, 10, "holder on A").split()[1]
    target = tmpdir_path / "ckpt"
    proc = rackckpt("-S", rackd.sock, "dump", holder.pid, target, ns=topo.a)
    assert proc.returncode == 1, proc
    assert "not managed by racks" in proc.stderr
    local, remote = (racks.endpoint(topo.addr[h][family], p)
                     for h, p in (("a", port), ("b", 5071)))
    assert re.search(rf"{re.escape(local)} -> {re.escape(remote)} "
                     r"\(established, rackd: (adopting|released)",
                     proc.stderr), proc.stderr
    assert "nothing changed" in proc.stderr
    assert alive(holder.pid) and not target.exists()
    assert not any(t.startswith("table inet CRIU") for t in testbed.tables(topo.a))


def test_dump_refuses_a_directory_in_use(topo, tmpdir_path):
    need_criu()
    rackd = topo.start_rackd("a")
    child = entered(topo.a, topo.a.popen(
        ["sleep", "60"], nsenter=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, start_new_session=True))
    (tmpdir_path / "old").write_text("x")
    proc = rackckpt("-S", rackd.sock, "dump", child.pid, tmpdir_path, ns=topo.a)
    assert proc.returncode == 1
    assert "is not empty" in proc.stderr
    assert alive(child.pid)


# --- the relay wrapper ------------------------------------------------------

def test_run_exits_as_its_child_did(relay_dir):
    proc = subprocess.run([RACKCKPT, "run", "--", "sh", "-c",
                           "echo out; echo err >&2; exit 3"],
                          capture_output=True, text=True, timeout=20,
                          stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out\n", "err\n")
    proc = subprocess.run([RACKCKPT, "run", "--", "sh", "-c",
                           "cat; kill -TERM $$"], input="through stdin\n",
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == -signal.SIGTERM
    assert proc.stdout == "through stdin\n"
    assert not list(relay_dir.iterdir())      # its file is gone


def test_run_relays_extra_descriptors(relay_dir):
    """--relay-env names a socket the child talks through, as MPICH's
    PMI_FD; the child sees a socket at the same number."""
    import socket
    ours, theirs = socket.socketpair()
    child = ("import os, socket; s = socket.socket(fileno=int(os.environ"
             "['PMI_FD'])); s.sendall(b'cmd=init\\n'); print(s.recv(64)"
             ".decode().strip(), flush=True)")
    proc = subprocess.Popen(
        [RACKCKPT, "run", "--relay-env", "PMI_FD", "--relay-env", "UNSET_FD",
         "--", testbed.PYTHON, "-c", child],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, pass_fds=[theirs.fileno()],
        env={**os.environ, "PMI_FD": str(theirs.fileno())})
    theirs.close()
    ours.settimeout(10)
    assert ours.recv(64) == b"cmd=init\n"
    ours.sendall(b"cmd=response\n")
    out, err = proc.communicate(timeout=20)
    assert (proc.returncode, out) == (0, "cmd=response\n"), err


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "detached"])
def test_relayed_child_moves_to_another_host(topo, tmpdir_path, relay_dir,
                                             wait):
    """The child of `rackckpt run` on A is dumped and restored on B: its
    stdout keeps arriving through the wrapper on A, every line once and in
    order, its listener's old address is added to B's lo, and the wrapper
    exits with the child's code; so does restore with --wait (without, a
    keeper process relays and reports the end)."""
    need_criu()
    rackd_a = topo.start_rackd("a")
    rackd_b = topo.start_rackd("b")
    script = tmpdir_path / "child.py"
    script.write_text(CHILD)
    rounds = 150
    wrapper = topo.a.popen([RACKCKPT, "run", "--", testbed.PYTHON, script,
                            topo.addr["a"]["v4"], rounds, 7],
                           nsenter=True, stdin=subprocess.DEVNULL,
                           start_new_session=True)
    ready = testbed.read_line(wrapper, 10, "the child's first line").split()
    pid, port = int(ready[1]), int(ready[2])
    lines = [testbed.read_line(wrapper, 10, "a tick") for _ in range(10)]
    target = tmpdir_path / "ckpt"
    restore = None
    try:
        dump = rackckpt("-S", rackd_a.sock, "dump", pid, target, ns=topo.a)
        assert dump.returncode == 0, dump.stderr
        assert "0 connection(s) exported" in dump.stdout
        assert wrapper.poll() is None          # the launcher sees nothing
        info = (target / "rackckpt.info").read_text()
        assert f"listen={topo.addr['a']['v4']}:{port}" in info
        assert f"bound_addr={topo.addr['a']['v4']}" in info
        assert "relay_fd=1 " in info
        # A's only IPv4 address is the listener's, which B will have on
        # its lo: the wrapper is reached at A's IPv6 address instead.
        assert f"relay_addr={topo.addr['a']['v6']}" in info
        # CRIU's per-connection lock is gone from A: nothing outside the
        # tree sends to its loopback pair or its listener.
        table = re.search(r"^criu_lock_table=(.*)$", info, re.M).group(1)
        assert "criu_lock_dropped=1" in info
        assert f"table {table}" not in testbed.tables(topo.a)
        assert (target / "racks.state").read_text() == "racks-state 1\nend 0\n"
        for name in ("rackckpt.info", "racks.state"):
            assert (target / name).stat().st_mode & 0o777 == 0o600
        restore = topo.b.popen([RACKCKPT, "-S", rackd_b.sock, "restore",
                                *(["--wait"] if wait else []), target],
                               nsenter=True, stdin=subprocess.DEVNULL,
                               start_new_session=True)
        first = testbed.read_line(restore, 30, "restore's summary")
        assert first.startswith(f"process {pid} restored from"), first
        if not wait:
            assert restore.wait(10) == 0
        lo = topo.b.ip_json("addr", "show", "dev", "lo")[0]["addr_info"]
        assert topo.addr["a"]["v4"] in [a["local"] for a in lo]
        while True:
            try:
                lines.append(testbed.read_line(wrapper, 20, "a tick"))
            except testbed.TestbedError:
                break
        assert wrapper.wait(10) == 7, wrapper.stderr.read()
        out, err = restore.communicate(timeout=20)
        if wait:
            assert restore.returncode == 7, err
            assert f"process {pid} exited with status 7" in out
        assert lines == [f"tick {i}" for i in range(rounds)]
    finally:
        if restore and restore.poll() is None:
            testbed.terminate([restore])
        if alive(pid) and "child.py" in Path(f"/proc/{pid}/cmdline").read_text():
            os.kill(pid, signal.SIGKILL)


UNIX_CLIENT = r"""
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("connected", flush=True)
time.sleep(120)
"""


def test_failed_dump_leaves_the_process_running(topo, tmpdir_path, relay_dir):
    """CRIU refuses a unix connection to outside the tree: the dump fails
    after its checks, prints CRIU's log tail, removes what it wrote, and
    the child (and its wrapper) run on as before."""
    import socket
    need_criu()
    rackd = topo.start_rackd("a")
    path = str(tmpdir_path / "outside.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    wrapper = topo.a.popen([RACKCKPT, "run", "--", testbed.PYTHON, "-c",
                            UNIX_CLIENT, path], nsenter=True,
                           stdin=subprocess.DEVNULL, start_new_session=True)
    conn, _ = server.accept()
    assert testbed.read_line(wrapper, 10, "the child") == "connected"
    child = int(Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children")
                .read_text().split()[0])
    target = tmpdir_path / "ckpt"
    proc = rackckpt("-S", rackd.sock, "dump", child, target, ns=topo.a)
    assert proc.returncode == 1, proc
    assert "CRIU dump failed" in proc.stderr
    assert "--- last lines of" in proc.stderr and "External socket" in proc.stderr
    assert f"process {child} keeps running" in proc.stderr
    assert not target.exists()
    assert alive(child) and wrapper.poll() is None
    assert sorted(p.name for p in relay_dir.iterdir()) == [str(child)]
    conn.close()
    server.close()


def test_allow_unmanaged_dumps_and_says_what_is_lost(topo, tmpdir_path):
    need_criu()
    rackd = topo.start_rackd("a")
    server = topo.b.popen([testbed.PYTHON, "-c", LISTENER, "5072"])
    testbed.read_line(server, 10, "listener on B")
    holder = topo.a.popen([testbed.PYTHON, "-c", HOLDER, topo.addr["b"]["v4"],
                           "5072"], nsenter=True, stdin=subprocess.DEVNULL,
                          start_new_session=True)
    testbed.read_line(holder, 10, "holder on A")
    target = tmpdir_path / "ckpt"
    proc = rackckpt("-S", rackd.sock, "dump", "--allow-unmanaged", holder.pid,
                    target, ns=topo.a)
    assert proc.returncode == 0, proc.stderr
    assert "will be lost" in proc.stderr
    assert "0 connection(s) exported" in proc.stdout
    holder.wait(10)
    info = (target / "rackckpt.info").read_text()
    assert f"conn={topo.addr['a']['v4']}:" in info and " network" in info


# --- rackd's side of the protocol, played by a fake --------------------------

class FakeRackd:
    """Answers rackd's control protocol (common/proto.h) on a unix socket
    the way a rackd with export and import does, and records every request
    as (cmd, [(key, value), ...]). ``conns`` are the records of cmd=list.
    The state lines it exports are placeholders: only rackckpt's side of
    the protocol is under test."""

    def __init__(self, path, conns):
        import socket
        import threading
        self.path = str(path)
        self.conns = conns
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            with client:
                data = b""
                while not data.endswith(b"\n\n"):
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                pairs = [tuple(line.split("=", 1)) for line in
                         data.decode().splitlines() if line]
                client.sendall(self._answer(pairs).encode())

    def _answer(self, pairs):
        cmd = dict(pairs).get("cmd")
        args = [(k, v) for k, v in pairs if k not in ("cmd", "version")]
        self.requests.append((cmd, args))
        out = ""
        if cmd == "list":
            for c in self.conns:
                out += "record=conn\n" + "".join(f"{k}={v}\n" for k, v in c.items())
        elif cmd == "export":
            for _, n in args:
                c = next(c for c in self.conns if c["id"] == n)
                out += (f"record=conn\nid={n}\nacked=true\nstate=conn dir=out "
                        f"local={c['local']} remote={c['remote']} key=00\n")
        elif cmd == "import":
            out = "".join(f"record=conn\nid={100 + i}\n"
                          for i, _ in enumerate(args))
        elif cmd == "show":
            out = "state=connected\npeer_confirmed=true\n"
        elif cmd not in ("status", "release", "unexport", "restored"):
            return f"error=unknown command '{cmd}'\nerrno=95\n\n"
        return out + "errno=0\n\n"

    def close(self):
        self.sock.close()


def test_dump_and_restore_hand_connections_to_rackd(topo, tmpdir_path):
    """A connection rackd calls managed is exported (its state line lands
    in racks.state, 0600) and released once CRIU has dumped; restore
    imports the line and waits for rackd to show it connected."""
    need_criu()
    server = topo.r.popen([testbed.PYTHON, "-c", LISTENER, "5073"])
    testbed.read_line(server, 10, "listener on R")
    router = "10.71.1.1"
    holder = topo.a.popen([testbed.PYTHON, "-c", HOLDER, router, "5073"],
                          nsenter=True, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, start_new_session=True)
    port = testbed.read_line(holder, 10, "holder on A").split()[1]
    local = f"{topo.addr['a']['v4']}:{port}"
    conn = {"id": "5", "state": "connected", "peer": "racks", "local": local,
            "remote": f"{router}:5073", "wire_local": local}
    fake_a = FakeRackd(tmpdir_path / "a.sock", [conn])
    fake_b = FakeRackd(tmpdir_path / "b.sock", [])
    target = tmpdir_path / "ckpt"
    try:
        proc = rackckpt("-S", fake_a.sock.getsockname(), "dump", holder.pid,
                        target, ns=topo.a)
        assert proc.returncode == 0, proc.stderr
        assert "1 connection(s) exported" in proc.stdout
        assert [r[0] for r in fake_a.requests] == ["status", "list", "export",
                                                   "release"]
        assert fake_a.requests[2][1] == [("id", "5")] == fake_a.requests[3][1]
        line = f"conn dir=out local={local} remote={router}:5073 key=00"
        state = target / "racks.state"
        assert state.read_text() == f"racks-state 1\n{line}\nend 1\n"
        assert state.stat().st_mode & 0o777 == 0o600
        holder.wait(10)        # dumped and killed: its pid is free again
        # An image CRIU cannot do without is missing: the restore fails
        # and undoes what it did.
        core = next((target / "images").glob("core-*.img"))
        core.rename(core.with_suffix(".away"))
        proc = rackckpt("-S", fake_b.sock.getsockname(), "restore", target,
                        ns=topo.b)
        assert proc.returncode == 1
        assert "CRIU restore of " in proc.stderr and " failed (exited 1)" \
            in proc.stderr
        assert "--- last lines of" in proc.stderr
        assert fake_b.requests == [("status", []), ("import", [("state", line)]),
                                   ("release", [("id", "100")])]
        lo = topo.b.ip_json("addr", "show", "dev", "lo")[0]["addr_info"]
        assert topo.addr["a"]["v4"] not in [a["local"] for a in lo]
        fake_b.requests.clear()
        core.with_suffix(".away").rename(core)       # a retry works
        proc = rackckpt("-S", fake_b.sock.getsockname(), "restore", target,
                        ns=topo.b)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"^process \d+: 1 connection\(s\) connected again "
                         r"\d+\.\d{3} s after the dump started \(restore "
                         r"took \d+\.\d{3} s\)$", proc.stdout, re.M), proc.stdout
        assert fake_b.requests == [("status", []), ("import", [("state", line)]),
                                   ("restored", [("id", "100")]),
                                   ("show", [("id", "100")])]
    finally:
        fake_a.close()
        fake_b.close()
        if alive(holder.pid):
            os.kill(holder.pid, signal.SIGKILL)


def test_failed_dump_gives_the_connections_back(topo, tmpdir_path):
    """CRIU fails (an outside unix connection): rackd is asked to
    unexport what it exported, and nothing of the dump is left."""
    import socket
    need_criu()
    path = str(tmpdir_path / "outside.sock")
    outside = socket.socket(socket.AF_UNIX)
    outside.bind(path)
    outside.listen()
    server = topo.r.popen([testbed.PYTHON, "-c", LISTENER, "5074"])
    testbed.read_line(server, 10, "listener on R")
    script = ("import socket, sys, time\n"
              "u = socket.socket(socket.AF_UNIX); u.connect(sys.argv[1])\n"
              "s = socket.create_connection(('10.71.1.1', 5074))\n"
              "print('connected', s.getsockname()[1], flush=True)\n"
              "time.sleep(120)\n")
    holder = topo.a.popen([testbed.PYTHON, "-c", script, path], nsenter=True,
                          stdin=subprocess.DEVNULL, start_new_session=True)
    port = testbed.read_line(holder, 10, "holder on A").split()[1]
    local = f"{topo.addr['a']['v4']}:{port}"
    fake = FakeRackd(tmpdir_path / "a.sock", [
        {"id": "7", "state": "suspended", "peer": "racks", "local": local,
         "remote": "10.71.1.1:5074"}])
    try:
        target = tmpdir_path / "ckpt"
        proc = rackckpt("-S", fake.sock.getsockname(), "dump", holder.pid,
                        target, ns=topo.a)
        assert proc.returncode == 1
        assert "CRIU dump failed" in proc.stderr
        assert [r[0] for r in fake.requests] == ["status", "list", "export",
                                                 "unexport"]
        assert fake.requests[3][1] == [("id", "7")]
        assert not target.exists() and alive(holder.pid)
    finally:
        fake.close()
        outside.close()


MOVER = r"""
import os, socket, sys, time
listener = socket.socket()
listener.bind((sys.argv[1], 0))
listener.listen()
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def netns_of(pid):
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def test_migrate_checks_the_destination_then_moves(topo, tmpdir_path):
    """move refuses a destination without rackd, changing nothing; with
    one, the process ends up running in B's namespace."""
    need_criu()
    rackd_a = topo.start_rackd("a")
    target = tmpdir_path / "ckpt"
    # Started by a shell that exits at once: its parent, not the test,
    # reaps it when the dump ends it, which frees its pid for the restore.
    out = tmpdir_path / "mover.out"
    start = topo.a.popen(["sh", "-c", 'setsid "$@" >"$0" 2>&1 </dev/null '
                          "& echo $!", out, testbed.PYTHON, "-c", MOVER,
                          topo.addr["a"]["v4"]], nsenter=True)
    pid = int(testbed.read_line(start, 10, "the mover's pid"))
    testbed.wait_until(lambda: out.exists() and "ready" in out.read_text(),
                       10, "the mover")
    to = " ".join(topo.b.exec_prefix(nsenter=True))
    env = {**os.environ, "PATH": f"{Path(RACKCKPT).parent}:{os.environ['PATH']}"}
    try:
        proc = rackckpt("-S", rackd_a.sock, "move", "--to", to,
                        "--to-socket", tmpdir_path / "none.sock", pid,
                        target, ns=topo.a, env=env)
        assert proc.returncode == 1
        assert "the destination has no rackd answering" in proc.stderr
        assert alive(pid) and not target.exists()
        rackd_b = topo.start_rackd("b")
        proc = rackckpt("-S", rackd_a.sock, "move", "--to", to,
                        "--to-socket", rackd_b.sock, pid, target,
                        ns=topo.a, env=env)
        assert proc.returncode == 0, proc.stderr
        assert f"dumped process {pid}" in proc.stdout
        assert f"process {pid} restored from" in proc.stdout
        assert netns_of(pid) == os.stat(f"/run/netns/{topo.b.name}").st_ino
    finally:
        if alive(pid) and "python" in Path(f"/proc/{pid}/cmdline").read_text():
            os.kill(pid, signal.SIGKILL)


ECHO = r"""
import sys
for line in sys.stdin:
    if line.strip() == "quit":
        sys.exit(3)
    print("got", line.strip(), flush=True)
"""


def test_stdin_reaches_the_moved_child(topo, tmpdir_path, relay_dir):
    """What the launcher writes to the wrapper's stdin after the move
    reaches the restored child on B."""
    need_criu()
    rackd_a = topo.start_rackd("a")
    rackd_b = topo.start_rackd("b")
    wrapper = topo.a.popen([RACKCKPT, "run", "--", testbed.PYTHON, "-c", ECHO],
                           nsenter=True, stdin=subprocess.PIPE,
                           start_new_session=True)
    wrapper.stdin.write("before\n")
    wrapper.stdin.flush()
    assert testbed.read_line(wrapper, 10, "the echo") == "got before"
    pid = int(Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children")
              .read_text().split()[0])
    target = tmpdir_path / "ckpt"
    restore = None
    try:
        dump = rackckpt("-S", rackd_a.sock, "dump", pid, target, ns=topo.a)
        assert dump.returncode == 0, dump.stderr
        wrapper.stdin.write("during\n")      # buffered by the wrapper
        wrapper.stdin.flush()
        restore = topo.b.popen([RACKCKPT, "-S", rackd_b.sock, "restore",
                                "--wait", target], nsenter=True,
                               stdin=subprocess.DEVNULL,
                               start_new_session=True)
        testbed.read_line(restore, 30, "restore's summary")
        assert testbed.read_line(wrapper, 10, "the echo") == "got during"
        wrapper.stdin.write("after\nquit\n")
        wrapper.stdin.flush()
        assert testbed.read_line(wrapper, 10, "the echo") == "got after"
        assert wrapper.wait(10) == 3
        assert restore.wait(10) == 3
    finally:
        if restore and restore.poll() is None:
            testbed.terminate([restore])
        if alive(pid) and "python" in Path(f"/proc/{pid}/cmdline").read_text():
            os.kill(pid, signal.SIGKILL)


# Reads nothing until GO exists, then all of its stdin: its length and
# digest.
LATE_READER = r"""
import hashlib, os, sys, time
print("ready", os.getpid(), flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
data = sys.stdin.buffer.read()
print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
sys.exit(4)
"""


def queued_bytes(ns, pid):
    """Bytes waiting in the receive queues of PID's unix sockets."""
    out = subprocess.run([*ns.exec_prefix(nsenter=True), "ss", "-xpn"],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[2]) for line in out.splitlines()[1:]
               if f"pid={pid}," in line)


def test_bytes_the_child_had_not_read_at_the_dump_reach_it(topo, tmpdir_path,
                                                           relay_dir):
    """What the wrapper had written into the child's stdin and the child
    had not read yet when it was dumped (CRIU saves that queue but cannot
    refill a socket handed in by the bridge) is written back on B before
    anything newer: every byte arrives once, in order."""
    need_criu()
    rackd_a = topo.start_rackd("a")
    rackd_b = topo.start_rackd("b")
    go = tmpdir_path / "go"
    wrapper = topo.a.popen([RACKCKPT, "run", "--", testbed.PYTHON, "-c",
                            LATE_READER, str(go)],
                           nsenter=True, stdin=subprocess.PIPE,
                           start_new_session=True, text=False)
    pid = int(testbed.read_line(wrapper, 10, "the child's first line")
              .split()[1])
    # More than the child's socket holds: the rest waits in the wrapper.
    before, after = os.urandom(100_000), os.urandom(50_000)
    wrapper.stdin.write(before)
    wrapper.stdin.flush()
    # The positive control: bytes wait in the child's socket, unread, and
    # no more come (the socket is full).
    seen = []

    def full():
        seen.append(queued_bytes(topo.a, pid))
        return len(seen) > 2 and seen[-1] == seen[-2] == seen[-3] > 0
    testbed.wait_until(full, 10, "the bytes queued at the child",
                       interval=0.2)
    queued = seen[-1]
    target = tmpdir_path / "ckpt"
    restore = None
    try:
        dump = rackckpt("-S", rackd_a.sock, "dump", pid, target, ns=topo.a)
        assert dump.returncode == 0, dump.stderr
        restore = topo.b.popen([RACKCKPT, "-S", rackd_b.sock, "restore",
                                "--wait", target], nsenter=True,
                               stdin=subprocess.DEVNULL,
                               start_new_session=True)
        testbed.read_line(restore, 30, "restore's summary")
        wrapper.stdin.write(after)
        wrapper.stdin.close()
        go.touch()
        line = testbed.read_line(wrapper, 20, "the child's digest")
        assert line.split() == [str(len(before) + len(after)),
                                hashlib.sha256(before + after).hexdigest()]
        assert wrapper.wait(10) == 4
        assert restore.wait(10) == 4
        assert f"descriptor 0: {queued} byte(s) it had not read at " \
            "the dump written back first" in restore.stderr.read()
    finally:
        if restore and restore.poll() is None:
            testbed.terminate([restore])
        if alive(pid) and "python" in Path(f"/proc/{pid}/cmdline").read_text():
            os.kill(pid, signal.SIGKILL)


# A server on A's loopback: echoes each line of a connection, and after
# the client's half-close says how many lines it had and how many
# connections it accepted in all.
LOOPBACK_SERVER = r"""
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print("port", s.getsockname()[1], flush=True)
accepted = 0
while True:
    c, _ = s.accept()
    accepted += 1
    f = c.makefile("rb")
    lines = 0
    for line in f:
        lines += 1
        c.sendall(b"echo " + line)
    c.sendall(b"total %d conn %d\n" % (lines, accepted))
    f.close()
    c.close()
"""

# Connects to the loopback address in $RACKS_TEST_URI (as an MPI rank to
# its daemon), then talks through that one connection, round by round.
LOOPBACK_CLIENT = r"""
import os, re, socket, sys, time
uri, rounds = os.environ["RACKS_TEST_URI"], int(sys.argv[1])
port = int(re.search(r"tcp4://127\.0\.0\.1:(\d+)", uri)[1])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
print("ready", os.getpid(), uri, flush=True)
for i in range(rounds):
    s.sendall(b"%d\n" % i)
    assert f.readline() == b"echo %d\n" % i
    print(f"tick {i}", flush=True)
    time.sleep(0.02)
s.shutdown(socket.SHUT_WR)
print(f.read().decode().strip(), flush=True)
sys.exit(6)
"""


def test_loopback_connection_follows_the_moved_child(topo, tmpdir_path,
                                                     relay_dir):
    """`run --relay-loopback-env` with a server on A's loopback named in
    the child's environment: the child, under the agent, talks to it
    through one connection before it is dumped on A and after it is
    restored on B (where nothing listens on that port), every round in
    order, and its half-close reaches the server, whose answer comes
    back; the server accepted that one connection only."""
    need_criu()
    rackd_a = topo.start_rackd("a")
    rackd_b = topo.start_rackd("b")
    server = topo.a.popen([testbed.PYTHON, "-c", LOOPBACK_SERVER])
    port = int(testbed.read_line(server, 10, "the loopback server").split()[1])
    uri = f"1234.0;tcp4://127.0.0.1:{port}"
    rounds = 150
    wrapper = topo.a.popen(
        [RACKCKPT, "-v", "run", "--relay-loopback-env", "RACKS_TEST_URI", "--",
         testbed.PYTHON, "-c", LOOPBACK_CLIENT, rounds], nsenter=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "RACKS_TEST_URI": uri})
    ready = testbed.read_line(wrapper, 10, "the child's first line").split()
    pid, seen = int(ready[1]), ready[2]
    # The same prefix and address, the agent's port.
    assert seen.startswith("1234.0;tcp4://127.0.0.1:") and seen != uri
    agent = int(Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children")
                .read_text().split()[0])
    assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1] \
        .split()[1] == str(agent)                # the command's parent
    lines = [testbed.read_line(wrapper, 10, "a tick") for _ in range(10)]
    target = tmpdir_path / "ckpt"
    try:
        dump = rackckpt("-S", rackd_a.sock, "dump", agent, target, ns=topo.a)
        assert dump.returncode == 0, dump.stderr
        assert wrapper.poll() is None
        info = (target / "rackckpt.info").read_text()
        assert "relay_fd=3 " in info             # the agent's channel
        assert re.search(r"^conn=127\.0\.0\.1:\d+ 127\.0\.0\.1:\d+ pair$",
                         info, re.M), info
        # Reaped by the wrapper, their pids are free at once.
        testbed.wait_until(lambda: not any(Path(f"/proc/{p}").exists()
                                           for p in (agent, pid)),
                           5, "the dumped tree's pids")
        restore = rackckpt("-S", rackd_b.sock, "restore", target, ns=topo.b)
        assert restore.returncode == 0, restore.stderr
        assert f"process {agent} restored from" in restore.stdout
        while True:
            try:
                lines.append(testbed.read_line(wrapper, 20, "a tick"))
            except testbed.TestbedError:
                break
        assert wrapper.wait(10) == 6, wrapper.stderr.read()
        assert lines == [f"tick {i}" for i in range(rounds)] + \
            [f"total {rounds} conn 1"]
    finally:
        for p in (agent, pid):                    # restored: not our child
            try:
                cmdline = Path(f"/proc/{p}/cmdline").read_text()
            except FileNotFoundError:
                continue
            if alive(p) and ("rackckpt" in cmdline or "RACKS_TEST_URI" in cmdline):
                os.kill(p, signal.SIGKILL)


def restored_kill(*pids, marks=("rackckpt", "RACKS_TEST_URI", "child.py")):
    """Kill what a test restored (not our children), if still theirs."""
    for p in pids:
        try:
            cmdline = Path(f"/proc/{p}/cmdline").read_text()
        except FileNotFoundError:
            continue
        if alive(p) and any(m in cmdline for m in marks):
            os.kill(p, signal.SIGKILL)


def stalled(topo, wrapper, where, lines):
    """Fail saying where the relayed bytes stopped: A's sockets and their
    queues, and what the wrapper (-v) said."""
    ss = subprocess.run([*topo.a.exec_prefix(nsenter=True), "ss", "-tnpa"],
                        capture_output=True, text=True).stdout
    wrapper.kill()
    raise AssertionError(f"stalled at {where} after {len(lines)} lines "
                         f"(last {lines[-3:]}); A's sockets:\n{ss}\nthe "
                         f"wrapper said:\n{wrapper.stderr.read()[-6000:]}")


def test_relayed_child_moves_again_and_back(topo, tmpdir_path, relay_dir):
    """The loopback client under the agent moves A -> B, then B -> A: the
    keeper of the first restore on B relays it and writes its relay file,
    so the second dump finds the wrapper (on A) through it; B's keeper
    then ends quietly, and the wrapper takes the connections of the
    restore on A. Every round arrives in order, the half-close reaches
    the server through the keeper on A (told first: eof=3), and the
    server accepted one connection in all."""
    need_criu()
    rackd_a = topo.start_rackd("a")
    rackd_b = topo.start_rackd("b")
    server = topo.a.popen([testbed.PYTHON, "-c", LOOPBACK_SERVER])
    port = int(testbed.read_line(server, 10, "the loopback server").split()[1])
    rounds = 300
    wrapper = topo.a.popen(
        [RACKCKPT, "-v", "run", "--relay-loopback-env", "RACKS_TEST_URI", "--",
         testbed.PYTHON, "-c", LOOPBACK_CLIENT, rounds], nsenter=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "RACKS_TEST_URI": f"7.0;tcp4://127.0.0.1:{port}"})
    pid = int(testbed.read_line(wrapper, 10, "the child's first line").split()[1])
    agent = int(Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children")
                .read_text().split()[0])
    lines = [testbed.read_line(wrapper, 10, "a tick") for _ in range(10)]
    try:
        hops = [(topo.a, rackd_a, topo.b, rackd_b), (topo.b, rackd_b, topo.a, rackd_a)]
        for i, (src, rk_src, dst, rk_dst) in enumerate(hops):
            target = tmpdir_path / f"ckpt{i}"
            dump = rackckpt("-S", rk_src.sock, "dump", agent, target, ns=src)
            assert dump.returncode == 0, dump.stderr
            info = (target / "rackckpt.info").read_text()
            # The wrapper stays on A: both dumps name A's address.
            assert f"relay_addr={topo.addr['a']['v4']}\n" in info, info
            testbed.wait_until(lambda: not any(Path(f"/proc/{p}").exists()
                                               for p in (agent, pid)),
                               5, "the dumped tree's pids")
            restore = rackckpt("-S", rk_dst.sock, "restore", target, ns=dst)
            assert restore.returncode == 0, restore.stderr
            assert netns_of(agent) == os.stat(f"/run/netns/{dst.name}").st_ino
            # The keeper writes the relay file once CRIU is done.
            relay = relay_dir / str(agent)
            testbed.wait_until(lambda: relay.exists() and
                               f"addr={topo.addr['a']['v4']}\n" in
                               relay.read_text(), 5, "the keeper's relay file")
            try:
                lines += [testbed.read_line(wrapper, 10, "a tick")
                          for _ in range(10)]
            except testbed.TestbedError:
                stalled(topo, wrapper, f"hop {i}", lines)
        while True:
            try:
                lines.append(testbed.read_line(wrapper, 20, "a tick"))
            except testbed.TestbedError:
                break
        try:
            code = wrapper.wait(10)
        except subprocess.TimeoutExpired:
            stalled(topo, wrapper, "the end", lines)
        assert code == 6, wrapper.stderr.read()
        assert lines == [f"tick {i}" for i in range(rounds)] + \
            [f"total {rounds} conn 1"]
        # Every relayer cleaned up after itself.
        testbed.wait_until(lambda: not list(relay_dir.iterdir()), 5,
                           "the relay files to go")
    finally:
        restored_kill(agent, pid)


# --- jobs without MPI: what the job commands say when there is nothing ------

def test_job_commands_without_jobs(tmp_path):
    """No controller runs: jobs lists none (a socket left by a dead one
    is not a job), migrate names the missing job and changes nothing,
    evacuate has nothing to move; mpirun refuses a fork agent of the
    user's own before it starts anything."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "3.sock").write_text("")          # a dead controller's
    (jobs / "3.lock").write_text("")          # and its lock, not held
    env = {**os.environ, "RACKS_JOBS_DIR": str(jobs)}
    proc = rackckpt("jobs", env=env)
    assert (proc.returncode, proc.stdout) == \
        (0, "no jobs (rackckpt mpirun starts them)\n"), proc
    proc = rackckpt("jobs", "--json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {"jobs": []}
    proc = rackckpt("migrate", "3", "0", "--to", "node7", env=env)
    assert proc.returncode == 1, proc
    assert "job 3: refused: job 3's controller does not answer" in \
        proc.stdout, proc
    proc = rackckpt("migrate", "--json", "4", "0", "--to", "node7", env=env)
    assert proc.returncode == 1, proc
    report = json.loads(proc.stdout)
    assert report == {"job": 4, "ok": False, "ranks": [],
                      "error": "no job 4 (rackckpt jobs lists them)"}, report
    proc = rackckpt("evacuate", "node4", "--to", "node7", env=env)
    assert (proc.returncode, proc.stdout) == \
        (0, "no jobs (rackckpt mpirun starts them): nothing to move\n"), proc
    proc = rackckpt("mpirun", "--mca", "orte_fork_agent", "valgrind", "-np",
                    "1", "true", env=env)
    assert proc.returncode == 2, proc
    assert "rackckpt sets orte_fork_agent itself" in proc.stderr
    assert sorted(p.name for p in jobs.iterdir()) == ["3.lock", "3.sock"]
