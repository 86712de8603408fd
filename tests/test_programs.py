"""Real, unmodified programs through a 20-second link cut during which A
moves to a new address: an OpenSSH session and an iperf3 transfer, at the
same time, each on its own TCP connection(s), neither one restarted.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B.
The clients run in A, the servers in B. R cuts A's link (A loses its
carrier); during the cut A's address moves to a fresh subnet and the old
one is retired at R, so after the restore A is reachable only at its new
address::

    before:  A 10.71.1.2 -------- R -------- B 10.71.2.2
    cut:     A 10.71.1.2 ---x---- R -------- B     (20 s, A loses carrier)
    moved:   A 10.71.3.2 ---x---- R -------- B     (10.71.1.0/24 retired)
    restore: A 10.71.3.2 -------- R -------- B

    A: rackd, ssh, iperf3 -c            B: rackd, sshd, iperf3 -s

How the programs are started across the namespaces:

- sshd runs in B as root, in the foreground, ``/usr/sbin/sshd -D -e -f
  CONFIG -p 2222``. Everything it reads is made by the test in its temp
  dir: the config (no PAM, no pid file, public keys only, StrictModes off
  so the temp dir's modes do not matter), a fresh ed25519 host key and an
  authorized_keys holding a fresh client key. The only file outside the
  temp dir is sshd's privilege-separation directory /run/sshd, created if
  it is missing. ``ip netns exec`` shares the host's file system (only
  /sys is private), so sshd in B sees all of these paths.
- ssh runs in A with that client key and no configuration of its own
  (``-F /dev/null``, no known-hosts file, batch mode), logs in to B as
  root and runs a shell loop printing a counter every 100 ms for about
  40 s. A thread time-stamps each line as the client prints it.
- ``iperf3 -s -1`` runs in B, ``iperf3 -c ... -b 20M --json`` in A: a
  40-second paced upload on a data connection beside its control
  connection.

Readiness is polled (``ss -ltn`` in B for the servers, rackctl list for
the connections), never slept; the only sleeps are the run-up to the cut
and the cut itself.
"""

import json
import os
import signal
import subprocess
import threading
import time

import racks
import testbed

FAST = "suspend_after = 1s\nsweep_interval = 1s\n"
SSH_PORT = 2222
IPERF_PORT = 5201
CUT_SECONDS = 20
RUN_SECONDS = 40
COUNT = 400                 # counter lines, one per 100 ms (plus a fork)
IPERF_RATE = "20M"          # bits/s
SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = "/run/sshd"

SSHD_CONFIG = """\
HostKey {dir}/host_ed25519
AuthorizedKeysFile {dir}/authorized_keys
PidFile none
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthenticationMethods publickey
ClientAliveInterval 0
LogLevel VERBOSE
"""

COUNTER = ("i=0; while [ $i -lt {n} ]; do echo $i; i=$((i+1)); "
           "sleep 0.1; done")


# --- programs ----------------------------------------------------------------

def keygen(path):
    testbed.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                 "racks-test", "-f", str(path)])


def listening(ns, port):
    """True once something in ns listens on TCP port (``ss -ltn``)."""
    out = ns.run(["ss", "-Hltn", f"sport = :{port}"]).stdout
    return bool(out.strip())


def wait_listening(ns, port, proc, what, timeout=10):
    def ready():
        if proc.poll() is not None:
            raise testbed.TestbedError(f"{what} exited {proc.returncode}")
        return listening(ns, port)
    testbed.wait_until(ready, timeout, f"{what} to listen on {port}")


def start_sshd(topo, tmp):
    """sshd in B with its own config, host key and authorized client key;
    returns (sshd Popen, client key path) once it listens."""
    os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
    keygen(tmp / "host_ed25519")
    keygen(tmp / "client_ed25519")
    (tmp / "authorized_keys").write_text(
        (tmp / "client_ed25519.pub").read_text())
    config = tmp / "sshd_config"
    config.write_text(SSHD_CONFIG.format(dir=tmp))
    with open(tmp / "sshd.log", "w") as log:
        sshd = topo.b.popen([SSHD, "-D", "-e", "-f", config,
                             "-p", SSH_PORT],
                            stdout=log, stderr=subprocess.STDOUT)
    wait_listening(topo.b, SSH_PORT, sshd, "sshd")
    return sshd, tmp / "client_ed25519"


class CounterSession:
    """ssh in A running COUNTER on B; a thread time-stamps every line."""

    def __init__(self, topo, key, tmp):
        self.stderr_path = tmp / "ssh.stderr"
        argv = ["ssh", "-F", "/dev/null", "-i", key, "-n", "-T",
                "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null",
                "-o", "ServerAliveInterval=0",
                "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=10",
                "-o", "LogLevel=ERROR",
                "-p", SSH_PORT, f"root@{topo.addr['b']['v4']}",
                COUNTER.format(n=COUNT)]
        with open(self.stderr_path, "w") as err:
            self.proc = topo.a.popen(argv, stdin=subprocess.DEVNULL,
                                     stderr=err)
        self.lines = []          # (time.monotonic(), line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def wait(self, timeout):
        """Exit code, once ssh has exited and its output is read."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"ssh still running after {timeout}s; {len(self.lines)} "
                f"lines so far, last {self.lines[-1:]}; stderr:\n"
                f"{self.stderr_path.read_text()}") from None
        self.reader.join(10)
        return code

    def longest_gap(self):
        """Longest wall-clock pause between consecutive lines, and the
        index of the line after it."""
        gaps = [(b[0] - a[0], i + 1)
                for i, (a, b) in enumerate(zip(self.lines, self.lines[1:]))]
        return max(gaps) if gaps else (0.0, 0)


def start_iperf(topo, tmp):
    """iperf3 server in B (one test), then the client in A; returns both."""
    with open(tmp / "iperf3-server.log", "w") as log:
        server = topo.b.popen(["iperf3", "-s", "-1", "-p", IPERF_PORT],
                              stdout=log, stderr=subprocess.STDOUT)
    wait_listening(topo.b, IPERF_PORT, server, "iperf3 -s")
    client = topo.a.popen(["iperf3", "-c", topo.addr["b"]["v4"],
                           "-p", IPERF_PORT, "-t", RUN_SECONDS,
                           "-b", IPERF_RATE, "--json"])
    return server, client


def iperf_result(client, timeout):
    try:
        out, err = client.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"iperf3 client still running after "
                             f"{timeout}s") from None
    assert client.returncode == 0, (client.returncode, err, out[-4000:])
    return json.loads(out)


def descendants(pid):
    """Pids of every live descendant of pid (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop_sshd(sshd):
    """Terminate sshd and, first, any session it still serves (only after
    a failure is one left): its children would outlive it."""
    if sshd.poll() is None:
        for pid in descendants(sshd.pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    testbed.terminate([sshd])


# --- rackd's view ------------------------------------------------------------

PORTS = (SSH_PORT, IPERF_PORT)
EXPECTED = {SSH_PORT: 1, IPERF_PORT: 2}     # iperf3: control + data


def program_conns(rackd, side):
    """The programs' connections in rackd: by server port, remote in A
    ('a'), local in B ('b')."""
    key = "remote_port" if side == "a" else "local_port"
    return {port: racks.conns_between(rackd, **{key: port}) for port in PORTS}


def wait_all(rackd, side, predicate, timeout, what):
    """Wait until rackd lists exactly the programs' connections and
    predicate holds for each; returns them as one list."""
    def ready():
        conns = program_conns(rackd, side)
        if any(len(conns[p]) != EXPECTED[p] for p in PORTS):
            return None
        flat = [c for p in PORTS for c in conns[p]]
        return flat if all(predicate(c) for c in flat) else None
    return testbed.wait_until(
        ready, timeout, lambda: f"{what} in {rackd.ns.name}: "
        f"{json.dumps(rackd.connections(), indent=1)}")


def host_of(endpoint):
    return endpoint.rsplit(":", 1)[0].strip("[]")


# --- the test ----------------------------------------------------------------

def test_ssh_and_iperf3_survive_a_cut_and_an_address_change(topo, tmp_path):
    """An ssh session printing a counter and an iperf3 upload, started
    before a 20 s cut of A's link during which A changes address, both
    finish normally: every counter line arrives once and in order, ssh
    exits 0, iperf3 exits 0 with what was sent received."""
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    old = topo.addr["a"]["v4"]
    sshd, key = start_sshd(topo, tmp_path)
    procs = [sshd]
    try:
        session = CounterSession(topo, key, tmp_path)
        procs.append(session.proc)
        iperf_server, iperf_client = start_iperf(topo, tmp_path)
        procs += [iperf_server, iperf_client]
        t_start = time.monotonic()

        def connected(c):
            return c["state"] == "connected"
        wait_all(ra, "a", connected, 15, "connected")
        wait_all(rb, "b", connected, 15, "connected")
        testbed.wait_until(lambda: session.lines, 15,
                           lambda: f"the first counter line: "
                           f"{session.stderr_path.read_text()}")
        time.sleep(3)

        subnet = topo.reserve_subnet("a", "v4")
        topo.cut("a")
        t_cut = time.monotonic()
        lines_at_cut = len(session.lines)

        def suspended(c):
            return c["state"] == "suspended"
        wait_all(ra, "a", suspended, 5, "suspended")
        wait_all(rb, "b", suspended, 5, "suspended")
        new = topo.move_to_new_subnet("a", "v4", new=subnet)
        time.sleep(max(0.0, CUT_SECONDS - (time.monotonic() - t_cut)))
        assert session.proc.poll() is None, "ssh exited during the cut"
        assert iperf_client.poll() is None, "iperf3 exited during the cut"
        topo.restore("a")
        t_back = time.monotonic()
        cut_seconds = t_back - t_cut

        # Both rackds follow A to its new address, for every connection.
        moved_b = wait_all(rb, "b", lambda c: connected(c) and
                           host_of(c["wire_remote"]) == new, 10,
                           f"connected, wire_remote at {new}")
        moved_a = wait_all(ra, "a", lambda c: connected(c) and
                           host_of(c["wire_local"]) == new, 10,
                           f"connected, wire_local at {new}")
        reconnected = time.monotonic() - t_back
        for c in moved_b:
            assert host_of(c["remote"]) == old, c     # the socket's own
            assert c["reconnections"] >= 1, c
        for c in moved_a:
            assert host_of(c["local"]) == old, c
            assert c["reconnections"] >= 1, c

        # ssh: every counter value once, in order, and a clean exit.
        left = RUN_SECONDS + 30 - (time.monotonic() - t_start)
        code = session.wait(left)
        stderr = session.stderr_path.read_text()
        values = [line for _, line in session.lines]
        assert values == [str(i) for i in range(COUNT)], (
            f"{len(values)} lines, first differences: "
            f"{[(i, v) for i, v in enumerate(values) if v != str(i)][:5]}"
            f"\nssh stderr:\n{stderr}")
        assert code == 0, f"ssh exited {code}:\n{stderr}"
        gap, after = session.longest_gap()
        # The session's output stopped for the cut, right where it began
        # (one line may have been on its way to the reader thread).
        assert gap > CUT_SECONDS - 5, (gap, after)
        assert lines_at_cut <= after <= lines_at_cut + 1, (after, lines_at_cut)

        # iperf3: a clean exit on both sides and every byte received.
        report = iperf_result(iperf_client, RUN_SECONDS + 30 -
                              (time.monotonic() - t_start))
        iperf_server.wait(15)
        assert iperf_server.returncode == 0, \
            (tmp_path / "iperf3-server.log").read_text()
        assert "error" not in report, report["error"]
        sent = report["end"]["sum_sent"]
        received = report["end"]["sum_received"]
        assert sent["bytes"] > 0
        lost = abs(sent["bytes"] - received["bytes"])
        assert lost <= sent["bytes"] * 0.01, (sent, received)
    finally:
        stop_sshd(sshd)
        testbed.terminate(procs[1:])

    for rackd in (ra, rb):
        st = rackd.status()
        assert st["reconnects_refused_mac"] == 0, st
    assert rb.status()["reconnects_accepted"] >= 1

    print(f"\nssh + iperf3 through a {cut_seconds:.1f} s cut, A moved "
          f"{old} -> {new}: reconnected {reconnected:.2f} s after the "
          f"restore; ssh: {COUNT} lines in order, longest gap "
          f"{gap:.2f} s before line {after}; iperf3: "
          f"{sent['bytes'] / 1e6:.1f} MB sent, {received['bytes'] / 1e6:.1f} "
          f"MB received, {received['bits_per_second'] / 1e6:.1f} Mbit/s "
          f"over {received['seconds']:.1f} s")
