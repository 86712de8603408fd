"""Load: thousands of idle managed connections moved at once during a cut
all survive; overload never resets a connection (issue 20, item 8).

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B
with their default configuration, as a busy host would run it. One
process on A holds N idle connections to an echo server on B
(bench/tools/connfleet.c, racks.Fleet), every one of them managed
(``connected`` on both ends). R cuts A's link (A loses its carrier) for
12 s; meanwhile A moves to a new subnet (the old one retired at R, as in
test_move.py); after the restore every connection must be ``connected``
again at A's new address on both ends and echo a token of its own::

    A 10.71.1.2 --x                            (old subnet retired at R)
    A 10.71.3.2 ------ R ------ B 10.71.2.2
    connfleet connect: N idle     connfleet serve: echoes

The test proves its scenario before it believes the outcome: all N
suspended on both ends and spliced on A before the restore; then every
connection echoes (the positive control of "0 reset, 0 timeout"), and
both rackds' counters show a reconnection sent, acknowledged and spliced
for each. Whatever happens, the report names the queues' state
(/proc/net/netfilter/nfnetlink_queue, the largest backlog seen), the
kernel's resets (nstat) and when the resets came.
"""

import time

import pytest

import racks
import testbed

# Thousands of connections at once load the CPU (tests/README.md).
pytestmark = pytest.mark.bulk

PORT = 5001
CUT_S = 12
# rackd's counters the report shows (differences over the cut and
# restore; the gauges connections / suspended / spliced as they are).
COUNTERS = ("reconnects_sent", "reconnect_acks_in", "reconnect_acks_out",
            "reconnects_accepted", "reconnects_refused_replay",
            "reconnects_unknown", "splice_updates", "splice_errors",
            "resumes", "path_migrations", "synack", "packets_queued",
            "packets_unexpected", "edp_send_errors", "queue_recv_errors",
            "queue_send_errors")
GAUGES = ("connections", "suspended", "spliced")
KERNEL = ("TcpEstabResets", "TcpOutRsts", "TcpAttemptFails",
          "TcpExtEmbryonicRsts", "TcpExtTCPSYNChallenge",
          "TcpExtTCPChallengeACK", "TcpExtTCPSynRetrans", "IpOutDiscards")


def moved(rackd, port, key, addr):
    """How many of rackd's connections on port are connected with their
    wire endpoint KEY ('wire_local' / 'wire_remote') at addr."""
    n = 0
    for c in rackd.ctl_json("list", timeout=120):
        if not (c["remote"].endswith(f":{port}") or
                c["local"].endswith(f":{port}")):
            continue
        n += c["state"] == "connected" and \
            c[key].rsplit(":", 1)[0].strip("[]") == addr
    return n


class Watch:
    """Before/after figures of both ends: rackd's counters, the queue's,
    the kernel's; the largest queue backlog seen while sampling."""

    def __init__(self, topo, rackds):
        self.topo = topo
        self.rackds = rackds
        self.before = self._take()
        self.backlog = {h: 0 for h in rackds}

    def _take(self):
        # A rackd busy with thousands of reconnections answers late, or
        # not at all (then its counters are missing from the report).
        out = {}
        for h, r in self.rackds.items():
            try:
                st = r.ctl_json("status", timeout=120)
            except testbed.TestbedError:
                st = None
            out[h] = (st, racks.nfqueue_stats(r.ns),
                      racks.kernel_counters(r.ns))
        return out

    def sample(self):
        for h, r in self.rackds.items():
            for q in racks.nfqueue_stats(r.ns):
                self.backlog[h] = max(self.backlog[h], q["total"])

    def report(self):
        after = self._take()
        out = {}
        for h in self.rackds:
            (s0, q0, k0), (s1, q1, k1) = self.before[h], after[h]
            queue = [{"queue": b["queue"], "queued": b["id"] - a["id"],
                      "dropped": b["dropped"] - a["dropped"],
                      "user_dropped": b["user_dropped"] - a["user_dropped"],
                      "waiting": b["total"]}
                     for a, b in zip(q0, q1)]
            rackd = {"unanswered": "rackctl status: no answer in 120 s"} \
                if s1 is None else {**{k: s1[k] - s0[k] for k in COUNTERS},
                                    **{k: s1[k] for k in GAUGES}}
            out[h] = {"rackd": rackd,
                      "nfqueue": queue, "largest_backlog": self.backlog[h],
                      "kernel": {k: k1.get(k, 0) - k0.get(k, 0)
                                 for k in KERNEL}}
        return out


def describe(summary):
    """The summary as lines a reader can take in."""
    lines = [f"{summary['family']}, {summary['n']} connections moved at "
             f"once during a {CUT_S} s cut: echo " +
             ", ".join(f"{k} {summary[k]}" for k in
                       ("ok", "reset", "closed", "timeout", "bad", "error")) +
             f"; all connected again {summary['connected_again_s']} s after "
             f"the restore ({summary['waited']})" +
             (f"; resets from {summary['resets'][0]} to "
                              f"{summary['resets'][1]} s after the restore"
                              if "resets" in summary else ""),
             f"  server (B): {summary['server']}"]
    for h in ("a", "b"):
        r = summary[h]
        lines.append(f"  {h.upper()} rackd: " + ", ".join(
            f"{k} {v}" for k, v in r["rackd"].items()))
        for q in r["nfqueue"]:
            lines.append(f"  {h.upper()} nfqueue {q['queue']}: queued "
                         f"{q['queued']}, dropped {q['dropped']}, "
                         f"user_dropped {q['user_dropped']}, waiting now "
                         f"{q['waiting']}, largest backlog seen "
                         f"{r['largest_backlog']}")
        lines.append(f"  {h.upper()} kernel: " + ", ".join(
            f"{k} {v}" for k, v in r["kernel"].items()))
    return "\n".join(lines)


def wait_all_connected(topo, ra, rb, fleet, n, new, timeout, watch):
    """Until all n are connected at A's new address on both ends, or a
    connection dies (connfleet saw it reset or closed), or a rackd does
    not answer rackctl within 120 s, or timeout. Returns (seconds since
    it began or None, why it stopped waiting)."""
    t0 = time.monotonic()
    interval = 1 if n < 5000 else 2
    while time.monotonic() - t0 < timeout:
        watch.sample()
        st = fleet.status()
        if st["open"] < n:
            return None, f"connections died: {st['open']} of {n} open"
        try:
            if moved(ra, PORT, "wire_local", new) == n and \
                    moved(rb, PORT, "wire_remote", new) == n:
                return time.monotonic() - t0, "all connected"
        except testbed.TestbedError as err:
            return None, ("a rackd did not answer: "
                          f"{str(err).splitlines()[0]}")
        time.sleep(interval)
    return None, f"not all connected within {timeout} s"


def moved_at_once(topo, family, n, setup_timeout, restore_timeout):
    ra = topo.start_rackd("a", debug=False)
    rb = topo.start_rackd("b", debug=False)
    fleet = racks.Fleet(topo.b, topo.a, topo.addr["b"][family], PORT, n)
    try:
        return _moved_at_once(topo, ra, rb, fleet, family, n, setup_timeout,
                              restore_timeout)
    finally:
        fleet.close()


def _moved_at_once(topo, ra, rb, fleet, family, n, setup_timeout,
                   restore_timeout):
    assert fleet.opened["connected"] == n, fleet.opened
    testbed.wait_until(
        lambda: racks.fleet_states(ra, PORT) == {"connected": n} and
        racks.fleet_states(rb, PORT) == {"connected": n}, setup_timeout,
        lambda: f"{n} connected on both ends: A {racks.fleet_states(ra, PORT)}"
        f", B {racks.fleet_states(rb, PORT)}", interval=1)
    assert racks.fleet_states(ra, PORT) == {"connected": n}
    assert racks.fleet_states(rb, PORT) == {"connected": n}
    subnet = topo.reserve_subnet("a", family)
    watch = Watch(topo, {"a": ra, "b": rb})
    cut_at = time.monotonic()
    topo.cut("a")
    new = topo.move_to_new_subnet("a", family, new=subnet)
    # The scenario, proven: A suspended everything at once (carrier
    # loss) and spliced it to its new address; B, hearing nothing for
    # suspend_after, suspended everything too.
    def status(rackd):
        return rackd.ctl_json("status", timeout=60)

    testbed.wait_until(
        lambda: status(ra)["spliced"] == n and status(rb)["suspended"] == n,
        CUT_S - 1, lambda: f"A spliced / B suspended: {status(ra)['spliced']}"
        f" / {status(rb)['suspended']} of {n}", interval=0.5)
    time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))
    sa, sb = status(ra), status(rb)
    assert sa["suspended"] == n and sa["spliced"] == n, sa
    assert sa["path_migrations"] - watch.before["a"][0]["path_migrations"] \
        == 1, sa
    assert sb["suspended"] == n, sb
    restored = time.time()
    topo.restore("a")
    took, why = wait_all_connected(topo, ra, rb, fleet, n, new,
                                   restore_timeout, watch)
    echo = fleet.echo(30)
    server = fleet.server_status()
    report = watch.report()
    failed = {k: echo[k] for k in ("reset", "closed", "timeout", "bad",
                                   "error")}
    summary = {"family": family, "n": n, "ok": echo["ok"], **failed,
               "connected_again_s": None if took is None else round(took, 2),
               "waited": why,
               "server": server, **report}
    if echo["reset_first"]:
        summary["resets"] = [round(echo["reset_first"] - restored, 2),
                             round(echo["reset_last"] - restored, 2)]
    text = describe(summary)
    print("\n" + text)
    assert echo["ok"] == n and not any(failed.values()), text
    assert server["open"] == n and server["reset"] == 0, text
    assert took is not None, text
    a, b = report["a"]["rackd"], report["b"]["rackd"]
    assert "unanswered" not in a and "unanswered" not in b, text
    assert a["reconnects_sent"] >= n and a["reconnect_acks_in"] >= n, text
    assert b["reconnects_accepted"] >= n, text
    assert a["spliced"] == b["spliced"] == n, text
    assert a["splice_errors"] == b["splice_errors"] == 0, text
    return summary


@pytest.mark.parametrize("family,n", [
    ("v4", 1000), ("v6", 1000), ("v4", 3000),
    pytest.param("v4", 10000, marks=pytest.mark.slow),
    pytest.param("v6", 10000, marks=pytest.mark.slow)])
def test_connections_moved_at_once_during_a_cut_all_echo(topo, family, n):
    """N idle managed connections, a 12 s cut of A's link, A moves
    meanwhile: every one is connected again at A's new address on both
    ends and echoes its token; none reset, none silent."""
    moved_at_once(topo, family, n, setup_timeout=60 + n // 50,
                  restore_timeout=120 + n // 50)


def test_connfleet_tells_ok_timeout_and_reset_apart(topo):
    """The tool the load tests believe, on a plain test-bed (no rackd):
    20 connections echo (ok); with R dropping everything they time out;
    with B answering every segment to the server with a RST (a counted
    nft rule) they are reset, and the server end too."""
    fleet = racks.Fleet(topo.b, topo.a, topo.addr["b"]["v4"], PORT, 20)
    try:
        assert fleet.opened["connected"] == 20, fleet.opened
        first = fleet.echo(5)
        assert first["ok"] == 20 and first["sent"] == 20, first
        topo.cut_silent("b")
        silent = fleet.echo(2)
        assert silent["timeout"] == 20 and silent["ok"] == 0, silent
        assert len(silent["timeout_ports"]) == 20
        assert fleet.status()["open"] == 20
        topo.restore_silent("b")
        # The timed-out tokens are delivered and echoed late: now the
        # connections are quiet again.
        testbed.wait_until(lambda: fleet.echo(5)["ok"] == 20, 20,
                           "echoes after the restore")
        testbed.nft_file(topo.b, f"""table inet rst {{
    chain input {{
        type filter hook input priority 0; policy accept;
        tcp dport {PORT} counter reject with tcp reset
    }}
}}
""")
        ports = fleet.ports()
        assert len(ports) == 20
        reset = fleet.echo(5)
        assert "counter packets 0 " not in testbed.nft(
            topo.b, "list chain inet rst input")
        assert reset["reset"] == 20 and reset["ok"] == 0, reset
        assert sorted(reset["reset_ports"]) == sorted(ports)
        assert reset["reset_first"] <= reset["reset_last"]
        st = fleet.status()
        assert st["open"] == 0 and st["reset"] == 20, st
        # B's sockets never saw the RST (it went to A): they are open.
        assert fleet.server_status()["open"] == 20
    finally:
        fleet.close()

