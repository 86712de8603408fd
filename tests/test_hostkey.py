"""The host's identity and the known hosts (issue 22, first part):
rackd's key file beside its state, `rackctl host` and `status`, the known
hosts changed through `rackctl hosts` and kept across restarts,
`rackctl keyscan` over the classic probe, and rackd's key options.

Topology: the standard A -- R -- B (see testbed.py)::

    A (rackd, rackctl keyscan) ---- R ---- B (rackd, a server on PORT)
"""

import base64
import hashlib
import os
import subprocess

import pytest

import testbed
from test_edp import ECHO_CLOSE, start_py_server

PORT = 5001
KEY_PREFIX = "racks-x25519:"


def fingerprint(key):
    """OpenSSH's form, computed here apart from rackd's code."""
    raw = base64.b64decode(key[len(KEY_PREFIX):], validate=True)
    assert len(raw) == 32
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode()
    return "SHA256:" + digest.rstrip("=")


def new_key():
    return KEY_PREFIX + base64.b64encode(os.urandom(32)).decode()


def file_key(path):
    """The public key written in a host key file."""
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and lines[0].startswith("public ") and \
        lines[1].startswith("secret "), lines
    return lines[0].split(" ", 1)[1]


def ctl_fails(rackd, *args, code=1, as_user=None):
    prefix = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}",
              "--clear-groups"] if as_user else []
    proc = subprocess.run([*prefix, testbed.default_rackctl(), "-S",
                           str(rackd.sock), *args],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == code, (args, proc.stdout, proc.stderr)
    return proc.stderr


def rackd_cmd(*args, check=False):
    return subprocess.run([testbed.default_rackd(), *map(str, args)],
                          capture_output=True, text=True, timeout=10,
                          check=check)


def test_key_made_0600_beside_the_state_and_kept_across_restarts(topo):
    ra = topo.start_rackd("a")
    path = ra.dir / "hostkey"
    st = path.stat()
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == 0
    host = ra.ctl_json("host")
    key = file_key(path)
    assert host["public_key"] == key
    assert host["fingerprint"] == fingerprint(key)
    assert host["key_file"] == str(path)
    assert host["known_hosts"] == 0
    assert host["known_hosts_file"] == str(ra.dir / "known_hosts")
    assert host["trust"] == "accept-new"
    assert ra.status()["host_key"] == host["fingerprint"]
    assert f"host key {path} (created): {host['fingerprint']}" in ra.log()
    text = ra.ctl("host")
    assert f"fingerprint            {host['fingerprint']}\n" in text

    assert ra.stop() == 0
    ra.start()
    assert ra.ctl_json("host")["fingerprint"] == host["fingerprint"]
    assert ra.status()["host_key"] == host["fingerprint"]
    assert f"host key {path}: {host['fingerprint']}" in ra.log()
    assert file_key(path) == key


def test_without_a_state_file_the_key_lives_in_memory(topo):
    ra = topo.start_rackd("a", args=["-s", "none"])
    host = ra.ctl_json("host")
    assert host["key_file"] == "in memory"
    assert host["known_hosts_file"] == "in memory"
    assert "identity changes at every start" in ra.log()
    assert not (ra.dir / "hostkey").exists()
    assert ra.stop() == 0
    ra.start()
    assert ra.ctl_json("host")["fingerprint"] != host["fingerprint"]


def test_a_refused_key_file_stops_the_start_and_is_kept(topo):
    ra = topo.start_rackd("a")
    path = ra.dir / "hostkey"
    assert ra.stop() == 0
    path.chmod(0o644)
    with pytest.raises(testbed.RackdError):
        ra.start(timeout=5)
    assert ra.proc.returncode == 1
    assert f"host key {path} has mode 0644" in ra.log()
    path.chmod(0o600)
    text = path.read_text()
    path.write_text(text.replace("secret ", "secret x"))
    with pytest.raises(testbed.RackdError):
        ra.start(timeout=5)
    assert f"host key {path} is malformed: line 2: bad secret key" in ra.log()
    assert path.read_text() == text.replace("secret ", "secret x")
    assert not any(p.name.startswith("hostkey.tmp") for p in ra.dir.iterdir())


def test_hosts_add_pin_unpin_remove_and_list_persist(topo):
    ra = topo.start_rackd("a")
    k1, k2, k3 = new_key(), new_key(), new_key()
    added = ra.ctl_json("hosts", "add", k1, "web-1")
    assert added["added"] is True and added["state"] == "known"
    assert added["fingerprint"] == fingerprint(k1)
    assert added["name"] == "web-1"
    assert "added " + fingerprint(k2) + " (pinned)" in \
        ra.ctl("hosts", "add", k2, "--pin")
    ra.ctl("hosts", "add", k3)
    # Known already: named and pinned as asked, nothing else.
    again = ra.ctl_json("hosts", "add", k3, "db", "--pin")
    assert again["added"] is False and again["state"] == "pinned"
    assert again["name"] == "db"

    assert ra.ctl_json("hosts", "pin", fingerprint(k1))["state"] == "pinned"
    assert ra.ctl_json("hosts", "unpin", k2)["state"] == "known"
    assert ra.ctl_json("hosts", "remove", fingerprint(k3))["removed"] == \
        fingerprint(k3)
    listed = ra.ctl_json("hosts")
    assert [(h["key"], h["state"], h["name"]) for h in listed] == \
        [(k1, "pinned", "web-1"), (k2, "known", "")]
    assert all(h["first_seen"] == h["last_seen"] == "never" and
               h["addresses"] == "" for h in listed)
    assert ra.ctl_json("host")["known_hosts"] == 2
    table = ra.ctl("hosts")
    assert table.splitlines()[0].split()[:3] == ["FINGERPRINT", "STATE", "NAME"]
    assert f"{fingerprint(k1)} pinned web-1" in " ".join(table.split())

    # Written at once: the file says so before any restart.
    lines = [line for line in (ra.dir / "known_hosts").read_text().splitlines()
             if not line.startswith("#")]
    assert lines == [f"{k1} pinned 0 0 - web-1", f"{k2} known 0 0 -"]
    assert (ra.dir / "known_hosts").stat().st_mode & 0o777 == 0o600
    # One write for each of the seven changes, no more.
    assert ra.status()["known_hosts_writes"] == 7
    assert ra.stop() == 0
    ra.start()
    assert ra.ctl_json("hosts") == listed


def test_hosts_refuses_bad_input_clearly(topo):
    ra = topo.start_rackd("a")
    ra.dir.chmod(0o755)       # nobody may reach the socket, as /run/racks
    k1 = new_key()
    ra.ctl("hosts", "add", k1)
    for args, code, text in [
        (["hosts", "add", "racks-x25519:AAAA"], 2, "is not a host key"),
        (["hosts", "add", "ssh-ed25519 AAAA"], 2, "is not a host key"),
        (["hosts", "add", new_key(), "two words"], 2, "bad name"),
        (["hosts", "add", new_key(), "x" * 64], 2, "bad name"),
        (["hosts", "add"], 2, "usage: rackctl hosts add KEY [NAME] [--pin]"),
        (["hosts", "remove", "SHA256:abc"], 2, "is not a fingerprint"),
        (["hosts", "pin", "web-1"], 2, "is not a host key"),
        (["hosts", "frob"], 2, "unknown hosts action 'frob'"),
        (["hosts", "remove", k1, "--pin"], 2, "--pin goes with hosts add"),
        (["status", "--pin"], 2, "--pin and --add are options of hosts"),
        (["hosts", "remove", fingerprint(new_key())], 1,
         "no known host has the fingerprint SHA256:"),
        (["hosts", "unpin", new_key()], 1, "no known host has the key"),
    ]:
        err = ctl_fails(ra, *args, code=code)
        assert text in err, (args, err)
    # Changes are root's; listing is everyone's.
    assert "'hosts_add' needs root" in \
        ctl_fails(ra, "hosts", "add", new_key(), as_user=65534)
    assert "'hosts_remove' needs root" in \
        ctl_fails(ra, "hosts", "remove", k1, as_user=65534)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534",
                           "--clear-groups", testbed.default_rackctl(), "-S",
                           str(ra.sock), "hosts", "--json"],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0 and k1 in proc.stdout, proc.stderr
    assert [h["key"] for h in ra.ctl_json("hosts")] == [k1]


def test_a_malformed_known_hosts_line_stops_the_start(topo):
    ra = topo.start_rackd("a")
    k1 = new_key()
    ra.ctl("hosts", "add", k1, "one")
    assert ra.stop() == 0
    path = ra.dir / "known_hosts"
    good = path.read_text()
    path.write_text(good + f"{new_key()} trusted 0 0 -\n")
    with pytest.raises(testbed.RackdError):
        ra.start(timeout=5)
    assert ra.proc.returncode == 1
    assert f"known hosts: {path}:3: 'trusted' is neither pinned nor known" \
        in ra.log()
    path.write_text(good)
    ra.start()
    assert [h["name"] for h in ra.ctl_json("hosts")] == ["one"]


def test_keyscan_learns_exactly_the_servers_key(topo):
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    start_py_server(topo.b, ECHO_CLOSE)
    b_key = rb.ctl_json("host")["public_key"]
    b4, b6 = topo.addr["b"]["v4"], topo.addr["b"]["v6"]
    rackctl = [testbed.default_rackctl(), "-S", str(ra.sock)]

    out = topo.a.run([*rackctl, "keyscan", f"{b4}:{PORT}"]).stdout
    assert out == f"{b4}:{PORT} {b_key} {fingerprint(b_key)}\n"
    scanned = json_of(topo.a.run([*rackctl, "keyscan", f"[{b6}]:{PORT}",
                                  "--json"]).stdout)
    assert scanned["key"] == b_key and scanned["address"] == b6
    assert rb.status()["edp_probes_answered"] == 2
    assert ra.ctl_json("hosts") == []      # nothing added without --add

    proc = topo.a.run([*rackctl, "keyscan", f"{b4}:{PORT}", "--add", "b",
                       "--pin"])
    assert f"{fingerprint(b_key)} added to the known hosts (pinned)" in \
        proc.stderr
    listed = ra.ctl_json("hosts")
    assert [(h["key"], h["state"], h["name"]) for h in listed] == \
        [(b_key, "pinned", "b")]

    # A port where no rackd answers: said so, nothing learnt. The same
    # server, with B's rackd stopped, is the control.
    assert rb.stop() == 0
    proc = topo.a.run([*rackctl, "keyscan", f"{b4}:{PORT}"], check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "no rackd answered the probe" in proc.stderr, proc.stderr
    proc = topo.a.run([*rackctl, "keyscan", b4], check=False)
    assert proc.returncode == 1
    assert f"cannot probe {b4} port 22" in proc.stderr, proc.stderr


def json_of(text):
    import json
    return json.loads(text)


def test_rackd_help_version_and_long_options():
    proc = rackd_cmd("--help", check=True)
    for option in ("--foreground", "--config", "--socket", "--state",
                   "--check", "--debug", "--host-key", "--init-host-key",
                   "--rotate-host-key", "--version", "--help"):
        assert option in proc.stdout, option
    assert rackd_cmd("-h", check=True).stdout == proc.stdout
    assert rackd_cmd("--version", check=True).stdout.startswith("rackd ")
    for args, problem in [(["--bogus"], "unknown option --bogus"),
                          (["--config"], "option --config needs an argument"),
                          (["--check=yes"], "option --check"),
                          (["--init-host-key", "--rotate-host-key"],
                           "exclude each other")]:
        proc = rackd_cmd(*args)
        assert proc.returncode == 2, args
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("rackd: ") and \
            problem in lines[0], (args, proc.stderr)
    dump = rackd_cmd("--check", "--config", "/nonexistent", check=True).stdout
    assert "trust = accept-new\n" in dump


def test_init_host_key_never_overwrites_and_rotate_keeps_the_old(tmp_path):
    state = tmp_path / "state"
    key = tmp_path / "hostkey"
    first = rackd_cmd("--init-host-key", "-s", state, check=True).stdout
    assert first.startswith(f"host key {key}: created\n")
    pub = file_key(key)
    assert f"fingerprint {fingerprint(pub)}\npublic {pub}\n" in first
    assert key.stat().st_mode & 0o777 == 0o600
    text, mtime = key.read_text(), key.stat().st_mtime_ns

    again = rackd_cmd("--init-host-key", "--state", state, check=True).stdout
    assert again.startswith(f"host key {key}: exists, left as it is\n")
    assert f"fingerprint {fingerprint(pub)}\n" in again
    assert key.read_text() == text and key.stat().st_mtime_ns == mtime

    out = rackd_cmd("--rotate-host-key", "-k", key, check=True).stdout
    new = file_key(key)
    assert new != pub
    assert (tmp_path / "hostkey.old").read_text() == text
    assert f"old fingerprint {fingerprint(pub)}\n" in out
    assert f"new fingerprint {fingerprint(new)}\n" in out
    assert f"rackctl hosts add {new} NAME --pin" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostkey",
                                                          "hostkey.old"]

    proc = rackd_cmd("--init-host-key", "-s", "none")
    assert proc.returncode == 2 and "-k PATH" in proc.stderr
    key.chmod(0o640)
    proc = rackd_cmd("--rotate-host-key", "-k", key)
    assert proc.returncode == 1 and "has mode 0640" in proc.stderr
    assert key.read_text() != text and file_key(key) == new
    proc = rackd_cmd("--rotate-host-key", "-k", tmp_path / "none")
    assert proc.returncode == 1 and "--init-host-key makes one" in proc.stderr


def test_a_key_that_cannot_be_made_lives_in_memory_and_says_so(topo,
                                                                tmp_path):
    """The state file's directory is missing: rackd starts as it did
    before host keys, with a key made in memory, and a change of the
    known hosts is made but reported unsaved."""
    missing = tmp_path / "missing"
    ra = topo.start_rackd("a", args=["-s", missing / "state"])
    assert f"host key {missing}/hostkey cannot be created: No such file " \
        "or directory: a key made in memory instead" in ra.log()
    host = ra.ctl_json("host")
    assert host["key_file"] == "in memory"
    assert host["known_hosts_file"] == f"{missing}/known_hosts"
    err = ctl_fails(ra, "hosts", "add", new_key(), "x")
    assert f"changed, but the known hosts file {missing}/known_hosts could " \
        "not be saved: No such file or directory" in err
    assert [h["name"] for h in ra.ctl_json("hosts")] == ["x"]
    assert ra.status()["known_hosts_write_errors"] == 1
    assert not missing.exists()
