"""Proofs that the namespace test-bed itself works, with plain traffic only.

No rackd is needed: these tests check the topology (see the diagram in
testbed.py), the link faults, the address changes, the transfer tool, the
Rackd wrapper (against a stand-in daemon) and that teardown leaves nothing
behind.
"""

import ipaddress
import time

import pytest

import testbed
from testbed import expected_sha256, ping, ping_rtt_ms, start_xfer_server, xfer_client

PORT = 5001
MB = 1_000_000
FAMILIES = ("v4", "v6")


def addresses_of(ns):
    """Global addresses on ns's eth0, without prefix length."""
    info = ns.ip_json("addr", "show", "dev", testbed.HOST_IFACE)[0]
    return {a["local"] for a in info["addr_info"] if a.get("scope") == "global"}


def assert_unreachable(topo, src="a", dst="b"):
    for family in FAMILIES:
        addr = topo.addr[dst][family]
        assert not ping(topo.ns(src), addr, timeout=0.3), f"{addr} still answers"


# --- topology ---------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_hosts_ping_each_other(topo, family):
    assert ping(topo.a, topo.addr["b"][family])
    assert ping(topo.b, topo.addr["a"][family])


def test_names_are_short_and_unique(topo_factory):
    one, two = topo_factory(), topo_factory()
    names = [ns.name for t in (one, two) for ns in (t.a, t.r, t.b)]
    assert len(set(names)) == 6
    assert all(len(name) <= 15 for name in names), names
    assert ping(two.a, two.addr["b"]["v4"])


# --- transfers ----------------------------------------------------------------

@pytest.mark.bulk
@pytest.mark.parametrize("family", FAMILIES)
def test_xfer_both_ways_arrives_intact(topo, family):
    size = 50 * MB
    server = start_xfer_server(topo.b, PORT, send=size)
    client = xfer_client(topo.a, topo.addr["b"][family], PORT, size, recv=True)
    (served,) = server.results()

    assert client["sent_sha256"] == served["recv_sha256"] == expected_sha256(size, 0)
    assert served["sent_sha256"] == client["recv_sha256"] == expected_sha256(size, 1)
    assert client["recv_bytes"] == served["recv_bytes"] == size
    assert served["peer"] == topo.addr["a"][family]


def test_stream_is_not_periodic():
    blocks = [bytes(chunk) for chunk in testbed._xfer.stream(3 << 20, seed=7)]
    assert len({block[:8] for block in blocks}) == 3
    assert expected_sha256(1000, 7) != expected_sha256(1000, 8)
    assert expected_sha256(1000, 7) != expected_sha256(1001, 7)


# --- link faults ------------------------------------------------------------------

def test_cut_loses_carrier_and_restore_heals(topo):
    topo.cut("a")
    assert topo.a.operstate(testbed.HOST_IFACE) != "UP"
    assert_unreachable(topo)
    client = xfer_client(topo.a, topo.addr["b"]["v4"], PORT, 1000,
                         check=False, connect_timeout=1)
    assert client["returncode"] != 0 and "connect" in client["stderr"]

    topo.restore("a")
    topo.wait_reachable(timeout=5)


def test_silent_cut_keeps_carrier_and_drops_both_ways(topo):
    cut = topo.cut_silent("a")
    assert topo.a.operstate(testbed.HOST_IFACE) == "UP"
    assert_unreachable(topo, "a", "b")
    assert_unreachable(topo, "b", "a")
    # Both ways: A's echo requests and B's, each family, all counted.
    cut.assert_acted(at_least=4)

    topo.restore_silent("a")
    topo.wait_reachable(timeout=5)
    assert not [t for t in testbed.tables(topo.r) if "testbed" in t]


def test_stream_survives_a_short_silent_cut(topo):
    size = 3 * MB
    server = start_xfer_server(topo.b, PORT)
    client = testbed.start_xfer_client(topo.a, topo.addr["b"]["v6"], PORT, size,
                                       rate=3 * MB, announce=True)
    addr, _ = client.connected()
    assert addr == topo.addr["a"]["v6"]
    topo.cut_silent("a")
    assert_unreachable(topo)                       # the outage lasts these pings
    topo.restore_silent("a")
    assert client.result()["sent_sha256"] == expected_sha256(size, 0)
    assert server.results()[0]["recv_sha256"] == expected_sha256(size, 0)


def test_nsenter_runs_in_the_namespace_too(topo):
    proc = topo.b.popen(["ip", "-br", "link"], nsenter=True)
    out, _ = proc.communicate(timeout=10)
    assert "eth0" in out and "rb" not in out


@pytest.mark.timing
def test_netem_delay_raises_rtt_and_clears(topo):
    target = topo.addr["b"]["v4"]
    base = ping_rtt_ms(topo.a, target)
    topo.netem("a", delay_ms=20)
    for family in FAMILIES:
        slow = ping_rtt_ms(topo.a, topo.addr["b"][family])
        assert slow >= base + 15, f"{family}: rtt {slow:.1f} ms, base {base:.1f} ms"

    topo.clear_netem("a")
    assert ping_rtt_ms(topo.a, target) < base + 10


def test_netem_delayed_path_carries_data_intact(topo):
    size = 5 * MB
    topo.netem("a", delay_ms=10)
    server = start_xfer_server(topo.b, PORT, send=size)
    client = xfer_client(topo.a, topo.addr["b"]["v6"], PORT, size, recv=True)
    assert client["recv_sha256"] == expected_sha256(size, 1)
    assert server.results()[0]["recv_sha256"] == expected_sha256(size, 0)


def test_netem_loss(topo):
    target = topo.addr["b"]["v4"]
    loss = topo.netem("a", loss_pct=100)
    assert not ping(topo.a, target, timeout=0.5)
    loss.assert_acted("other")                   # B's echo reply, lost
    loss = topo.netem("a", loss_pct=50)
    stats = testbed.ping_stats(topo.a, target, count=20, interval=0.01, timeout=0.2)
    assert 0 < stats["received"] < 20, stats     # p(false failure) = 2e-6
    assert loss.count("other") >= 20 - stats["received"], (loss.counts(), stats)
    topo.clear_netem("a")
    assert ping(topo.a, target)


# --- address changes ----------------------------------------------------------------

def test_change_address_to_new_subnet(topo):
    old = dict(topo.addr["a"])
    new = topo.change_address("a")
    assert new == topo.addr["a"]
    for family in FAMILIES:
        assert ipaddress.ip_address(new[family]) not in \
            ipaddress.ip_network(f"{old[family]}/{topo.prefix['a'][family]}", strict=False)
    assert addresses_of(topo.a) == set(new.values())

    server = start_xfer_server(topo.b, PORT, count=2)
    for family in FAMILIES:
        xfer_client(topo.a, topo.addr["b"][family], PORT, MB)
    assert {r["peer"] for r in server.results()} == set(new.values())


@pytest.mark.parametrize("keep_old", [True, False])
def test_change_address_same_subnet(topo, keep_old):
    old = dict(topo.addr["a"])
    new = topo.change_address("a", v4="10.71.1.20", v6="fd71:1::20", keep_old=keep_old)
    assert new == {"v4": "10.71.1.20", "v6": "fd71:1::20"}
    expected = set(new.values()) | (set(old.values()) if keep_old else set())
    assert addresses_of(topo.a) == expected

    server = start_xfer_server(topo.b, PORT, count=2)
    for family in FAMILIES:
        xfer_client(topo.a, topo.addr["b"][family], PORT, MB)
    assert {r["peer"] for r in server.results()} == set(new.values())


# --- rackd wrapper, against a stand-in daemon ------------------------------------------

FAKE_RACKD = '''\
#!/usr/bin/python3
"""Stand-in rackd: answers 'status' and 'list' on its unix socket."""
import argparse, json, os, signal, socket, sys
p = argparse.ArgumentParser()
p.add_argument("-f", action="store_true"); p.add_argument("-d", action="store_true")
p.add_argument("-c"); p.add_argument("-S"); p.add_argument("-s")
a = p.parse_args()
conf = open(a.c).read() if os.path.exists(a.c) else ""
if "fail" in conf:
    print("fake rackd: bad config", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
srv = socket.socket(socket.AF_UNIX)
srv.bind(a.S)
srv.listen()
print(f"fake rackd: listening on {a.S}", flush=True)
try:
    while True:
        conn, _ = srv.accept()
        cmd = conn.makefile().readline().split()
        if cmd == ["status"]:
            reply = {"pid": os.getpid(), "config": conf,
                     "ifaces": [n for _, n in socket.if_nameindex()]}
        elif cmd == ["list"]:
            reply = []
        else:
            reply = {"error": f"unknown command {cmd}"}
        conn.sendall(json.dumps(reply).encode())
        conn.close()
finally:
    os.unlink(a.S)
    print("fake rackd: bye", flush=True)
'''

FAKE_RACKCTL = '''\
#!/usr/bin/python3
"""Stand-in rackctl -S SOCK CMD [--json]."""
import json, socket, sys
sock, args = sys.argv[2], [x for x in sys.argv[3:] if x != "--json"]
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
except OSError as e:
    sys.exit(f"rackctl: {sock}: {e}")
s.sendall((" ".join(args) + "\\n").encode())
reply = json.loads(s.makefile().read())
if isinstance(reply, dict) and "error" in reply:
    sys.exit(f"rackctl: {reply['error']}")
print(json.dumps(reply) if "--json" in sys.argv else f"ok {reply}")
'''


@pytest.fixture
def fake_tools(tmp_path):
    paths = []
    for name, text in (("rackd", FAKE_RACKD), ("rackctl", FAKE_RACKCTL)):
        path = tmp_path / name
        path.write_text(text)
        path.chmod(0o755)
        paths.append(str(path))
    return dict(zip(("binary", "rackctl"), paths))


def test_rackd_wrapper_lifecycle(topo, fake_tools):
    rackd = topo.start_rackd("a", config="mode = test\n", **fake_tools)
    status = rackd.status()
    assert status["pid"] == rackd.pid
    assert status["config"] == "mode = test\n"
    assert "eth0" in status["ifaces"] and "ra" not in status["ifaces"]
    assert rackd.connections() == []
    assert rackd.ctl("status").startswith("ok")
    with pytest.raises(testbed.RackdError, match="unknown command"):
        rackd.ctl("bogus")
    assert rackd.stop() == 0
    assert "fake rackd: bye" in rackd.log()


def test_rackd_wrapper_fails_early_with_log(topo, fake_tools):
    start = time.monotonic()
    with pytest.raises(testbed.RackdError, match="(?s)exited 3.*bad config"):
        topo.start_rackd("b", config="fail\n", **fake_tools)
    assert time.monotonic() - start < 5


def test_rackd_without_config_gets_missing_file(topo, fake_tools):
    rackd = topo.start_rackd("b", **fake_tools)
    assert rackd.conf.name == "none.conf" and not rackd.conf.exists()
    assert rackd.status()["config"] == ""


def test_close_stops_a_directly_made_rackd(topo, fake_tools):
    rackd = testbed.Rackd(topo.b, **fake_tools).start()
    assert rackd in topo.rackds
    topo.close()
    assert not rackd.running and not rackd.dir.exists()
    assert "fake rackd: bye" in rackd.log()


# --- teardown ------------------------------------------------------------------------

def test_close_kills_processes_and_deletes_namespaces():
    topo = testbed.Topology.create()
    names = [ns.name for ns in (topo.a, topo.r, topo.b)]
    sleeper = topo.b.popen(["sleep", "600"])
    stubborn = topo.a.popen([testbed.PYTHON, "-c", "import signal, time; "
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                             "print('ignoring TERM', flush=True); time.sleep(600)"])
    testbed.read_line(stubborn, 10, "TERM-ignoring sleeper")
    with topo:
        assert set(names) <= set(testbed.namespace_names())
    assert sleeper.poll() is not None and stubborn.poll() is not None
    assert not set(names) & set(testbed.namespace_names())
    topo.close()                                   # idempotent


def test_failed_construction_leaves_nothing(monkeypatch):
    before = set(testbed.own_namespace_names())
    made = []
    real_add = testbed.run

    def run(cmd, *args, **kw):
        if list(cmd[:3]) == ["ip", "netns", "add"]:
            made.append(cmd[3])
        return real_add(cmd, *args, **kw)

    def broken(self, host):
        raise testbed.TestbedError("injected failure")

    monkeypatch.setattr(testbed.Topology, "_build_link", broken)
    monkeypatch.setattr(testbed, "run", run)
    with pytest.raises(testbed.TestbedError, match="injected"):
        testbed.Topology.create()
    # It got as far as making its namespaces (three), and removed them.
    assert len(made) == 3, made
    assert set(testbed.own_namespace_names()) == before
    assert not set(made) & set(testbed.namespace_names())


@pytest.mark.bulk
@pytest.mark.slow
def test_repeated_topologies_leak_nothing():
    before = set(testbed.own_namespace_names())
    for _ in range(20):
        with testbed.Topology.create() as topo:
            start_xfer_server(topo.b, PORT)
            xfer_client(topo.a, topo.addr["b"]["v6"], PORT, 200 * MB)
    assert set(testbed.own_namespace_names()) == before
