"""Hosts that know each other (issue 22): host keys, trust, host pairs and
derived connection keys, between two rackds across R.

    A (client) ---- R ---- B (server)

The first connection between two hosts runs the Noise XX host handshake
(key_source "exchange"); every later one derives its key from the host
pair (key_source "derived") with one set-up message each way; a peer whose
host key changed is left unmanaged with host_key_mismatch, and the bytes
still flow, plain.
"""

import ipaddress

import pytest

import racks
import testbed
from testbed import expected_sha256, start_xfer_client, start_xfer_server

PORT = 5001
SIZE = 256 * 1024
# Paced: each connection lasts about two seconds, long enough to be read
# from both rackds (a closed one is forgotten at the next sweep).
RATE = SIZE // 2


def transfer(topo, family="v4", port=PORT):
    """One connection from A to B, SIZE bytes each way, checked; returns
    (client, server) once the bytes arrived."""
    server = start_xfer_server(topo.b, port, send=SIZE, rate=RATE,
                               timeout=30)
    client = start_xfer_client(topo.a, topo.addr["b"][family], port, SIZE,
                               recv=True, rate=RATE, announce=True,
                               timeout=30)
    client.connected()
    return server, client


def check(server, client):
    report = client.result(60)
    srv = server.results()[0]
    assert report["sent_sha256"] == srv["recv_sha256"] == \
        expected_sha256(SIZE, testbed.CLIENT_SEED)
    assert report["recv_sha256"] == srv["sent_sha256"]


def settled(rackd, port, timeout=10):
    """rackd's entry (show) for the connection on port, once it is
    connected or left unmanaged."""
    def done():
        # The newest: an earlier connection on the port may linger (its
        # socket in TIME_WAIT until the next sweep).
        conns = racks.conns_between(rackd, remote_port=port) + \
            racks.conns_between(rackd, local_port=port)
        for c in sorted(conns, key=lambda c: -c["id"])[:1]:
            if c["state"] == "connected" or c.get("unmanaged"):
                return rackd.ctl_json("show", str(c["id"]))
        return None
    return testbed.wait_until(done, timeout, f"connection on {port} settled")


def fingerprint(rackd):
    return rackd.ctl_json("host")["fingerprint"]


def public_key(rackd):
    return rackd.ctl_json("host")["public_key"]


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_first_connection_exchanges_then_keys_are_derived(topo, family):
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    fa, fb = fingerprint(ra), fingerprint(rb)
    assert fa != fb
    shows = []
    for i in range(3):
        before = {s: r.status() for s, r in (("a", ra), ("b", rb))}
        server, client = transfer(topo, family, PORT + i)
        sa, sb = settled(ra, PORT + i), settled(rb, PORT + i)
        check(server, client)
        after = {s: r.status() for s, r in (("a", ra), ("b", rb))}
        shows.append((sa, sb, before, after))
        assert sa["state"] == sb["state"] == "connected", (sa, sb)
        assert sa["conn_id"] == sb["conn_id"]
        assert sa["peer_host"] == fb and sb["peer_host"] == fa, (sa, sb)
    # The first met: a host handshake; the others: derived.
    assert [s[0]["key_source"] for s in shows] == \
        ["exchange", "derived", "derived"], shows
    assert [s[1]["key_source"] for s in shows] == \
        ["exchange", "derived", "derived"], shows
    for r in (ra, rb):
        st = r.status()
        assert st["edp_hs_done"] == 1 and st["edp_keyed_derived"] == 2, st
        assert st["edp_hs_bad"] == 0 and st["edp_bad_mac"] == 0, st
    # A derived connection's set-up: one message each way (CONFIRM, DONE),
    # retransmissions aside; never a KEY or a host handshake message.
    _, _, before, after = shows[2]
    for side in "ab":
        sent = after[side]["edp_setup_msgs_out"] - \
            before[side]["edp_setup_msgs_out"]
        assert 1 <= sent <= 2, (side, sent)
        assert after[side]["edp_hs_sent"] == before[side]["edp_hs_sent"]
    # Each knows the other by key.
    hosts_a = ra.ctl_json("hosts")
    assert [h["fingerprint"] for h in hosts_a] == [fb], hosts_a


def test_restart_keeps_the_host_pair_and_a_lost_state_exchanges_again(topo):
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    server, client = transfer(topo, port=PORT)
    assert settled(ra, PORT)["key_source"] == "exchange"
    check(server, client)
    rb.stop()
    rb.start()
    server, client = transfer(topo, port=PORT + 1)
    assert settled(ra, PORT + 1)["key_source"] == "derived"
    assert settled(rb, PORT + 1)["key_source"] == "derived"
    check(server, client)
    # B loses its state and host pairs (its host key stays): A's offer
    # names a host pair B no longer has, and they run a new handshake.
    rb.stop()
    for name in ("state", "hostpairs"):
        (rb.dir / name).unlink(missing_ok=True)
    rb.start()
    server, client = transfer(topo, port=PORT + 2)
    assert settled(ra, PORT + 2)["key_source"] == "exchange"
    assert settled(rb, PORT + 2)["key_source"] == "exchange"
    check(server, client)
    hostpairs = rb.dir / "hostpairs"
    testbed.wait_until(hostpairs.exists, 5, "B's host pairs written")
    assert hostpairs.stat().st_mode & 0o777 == 0o600


def test_a_changed_host_key_is_refused_and_named(topo):
    """B comes back with another host key (as an attacker in the middle
    would show): A refuses to key the connection, says why with both
    fingerprints and the command that accepts the new key; the bytes flow
    plain. After that command, racks manages again."""
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    server, client = transfer(topo, port=PORT)
    assert settled(ra, PORT)["state"] == "connected"
    check(server, client)
    old = fingerprint(rb)
    rb.stop()
    for name in ("hostkey", "hostpairs", "state"):
        (rb.dir / name).unlink(missing_ok=True)
    rb.start()
    new = fingerprint(rb)
    assert new != old

    server, client = transfer(topo, port=PORT + 1)
    sa = settled(ra, PORT + 1, timeout=15)
    check(server, client)
    assert sa["state"] != "connected" and \
        sa["unmanaged"] == "host_key_mismatch", sa
    assert ra.status()["edp_hs_mismatch"] == 1
    log = ra.log()
    line = next(ln for ln in log.splitlines() if "HOST KEY MISMATCH" in ln)
    assert old in line and new in line, line
    command = line.split("If the peer's key really changed: ", 1)[1]
    assert command.startswith("rackctl hosts remove "), command
    # Still known as it was: nothing replaced silently.
    assert [h["fingerprint"] for h in ra.ctl_json("hosts")] == [old]

    for part in command.split(" && "):
        ra.ctl(*part.split()[1:])
    server, client = transfer(topo, port=PORT + 2)
    sa = settled(ra, PORT + 2)
    check(server, client)
    assert sa["state"] == "connected" and sa["peer_host"] == new, sa


def test_pinned_refuses_an_unlisted_host_until_it_is_pinned(topo):
    ra = topo.start_rackd("a", config="trust = pinned\n")
    rb = topo.start_rackd("b")
    server, client = transfer(topo, port=PORT)
    sa = settled(ra, PORT, timeout=15)
    check(server, client)
    assert sa["unmanaged"] == "host_key_not_pinned", sa
    assert ra.status()["edp_hs_not_pinned"] == 1
    assert ra.ctl_json("hosts") == []

    ra.ctl("hosts", "add", public_key(rb), "b", "--pin")
    server, client = transfer(topo, port=PORT + 1)
    sa = settled(ra, PORT + 1)
    check(server, client)
    assert sa["state"] == "connected" and sa["key_source"] == "exchange"
    assert sa["peer_host_name"] == "b", sa


def test_anonymous_is_opt_in_and_said(topo):
    conf = "trust = anonymous\n"
    ra = topo.start_rackd("a", config=conf)
    rb = topo.start_rackd("b", config=conf)
    server, client = transfer(topo, port=PORT)
    sa, sb = settled(ra, PORT), settled(rb, PORT)
    check(server, client)
    assert sa["key_source"] == sb["key_source"] == "anonymous", (sa, sb)
    assert "peer_host" not in sa
    assert ra.status()["edp_hs_started"] == 0


def test_anonymous_offer_is_refused_where_trust_is_not(topo):
    """A allows only an anonymous exchange with B; B's default trust
    refuses it: never downgraded, the connection flows plain and says so."""
    ra = topo.start_rackd("a", config="trust = anonymous\n")
    rb = topo.start_rackd("b")
    server, client = transfer(topo, port=PORT)
    check(server, client)
    sb = settled(rb, PORT, timeout=20)
    assert sb["state"] != "connected", sb
    assert rb.status()["edp_anonymous_refused"] >= 1
    assert sb["unmanaged"] in ("anonymous_refused", "setup_timeout"), sb


@pytest.mark.bulk
@pytest.mark.parametrize("rekey", [False, True], ids=["derived", "rekeyed"])
def test_a_thousand_connections_between_known_hosts(topo, rekey):
    """1,000 connections between two hosts that met: every key derived,
    one set-up message each way. With hostpair_max_connections = 300 the
    host pair is renewed in the middle of them (a new handshake when it
    is used up) and every connection still keys and echoes."""
    conf = "hostpair_max_connections = 300\n" if rekey else None
    ra = topo.start_rackd("a", config=conf)
    rb = topo.start_rackd("b", config=conf)
    server, client = transfer(topo, port=PORT)
    check(server, client)
    before = {s: r.status() for s, r in (("a", ra), ("b", rb))}
    fleet = racks.Fleet(topo.b, topo.a, topo.addr["b"]["v4"], PORT + 1, 1000)
    try:
        assert fleet.opened["connected"] == 1000, fleet.opened
        states = testbed.wait_until(
            lambda: (lambda s: s if s.get("connected") == 1000 else None)(
                racks.fleet_states(ra, PORT + 1)), 60,
            lambda: f"1,000 connected on A: "
                    f"{racks.fleet_states(ra, PORT + 1)}")
        echoed = fleet.echo()
        assert echoed["ok"] == 1000, echoed
    finally:
        fleet.close()
    counts = {}
    for side, r in (("a", ra), ("b", rb)):
        st = r.status()
        d = {k: st[k] - before[side][k] for k in
             ("edp_keyed_derived", "edp_keyed_exchange", "edp_hs_started",
              "edp_setup_msgs_out", "edp_bad_mac", "edp_setup_failed",
              "edp_unknown_conn", "edp_duplicate", "edp_bad_seq",
              "edp_unexpected")}
        counts[side] = d
        assert d["edp_keyed_derived"] + d["edp_keyed_exchange"] == 1000, d
        assert d["edp_bad_mac"] == 0 and d["edp_setup_failed"] == 0, d
        if not rekey:
            assert d["edp_keyed_derived"] == 1000, (side, d)
            assert d["edp_hs_started"] == 0, (side, d)
            # One message each, and few retransmissions at most: none
            # for want of the connection at the other end (on the BPF
            # path its record may wait in the ring: rackd reads it first).
            assert d["edp_unknown_conn"] == 0, (side, d)
            assert 1000 <= d["edp_setup_msgs_out"] <= 1100, (side, d)
        else:
            # The pair used up after 300 connections: one connection
            # renews it with a handshake while the others go on deriving
            # (up to twice the limit), then derive from the new pair.
            assert 1 <= d["edp_keyed_exchange"] <= 5, (side, d)
            assert d["edp_keyed_derived"] >= 995, (side, d)
    if rekey:
        assert 1 <= counts["a"]["edp_hs_started"] <= 5
        # B's file (written with its state) shows the renewal too.
        pairs = rb.dir / "hostpairs"
        testbed.wait_until(lambda: "retired=1" in pairs.read_text(), 5,
                           lambda: f"a retired host pair in B's file: "
                                   f"{pairs.read_text()}")
    print(f"\n1,000 between known hosts{' (rekeyed)' if rekey else ''}: "
          f"{states}; {counts}")


# --- an active attacker in the middle ----------------------------------------

RELAY = r"""
import socket, sys, threading
listen, target, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((listen, port))
srv.listen(8)
print("READY", flush=True)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
while True:
    c, _ = srv.accept()
    u = socket.create_connection((target, port))
    print("RELAYING", flush=True)
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
"""


def man_in_the_middle(topo, config_c=None):
    """C, an attacker's host with its own rackd, takes over B's address on
    the path: R routes B's address to C, which holds it on lo and relays
    every connection to B's other address (10.71.2.3, added to B), running
    its own set-up with each end. Returns C's rackd; the relay runs until
    the topology ends."""
    c = topo.add_host("c")
    b4 = topo.addr["b"]["v4"]
    other = str(ipaddress.ip_address(b4) + 1)
    topo.b.ip("addr", "add", f"{other}/24", "dev", "eth0")
    c.ip("addr", "add", f"{b4}/32", "dev", "lo")
    rc = topo.start_rackd("c", config=config_c)
    relay = c.popen([testbed.PYTHON, "-c", RELAY, b4, other, str(PORT)])
    assert testbed.read_line(relay, 10, "relay") == "READY"
    topo.r.ip("route", "add", f"{b4}/32", "via", topo.addr["c"]["v4"])
    # The path really goes through C now.
    routes = topo.r.ip("route", "get", b4).stdout
    assert topo.addr["c"]["v4"] in routes, routes
    return rc, relay


def test_an_attacker_in_the_middle_is_refused_by_a_client_that_knew_b(topo):
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    server, client = transfer(topo, port=PORT)
    sa = settled(ra, PORT)
    check(server, client)
    assert sa["peer_host"] == fingerprint(rb)

    rc, relay = man_in_the_middle(topo)
    server, client = transfer(topo, port=PORT)
    assert testbed.read_line(relay, 10, "relay") == "RELAYING"
    sa = settled(ra, PORT, timeout=15)
    # The transfer is unharmed, and plain between A and C.
    check(server, client)
    assert sa["unmanaged"] == "host_key_mismatch", sa
    assert "conn_id" not in sa and sa["state"] != "connected", sa
    line = next(ln for ln in ra.log().splitlines()
                if "HOST KEY MISMATCH" in ln)
    assert fingerprint(rb) in line and fingerprint(rc) in line, line
    # C never shared a key with A: nothing of A's can be moved by it.
    assert ra.status()["edp_keyed_exchange"] == 1
    assert ra.status()["reconnects_accepted"] == 0


def test_an_attacker_in_the_middle_is_refused_by_a_pinning_client(topo):
    ra = topo.start_rackd("a", config="trust = pinned\n")
    rb = topo.start_rackd("b")
    ra.ctl("hosts", "add", public_key(rb), "b", "--pin")
    rc, relay = man_in_the_middle(topo)
    server, client = transfer(topo, port=PORT)
    sa = settled(ra, PORT, timeout=15)
    check(server, client)
    assert sa["unmanaged"] == "host_key_not_pinned", sa
    assert ra.status()["edp_keyed_exchange"] == 0


def test_an_attacker_in_the_middle_of_anonymous_hosts_goes_unseen(topo):
    """What anonymous means: C's exchange with A works, and A is told only
    that its key is anonymous (the fingerprints of A's and B's ends differ,
    which nothing compares for them)."""
    conf = "trust = anonymous\n"
    ra = topo.start_rackd("a", config=conf)
    rb = topo.start_rackd("b", config=conf)
    rc, relay = man_in_the_middle(topo, config_c=conf)
    server, client = transfer(topo, port=PORT)
    sa = settled(ra, PORT, timeout=15)
    sb = settled(rb, PORT)
    check(server, client)
    assert sa["state"] == "connected" and sa["key_source"] == "anonymous"
    assert sb["key_fingerprint"] != sa["key_fingerprint"]
    assert sb["remote"].startswith(topo.addr["c"]["v4"] + ":"), sb


def test_a_rotation_signed_by_the_old_key_is_accepted(topo):
    """B rotates its host key (rackd --rotate-host-key, restart): A, which
    knew the old key as "b", takes the new one in its place without a
    prompt, name kept, because B proves it with the old key; a host that
    merely shows another key is refused (test above)."""
    ra, rb = topo.start_rackd("a"), topo.start_rackd("b")
    ra.ctl("hosts", "add", public_key(rb), "b")
    server, client = transfer(topo, port=PORT)
    assert settled(ra, PORT)["key_source"] == "exchange"
    check(server, client)
    old = fingerprint(rb)
    rb.stop()
    out = topo.b.run([rb.binary, "--rotate-host-key", "-s",
                      str(rb.state)]).stdout
    assert "rotated" in out, out
    assert (rb.dir / "hostkey.old").exists()
    rb.start()
    new = fingerprint(rb)
    assert new != old
    assert "host key rotated from " + old in rb.log()

    server, client = transfer(topo, port=PORT + 1)
    sa = settled(ra, PORT + 1, timeout=15)
    check(server, client)
    assert sa["state"] == "connected" and sa["peer_host"] == new, sa
    assert sa["key_source"] == "exchange", sa
    assert ra.status()["edp_hs_rotated"] == 1
    assert ra.status()["edp_hs_mismatch"] == 0
    hosts = ra.ctl_json("hosts")
    assert [(h["fingerprint"], h.get("name")) for h in hosts] == \
        [(new, "b")], hosts
    # Derived again from the new host pair.
    server, client = transfer(topo, port=PORT + 2)
    assert settled(ra, PORT + 2)["key_source"] == "derived"
    check(server, client)
