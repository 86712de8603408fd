#!/usr/bin/python3
"""An attacker's TCP segments for tests/test_hostile.py, crafted with Scapy.

usage: spoof.py send SPEC_JSON
       spoof.py serve
       spoof.py flood --dst ADDR --dport PORT --prefix CIDR --count N
                      [--seconds T] [--seed S]

send: SPEC_JSON is a JSON list of segments, each an object with
  src, dst, sport, dport        the (spoofed) 4-tuple
  flags                         Scapy's letters: "S", "SA", "A", "FA", "R"
  seq, ack                      numbers (default 0)
  window                        default WINDOW (31337: the tests find the
                                attacker's segments by it in captures)
  tos                           IPv4 TOS / IPv6 traffic class (0x04: DSCP LE)
  opts, payload                 hex: raw TCP option bytes (padded to 4 with
                                NOPs) and data; Scapy would re-validate
                                options, so they travel as raw bytes
  iface, dmac                   optional: sent as an Ethernet frame to dmac
                                out of iface (AF_PACKET: no routing, no
                                output hook, the source left as it is even
                                where a raw IP socket would fill it in)
All of them go out of one raw socket per family (or per interface), in
order; one JSON line per segment is printed (what was sent, for captures
to be matched).

serve: prints READY once Scapy is loaded, then reads one SPEC_JSON per
line on stdin and sends it as send does, ending each batch's output with
a line DONE: a test keeps one attacker ready and sends without Scapy's
start-up (about a second) between its decision and the segment.

flood: COUNT SYNs offering racks (racks' SYN option) to DST:DPORT, each
from a random address in PREFIX and a random port, random ISN, as fast as
it goes (or for T seconds, whichever ends first); prints READY when it
starts and {"sent": N, "seconds": S} when done.

Importable (no Scapy needed): the racks option encodings of edp/option.h
and the MACs and derived values of edp/keys.c (keyed BLAKE2b, which
hashlib reproduces), and a reader for rackd's state file
(rackd/persist/state.c), which holds each managed connection's key.
"""

import hashlib
import ipaddress
import json
import random
import sys
import time

WINDOW = 31337
EXID = b"\x72\x61"
# edp/option.h
EDP_SYN, EDP_SYNACK, EDP_KEY, EDP_CONFIRM, EDP_DONE = 1, 2, 3, 4, 5
EDP_HEARTBEAT, EDP_HEARTBEAT_ACK, EDP_RECONNECT, EDP_RECONNECT_ACK = 6, 7, 8, 9
EDP_AWAY, EDP_AWAY_ACK, EDP_ADOPT = 10, 11, 12
# edp/keys.h, enum edp_role: heartbeats and the rest, by type and sender
ROLE_CLIENT_HEARTBEAT = 4


def pad(raw):
    """Option bytes NOP-padded to a multiple of four."""
    return raw + b"\x01" * (-len(raw) % 4)


def racks_option(type_, body=b""):
    """racks' option: 254 | length | ExID | version << 4 | type | body."""
    raw = bytes([254, 5 + len(body)]) + EXID + bytes([1 << 4 | type_]) + body
    return raw


def offer(type_=EDP_SYN):
    """The SYN (or SYN-ACK, EDP_SYNACK) offer, after an MSS option."""
    return pad(bytes([2, 4, 0x05, 0xb4]) + racks_option(type_, b"\x00"))


def numbered(conn_id, counter, mac, type_):
    """A numbered message (heartbeat, reconnection...): 36 bytes padded.
    conn_id: 16 hex digits."""
    body = bytes.fromhex(conn_id) + counter.to_bytes(4, "big") + mac
    return pad(racks_option(type_, body))


def adopt(x_own, x_peer, flags=0):
    """An ADOPT: both first numbers, flags, seven reserved zero bytes."""
    body = (x_own % 2**32).to_bytes(4, "big") + \
        (x_peer % 2**32).to_bytes(4, "big") + bytes([flags]) + bytes(7)
    return pad(racks_option(EDP_ADOPT, body))


def rcsyn_options(type_=EDP_RECONNECT, marker=True):
    """The 28 option bytes of a reconnection SYN (rcsyn.c): MSS, NOP WS,
    SACKPERM TS, racks' marker (NOPs when not marker)."""
    opts = bytes([2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10]) + bytes(8)
    tail = bytes([254, 5]) + EXID + bytes([1 << 4 | type_, 1, 1, 1]) \
        if marker else b"\x01" * 8
    return opts + tail


def transcript(t):
    """edp/keys.c transcript_bytes: pk_client | pk_server | isn_client |
    isn_server (big-endian)."""
    return (bytes.fromhex(t["pk_client"]) + bytes.fromhex(t["pk_server"]) +
            int(t["isn_client"]).to_bytes(4, "big") +
            int(t["isn_server"]).to_bytes(4, "big"))


def numbered_role(type_, client):
    """channel.c numbered_role: the MAC's role by type and sender."""
    return ROLE_CLIENT_HEARTBEAT + 2 * (type_ - EDP_HEARTBEAT) + \
        (0 if client else 1)


def mac_counter(key, role, counter, t):
    """edp_mac_counter: BLAKE2b-128 keyed with K over role | counter |
    transcript."""
    msg = bytes([role]) + counter.to_bytes(4, "big") + transcript(t)
    return hashlib.blake2b(msg, key=key, digest_size=16).digest()


def _derive_public(key, label):
    return hashlib.blake2b(label.encode(), key=key,
                           digest_size=16).digest()[:8]


def conn_id_of(key):
    """edp_conn_id, as the 16 hex digits rackctl and the state file show."""
    return _derive_public(key, "racks connection id").hex()


def fingerprint_of(key):
    """edp_fingerprint, as rackctl show's key_fingerprint."""
    return _derive_public(key, "racks fingerprint").hex()


def read_state(path):
    """The conn lines of a rackd state file, as dicts of their fields
    (key=value words); key is bytes."""
    conns = []
    with open(path) as f:
        for line in f:
            if not line.startswith("conn "):
                continue
            fields = dict(word.split("=", 1) for word in line.split()[1:])
            fields["key"] = bytes.fromhex(fields["key"])
            conns.append(fields)
    return conns


def signed_reconnect(state, counter, type_=EDP_RECONNECT):
    """The payload of a reconnection SYN (or SYN-ACK) for the connection
    of STATE (one read_state() entry), sent by its own end: a numbered
    message under its key."""
    client = state["dir"] == "out"
    mac = mac_counter(state["key"], numbered_role(type_, client), counter,
                      state)
    return numbered(state["conn_id"], counter, mac, type_)


# --- sending (Scapy) --------------------------------------------------------

def _build(spec):
    from scapy.all import IP, IPv6, TCP, Raw
    v6 = ":" in spec["dst"]
    tos = int(spec.get("tos", 0))
    l3 = IPv6(src=spec["src"], dst=spec["dst"], tc=tos) if v6 else \
        IP(src=spec["src"], dst=spec["dst"], tos=tos)
    opts = pad(bytes.fromhex(spec.get("opts", "")))
    pay = bytes.fromhex(spec.get("payload", ""))
    tcp = TCP(sport=int(spec["sport"]), dport=int(spec["dport"]),
              flags=spec["flags"], seq=int(spec.get("seq", 0)) % 2**32,
              ack=int(spec.get("ack", 0)) % 2**32,
              window=int(spec.get("window", WINDOW)), options=[])
    tcp.dataofs = 5 + len(opts) // 4
    return l3 / tcp / Raw(opts + pay) if opts or pay else l3 / tcp


class _Sockets:
    """One raw socket per family, opened on first use."""

    def __init__(self):
        self.socks = {}

    def send(self, pkt, v6, iface=None, dmac=None):
        from scapy.all import Ether, conf
        if iface:
            if iface not in self.socks:
                self.socks[iface] = conf.L2socket(iface=iface)
            self.socks[iface].send(Ether(dst=dmac) / pkt)
            return
        if v6 not in self.socks:
            self.socks[v6] = conf.L3socket6() if v6 else conf.L3socket()
        self.socks[v6].send(pkt)

    def close(self):
        for s in self.socks.values():
            s.close()


def send_specs(specs, socks=None):
    own = socks is None
    socks = socks or _Sockets()
    try:
        for spec in specs:
            socks.send(_build(spec), ":" in spec["dst"], spec.get("iface"),
                       spec.get("dmac"))
            print(json.dumps({k: spec.get(k) for k in
                              ("src", "sport", "dst", "dport", "flags", "seq",
                               "ack")}), flush=True)
    finally:
        if own:
            socks.close()


def serve():
    socks = _Sockets()
    print("READY", flush=True)
    try:
        for line in sys.stdin:
            if line.strip():
                # Scapy routes by its own copy of the routing tables, read
                # when it loaded: routes may have changed since.
                from scapy.all import conf
                conf.route.resync()
                conf.route6.resync()
                send_specs(json.loads(line), socks)
            print("DONE", flush=True)
    finally:
        socks.close()


def flood(dst, dport, prefix, count, seed, seconds=None):
    rng = random.Random(seed)
    net = ipaddress.ip_network(prefix)
    socks = _Sockets()
    v6 = ":" in dst
    print("READY", flush=True)
    t0 = time.monotonic()
    sent = 0
    try:
        for sent in range(1, count + 1):
            if seconds and time.monotonic() - t0 >= seconds:
                sent -= 1
                break
            src = str(net.network_address +
                      rng.randrange(1, min(net.num_addresses - 1, 2**24)))
            spec = {"src": src, "dst": dst,
                    "sport": rng.randrange(1024, 65535), "dport": dport,
                    "flags": "S", "seq": rng.getrandbits(32),
                    "opts": offer().hex()}
            socks.send(_build(spec), v6)
    finally:
        socks.close()
    print(json.dumps({"sent": sent,
                      "seconds": round(time.monotonic() - t0, 3)}))


def main():
    from scapy.all import conf
    conf.verb = 0
    if len(sys.argv) >= 3 and sys.argv[1] == "send":
        send_specs(json.loads(sys.argv[2]))
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "serve":
        serve()
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "flood":
        import argparse
        ap = argparse.ArgumentParser(prog="spoof.py flood")
        ap.add_argument("--dst", required=True)
        ap.add_argument("--dport", type=int, required=True)
        ap.add_argument("--prefix", required=True)
        ap.add_argument("--count", type=int, required=True)
        ap.add_argument("--seed", type=int, default=1)
        ap.add_argument("--seconds", type=float)
        a = ap.parse_args(sys.argv[2:])
        flood(a.dst, a.dport, a.prefix, a.count, a.seed, a.seconds)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
