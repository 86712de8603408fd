"""rackd as a systemd service: sd_notify messages, the watchdog, the unit's
hardening, the default configuration, `make install` and the Debian package.

Topology: the standard A -- R -- B (see testbed.py); rackd runs in A, and in
B where a racks peer is needed. The tests play the service manager: they
bind the notification socket and set NOTIFY_SOCKET / WATCHDOG_USEC.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import racks
import testbed

REPO = testbed.REPO
UNIT = REPO / "packaging" / "rackd.service"
DEFAULT_CONF = REPO / "packaging" / "racks.conf"


class NotifySocket:
    """The service manager's end: a datagram socket at a short path (the
    limit is 108 bytes), collecting rackd's messages as dicts."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="rk-notify-")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def close(self):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _recv(self, timeout):
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(4096).decode()
        except socket.timeout:
            return None
        return dict(line.split("=", 1) for line in data.split("\n"))

    def next(self, timeout, what):
        """The next message, skipping watchdog kicks."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = self._recv(left)
            if msg is not None and "WATCHDOG" not in msg:
                return msg
        raise AssertionError(f"no {what} within {timeout}s")

    def collect(self, seconds):
        """Every message of the next `seconds`, as (monotonic time, msg)."""
        got, deadline = [], time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            msg = self._recv(left)
            if msg is not None:
                got.append((time.monotonic(), msg))
        return got

    def kicks(self, seconds):
        return [t for t, msg in self.collect(seconds) if msg.get("WATCHDOG") == "1"]


@pytest.fixture
def notify():
    sock = NotifySocket()
    yield sock
    sock.close()


def unit_settings():
    """(key, value) of every setting line of the unit, in order."""
    return [tuple(line.split("=", 1)) for line in UNIT.read_text().splitlines()
            if "=" in line and not line.startswith("#")]


def unit_values(key):
    return [v for k, v in unit_settings() if k == key]


# --- sd_notify ---------------------------------------------------------------

def test_ready_reload_status_and_stopping(topo, notify):
    rackd = topo.start_rackd("a", config="sweep_interval = 200ms\n",
                             env={"NOTIFY_SOCKET": notify.path})
    mode = racks.expected_queue_mode()
    ready = notify.next(5, "READY=1")
    assert ready == {"READY": "1",
                     "STATUS": f"queue 4207 ({mode}), option path queue, "
                               "connections: 0"}

    before = time.monotonic()
    rackd.ctl("reload")
    reloading = notify.next(5, "RELOADING=1")
    # MONOTONIC_USEC, as Type=notify-reload (systemd >= 253) requires.
    assert reloading["RELOADING"] == "1"
    assert before * 1e6 <= int(reloading["MONOTONIC_USEC"]) <= time.monotonic() * 1e6
    assert notify.next(5, "READY=1 after the reload")["READY"] == "1"

    # A refused reload ends too: the old configuration stays, ready.
    rackd.conf.write_text("bogus = 1\n")
    proc = testbed.run([rackd.rackctl, "-S", rackd.sock, "reload"], check=False)
    assert proc.returncode != 0
    assert notify.next(5, "RELOADING=1")["RELOADING"] == "1"
    assert notify.next(5, "READY=1 after a refused reload")["READY"] == "1"

    # STATUS follows the connection table (renewed every sweep).
    server = topo.b.popen([sys.executable, "-c",
                           "import socket, time\n"
                           "s = socket.create_server(('', 7000))\n"
                           "print('READY', flush=True)\n"
                           "c = s.accept()\ntime.sleep(60)"])
    assert testbed.read_line(server, 10, "server") == "READY"
    topo.a.popen([sys.executable, "-c",
                  "import socket, time\n"
                  f"c = socket.create_connection(('{topo.addr['b']['v4']}', 7000))\n"
                  "time.sleep(60)"])
    deadline = time.monotonic() + 5
    while notify.next(deadline - time.monotonic(), "STATUS with the connection") \
            .get("STATUS") != f"queue 4207 ({mode}), option path queue, " \
            "connections: 1":
        pass

    assert rackd.stop() == 0
    rest = [msg for _, msg in notify.collect(0.3)]
    assert rest and rest[-1] == {"STOPPING": "1"}, rest


def test_abstract_notify_socket(topo):
    """NOTIFY_SOCKET=@name: abstract names live in the network namespace,
    so the listener runs in A with rackd."""
    name = f"rk-notify-{os.getpid()}-{topo.tag}"
    listener = topo.a.popen([sys.executable, "-c",
                             "import socket, sys\n"
                             "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                             "s.bind('\\0' + sys.argv[1])\n"
                             "print('BOUND', flush=True)\n"
                             "while True:\n"
                             "    print(repr(s.recv(4096).decode()), flush=True)\n",
                             name])
    assert testbed.read_line(listener, 10, "listener") == "BOUND"
    topo.start_rackd("a", env={"NOTIFY_SOCKET": "@" + name})
    line = testbed.read_line(listener, 5, "READY on the abstract socket")
    assert line.startswith("'READY=1\\nSTATUS=queue 4207"), line


# --- the watchdog --------------------------------------------------------------

@pytest.mark.timing
def test_watchdog_kicks_while_served_and_not_while_stopped(topo, notify):
    rackd = topo.start_rackd("a", env={"NOTIFY_SOCKET": notify.path,
                                       "WATCHDOG_USEC": "1000000"})
    assert "watchdog: 1000 ms, kicked every 500 ms" in rackd.log()
    # Handshakes cross the queue meanwhile: serving it delays no kick.
    server = testbed.start_xfer_server(topo.b, 5001, count=3)
    clients = [testbed.start_xfer_client(topo.a, topo.addr["b"]["v4"], 5001,
                                         100_000, rate=100_000)
               for _ in range(3)]
    kicks = notify.kicks(2.5)
    assert len(kicks) >= 4, kicks
    gaps = [b - a for a, b in zip(kicks, kicks[1:])]
    assert max(gaps) < 1.0, f"a gap reached the watchdog interval: {gaps}"
    for client in clients:
        client.result(30)
    server.results(30)

    # A stopped rackd serves nothing and must let the watchdog expire.
    rackd.kill(signal.SIGSTOP)
    try:
        notify.collect(0.1)                  # a kick already on its way
        assert notify.kicks(2.0) == [], "kicked while stopped"
    finally:
        rackd.kill(signal.SIGCONT)
    assert notify.kicks(1.0), "no kick after SIGCONT"
    assert rackd.stop() == 0


@pytest.mark.parametrize("env, note", [
    ({"WATCHDOG_USEC": "600000", "WATCHDOG_PID": "1"}, None),
    ({"WATCHDOG_USEC": "0"}, "malformed WATCHDOG_USEC"),
    ({"WATCHDOG_USEC": "600000", "WATCHDOG_PID": "x"}, "malformed WATCHDOG_USEC"),
], ids=["another-pid", "zero", "bad-pid"])
def test_no_watchdog_unless_meant_for_rackd(topo, notify, env, note):
    """As sd_watchdog_enabled(): WATCHDOG_PID names the process meant."""
    rackd = topo.start_rackd("a", env={"NOTIFY_SOCKET": notify.path, **env})
    msgs = [msg for _, msg in notify.collect(1.0)]
    assert msgs and msgs[0]["READY"] == "1"
    assert not [m for m in msgs if "WATCHDOG" in m], msgs
    if note:
        assert note in rackd.log()


# --- the unit ----------------------------------------------------------------

def test_unit_passes_systemd_analyze_verify(tmp_path):
    """Verified as installed: ExecStart and ExecReload point at the built
    programs and man finds the pages of Documentation=."""
    testbed.need_tools("systemd-analyze")
    for section in ("man5", "man8"):
        (tmp_path / "man" / section).mkdir(parents=True)
    for page in (REPO / "man").iterdir():
        shutil.copy(page, tmp_path / "man" / f"man{page.suffix[1:]}")
    text = UNIT.read_text()
    assert "/usr/sbin/rackd -f" in text and "/usr/sbin/rackctl reload" in text
    unit = tmp_path / "rackd.service"
    unit.write_text(text.replace("/usr/sbin/", f"{REPO}/build/"))
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MANPATH": str(tmp_path / "man")})
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr


def test_unit_settings_are_commented_and_as_documented():
    """Every setting of [Service] and [Install] has its reason above it."""
    block_commented = False
    service = UNIT.read_text().split("\n[Service]\n", 1)[1]
    for line in service.splitlines():
        if line.startswith("#"):
            block_commented = True
        elif not line.strip() or line.startswith("["):
            block_commented = False
        else:
            assert block_commented, f"setting without a comment above: {line}"
    assert unit_values("Type") == ["notify"]
    assert unit_values("NotifyAccess") == ["main"]
    assert unit_values("WatchdogSec") == ["10s"]
    assert unit_values("Restart") == ["on-failure"]
    assert unit_values("RuntimeDirectory") == ["racks"]
    # rackd's default control socket lives in the runtime directory.
    assert '"/run/racks/rackd.sock"' in (REPO / "rackd/core/rackd.h").read_text()
    assert unit_values("Documentation") == [
        "man:rackd(8) man:rackctl(8) man:racks.conf(5)"]


def unit_caps():
    caps = unit_values("CapabilityBoundingSet")[0].split()
    return caps, ",".join(["-all"] + ["+" + c[4:].lower() for c in caps])


def wrapper(path, prefix, binary=None):
    """An executable that runs PREFIX... rackd ARGS (setpriv execs rackd,
    which keeps the pid the test-bed knows)."""
    binary = binary or testbed.default_rackd()
    path.write_text("#!/bin/sh\nexec " + " ".join(prefix) + f" {binary} \"$@\"\n")
    path.chmod(0o755)
    return str(path)


def racks_connection(topo):
    """A racks connection from A to B and back, checked byte for byte."""
    server = testbed.start_xfer_server(topo.b, 5002, send=200_000)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"]["v4"], 5002,
                                       200_000, recv=True)
    racks.check_both_ways(server, client, 200_000)


def effective_caps(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^CapEff:\s+(\w+)", status, re.M).group(1), 16)


NET_ADMIN_RAW = (1 << 12) | (1 << 13)   # CAP_NET_ADMIN, CAP_NET_RAW


@pytest.mark.parametrize("path", ["queue", "bpf"])
def test_unit_capabilities_are_enough(topo, tmp_path, path):
    """rackd starts, sets up racks connections, reloads and stops with
    only the unit's bounding set (root, as the unit runs it), on either
    option path; once started it keeps CAP_NET_ADMIN and CAP_NET_RAW
    alone (CAP_BPF and CAP_PERFMON serve the start only)."""
    testbed.need_tools("setpriv")
    caps, setpriv_caps = unit_caps()
    assert caps == ["CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_BPF", "CAP_PERFMON"]
    binary = wrapper(tmp_path / "rackd-caps",
                     ["setpriv", "--bounding-set", setpriv_caps,
                      "--inh-caps", "-all"])
    rackd = topo.start_rackd("a", binary=binary, path=path)
    topo.start_rackd("b", path=path)
    assert effective_caps(rackd.pid) == NET_ADMIN_RAW
    st = rackd.status()
    assert st["option_path"] == path, st
    if path == "bpf":
        # The listener iterator was not refused for want of a capability
        # (it may be for want of kernel BTF or Linux 6.10: said so).
        assert "CAP_" not in st.get("bpf_old_listeners_reason", ""), st
    racks_connection(topo)
    if path == "bpf":
        assert rackd.status()["bpf_records_racks"] >= 1
    testbed.wait_until(lambda: rackd.status()["edp_setup_ok"] >= 1, 5,
                       "a connected racks connection")
    rackd.ctl("reload")
    assert rackd.stop() == 0
    assert racks.racks_tables(topo.a) == []
    assert "stopped" in rackd.log()


def test_without_cap_bpf_auto_falls_back_and_says_why(topo, tmp_path):
    """A bounding set without CAP_BPF (an older unit file, a container):
    kernel_option = auto runs the queue path and says why; the queue path
    needs nothing more than before."""
    testbed.need_tools("setpriv")
    binary = wrapper(tmp_path / "rackd-nobpf",
                     ["setpriv", "--bounding-set", "-all,+net_admin,+net_raw",
                      "--inh-caps", "-all"])
    rackd = topo.start_rackd("a", binary=binary, path="auto")
    st = rackd.status()
    assert st["option_path"] == "queue", st
    assert "CAP_BPF" in st["option_path_reason"], st
    assert "BPF unusable" in rackd.log()
    topo.start_rackd("b", path="queue")
    racks_connection(topo)
    testbed.wait_until(lambda: rackd.status()["edp_setup_ok"] >= 1, 5,
                       "a connected racks connection")


def system_calls(group):
    """The system calls of a systemd filter group, nested groups expanded."""
    out = subprocess.run(["systemd-analyze", "syscall-filter", group],
                         capture_output=True, text=True, check=True).stdout
    calls = set()
    for line in out.splitlines()[1:]:
        word = line.split("#")[0].strip()
        if word.startswith("@"):
            calls |= system_calls(word)
        elif word:
            calls.add(word)
    return calls


@pytest.mark.parametrize("path", ["queue", "bpf"])
def test_system_calls_and_sockets_pass_the_unit_filters(topo, tmp_path, path):
    """Under strace, a rackd life (start, racks set-up, a link cut, reload,
    queries, SIGTERM) uses only the unit's SystemCallFilter= system calls
    and RestrictAddressFamilies= sockets, on either option path."""
    testbed.need_tools("strace", "systemd-analyze")
    trace = tmp_path / "trace"
    # The plain build, as packaged: LeakSanitizer refuses to run under
    # ptrace, and the sanitizers' own system calls are not rackd's.
    binary = wrapper(tmp_path / "rackd-strace",
                     ["strace", "-f", "-qq", "-o", str(trace)],
                     REPO / "build" / "rackd")
    config = "kernel_option = queue\n"
    if path == "bpf":
        config = f"kernel_option = bpf\nbpf_cgroup = {topo.use_cgroup()}\n"
    rackd = testbed.Rackd(topo.a, binary=binary, config=config)
    rackd.nsenter = path == "bpf"
    real_pid = None
    try:
        rackd.start(timeout=20)
        real_pid = rackd.status()["pid"]
        assert rackd.status()["option_path"] == path
        topo.start_rackd("b", path=path)
        racks_connection(topo)
        topo.cut("a")
        topo.restore("a")
        rackd.ctl("reload")
        rackd.ctl("list")
        os.kill(real_pid, signal.SIGTERM)
        assert rackd.proc.wait(timeout=10) == 0
    finally:
        # strace ignores SIGTERM: make sure the traced rackd is gone.
        if real_pid and rackd.running:
            os.kill(real_pid, signal.SIGKILL)
    text = trace.read_text()
    used = set(re.findall(r"^\d+\s+(\w+)\(", text, re.M))
    families = set(re.findall(r"\bsocket\((AF_\w+)", text))
    allowed = set()
    for word in unit_values("SystemCallFilter")[0].split():
        allowed |= system_calls(word) if word.startswith("@") else {word}
    for value in unit_values("SystemCallFilter")[1:]:
        assert value.startswith("~")
        allowed -= {c for g in value[1:].split() for c in system_calls(g)}
    assert {"socket", "epoll_wait", "sendto"} <= used
    assert ("bpf" in used) == (path == "bpf"), sorted(used)
    assert used <= allowed, f"filtered out: {sorted(used - allowed)}"
    assert families <= set(unit_values("RestrictAddressFamilies")[0].split()), \
        families


# --- the default configuration and make install --------------------------------

def config_keys():
    text = (REPO / "rackd/core/config.c").read_text()
    keys = set(re.findall(r'\{ \.name = "(\w+)", \.set = set_\w+ \}', text))
    return keys | set(re.findall(r"^\tDURATION_KEY\((\w+), \d+\),$", text, re.M))


def rackd_dump(path):
    return subprocess.run([testbed.default_rackd(), "-n", "-c", str(path)],
                          capture_output=True, text=True, check=True).stdout


def test_default_config_lists_every_key_at_its_default(tmp_path):
    text = DEFAULT_CONF.read_text()
    shown = set(re.findall(r"^#(\w+) = ", text, re.M))
    # The lists have no default, nor bpf_cgroup (the cgroup2 mount,
    # wherever it is): shown as examples only.
    lists = {"exclude", "trust_accept_new", "trust_pinned", "trust_anonymous",
             "bpf_cgroup"}
    assert shown == config_keys() - lists
    for key in lists:
        assert f"{key} = " in text, key
    defaults = rackd_dump("/nonexistent/racks.conf")
    assert rackd_dump(DEFAULT_CONF) == defaults
    uncommented = tmp_path / "racks.conf"
    uncommented.write_text(re.sub(r"^#(\w+ = )", r"\1", text, flags=re.M))
    assert rackd_dump(uncommented) == defaults


def make(*args):
    return testbed.make(*args, capture_output=True, text=True)


def test_make_install_adds_the_unit_and_keeps_a_changed_config(tmp_path):
    make("install", f"DESTDIR={tmp_path}", "PREFIX=/opt/racks")
    unit = tmp_path / "lib/systemd/system/rackd.service"
    conf = tmp_path / "etc/racks/racks.conf"
    assert unit.stat().st_mode & 0o777 == 0o644
    assert "ExecStart=/opt/racks/sbin/rackd -f\n" in unit.read_text()
    assert "ExecReload=/opt/racks/sbin/rackctl reload\n" in unit.read_text()
    assert conf.read_text() == DEFAULT_CONF.read_text()

    conf.write_text("queue = 4300\n")
    make("install", f"DESTDIR={tmp_path}", "PREFIX=/opt/racks")
    assert conf.read_text() == "queue = 4300\n", "install overwrote racks.conf"
    make("uninstall", f"DESTDIR={tmp_path}", "PREFIX=/opt/racks")
    assert not unit.exists()
    assert conf.read_text() == "queue = 4300\n", "uninstall removed a changed racks.conf"
    shutil.copy(DEFAULT_CONF, conf)
    make("uninstall", f"DESTDIR={tmp_path}", "PREFIX=/opt/racks")
    assert not conf.exists()


# --- the Debian package (slow) ------------------------------------------------------

def documented_package_files():
    """The files rackd(8), section SYSTEMD, says the package installs."""
    page = (REPO / "man/rackd.8").read_text()
    section = page.split(".Sh SYSTEMD\n", 1)[1].split("\n.Sh ", 1)[0]
    listing = section.split(".Bl -tag", 1)[1].split(".El", 1)[0]
    return re.findall(r"^\.It Pa (\S+)", listing, re.M)


@pytest.mark.bulk
@pytest.mark.slow
def test_deb_builds_lints_clean_and_puts_files_where_documented(tmp_path):
    testbed.need_tools("dpkg-buildpackage", "lintian", "dh", "fakeroot")
    out = tmp_path / "deb"
    before = set(os.listdir(REPO)) | set(os.listdir(REPO.parent))
    proc = testbed.make("deb", f"DEB_DIR={out}", capture_output=True,
                        text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(os.listdir(REPO)) | set(os.listdir(REPO.parent)) == before, \
        "make deb left files outside its DEB_DIR"
    debs = sorted(out.glob("racks_*.deb"))
    assert len(debs) == 1, list(out.iterdir())
    changes = next(out.glob("racks_*.changes"))

    lint = subprocess.run(["lintian", "--no-tag-display-limit", str(changes)],
                          capture_output=True, text=True, timeout=600)
    assert not [line for line in lint.stdout.splitlines()
                if line.startswith("E:")], lint.stdout

    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True)
    documented = documented_package_files()
    assert "/etc/racks/racks.conf" in documented
    for path in documented:
        assert (root / path.lstrip("/")).is_file(), f"{path} not in the package"
    for path, mode in [("usr/sbin/rackd", 0o755), ("usr/sbin/rackctl", 0o755),
                       ("usr/sbin/rackckpt", 0o755),
                       ("usr/share/man/man8/rackckpt.8.gz", 0o644),
                       ("etc/racks/racks.conf", 0o644),
                       ("lib/systemd/system/rackd.service", 0o644)]:
        assert (root / path).stat().st_mode & 0o777 == mode, path
    assert (root / "lib/systemd/system/rackd.service").read_text() == UNIT.read_text()
    assert (root / "etc/racks/racks.conf").read_text() == DEFAULT_CONF.read_text()
    conffiles = subprocess.run(["dpkg-deb", "-I", str(debs[0]), "conffiles"],
                               capture_output=True, text=True, check=True).stdout
    assert conffiles.split() == ["/etc/racks/racks.conf"]
    # The maintainer scripts enable and start the unit.
    postinst = subprocess.run(["dpkg-deb", "-I", str(debs[0]), "postinst"],
                              capture_output=True, text=True, check=True).stdout
    assert "deb-systemd-helper" in postinst and "rackd.service" in postinst
    # ...after making the host key, which is never replaced.
    assert postinst.index("rackd --init-host-key") < \
        postinst.index("deb-systemd-helper")
    version = subprocess.run(["dpkg-deb", "-f", str(debs[0]), "Version"],
                             capture_output=True, text=True, check=True).stdout.strip()
    shipped = subprocess.run([str(root / "usr/sbin/rackd"), "-V"],
                             capture_output=True, text=True, check=True).stdout
    assert shipped == f"rackd {version}\n"
