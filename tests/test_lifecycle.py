"""rackd's life cycle: its table, its socket, its options and its config.

Topology: the standard A -- R -- B (see testbed.py); only A runs rackd.
"""

import os
import signal
import subprocess

import pytest

import racks
import testbed


def test_table_appears_with_rackd_and_disappears_on_sigterm(topo):
    assert racks.racks_tables(topo.a) == []
    rackd = topo.start_rackd("a")
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    status = rackd.status()
    assert status["queue_mode"] == racks.expected_queue_mode()
    assert status["version"]
    assert rackd.stop() == 0
    assert racks.racks_tables(topo.a) == []
    assert not rackd.sock.exists(), "control socket left behind"
    assert "stopped" in rackd.log()


def test_sigint_also_removes_the_table(topo):
    rackd = topo.start_rackd("a")
    rackd.kill(signal.SIGINT)
    assert rackd.proc.wait(timeout=5) == 0
    assert racks.racks_tables(topo.a) == []


def test_xt_fallback_is_taken_where_native_queue_is_missing(topo):
    if racks.kernel_has_native_queue():
        pytest.skip("this kernel has nft_queue: the native statement is used")
    rackd = topo.start_rackd("a")
    assert rackd.status()["queue_mode"] == "xt"
    assert "using the xt NFQUEUE target" in rackd.log()


def test_forcing_native_queue_names_the_missing_kernel_option(topo):
    if racks.kernel_has_native_queue():
        pytest.skip("this kernel has nft_queue")
    rackd = testbed.Rackd(topo.a, config="queue_mode = native\n")
    topo.rackds.append(rackd)
    with pytest.raises(testbed.RackdError):
        rackd.start(timeout=5)
    assert rackd.proc.returncode == 4
    assert "CONFIG_NFT_QUEUE" in rackd.log()
    assert racks.racks_tables(topo.a) == [], "failed start left a table"


def test_forcing_xt_queue_works(topo):
    rackd = topo.start_rackd("a", config="queue_mode = xt\n")
    assert rackd.status()["queue_mode"] == "xt"


def test_stale_table_is_replaced(topo):
    testbed.nft(topo.a, "add table inet racks")
    testbed.nft(topo.a, "add chain inet racks leftover")
    rackd = topo.start_rackd("a")
    listing = testbed.nft(topo.a, "list table inet racks")
    assert "leftover" not in listing
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    assert "replaced a stale table" in rackd.log()


def test_restart_after_sigkill_leaves_one_table(topo):
    first = topo.start_rackd("a")
    first.kill(signal.SIGKILL)
    first.proc.wait(timeout=5)
    # The killed daemon's table stays (bypass keeps traffic flowing).
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    second = topo.start_rackd("a")
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    assert "replaced a stale table" in second.log()


def test_other_tables_are_never_touched(topo):
    testbed.nft(topo.a, "add table inet other")
    testbed.nft(topo.a, "add chain inet other c { type filter hook output "
                        "priority 0; }")
    testbed.nft(topo.a, "add rule inet other c tcp dport 9 counter accept")
    testbed.nft(topo.a, "add table ip legacy")
    before = testbed.nft(topo.a, "list table inet other")
    rackd = topo.start_rackd("a")
    rackd.ctl("reload")
    assert rackd.stop() == 0
    assert testbed.nft(topo.a, "list table inet other") == before
    assert "table ip legacy" in testbed.tables(topo.a)


def test_second_instance_on_the_same_socket_is_refused(topo):
    first = topo.start_rackd("a")
    proc = topo.a.run(first.command, check=False, timeout=10)
    assert proc.returncode == 1
    assert "already running" in proc.stderr
    assert first.running
    assert first.status()["pid"] == first.pid


def test_missing_config_file_means_defaults():
    proc = subprocess.run([testbed.default_rackd(), "-n", "-c",
                           "/nonexistent/racks.conf"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0
    assert "queue = 4207" in proc.stdout
    assert "ports = all" in proc.stdout


def run_rackd(*args, config=None, tmp_path=None):
    argv = [testbed.default_rackd(), *args]
    if config is not None:
        path = tmp_path / "racks.conf"
        path.write_text(config)
        argv += ["-c", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, check=False,
                          timeout=10)


@pytest.mark.parametrize("text, line, problem", [
    ("bogus = 1\n", 1, "unknown key 'bogus'"),
    ("# comment\n\nqueue 5\n", 3, "expected 'key = value'"),
    ("queue = 70000\n", 1, "queue must be a number from 0 to 65534"),
    ("queue =\n", 1, "queue has no value"),
    ("ports = 22\nports = 9000-8000\n", 2, "reversed"),
    ("ports = all, 22\n", 1, "'all' cannot be combined"),
    ("exclude = 10.1.2.3/8\n", 1, "host bits must be zero"),
    ("exclude = fd00::/200\n", 1, "bad address or prefix"),
    ("queue_mode = fast\n", 1, "queue_mode must be auto, native or xt"),
    ("syn_timeout = soon\n", 1, "syn_timeout must be a duration"),
    ("syn_timeout = 1e3ms\n", 1, "syn_timeout must be a duration"),
    ("syn_timeout = 400d\n", 1, "syn_timeout must be at most 365d"),
    ("queue = 0x\n", 1, "queue must be a number"),
    ("exclude = ::ffff:192.0.2.0/120\n", 1, "write the IPv4 prefix"),
    ("sweep_interval = 10ms\n", 1, "sweep_interval must be at least 100ms"),
    ("mark = 0\n", 1, "mark must be a nonzero"),
    ("log_level = loud\n", 1, "log_level must be info or debug"),
])
def test_bad_config_line_gets_one_line_error_and_exit_2(tmp_path, text, line,
                                                        problem):
    proc = run_rackd("-n", config=text, tmp_path=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"rackd: {tmp_path}/racks.conf:{line}: ")
    assert problem in lines[0]


def test_bad_config_refused_at_start_leaves_no_table(topo, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("queue = -1\n")
    proc = topo.a.run([testbed.default_rackd(), "-f", "-c", str(conf), "-S",
                       str(tmp_path / "s.sock"), "-s", str(tmp_path / "state")],
                      check=False)
    assert proc.returncode == 2
    assert racks.racks_tables(topo.a) == []


def test_good_config_round_trips_through_check_mode(tmp_path):
    text = ("queue = 077\nqueue_mode = xt\nports = 22, 5000-5999\n"
            "exclude = 10.9.0.0/16, fd99::/32\nexclude = 192.0.2.1\n"
            "syn_timeout = 1500ms\nsweep_interval = 2s\nmark = 0x10\n"
            "max_connections = 5000\nlog_level = debug\n")
    proc = run_rackd("-n", config=text, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    dumped = proc.stdout
    for expected in ["queue = 77", "queue_mode = xt", "ports = 22, 5000-5999",
                     "exclude = 10.9.0.0/16", "exclude = fd99::/32",
                     "exclude = 192.0.2.1/32", "syn_timeout = 1500ms",
                     "sweep_interval = 2s", "mark = 0x00000010",
                     "max_connections = 5000", "log_level = debug"]:
        assert expected in dumped
    again = run_rackd("-n", config=dumped, tmp_path=tmp_path)
    assert again.stdout == dumped


@pytest.mark.parametrize("args, problem", [
    (["-x"], "unknown option -x"),
    (["-c"], "option -c needs an argument"),
    (["-S"], "option -S needs an argument"),
    (["extra"], "unexpected argument 'extra'"),
])
def test_bad_option_gets_one_line_error_and_exit_2(args, problem):
    proc = run_rackd(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rackd: ") and problem in lines[0]


def test_version_option():
    proc = run_rackd("-V")
    assert proc.returncode == 0
    assert proc.stdout.startswith("rackd ")


def test_rackctl_without_daemon_says_so_and_exits_1(tmp_path):
    proc = subprocess.run([testbed.default_rackctl(), "-S",
                           str(tmp_path / "none.sock"), "status"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"rackctl: rackd is not running (no daemon at {tmp_path}/none.sock)"]


def test_rackctl_usage_errors(topo):
    rackd = topo.start_rackd("a")
    ctl = [testbed.default_rackctl(), "-S", str(rackd.sock)]
    for argv, code, text in [
        (["frobnicate"], 2, "unknown command 'frobnicate'"),
        (["show"], 2, "usage: rackctl show ID"),
        (["show", "abc"], 2, "connection id must be a number"),
        (["status", "-S", "/nonexistent.sock"], 1, "rackd is not running"),
        (["show", "999999"], 1, "no connection with id 999999"),
        (["--bogus", "status"], 2, "unknown option"),
    ]:
        proc = subprocess.run(ctl + argv, capture_output=True, text=True,
                              check=False)
        assert proc.returncode == code, (argv, proc.stderr)
        assert text in proc.stderr, (argv, proc.stderr)
    assert rackd.running


def test_control_protocol_rejects_bad_requests(topo):
    """Raw protocol: unknown version, missing cmd, junk lines, oversize."""
    import socket
    rackd = topo.start_rackd("a")

    def ask(payload):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(rackd.sock))
            s.sendall(payload)
            data = b""
            while not data.endswith(b"\n\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data.decode()

    assert "errno=0" in ask(b"cmd=status\nversion=1\n\n")
    assert "errno=93" in ask(b"cmd=status\nversion=9\n\n")  # EPROTONOSUPPORT
    assert "request has no cmd line" in ask(b"version=1\n\n")
    assert "malformed request line" in ask(b"garbage\n\n")
    assert "unknown command" in ask(b"cmd=nope\n\n")
    assert "request too long" in ask(b"x" * 70000)
    # Two requests on one connection get two replies.
    both = ask(b"cmd=status\n\ncmd=list\n\n")
    assert both.count("errno=0") >= 1
    assert rackd.running and rackd.status()["pid"] == rackd.pid


def test_reload_applies_a_new_policy_and_refuses_a_bad_one(topo):
    rackd = topo.start_rackd("a", config="ports = all\n")
    assert "server_ports" not in testbed.nft(topo.a, "list table inet racks")
    rackd.conf.write_text("ports = 5001\n")
    rackd.ctl("reload")
    assert "elements = { 5001 }" in testbed.nft(topo.a, "list table inet racks")

    rackd.conf.write_text("ports = 5002\nbogus = 1\n")
    proc = subprocess.run([testbed.default_rackctl(), "-S", str(rackd.sock),
                           "reload"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"{rackd.conf}:2: unknown key 'bogus'" in proc.stderr
    assert "elements = { 5001 }" in testbed.nft(topo.a, "list table inet racks")

    rackd.conf.write_text("ports = 6000-6001\n")
    rackd.kill(signal.SIGHUP)
    testbed.wait_until(
        lambda: "6000-6001" in testbed.nft(topo.a, "list table inet racks"),
        5, "SIGHUP to reload")
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    assert rackd.log().count("native nft queue unavailable") <= 1


def test_daemon_mode_detaches_after_start_up(topo, tmp_path):
    """Without -f, rackd reports start-up errors to the caller, then
    detaches: the command returns 0 and the daemon keeps serving."""
    sock = tmp_path / "d.sock"
    # A state file of its own: the default one (/var/lib/racks) is the
    # machine's, and another test's daemon may run meanwhile.
    proc = topo.a.run([testbed.default_rackd(), "-c", "/nonexistent.conf",
                       "-S", str(sock), "-s", str(tmp_path / "state")],
                      timeout=10)
    assert proc.returncode == 0
    ctl = [testbed.default_rackctl(), "-S", str(sock), "status", "--json"]
    status = testbed.json.loads(subprocess.run(ctl, capture_output=True,
                                               text=True, check=True).stdout)
    pid = status["pid"]
    try:
        assert racks.racks_tables(topo.a) == ["table inet racks"]
        assert os.getsid(pid) == pid, "the daemon leads its own session"
    finally:
        os.kill(pid, signal.SIGTERM)
        if not wait_gone(pid, 5):
            os.kill(pid, signal.SIGKILL)
            pytest.fail("the daemon ignored SIGTERM")
    assert racks.racks_tables(topo.a) == []


def wait_gone(pid, timeout):
    """True once pid has exited (a zombie of PID 1 counts as exited)."""
    def gone():
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
    try:
        testbed.wait_until(gone, timeout, "exit")
        return True
    except TimeoutError:
        return False


def test_daemon_mode_reports_start_up_failure_with_its_exit_code(topo, tmp_path):
    if racks.kernel_has_native_queue():
        pytest.skip("needs a kernel without nft_queue to fail start-up")
    conf = tmp_path / "native.conf"
    conf.write_text("queue_mode = native\n")
    proc = topo.a.run([testbed.default_rackd(), "-c", str(conf), "-S",
                       str(tmp_path / "n.sock"), "-s", str(tmp_path / "state")],
                      check=False, timeout=10)
    assert proc.returncode == 4, proc.stderr
    assert "CONFIG_NFT_QUEUE" in proc.stderr
    assert racks.racks_tables(topo.a) == []


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def test_rackd_keeps_only_net_admin_and_net_raw_and_works(topo):
    """After start-up, CAP_NET_ADMIN (bit 12) and CAP_NET_RAW (bit 13)
    only, bounding set included, and no_new_privs; everything rackd does
    later (set-up, a move with its kept address and splice, a reload, the
    state file, shutdown) still works."""
    ra = topo.start_rackd("a")
    topo.start_rackd("b")
    st = proc_status(ra.pid)
    for key in ("CapEff", "CapPrm", "CapBnd"):
        assert int(st[key], 16) == 0x3000, (key, st[key])
    assert int(st["CapInh"], 16) == 0 and int(st["CapAmb"], 16) == 0
    assert st["NoNewPrivs"] == "1"
    assert "capabilities dropped" in ra.log()
    size = 8 * 2**20
    server = testbed.start_xfer_server(topo.b, 5001, send=size, rate=4 * 2**20)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"]["v4"], 5001,
                                       size, recv=True, rate=4 * 2**20,
                                       announce=True)
    client.connected()
    racks.wait_states(ra, "connected", remote_port=5001)
    new = racks.move_and_splice(topo, "a", ra)
    assert ra.status()["addresses_kept"] == 1
    # The reload comes once the reconnection is done, on both ends (a
    # reload in the middle of one is another scenario).
    racks.wait_connected_at(ra, "wire_local", new, 10, remote_port=5001)
    rb = topo.b.rackds[-1]
    racks.wait_connected_at(rb, "wire_remote", new, 10, local_port=5001)
    ra.ctl("reload")
    racks.check_both_ways(server, client, size)
    testbed.wait_until(lambda: ra.status()["state_writes"] >= 1, 5,
                       "the state file to be written")
    # Spliced connections would keep the table past rackd (state file):
    # the transfer's, closed, is unspliced by the next sweep.
    testbed.wait_until(lambda: ra.status()["spliced"] == 0, 10, "unsplice")
    assert ra.stop() == 0
    assert racks.racks_tables(topo.a) == []


def test_non_root_clients_get_read_only_commands(topo):
    """The control socket answers anyone for status, list, show and
    events; reload and peer need root (SO_PEERCRED)."""
    rackd = testbed.Rackd(topo.a)
    # A directory every user may enter, as /run/racks is.
    rackd.dir.chmod(0o755)
    rackd.start()

    def as_nobody(*args):
        return subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             testbed.default_rackctl(), "-S", str(rackd.sock), *args],
            capture_output=True, text=True, timeout=10)

    for args in (["status"], ["list"]):
        proc = as_nobody(*args)
        assert proc.returncode == 0, (args, proc.stderr)
    for args in (["reload"], ["peer", "1", "10.1.2.3"]):
        proc = as_nobody(*args)
        assert proc.returncode == 1, (args, proc.stdout)
        assert f"'{args[0]}' needs root" in proc.stderr, proc.stderr
    rackd.ctl("reload")     # root may
    assert rackd.stop() == 0
