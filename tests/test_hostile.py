"""Hostile segments (issue 20): no segment from outside, and no burst of
our own, can crash rackd, freeze a connection, or take it from its owner.

Topology: the standard A -- R -- B (testbed.py), rackd on A and B, a
transfer both ways between them (A the client, B the server on PORT).
The attacker sits in R (on the path: it sees every segment, so it knows
the 4-tuple, the connection id of the heartbeats and, having watched the
handshake, both ISNs; not the key), or on A's own LAN (L, a macvlan on
R's interface towards A: testbed.add_lan_host), where it reaches A
only::

      L 10.71.1.66 (attacker on A's segment, reaches A only)
      |
    A 10.71.1.2 ---- R (attacker, observer) ---- B 10.71.2.2
                     |
                     C / V 10.71.3.2 (victims, tests that need one)

Each case of the matrix (test_spoofed_segment) brings the connection into
one STATE, then the attacker sends one KIND of segment in the name of the
attacked end's peer, with the 4-tuple the connection travels on and,
unless the kind says otherwise, random sequence numbers (an off-path
attacker's):

  state       attacked   how it is held there
  handshake   A          B's SYN-ACK dropped in R (A: SYN_SENT)
  connected   A          -
  suspended   A          B's link cut silently in R (rb), A held
  resuming    A          the cut over, B's own segments to A dropped in R:
                         A's socket waits for the ACK of its retransmission
  adopting    B          R strips the offer (A adopts) and drops A's first
                         two ADOPTs: B has not heard of the flow
  spliced     A          after A's make-before-break move
  migrating   B          A exported (AWAY): B holds it, peer-away

  kind            segments
  syn             SYN offering racks (rackd sees it)
  synack          SYN-ACK with racks' answer
  rst             RST, and RST-ACKs
  fin             FIN marked as a probe's (DSCP LE), and plain ones
  ack             bare ACKs
  heartbeat       HEARTBEAT, the connection's id, a random MAC
  adopt           ADOPT, random numbers
  adopt_observed  ADOPT with the ISNs R saw in the handshake, at the
                  connection's first sequence numbers; then the same a
                  little higher (what a learning end would take)
  rcsyn           reconnection SYN, the connection's id, a random MAC
  rcsyn_replay    a real reconnection SYN (`rackctl peer` made one earlier,
                  R captured it), replayed at the connection's endpoints

Acknowledgment numbers of rst, fin and ack are random but spread over the
sequence space, so that one of every two lies ahead of any snd_una.
Then: both rackds alive; the connection in the same state, same key
fingerprint and endpoints; no suspension on either end meanwhile and,
for a held connection, no resumption either (not even for the moment
before its path is found silent again); the cut survived; the transfer
sha256-intact both ways. Every case proves its segments reached the
attacked end: captured on its eth0 (the attacker's segments carry window
WINDOW), and a counter of its rackd moved wherever rackd must have seen
them. R attacks in every state, kind and family; L (reaching A only) in
every state and kind, in v4 and v6 by turns.

The other tests: the classic probe as a reflector towards a victim and a
probe answer cut at the prober's MSS (defect 3), a flood of forged offers
(4), a malicious peer's valid reconnection spoofed from another host's
connection or from martian sources (7), rackd on the router (9).

make check runs FAST_CASES and the v4 variants of the other tests (every
defect of the issue at least once, both families, both attackers); make
check-slow all of it.

Counters of the target's rackd that name each refusal are asserted
where the outcome is certain (reach_counters(), the probe, malicious-peer
and martian tests): syn_live_socket, synack_unmatched, hold_unacceptable,
edp_probes_unproven, reconnect_challenges_out, reconnects_refused_address.
"""

import ipaddress
import json
import random
import subprocess
import time
import zlib

import pytest

import racks
import testbed

# tests/tools/spoof.py: racks' encodings and MACs (no Scapy needed here).
spoof = testbed._load_tool("spoof")

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\nsweep_interval = 1s\n"
SIZE = 6 * MB
RATE = 1 * MB               # bytes/s each way: the transfer spans the case
# Adoption waits for A's third ADOPT (4 s after its first): a longer one.
SIZES = {"adopting": 9 * MB}
SPOOF = str(testbed.TOOLS / "spoof.py")
WINDOW = spoof.WINDOW
SETTLE = 2.0                # after an attack: six heartbeat intervals
LE = 0x04                   # DSCP LE in the TOS byte: the probe's mark


# --- the attacker, captures, counters ---------------------------------------

class Attacker:
    """Sends crafted segments from a namespace with tests/tools/spoof.py,
    kept running (spoof.py serve) so that a segment leaves within
    milliseconds of the test's decision."""

    def __init__(self, topo, where):
        self.topo, self.where = topo, where
        self.ns = topo.ns(where)
        self.proc = None

    def start(self):
        """Start spoof.py serve now (Scapy loads in about a second); the
        first send waits for it to be ready."""
        if self.proc is None:
            self.proc = self.ns.popen([testbed.PYTHON, SPOOF, "serve"],
                                      stdin=subprocess.PIPE)
            self.ready = False
        return self

    def _serve(self):
        self.start()
        if not self.ready:
            line = testbed.read_line(self.proc, 30,
                                     f"spoof.py in {self.ns.name}")
            assert line == "READY", line
            self.ready = True
        return self.proc

    def reach(self, dst):
        """On A's LAN, L reaches A's addresses on-link only: a route for
        dst (A's current address, which a move may have taken to another
        subnet) through the shared segment."""
        if self.where == "l":
            self.ns.ip("route", "replace", dst, "dev", testbed.HOST_IFACE)

    def send(self, specs):
        for dst in {s["dst"] for s in specs}:
            self.reach(dst)
        proc = self._serve()
        proc.stdin.write(json.dumps(specs) + "\n")
        proc.stdin.flush()
        sent = []
        while (line := testbed.read_line(proc, 30, "spoof.py")) != "DONE":
            sent.append(json.loads(line))
        assert len(sent) == len(specs), sent
        return sent

    def flood(self, dst, dport, prefix, seconds, count=10**6, seed=1):
        """Start a flood of forged offers (spoof.py flood) lasting SECONDS;
        returns its process, whose last line is its report."""
        proc = self.ns.popen([testbed.PYTHON, SPOOF, "flood", "--dst", dst,
                              "--dport", str(dport), "--prefix", prefix,
                              "--count", str(count), "--seconds",
                              str(seconds), "--seed", str(seed)])
        assert testbed.read_line(proc, 30, "the flood") == "READY"
        return proc


class Capture:
    """tcpdump in ns on iface, read back with Scapy once stopped."""

    def __init__(self, ns, iface, path, expr):
        self.ns, self.path = ns, path
        self.proc = ns.popen(["tcpdump", "--immediate-mode", "-U", "-n",
                              "-B", "16384", "-i", iface, "-w", str(path),
                              expr],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        testbed.wait_until(lambda: path.exists() and path.stat().st_size >= 24,
                           10, f"tcpdump in {ns.name} to start")
        self._pkts = None

    def packets(self):
        """Stop once the file stopped growing; the parsed packets."""
        if self._pkts is None:
            from scapy.all import rdpcap
            sizes, deadline = [-2, -1], time.monotonic() + 3
            while sizes[-1] != sizes[-2] and time.monotonic() < deadline:
                time.sleep(0.2)
                sizes.append(self.path.stat().st_size)
            testbed.terminate([self.proc])
            self.ns.procs.remove(self.proc)
            self._pkts = list(rdpcap(str(self.path)))
        return self._pkts


# Handshake and reconnection segments only: SYN set (IPv6 without
# extension headers, as the test-bed's).
SYN_EXPR = ("(ip and tcp[tcpflags] & tcp-syn != 0) or "
            "(ip6 and ip6[6] = 6 and ip6[53] & 2 != 0)")
ATTACKER_EXPR = (f"(ip and tcp[14:2] = {WINDOW}) or "
                 f"(ip6 and ip6[6] = 6 and ip6[54:2] = {WINDOW})")


def l3(p):
    from scapy.all import IP, IPv6
    return p[IP] if IP in p else p[IPv6]


def tcp_of(p):
    from scapy.all import TCP
    return p[TCP]


def arrived(pkts, sent):
    """The sent segments (spoof.py's lines) found in a capture."""
    seen = {(l3(p).src, tcp_of(p).sport, l3(p).dst, tcp_of(p).dport,
             tcp_of(p).seq) for p in pkts}
    return [s for s in sent if
            (norm(s["src"]), s["sport"], norm(s["dst"]), s["dport"],
             s["seq"] % 2**32) in seen]


def norm(addr):
    return str(ipaddress.ip_address(addr))


def delta(before, after, keys):
    return sum(after[k] - before[k] for k in keys)


def host_of(endpoint):
    return endpoint.rsplit(":", 1)[0].strip("[]")


def port_of(endpoint):
    return int(endpoint.rsplit(":", 1)[1])


def assert_alive(*rackds):
    """Every rackd still runs and answers; a dead one is named with its
    exit status (-11: SIGSEGV) and the end of its log."""
    for rackd in rackds:
        if not rackd.running:
            code = rackd.proc.returncode
            pytest.fail(f"rackd in {rackd.ns.name} died (exit status {code}"
                        f"{', SIGSEGV' if code == -11 else ''}):\n"
                        f"{rackd.log()[-3000:]}", pytrace=False)
        rackd.status()


# --- one connection under attack ---------------------------------------------

# Per state: the end attacked (the other end is the one impersonated) and
# the kinds that make sense there (see the module docstring).
KINDS = ("syn", "synack", "rst", "fin", "ack", "heartbeat", "adopt",
         "adopt_observed", "rcsyn", "rcsyn_replay")
STATES = {
    # A's SYN is out, B's SYN-ACK held back in R. A spoofed SYN at a
    # SYN_SENT socket is a simultaneous open to the kernel (no rackd can
    # help), and there is no reconnection to replay yet.
    "handshake": ("a", tuple(k for k in KINDS
                             if k not in ("syn", "rcsyn_replay"))),
    "connected": ("a", KINDS),
    "suspended": ("a", KINDS),        # B's side cut (silently), A held
    "resuming": ("a", KINDS),         # path back, B's ACKs held in R
    # A's ADOPTs held back in R: B has not heard of the flow yet. No key
    # yet: nothing to replay.
    "adopting": ("b", tuple(k for k in KINDS if k != "rcsyn_replay")),
    "spliced": ("a", KINDS),          # after A's make-before-break move
    "migrating": ("b", KINDS),        # A exported (AWAY): B holds, peer away
}
HELD = ("suspended", "resuming", "migrating")


class Scene:
    """A connection between A and B, brought into a state, attacked."""

    def __init__(self, topo, tmp_path, family, attacker, state, seed):
        self.topo, self.tmp = topo, tmp_path
        self.family, self.state = family, state
        self.target = STATES[state][0]
        self.peer = topo.other(self.target)
        self.rng = random.Random(seed)
        self.ra = self.rb = None
        self.server = self.client = None
        self.size = SIZES.get(state, SIZE)
        self.isn = None            # (A's ISN, B's ISN), as R saw them
        self.replay = None         # a real reconnection SYN, peer -> target
        if attacker == "l":
            topo.add_lan_host("l", beside="a")
        self.attacker = Attacker(topo, attacker).start()
        self.marked = None

    # -- lookups --

    def rackd(self, host):
        return self.ra if host == "a" else self.rb

    def ports(self, host):
        return {"remote_port": PORT} if host == "a" else {"local_port": PORT}

    def conns(self, host):
        return racks.conns_between(self.rackd(host), **self.ports(host))

    def show(self, host):
        return racks.conn_of(self.rackd(host), **self.ports(host))

    def wire(self):
        """(peer addr, peer port, target addr, target port) as the
        connection's segments travel now, from the target's view."""
        if self.conns(self.target):
            shown = self.show(self.target)
            return (host_of(shown["wire_remote"]),
                    port_of(shown["wire_remote"]),
                    host_of(shown["wire_local"]), port_of(shown["wire_local"]))
        # The target has not heard of it (adopting): as the peer sees it.
        shown = self.show(self.peer)
        return (host_of(shown["wire_local"]), port_of(shown["wire_local"]),
                host_of(shown["wire_remote"]), port_of(shown["wire_remote"]))

    def conn_id(self):
        """The connection id (heartbeats carry it: R sees it), if any."""
        for host in (self.target, self.peer):
            if self.conns(host) and self.show(host).get("conn_id"):
                return self.show(host)["conn_id"]
        return None

    def peer_isn(self):
        """The peer's ISN as the attacked end recorded it, if it did."""
        if self.conns(self.target):
            return self.show(self.target).get("remote_isn")
        return None

    # -- building --

    def start(self, conf_extra=""):
        conf = FAST + conf_extra
        self.ra = self.topo.start_rackd("a", config=conf)
        self.rb = self.topo.start_rackd("b", config=conf)

    def start_transfer(self, wait=True):
        self.server = testbed.start_xfer_server(
            self.topo.b, PORT, send=self.size, rate=RATE, timeout=120)
        self.client = testbed.start_xfer_client(
            self.topo.a, self.topo.addr["b"][self.family], PORT, self.size,
            recv=True, rate=RATE, announce=True, timeout=120)
        if wait:
            self.client.connected(15)

    def observer(self):
        """R watching the handshake on its interface towards B (the SYN
        and the SYN-ACK both cross it, even one R then drops)."""
        return Capture(self.topo.r, "rb", self.tmp / "handshake.pcap",
                       SYN_EXPR)

    def learn_isns(self, cap):
        """Both ISNs, from R's capture; checked against A's rackd."""
        syn = [p for p in cap.packets() if tcp_of(p).flags == "S"
               and tcp_of(p).dport == PORT]
        synack = [p for p in cap.packets() if tcp_of(p).flags == "SA"
                  and tcp_of(p).sport == PORT]
        assert syn and synack, [p.summary() for p in cap.packets()[:10]]
        self.isn = (tcp_of(syn[0]).seq, tcp_of(synack[0]).seq)
        shown = self.show("a")
        assert (shown["local_isn"], shown.get("remote_isn",
                                              self.isn[1])) == self.isn, \
            (shown, self.isn)

    def capture_replay(self):
        """A real reconnection SYN from the peer to the target: `rackctl
        peer` at the peer, naming the target where it is, makes the
        peer's rackd reconnect at once; R captures it."""
        peer, target = self.peer, self.target
        iface = self.topo.router_iface(target)
        cap = Capture(self.topo.r, iface, self.tmp / "replay.pcap",
                      SYN_EXPR)
        shown = self.show(peer)
        before = self.rackd(target).status()["reconnects_accepted"]
        self.rackd(peer).ctl("peer", shown["id"],
                             self.topo.addr[target][self.family])
        testbed.wait_until(
            lambda: self.rackd(target).status()["reconnects_accepted"] >
            before, 5, "the real reconnection to be accepted")
        for host in (peer, target):
            testbed.wait_until(
                lambda h=host: self.show(h)["state"] == "connected" and
                self.show(h)["hold"] == "none", 5,
                f"{host} resumed after the real reconnection")
        from test_firewall import reconnection_syns
        time.sleep(0.3)
        cap.packets()
        syns = reconnection_syns(cap.path, shown["conn_id"])
        assert syns, "no reconnection SYN captured"
        self.replay = syns[-1]

    def snapshot(self):
        """What must not change: per end, state, fingerprint, wire."""
        snap = {}
        for host in ("a", "b"):
            conns = self.conns(host)
            if not conns:
                snap[host] = None
                continue
            shown = self.rackd(host).ctl_json("show", str(conns[0]["id"]))
            snap[host] = {k: shown.get(k) for k in
                          ("id", "state", "key_fingerprint", "conn_id",
                           "wire_local", "wire_remote", "hold", "migration")}
        return snap

    # -- attacking --

    def segments(self, kind):
        """The attacker's segments of KIND, in the peer's name, to the
        target as the connection travels now."""
        psrc, pport, tdst, tport = self.wire()
        base = {"src": psrc, "sport": pport, "dst": tdst, "dport": tport}
        r32 = lambda: self.rng.getrandbits(32)       # noqa: E731
        conn_id = self.conn_id() or f"{self.rng.getrandbits(64):016x}"
        if kind == "syn":
            return [dict(base, flags="S", seq=r32(), opts=spoof.offer().hex())]
        if kind == "synack":
            # Its sequence number as far from the peer's ISN as a random
            # one can land: a rackd that takes it for the peer's ISN
            # cannot then pass a sequence check by the luck of the draw
            # (the window it allows is 64 MiB wide with a scale of 10).
            isn = self.peer_isn()
            seq = r32() if isn is None else isn + 2**31
            return [dict(base, flags="SA", seq=seq, ack=r32(),
                         opts=spoof.offer(spoof.EDP_SYNACK).hex())]
        # Random numbers, their acknowledgments spread over the sequence
        # space from a random start: one of every two lies ahead of any
        # snd_una (the random numbers an off-path attacker would send,
        # without the luck of the draw deciding whether a test can fail).
        def acks(n):
            start = r32()
            return [(start + i * 2**32 // n) % 2**32 for i in range(n)]
        if kind == "rst":
            return [dict(base, flags="R", seq=r32())] + \
                [dict(base, flags="RA", seq=r32(), ack=a) for a in acks(4)]
        if kind == "fin":
            # Marked as a probe's (rackd sees it) and plain.
            return [dict(base, flags="FA", seq=r32(), ack=r32(), tos=LE)] + \
                [dict(base, flags="FA", seq=r32(), ack=a) for a in acks(4)]
        if kind == "ack":
            return [dict(base, flags="A", seq=r32(), ack=a) for a in acks(8)]
        if kind == "heartbeat":
            opt = spoof.numbered(conn_id, r32(), self.rng.randbytes(16),
                                 spoof.EDP_HEARTBEAT)
            return [dict(base, flags="A", seq=r32(), ack=r32(),
                         opts=opt.hex())]
        if kind == "adopt":
            return [dict(base, flags="A", seq=r32(), ack=r32(),
                         opts=spoof.adopt(r32(), r32()).hex())]
        if kind == "adopt_observed":
            # What R saw in the handshake: the numbers exactly, at the
            # connection's first sequence numbers (inside its first
            # window); then the same a little higher, which an end still
            # learning would take for its own being low.
            isn_peer, isn_target = self.isn if self.peer == "a" else \
                self.isn[::-1]
            seq, ack = isn_peer, isn_target + 1
            return [dict(base, flags="A", seq=seq, ack=ack,
                         opts=spoof.adopt(isn_peer + 1, isn_target + 1).hex()),
                    dict(base, flags="A", seq=seq, ack=ack,
                         opts=spoof.adopt(isn_peer + 1 + 1000,
                                          isn_target + 1).hex())]
        if kind == "rcsyn":
            pay = spoof.numbered(conn_id, r32(), self.rng.randbytes(16),
                                 spoof.EDP_RECONNECT)
            return [dict(base, flags="S", seq=r32(),
                         opts=spoof.rcsyn_options().hex(), payload=pay.hex())]
        if kind == "rcsyn_replay":
            t = tcp_of(self.replay)
            raw = bytes(t)
            return [dict(base, flags="S", seq=t.seq,
                         opts=raw[20:(raw[12] >> 4) * 4].hex(),
                         payload=bytes(t.payload).hex())]
        raise ValueError(kind)

    def reach_counters(self, kind):
        """Counters of the target's rackd that prove it saw the attack:
        (names, at least), or None where only the capture can (a RST or
        bare ACK of a flow that is not held never crosses user space)."""
        held = self.state in HELD
        if kind == "syn" and self.state not in ("adopting", "handshake"):
            # A new ISN on a live socket: judged by it, and ignored.
            return (["syn_live_socket"], 1)
        if kind == "synack":
            # It acknowledges no SYN we sent: nothing taken from it.
            return (["synack_unmatched"], 1)
        if kind == "rst" and self.state in ("suspended", "resuming"):
            # Not the peer's hop count: held back (rstguard.h); or not a
            # segment the held socket would take. No resumption.
            return (["resets_held", "hold_unacceptable"], 1)
        if kind in ("fin", "ack") and self.state in ("suspended",
                                                     "resuming"):
            # Not segments the held socket would take: no resumption.
            return (["hold_unacceptable"], 1)
        return {
            "syn": (["syn"], 1),
            "synack": (["synack"], 1),
            "rst": (["packets_queued"], 5) if held else None,
            "fin": (["packets_queued"], 5) if held else
                   (["edp_probe_fins"], 1),
            "ack": (["packets_queued"], 8) if held else None,
            "heartbeat": (["edp_bad_seq", "edp_unknown_conn", "edp_bad_mac",
                           "edp_unexpected"], 1),
            "adopt": (["adopt_msgs_in"], 1),
            "adopt_observed": (["adopt_msgs_in"], 2),
            "rcsyn": (["reconnects_refused_mac", "reconnects_unknown"], 1),
            "rcsyn_replay": (["reconnects_refused_replay",
                              "reconnects_refused_mac"], 1),
        }[kind]

    def attack(self, kind, settle=SETTLE, snap=None, after_send=None):
        """Send KIND, wait SETTLE seconds; assert both rackds alive, that
        the segments reached the target (capture), that nothing of SNAP
        (a snapshot()) changed, and that the target's rackd saw them where
        it must have (counters). Returns its status before and after."""
        target_rackd = self.rackd(self.target)
        specs = self.segments(kind)
        cap = Capture(self.topo.ns(self.target), testbed.HOST_IFACE,
                      self.tmp / "attack.pcap", ATTACKER_EXPR)
        peer_before = self.rackd(self.peer).status()
        before = target_rackd.status()
        sent = self.attacker.send(specs)
        if after_send:
            after_send()
        time.sleep(settle)
        assert_alive(self.ra, self.rb)
        got = arrived(cap.packets(), sent)      # stops the capture: >= 0.4 s
        after = target_rackd.status()
        peer_after = self.rackd(self.peer).status()
        assert got == sent, f"not all reached {self.target}: sent {sent}, " \
            f"captured {[p.summary() for p in cap.packets()]}"
        if snap is not None:
            self.assert_unchanged(snap, f"after the attack ({kind})")
        # Nothing was suspended (a frozen path is, within suspend_after),
        # and a held connection was not resumed meanwhile, not even for
        # the moment before its path was found silent again.
        watch = [("suspensions", before, after),
                 ("suspensions", peer_before, peer_after),
                 ("suspended", before, after),
                 ("suspended", peer_before, peer_after)]
        if self.state in HELD:
            watch += [("resumes", before, after)]
        if self.state in ("suspended", "resuming"):
            # (A parked path counts it without resuming: not there.)
            watch += [("resumed_by_traffic", before, after)]
        for key, was, now in watch:
            assert now[key] == was[key], \
                f"after the attack ({kind}): {key} {was[key]} -> {now[key]}"
        want = self.reach_counters(kind)
        if want:
            names, least = want
            assert delta(before, after, names) >= least, \
                (kind, names, {k: after[k] - before[k] for k in names})
        return before, after

    # -- checks --

    def assert_unchanged(self, snap, why):
        now = self.snapshot()
        for host in ("a", "b"):
            if snap[host] is None:
                continue
            if self.state == "resuming" and host == self.peer and now[host]:
                # The peer's own resumption ends when our ACKs reach it.
                now[host]["hold"] = snap[host]["hold"]
            assert now[host] == snap[host], \
                f"{why}: {host}'s connection changed:\n was {snap[host]}\n" \
                f" now {now[host]}"

    def mark(self):
        """From now on (the state's hold lifted) neither end suspends."""
        self.marked = [self.rackd(h).status()["suspensions"]
                       for h in ("a", "b")]

    def finish(self, timeout=90):
        """The transfer, intact both ways; since mark(), while it runs,
        both rackds alive and no path suspended (one frozen by the attack
        would be, within suspend_after), checked every 0.25 s."""
        deadline = time.monotonic() + timeout
        worst = [0, 0]
        while self.marked is not None and self.client.proc.poll() is None \
                and time.monotonic() < deadline:
            assert_alive(self.ra, self.rb)
            worst = [max(w, self.rackd(h).status()["suspended"])
                     for w, h in zip(worst, "ab")]
            time.sleep(0.25)
        report = racks.check_both_ways(self.server, self.client, self.size,
                                       timeout)
        if self.marked is not None:
            now = [self.rackd(h).status()["suspensions"] for h in ("a", "b")]
            assert now == self.marked and worst == [0, 0], \
                f"after the attack: suspensions (A, B) {self.marked} -> " \
                f"{now}, most suspended at once {worst}"
        return report

    def wait_both(self, state, timeout):
        for host in ("a", "b"):
            racks.wait_states(self.rackd(host), state, timeout,
                              **self.ports(host))


# --- the states -----------------------------------------------------------

def block_table(topo, name, rules):
    """A forward-chain table in R with one counter per rule (the rule's
    name), so that a test can check that it acted."""
    body = "\n".join(f"        {rule} counter name \"{n}\" {verdict}"
                     for n, rule, verdict in rules)
    counters = "\n".join(f"    counter {n} {{ }}" for n, _, _ in rules)
    testbed.nft_file(topo.r, f"""table inet {name} {{
{counters}
    chain forward {{
        type filter hook forward priority -10; policy accept;
{body}
    }}
}}
""")


def r_counter(topo, table, name):
    out = json.loads(testbed.nft(topo.r, ["-j", "list", "counter", "inet",
                                          table, name]))
    return next(o["counter"]["packets"] for o in out["nftables"]
                if "counter" in o)


def unblock(topo, table):
    testbed.nft(topo.r, f"delete table inet {table}")


def ip_(family):
    return "ip" if family == "v4" else "ip6"


def run_case(topo, tmp_path, state, kind, family, attacker):
    """One case of the matrix: see the module docstring."""
    seed = zlib.crc32(f"{state}/{kind}/{family}/{attacker}".encode())
    sc = Scene(topo, tmp_path, family, attacker, state, seed)
    topo_ = sc.topo
    need_isn = kind == "adopt_observed"
    b_addr = topo_.addr["b"][family]
    a_addr = topo_.addr["a"][family]
    ip = ip_(family)

    if state == "handshake":
        sc.start("setup_timeout = 10s\n")
        block_table(topo_, "hold", [
            ("synack", f"{ip} saddr {b_addr} tcp sport {PORT} "
                       f"tcp flags & (syn | ack) == syn | ack", "drop")])
        obs = sc.observer()
        sc.start_transfer(wait=False)
        testbed.wait_until(lambda: r_counter(topo_, "hold", "synack") >= 1,
                           10, "B's SYN-ACK held back in R")
        testbed.wait_until(lambda: [c for c in sc.conns("a")
                                    if c["state"] == "handshake"], 5,
                           "A's connection in its handshake")
        sc.learn_isns(obs)
        snap = sc.snapshot()
        sc.attack(kind, snap=snap)
        unblock(topo_, "hold")
        sc.client.connected(15)
        sc.wait_both("connected", 10)
        sc.mark()
        # Set up by its handshake, as without the attack: not adopted.
        for host in ("a", "b"):
            shown = sc.show(host)
            assert "adoption" not in shown, (host, shown)
        assert sc.show("a")["key_fingerprint"] == \
            sc.show("b")["key_fingerprint"]
        sc.finish()
        return

    if state == "adopting":
        sc.start()
        # R strips racks' option from SYNs (the offer fails, A adopts)
        # and holds A's ADOPTs back, so that B has not heard of the flow.
        block_table(topo_, "hold", [
            ("stripped", "tcp flags & (syn | ack) == syn tcp option 254 "
                         "exists", "reset tcp option 254"),
            ("adopts", f"{ip} saddr {a_addr} tcp dport {PORT} tcp flags & "
                       f"syn == 0 tcp option @254,16,16 0x7261 "
                       f"tcp option @254,32,8 0x1c", "drop")])
        obs = sc.observer()
        sc.start_transfer()
        # A sends ADOPTs 0.1, 1.1 and 4.1 s after the handshake: the attack
        # goes after the second, so that the third (let through) reaches B
        # once B has learnt and compared whatever the attacker said.
        testbed.wait_until(lambda: r_counter(topo_, "hold", "adopts") >= 2,
                           5, "A's first two ADOPTs held back in R")
        assert r_counter(topo_, "hold", "stripped") >= 1
        shown = sc.show("a")
        assert shown["state"] == "adopting", shown
        assert sc.conns("b") == [], sc.rb.connections()
        if need_isn:
            sc.learn_isns(obs)
        else:
            obs.packets()
        sc.attack(kind, settle=0, after_send=lambda: unblock(topo_, "hold"))
        time.sleep(1)
        assert_alive(sc.ra, sc.rb)
        # A's next ADOPT (1 s or 4 s after its first) reaches B: adopted.
        sc.wait_both("connected", 12)
        sc.mark()
        fps = {sc.show(h)["key_fingerprint"] for h in ("a", "b")}
        assert len(fps) == 1, fps
        assert sc.show("a")["adoption"] == "adopted"
        sc.finish()
        return

    # The others start from a connected, managed connection.
    sc.start()
    obs = sc.observer() if need_isn else None
    sc.start_transfer()
    sc.wait_both("connected", 10)
    if obs:
        sc.learn_isns(obs)
    if kind == "rcsyn_replay":
        sc.capture_replay()

    if state == "connected":
        sc.mark()
        snap = sc.snapshot()
        sc.attack(kind, snap=snap)
        sc.finish()
        return

    if state == "spliced":
        new = racks.move_and_splice(topo_, "a", sc.ra, family)
        racks.wait_connected_at(sc.rb, "wire_remote", new, 10,
                                local_port=PORT)
        racks.wait_connected_at(sc.ra, "wire_local", new, 10,
                                remote_port=PORT)
        assert sc.show("a")["splice"] == "kernel"
        sc.mark()
        snap = sc.snapshot()
        sc.attack(kind, snap=snap)
        assert sc.show("a")["splice"] == "kernel"
        sc.finish()
        return

    if state in ("suspended", "resuming"):
        topo_.cut_silent("b")
        sc.wait_both("suspended", 5)
        if state == "resuming":
            # A resumes into "resuming" only once its held socket has had a
            # segment answered (a retransmission, after its first timeout).
            testbed.wait_until(lambda: sc.ra.status()["hold_answers"] >= 1,
                               10, "A's held socket answered")
            # B's own segments to A held back in R (racks' messages pass):
            # A's socket, data in flight, resumes and waits for the ACK of
            # its retransmission.
            block_table(topo_, "hold", [
                ("racks", "tcp option @254,16,16 0x7261", "accept"),
                ("acks", f"{ip} saddr {b_addr} tcp sport {PORT}", "drop")])
            topo_.restore_silent("b")
            testbed.wait_until(lambda: sc.show("a")["hold"] == "resuming", 5,
                               lambda: f"A resuming: {sc.show('a')}")
            racks.wait_states(sc.rb, "connected", 5, local_port=PORT)
        snap = sc.snapshot()
        sc.attack(kind, snap=snap)
        if state == "suspended":
            topo_.restore_silent("b")
        else:
            assert r_counter(topo_, "hold", "acks") >= 1, \
                "R held back none of B's segments"
            unblock(topo_, "hold")
        sc.wait_both("connected", 10)
        sc.mark()
        for host in ("a", "b"):
            assert sc.show(host)["key_fingerprint"] == \
                snap[host]["key_fingerprint"]
        # The resumption itself: every byte arrives, within the transfer's
        # deadline (a socket whose retransmissions were lost in the cut,
        # or whose window stayed closed, would not make it).
        sc.finish()
        return

    if state == "migrating":
        cid = sc.show("a")["id"]
        testbed.wait_until(
            lambda: all(r["acked"] == "true" for r in racks.ctl_request(
                sc.ra, "export", ("id", cid))[0][1:]), 5, "B to hold")
        shown = sc.show("b")
        assert shown["migration"] == "peer-away" and \
            shown["state"] == "suspended", shown
        snap = sc.snapshot()
        sc.attack(kind, snap=snap)
        records, errno, error = racks.ctl_request(sc.ra, "unexport",
                                                  ("id", cid))
        assert errno == 0, error
        sc.wait_both("connected", 10)
        sc.mark()
        assert "migration" not in sc.show("b")
        for host in ("a", "b"):
            assert sc.show(host)["key_fingerprint"] == \
                snap[host]["key_fingerprint"]
        sc.finish()
        return
    raise ValueError(state)


# Every defect of the issue (1-7, 9) at least once, both families, both
# attackers: make check. The whole matrix: make check-slow.
FAST_CASES = {
    ("connected", "syn", "v4", "r"),            # 1: crash
    ("spliced", "syn", "v4", "l"),              # 1: crash, from A's LAN
    ("migrating", "syn", "v4", "r"),            # 1: at the held peer
    ("connected", "synack", "v4", "r"),         # 2: frozen
    ("handshake", "synack", "v6", "r"),         # 2: in the handshake
    ("suspended", "ack", "v4", "l"),            # 5: resumes during a cut
    ("resuming", "ack", "v6", "r"),             # 5: ends a resumption
    ("connected", "adopt_observed", "v6", "r"),  # 6: re-keyed by an observer
    ("suspended", "adopt_observed", "v4", "r"),  # 6: releases a hold
    ("adopting", "adopt_observed", "v4", "r"),  # 6: poisons the learning
    ("adopting", "syn", "v6", "r"),             # 1: blocks an adoption
}


def matrix():
    """R: every state x kind x family. L (attacking A only): every state
    x kind, in one family, v4 and v6 by turns along KINDS."""
    for state, (target, kinds) in STATES.items():
        for kind in kinds:
            turn = ("v4", "v6")[KINDS.index(kind) % 2]
            for family in ("v4", "v6"):
                for attacker in ("r", "l") if target == "a" else ("r",):
                    if attacker == "l" and family != turn:
                        continue
                    case = (state, kind, family, attacker)
                    marks = () if case in FAST_CASES else (pytest.mark.slow,)
                    yield pytest.param(*case, marks=marks,
                                       id="-".join(case))


MATRIX = list(matrix())
assert FAST_CASES <= {tuple(p.values) for p in MATRIX}, \
    FAST_CASES - {tuple(p.values) for p in MATRIX}


@pytest.mark.parametrize("state,kind,family,attacker", MATRIX)
@pytest.mark.timing
def test_spoofed_segment(topo, tmp_path, state, kind, family, attacker):
    """The attacker (R, or L on A's LAN) sends KIND at a connection in
    STATE: nothing changes (see the module docstring)."""
    run_case(topo, tmp_path, state, kind, family, attacker)


# --- the classic probe as a reflector (defect 3) ----------------------------

VICTIM_PREFIX = {"v4": "10.71.3.2", "v6": "fd71:3::2"}

# A server that accepts on both families and never sends a byte.
SILENT = """
import socket, sys
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(64); print("READY", flush=True)
conns = []
while True:
    conns.append(s.accept()[0])
"""


def payload_segments(pkts, src, sport):
    """(seq, length) of every segment with data from src:sport."""
    return [(tcp_of(p).seq, len(bytes(tcp_of(p).payload))) for p in pkts
            if norm(l3(p).src) == norm(src) and tcp_of(p).sport == sport
            and len(bytes(tcp_of(p).payload))]


@pytest.mark.parametrize("family", [
    "v4", pytest.param("v6", marks=pytest.mark.slow)])
@pytest.mark.timing
def test_spoofed_probe_is_not_reflected(topo, tmp_path, family):
    """R, in the name of a victim V (a host behind R), sends B's server
    port marked (DSCP LE) SYNs announcing a 64-byte MSS, each followed at
    once by a FIN at the SYN's ISN + 1, the handshake never completed
    (B's SYN-ACK went to V, who never asked). V must receive no byte of
    an announcement (today: 2 x 1024 bytes per 40-byte FIN, in 64-byte
    segments); B's SYN-ACKs that V does receive prove the SYNs reached
    B. In the same run a real `rackctl probe` from A still finds B
    enhanced."""
    from test_edp import rackctl_probe, start_py_server
    rb = topo.start_rackd("b", config=FAST)
    start_py_server(topo.b, SILENT)
    victim = topo.add_host("c")
    v_addr, b_addr = topo.addr["c"][family], topo.addr["b"][family]
    assert v_addr == VICTIM_PREFIX[family]
    cap = Capture(victim, testbed.HOST_IFACE, tmp_path / "victim.pcap",
                  f"tcp and src host {b_addr}")
    rng = random.Random(3)
    specs = []
    for i in range(5):
        isn = rng.getrandbits(32)
        base = {"src": v_addr, "sport": 40000 + i, "dst": b_addr,
                "dport": PORT, "tos": LE}
        specs += [dict(base, flags="S", seq=isn,
                       opts=bytes([2, 4, 0, 64]).hex()),
                  dict(base, flags="FA", seq=isn + 1, ack=rng.getrandbits(32))]
    before = rb.status()
    Attacker(topo, "r").send(specs)
    probe = rackctl_probe(topo.a, racks.endpoint(b_addr, PORT))
    testbed.wait_until(lambda: rb.status()["edp_probe_fins"] -
                       before["edp_probe_fins"] >= 6, 5,
                       "the spoofed FINs and the probe's at B's rackd")
    time.sleep(1)
    assert_alive(rb)
    after = rb.status()
    pkts = cap.packets()
    # Positive controls: the real probe answered; B answered the spoofed
    # SYNs towards V, so they did reach B.
    assert probe["result"] == "enhanced", probe
    assert after["edp_probes_answered"] > before["edp_probes_answered"]
    # Each spoofed FIN was refused for a handshake never completed.
    assert after["edp_probes_unproven"] - before["edp_probes_unproven"] == 5, \
        (before["edp_probes_unproven"], after["edp_probes_unproven"])
    synacks = [p for p in pkts if tcp_of(p).flags == "SA"]
    assert len({tcp_of(p).dport for p in synacks}) == 5, \
        [p.summary() for p in pkts]
    reflected = payload_segments(pkts, b_addr, PORT)
    assert not reflected, \
        f"V received {sum(n for _, n in reflected)} bytes of announcements " \
        f"in {len(reflected)} segments (largest {max(n for _, n in reflected)}" \
        f" bytes) for 5 spoofed FINs of 40 bytes"


@pytest.mark.parametrize("family", [
    "v4", pytest.param("v6", marks=pytest.mark.slow)])
@pytest.mark.timing
def test_probe_answer_is_never_cut_below_536_bytes(topo, tmp_path, family):
    """A real probe from A, whose SYN announces an MSS of 200 (A's route
    to B says advmss 200), is answered: enhanced, but the announcement
    travels in segments of at least 536 bytes (its last piece excepted),
    never cut at a small MSS a prober can choose."""
    from test_edp import rackctl_probe, start_py_server
    rb = topo.start_rackd("b", config=FAST)
    start_py_server(topo.b, SILENT)
    b_addr = topo.addr["b"][family]
    gw = str(next(ipaddress.ip_network(f"{topo.addr['a'][family]}/"
                                       f"{topo.prefix['a'][family]}",
                                       strict=False).hosts()))
    topo.a.ip("route", "replace", b_addr, "via", gw, "dev",
              testbed.HOST_IFACE, "advmss", "200")
    cap = Capture(topo.a, testbed.HOST_IFACE, tmp_path / "probe.pcap",
                  f"tcp port {PORT}")
    probe = rackctl_probe(topo.a, racks.endpoint(b_addr, PORT))
    pkts = cap.packets()
    assert probe["result"] == "enhanced", probe
    syn = [p for p in pkts if tcp_of(p).flags == "S"]
    assert syn and dict(tcp_of(syn[0]).options).get("MSS") == 200, \
        [p.summary() for p in syn]
    segs = payload_segments(pkts, b_addr, PORT)
    assert segs, [p.summary() for p in pkts]
    first = min(seq for seq, _ in segs)
    cut = [(seq, n) for seq, n in segs
           if n < 536 and (seq - first) % 2**32 + n != 1024]
    assert not cut, f"announcement cut at the prober's MSS: {segs}"
    assert_alive(rb)


# --- a flood of forged offers (defect 4) ------------------------------------

FLOOD_CAP = 200             # B's max_connections
FLOOD_SECONDS = 6
FLOOD_PREFIX = {"v4": "10.71.99.0/24", "v6": "fd71:99::/64"}


@pytest.mark.parametrize("family", [
    "v4", pytest.param("v6", marks=pytest.mark.slow)])
@pytest.mark.alone
def test_syn_flood_leaves_a_real_connection_managed(topo, family):
    """R floods B's server port for FLOOD_SECONDS with SYNs offering racks,
    from one prefix that routes nowhere (B's SYN-ACKs die in R), B's
    max_connections being FLOOD_CAP. Once the flood has sent three times
    that, a connection from A, opened while it goes on, must be managed
    (set up by its handshake or adopted) within 3 s, its bytes intact
    both ways, B's rackd alive. The flood reached B's rackd (its SYN
    counter) and was still going when A's connection was managed."""
    conf = FAST + f"max_connections = {FLOOD_CAP}\n"
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=conf)
    topo.r.ip("route", "add", "blackhole", FLOOD_PREFIX[family])
    size = 8 * MB
    server = testbed.start_xfer_server(topo.b, PORT, send=size, rate=RATE,
                                       timeout=60)
    before = rb.status()
    flood = Attacker(topo, "r").flood(topo.addr["b"][family], PORT,
                                      FLOOD_PREFIX[family], FLOOD_SECONDS)
    testbed.wait_until(
        lambda: rb.status()["syn"] - before["syn"] >= 3 * FLOOD_CAP, 10,
        lambda: f"the flood at B's rackd: "
        f"{rb.status()['syn'] - before['syn']} SYNs")
    assert_alive(rb)
    mid = rb.status()
    client = testbed.start_xfer_client(topo.a, topo.addr["b"][family], PORT,
                                       size, recv=True, rate=RATE,
                                       announce=True, timeout=60)
    client.connected(15)
    t0 = time.monotonic()
    a_addr = norm(topo.addr["a"][family])

    def real_on_b():
        """B's entry of A's connection, among the flood's."""
        conns = [c for c in racks.conns_between(rb, local_port=PORT)
                 if host_of(c["remote"]) == a_addr]
        return conns[0] if len(conns) == 1 else None

    def managed():
        mine, theirs = racks.conns_between(ra, remote_port=PORT), real_on_b()
        return len(mine) == 1 and mine[0]["state"] == "connected" and \
            theirs and theirs["state"] == "connected" and (mine[0], theirs)

    try:
        mine, theirs = testbed.wait_until(managed, 3, "A's connection managed")
        failure = None
    except TimeoutError as exc:
        st = rb.status()
        failure = (f"{exc}\nA: {ra.connections()}\nB's entry: {real_on_b()}\n"
                   f"B under the flood: connections {st['connections']}, "
                   f"connections_refused "
                   f"{st['connections_refused'] - before['connections_refused']}"
                   f", edp_setup_started "
                   f"{st['edp_setup_started'] - before['edp_setup_started']}")
    if failure:
        pytest.fail(failure, pytrace=False)
    took = time.monotonic() - t0
    assert flood.poll() is None, "the flood was over before A's connection"
    fps = {ra.ctl_json("show", str(mine["id"]))["key_fingerprint"],
           rb.ctl_json("show", str(theirs["id"]))["key_fingerprint"]}
    assert len(fps) == 1, fps
    out, _ = flood.communicate(timeout=FLOOD_SECONDS + 30)
    report = json.loads(out.splitlines()[-1])
    racks.check_both_ways(server, client, size)
    assert_alive(ra, rb)
    print(f"\n{family}: {report['sent']} forged offers in "
          f"{report['seconds']} s; when A connected B held "
          f"{mid['connections']} entries, set-up begun "
          f"{mid['edp_setup_started'] - before['edp_setup_started']} times; "
          f"A's connection managed {took:.2f} s after connect()")


# --- a malicious peer's reconnections (defect 7) -----------------------------

def splice_maps(ns):
    """Every element of rackd's splice maps in ns, {map: [elements]}."""
    out = {}
    listing = json.loads(testbed.nft(ns, ["-j", "list", "maps", "inet"]))
    for obj in listing["nftables"]:
        m = obj.get("map")
        if not m or m.get("table") != "racks":
            continue
        one = json.loads(testbed.nft(ns, ["-j", "list", "map", "inet",
                                          "racks", m["name"]]))
        elems = [o["map"].get("elem", []) for o in one["nftables"]
                 if "map" in o]
        out[m["name"]] = json.dumps(elems[0] if elems else [],
                                    sort_keys=True)
    assert any(name.startswith(("in4", "in6")) for name in out), out
    return out


def mac_of(ns, iface=testbed.HOST_IFACE):
    return ns.ip_json("link", "show", "dev", iface)[0]["address"]


class MaliciousPeer:
    """M (host A, rackd) with two managed connections to S (host B, rackd)
    on PORT, the first the one it abuses, the second for the positive
    control; their keys from M's state file."""

    def __init__(self, topo, family, size, conf):
        self.topo, self.family, self.size = topo, family, size
        self.rm = topo.start_rackd("a", config=conf)
        self.rs = topo.start_rackd("b", config=conf)
        self.s_addr = topo.addr["b"][family]
        self.m_addr = topo.addr["a"][family]
        self.clients = []

    def connect(self, ns, count=1):
        out = []
        for _ in range(count):
            c = testbed.start_xfer_client(ns, self.s_addr, PORT, self.size,
                                          recv=True, rate=RATE, announce=True,
                                          timeout=90)
            out.append((c, c.connected(15)[1]))
            self.clients.append(c)
        return out

    def managed_on_s(self, count):
        def ready():
            conns = [c for c in racks.conns_between(self.rs, local_port=PORT)
                     if host_of(c["remote"]) == norm(self.m_addr)
                     and c["state"] == "connected"]
            return conns if len(conns) == count else None
        return testbed.wait_until(ready, 10, lambda: f"M's connections at S: "
                                  f"{self.rs.connections()}")

    def s_show(self, mport):
        c = [c for c in racks.conns_between(self.rs, local_port=PORT)
             if port_of(c["remote"]) == mport]
        assert len(c) == 1, self.rs.connections()
        return self.rs.ctl_json("show", str(c[0]["id"]))

    def stop_and_read_keys(self, ports):
        """Stop M's rackd (its state file then holds every counter as it
        is) and read each connection's key; checked against what both
        rackds showed (conn_id, fingerprint), which proves the crafting."""
        shown = {p: self.s_show(p) for p in ports}
        assert self.rm.stop() == 0
        states = {port_of(s["local"]): s
                  for s in spoof.read_state(self.rm.state)}
        for p in ports:
            st = states[p]
            assert spoof.conn_id_of(st["key"]) == st["conn_id"] == \
                shown[p]["conn_id"]
            assert spoof.fingerprint_of(st["key"]) == \
                shown[p]["key_fingerprint"]
        return states, shown

    def rcsyn(self, state, src, sport, counter_step=0, **l2):
        """A valid reconnection SYN of STATE's connection, from src:sport.
        Its counter: well above any M's rackd sent (the file is written
        on events, not on every heartbeat), well below what it sends
        after its restart (65536 above the file's)."""
        counter = int(state["hb_out"]) + 1000 + counter_step
        return dict({"src": src, "sport": sport, "dst": self.s_addr,
                     "dport": PORT, "flags": "S",
                     "seq": random.getrandbits(32),
                     "opts": spoof.rcsyn_options().hex(),
                     "payload": spoof.signed_reconnect(state, counter).hex()},
                    **l2)

    def synack_seen(self, cap, mport):
        return [p for p in cap.packets() if tcp_of(p).flags == "SA" and
                tcp_of(p).sport == PORT and tcp_of(p).dport == mport and
                norm(l3(p).src) == norm(self.s_addr)]

    def check_transfers(self, server, count):
        reports = {r["peer_port"]: r for r in server.results(90)}
        assert len(reports) == count, reports
        for c in self.clients:
            rep = c.result(90)
            srv = reports[rep["local_port"]]
            assert rep["sent_sha256"] == srv["recv_sha256"] == \
                testbed.expected_sha256(self.size, testbed.CLIENT_SEED)
            assert rep["recv_sha256"] == srv["sent_sha256"] == \
                testbed.expected_sha256(self.size, testbed.SERVER_SEED)


@pytest.mark.parametrize("family", [
    "v4", pytest.param("v6", marks=pytest.mark.slow)])
@pytest.mark.timing
def test_malicious_peer_cannot_take_another_hosts_connection(topo, tmp_path,
                                                             family):
    """M (A) holds the key of its own connection to S (B) on PORT; V (a
    plain host C) has a connection to S on the same port. M sends S a
    reconnection SYN for its connection, valid in every bit (M's key, a
    new counter, wire format of rcsyn.c), from V's address and port. S
    must splice nothing (its splice maps unchanged, M's connection still
    at M's endpoint), and V's and M's transfers arrive intact both ways.
    Positive control: the same crafted SYN from M's real endpoint (of a
    second connection of M) is answered by S with a SYN-ACK."""
    size = 8 * MB
    conf = "suspend_after = 10s\n"        # M's rackd is down a few seconds
    mp = MaliciousPeer(topo, family, size, conf)
    v = topo.add_host("c")
    server = testbed.start_xfer_server(topo.b, PORT, send=size, rate=RATE,
                                       count=3, timeout=120)
    (_, m1), (_, m2) = mp.connect(topo.a, 2)
    (_, vport), = mp.connect(v)
    mp.managed_on_s(2)
    v_addr = topo.addr["c"][family]
    maps = splice_maps(topo.b)
    cap_m = Capture(topo.a, testbed.HOST_IFACE, tmp_path / "m.pcap", SYN_EXPR)
    cap_s = Capture(topo.b, testbed.HOST_IFACE, tmp_path / "s.pcap", SYN_EXPR)
    states, shown = mp.stop_and_read_keys((m1, m2))
    before = mp.rs.status()
    hijack = mp.rcsyn(states[m1], v_addr, vport)
    Attacker(topo, "a").send([hijack])
    testbed.wait_until(lambda: mp.rs.status()["edp_msgs_in"] >
                       before["edp_msgs_in"], 5, "the SYN at S's rackd")
    time.sleep(1)
    assert_alive(mp.rs)
    assert arrived(cap_s.packets(), [hijack]), "the SYN never reached S"
    assert splice_maps(topo.b) == maps, \
        f"S spliced M's connection onto V's flow: {splice_maps(topo.b)}"
    # S answered with its challenge, to V, which never confirms it.
    st = mp.rs.status()
    assert st["reconnect_challenges_out"] > before["reconnect_challenges_out"]
    assert st["reconnects_accepted"] == before["reconnects_accepted"], st
    now = mp.s_show(m1)
    assert now["wire_remote"] == shown[m1]["wire_remote"], now
    # Positive control: from M's own endpoint, S answers.
    Attacker(topo, "a").send([mp.rcsyn(states[m2], mp.m_addr, m2)])
    testbed.wait_until(lambda: mp.synack_seen(cap_m, m2), 5,
                       "S's SYN-ACK to the positive control")
    mp.rm.start()
    assert mp.rm.status()["state_restored"] == 2
    mp.managed_on_s(2)
    assert mp.s_show(m1)["key_fingerprint"] == shown[m1]["key_fingerprint"]
    assert splice_maps(topo.b) == maps
    mp.check_transfers(server, 3)
    assert_alive(mp.rm, mp.rs)


MARTIANS = {
    "v4": ["own", "127.0.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255",
           "10.71.2.255"],
    # ::1 and multicast sources never reach a hook: ipv6_rcv drops them.
    "v6": ["own", "link-local", "::"],
}


@pytest.mark.parametrize("family", [
    "v4", pytest.param("v6", marks=pytest.mark.slow)])
@pytest.mark.timing
def test_reconnection_from_a_martian_source_is_refused(topo, tmp_path,
                                                       family):
    """Valid reconnection SYNs for M's connection (M's key, new counters),
    sent as Ethernet frames from S's own link (R) with sources no peer can
    be at: S's own addresses, loopback, unspecified, multicast, broadcast.
    S splices nothing, M's connection stays where it is and transfers
    intact. Positive control: the same from M's real endpoint (second
    connection) is answered by S."""
    size = 8 * MB
    conf = "suspend_after = 10s\n"
    mp = MaliciousPeer(topo, family, size, conf)
    server = testbed.start_xfer_server(topo.b, PORT, send=size, rate=RATE,
                                       count=2, timeout=120)
    (_, m1), (_, m2) = mp.connect(topo.a, 2)
    mp.managed_on_s(2)
    maps = splice_maps(topo.b)
    own = {"own": mp.s_addr}
    if family == "v6":
        own["link-local"] = next(
            a["local"] for a in topo.b.ip_json("-6", "addr", "show", "dev",
                                               testbed.HOST_IFACE)[0]
            ["addr_info"] if a["local"].startswith("fe80"))
    sources = [own.get(s, s) for s in MARTIANS[family]]
    l2 = {"iface": "rb", "dmac": mac_of(topo.b)}
    cap_s = Capture(topo.b, testbed.HOST_IFACE, tmp_path / "s.pcap", SYN_EXPR)
    cap_r = Capture(topo.r, "rb", tmp_path / "r.pcap", SYN_EXPR)
    states, shown = mp.stop_and_read_keys((m1, m2))
    before = mp.rs.status()
    specs = [mp.rcsyn(states[m1], src, 40000 + i, counter_step=i, **l2)
             for i, src in enumerate(sources)]
    Attacker(topo, "r").send(specs)
    testbed.wait_until(lambda: mp.rs.status()["edp_msgs_in"] -
                       before["edp_msgs_in"] >= len(specs), 5,
                       lambda: f"the SYNs at S's rackd: "
                       f"{mp.rs.status()['edp_msgs_in'] - before['edp_msgs_in']}"
                       f" of {len(specs)}")
    time.sleep(1)
    assert_alive(mp.rs)
    assert arrived(cap_s.packets(), specs) == specs
    assert splice_maps(topo.b) == maps, \
        f"S spliced M's connection onto a martian: {splice_maps(topo.b)}"
    # Each refused for its source, before any challenge went anywhere.
    st = mp.rs.status()
    assert st["reconnects_refused_address"] - \
        before["reconnects_refused_address"] == len(specs), st
    assert st["reconnect_challenges_out"] == \
        before["reconnect_challenges_out"], st
    assert mp.s_show(m1)["wire_remote"] == shown[m1]["wire_remote"]
    Attacker(topo, "r").send([mp.rcsyn(states[m2], mp.m_addr, m2, **l2)])
    testbed.wait_until(lambda: mp.synack_seen(cap_r, m2), 5,
                       "S's SYN-ACK to the positive control")
    mp.rm.start()
    mp.managed_on_s(2)
    assert splice_maps(topo.b) == maps
    mp.check_transfers(server, 2)
    assert_alive(mp.rm, mp.rs)


# --- rackd on a router (defect 9) --------------------------------------------

@pytest.mark.parametrize("family", [
    "v4", pytest.param("v6", marks=pytest.mark.slow)])
@pytest.mark.timing
def test_rackd_on_the_router_forwards_racks_traffic(topo, family):
    """rackd runs on R too. A's and B's connection through it is set up
    (connected within 5 s), survives a silent cut of B's link, and
    arrives intact; R's rackd never saw a packet of it (packets_queued
    stays 0), while R forwarded racks' messages (a counter in R's
    prerouting, before any rackd hook, and one in its forward chain:
    equal, nothing eaten)."""
    testbed.nft_file(topo.r, """table inet watch {
    counter seen { }
    counter forwarded { }
    chain watch_pre {
        type filter hook prerouting priority -500; policy accept;
        tcp flags & syn == 0 tcp option @254,16,16 0x7261 counter name "seen"
    }
    chain watch_fwd {
        type filter hook forward priority 500; policy accept;
        tcp flags & syn == 0 tcp option @254,16,16 0x7261 counter name "forwarded"
    }
}
""")
    rr = topo.start_rackd("r", config=FAST)
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 8 * MB
    server, client = racks.start_transfer(topo, family, size, PORT, RATE, 90)
    try:
        racks.wait_states(ra, "connected", 5, remote_port=PORT)
        racks.wait_states(rb, "connected", 5, local_port=PORT)
        failure = None
    except TimeoutError as exc:
        st = rr.status()
        failure = (f"{exc}\nR's rackd: packets_queued {st['packets_queued']}"
                   f", edp_msgs_in {st['edp_msgs_in']}, edp_unknown_conn "
                   f"{st['edp_unknown_conn']}")
    if failure:
        pytest.fail(failure, pytrace=False)
    topo.cut_silent("b")
    racks.wait_states(ra, "suspended", 5, remote_port=PORT)
    time.sleep(1)
    topo.restore_silent("b")
    racks.wait_states(ra, "connected", 10, remote_port=PORT)
    racks.wait_states(rb, "connected", 10, local_port=PORT)
    seen, fwd = (r_counter(topo, "watch", n) for n in ("seen", "forwarded"))
    st = rr.status()
    assert seen > 0 and fwd == seen, (seen, fwd)
    assert st["packets_queued"] == 0 and st["edp_msgs_in"] == 0, st
    racks.check_both_ways(server, client, size)
    assert_alive(ra, rb, rr)
