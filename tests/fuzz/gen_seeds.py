#!/usr/bin/env python3
"""Write the fuzz seeds in tests/fuzz/seeds/ (run from anywhere).

Packets: an IPv4 SYN with MSS/SACK_PERM/TS/WS, an IPv6 SYN-ACK, and an
IPv6 ACK behind hop-by-hop and destination options headers carrying SACK
blocks and an RFC 6994 experimental option, racks messages and a
reconnection SYN. Also one racks.conf and one
control-protocol request, since every fuzz target reads every seed.

In seeds/engine/, operation sequences for the stateful fuzzer
(fuzz_engine.c) that take rackd's connections to its deep states:
connected both ways, suspended and resumed, spliced after either end
moved, exported and imported, adopted, held by a peer that went away.
Each twice: with remote rackds before host keys and trust anonymous (the
names of before host keys: their bytes are unchanged, and so are the
bug-*.bin reproducers), and with remote rackds with host keys and trust
accept-new (hk-NAME.bin); and the host keys' own: keys derived from a
host pair, a rackd before host keys refused, a host key that changed,
each trust against each kind of peer.
"""
import ipaddress
import os
import struct

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")

# fuzz_engine.c's operations, in the order of its enum op.
(ADVANCE, CONNECT, PEER_CONNECT, DELIVER, DRAIN, AUTO, SEND, PEER_SEND,
 SOCK, PEER_MSG, RAW, LINK, ADDR, ROUTE, CUT, NFT_FAIL, SOCKDIAG_FAIL, CTL,
 PEER_STATE, WIRE, HANDSHAKE, RESTART) = range(22)
# advance_ms[] indexes
MS_10, MS_100, MS_500, MS_1S, MS_2S5, MS_5S, MS_10S, MS_30S, MS_60S = (
    1, 3, 6, 7, 9, 10, 11, 12, 13)
# control commands (op_ctl)
STATUS, LIST, SHOW, PEER, EXPORT, UNEXPORT, RELEASE, IMPORT, RESTORED, \
    RELOAD = range(10)


def flow(v6=0, local=0, remote=0, lport=0, rport=0):
    """A flow of the fuzzer's pool (engine/pool.c)."""
    return v6 | local << 1 | remote << 2 | lport << 3 | rport << 4


# The remote rackds and our trust (fuzz_engine.c CONF_*): 0 is rackds
# before host keys and trust anonymous, as before host keys.
HOSTKEYS, ACCEPT_NEW, PEER_ANONYMOUS = 0x20, 0x40, 0x80
MODERN = HOSTKEYS | ACCEPT_NEW


def engine(ops, auto=True, suspend=0, max_suspend=0, setup=0, sweep=0,
           maxconn=0, halfopen=0, per_prefix=0, one_port=False, seed=1,
           peers=0):
    """Three bytes of configuration (fuzz_engine.c configure()), two of
    seed, then the operations."""
    a = (0x80 if auto else 0) | suspend | max_suspend << 2 | setup << 5
    b = sweep << 2 | maxconn << 4
    c = halfopen | per_prefix << 2 | (0x10 if one_port else 0) | peers
    out = bytes([a, b, c, seed >> 8, seed & 0xff])
    for op in ops:
        out += bytes(op)
    return out


def engine_seeds(peers=0, prefix=""):
    """The deep states' seeds, with the remote rackds and trust PEERS,
    named PREFIX + their name."""
    out, inn = 1, 0            # HANDSHAKE: who connects (bit 0)
    f0, f1 = flow(), flow(v6=1, local=1, remote=1, lport=1, rport=1)
    f8 = flow(lport=1)         # f0's path, another connection
    up = [(HANDSHAKE, f0, out), (ADVANCE, MS_1S)]
    seeds = {}
    seeds["connected_out.bin"] = engine(
        up + [(SEND, f0, 100), (PEER_SEND, f0, 50), (ADVANCE, MS_60S),
              (CTL, SHOW, 0, 0), (CTL, LIST, 0, 0)])
    seeds["connected_in.bin"] = engine(
        [(HANDSHAKE, f1, inn), (ADVANCE, MS_10S), (PEER_MSG, f1, 0, 0),
         (ADVANCE, MS_30S)])
    seeds["suspend_resume.bin"] = engine(
        up + [(HANDSHAKE, f8, out), (SEND, f0, 60), (CUT, 1),
              (ADVANCE, MS_10S), (SEND, f0, 40), (SOCK, f0, 2, 0),
              (ADVANCE, MS_2S5), (CUT, 0), (ADVANCE, MS_5S),
              (ADVANCE, MS_5S)], suspend=1)
    seeds["link_down.bin"] = engine(
        up + [(LINK, 0, 0), (ADVANCE, MS_2S5), (LINK, 0, 3),
              (ADVANCE, MS_1S), (ADVANCE, MS_5S)])
    # Our address goes: the path moves, reconnects and is spliced.
    seeds["address_moves.bin"] = engine(
        up + [(ADDR, 0, 1), (ADVANCE, MS_100), (ADVANCE, MS_1S),
              (SEND, f0, 30), (ADVANCE, MS_10S), (CTL, LIST, 0, 0)])
    # The peer moves and says so (reconnection SYN): spliced here.
    seeds["peer_moves.bin"] = engine(
        up + [(PEER_STATE, f0, 3, 2), (ADVANCE, MS_100), (SEND, f0, 30),
              (ADVANCE, MS_10S)])
    # Both moved: rackctl peer tells this end where the peer went.
    seeds["rackctl_peer.bin"] = engine(
        up + [(PEER_STATE, f0, 4, 2), (CTL, PEER, 0, 2 << 1),
              (ADVANCE, MS_1S), (ADVANCE, MS_10S)])
    # rackckpt: export, release, import, restored.
    seeds["export_import.bin"] = engine(
        up + [(CTL, EXPORT, 0, 0), (ADVANCE, MS_100), (CTL, EXPORT, 0, 0),
              (CTL, RELEASE, 0, 0), (SOCK, f0, 0, 0), (ADVANCE, MS_1S),
              (CTL, IMPORT, 0, 0), (SOCK, f0, 4, 0), (CTL, RESTORED, 0, 0),
              (ADVANCE, MS_1S), (ADVANCE, MS_10S)], sweep=1)
    # The peer's process moves (AWAY), then reconnects from elsewhere.
    seeds["peer_away.bin"] = engine(
        up + [(PEER_MSG, f0, 3, 0), (ADVANCE, MS_2S5),
              (PEER_STATE, f0, 3, 2), (ADVANCE, MS_10S)])
    # A handshake rackd never saw: the peer asks to adopt it.
    seeds["adopted.bin"] = engine(
        [(SOCK, f1, 3, 3), (PEER_MSG, f1, 5, 0), (ADVANCE, MS_500),
         (ADVANCE, MS_500), (ADVANCE, MS_500), (ADVANCE, MS_1S),
         (ADVANCE, MS_5S), (ADVANCE, MS_10S)])
    # The peer's SYN lost racks' option on the way: adopted later.
    seeds["plain_then_adopted.bin"] = engine(
        [(PEER_CONNECT, f0, 3, 0x20), (DRAIN,), (ADVANCE, MS_100),
         (PEER_MSG, f0, 5, 0), (ADVANCE, MS_1S), (ADVANCE, MS_1S),
         (ADVANCE, MS_10S)])
    # A plain peer: released, adoption unanswered.
    seeds["plain_peer.bin"] = engine(
        [(PEER_STATE, f0, 1, 0), (HANDSHAKE, f0, out), (ADVANCE, MS_10S),
         (ADVANCE, MS_10S)])
    # Suspended, then a reload rebuilds the table with its hold.
    seeds["reload_held.bin"] = engine(
        up + [(CUT, 1), (ADVANCE, MS_10S), (CTL, RELOAD, 0, 0),
              (CUT, 0), (ADVANCE, MS_5S)], suspend=1)
    # Suspended past max_suspend: aborted.
    seeds["abort.bin"] = engine(
        up + [(CUT, 3), (ADVANCE, MS_10S), (ADVANCE, MS_30S)],
        suspend=1, max_suspend=1)
    # rackd restarts with its state file: a spliced connection and a held
    # one are taken over with the table.
    seeds["restart_with_state.bin"] = engine(
        up + [(HANDSHAKE, f8, out), (HANDSHAKE, f1, out), (ADVANCE, MS_1S),
              (PEER_STATE, f0, 3, 2), (ADVANCE, MS_100), (CUT, 3),
              (ADVANCE, MS_10S), (RESTART, 1),
              (ADVANCE, MS_1S), (CUT, 0), (ADVANCE, MS_10S)], suspend=1)
    # rackd restarts without it: its connections are adopted again.
    seeds["restart_without_state.bin"] = engine(
        up + [(RESTART, 0), (ADVANCE, MS_500), (ADVANCE, MS_500),
              (ADVANCE, MS_1S), (ADVANCE, MS_5S), (ADVANCE, MS_10S)])
    # rackctl probe: a DSCP-LE connection's FIN is answered.
    seeds["probe.bin"] = engine(
        [(PEER_STATE, f0, 1, 0), (PEER_CONNECT, f0, 3, 0x81), (DRAIN,),
         (ADVANCE, MS_10), (PEER_SEND, f0, 0x80), (DRAIN,),
         (ADVANCE, MS_1S)])
    # SYNs from the same prefixes beyond the half-open bounds: the
    # oldest make room, adopted later; one server port considered.
    seeds["halfopen.bin"] = engine(
        [(PEER_CONNECT, f0, 3, 1), (PEER_CONNECT, f8, 3, 1),
         (PEER_CONNECT, flow(rport=1), 3, 1),
         (PEER_CONNECT, flow(remote=1), 3, 1), (ADVANCE, MS_10),
         (DRAIN,), (ADVANCE, MS_1S), (ADVANCE, MS_10S)],
        auto=False, halfopen=2, per_prefix=1, one_port=True)
    # Lost set-up messages, retries, a timeout.
    seeds["lossy_setup.bin"] = engine(
        [(CONNECT, f0, 3, 0x0f), (DELIVER, 1, 0), (DELIVER, 1, 0),
         (DELIVER, 2, 1), (ADVANCE, MS_100), (DELIVER, 3, 2),
         (ADVANCE, MS_500), (DRAIN,), (ADVANCE, MS_10S)], auto=False)
    write_engine({prefix + name: data[:2] + bytes([data[2] | peers]) + data[3:]
                  for name, data in seeds.items()})


def write_engine(seeds):
    os.makedirs(os.path.join(SEEDS, "engine"), exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(SEEDS, "engine", name), "wb") as f:
            f.write(data)


def hostkey_seeds():
    """Host keys (peer_setup.c): derived keys, refusals, key changes,
    each trust against each kind of peer."""
    out, inn = 1, 0
    f0, f8 = flow(), flow(lport=1)           # one remote host, two ports
    f16 = flow(rport=1)                      # and another of its ports
    f1 = flow(v6=1, local=1, remote=1, lport=1, rport=1)
    seeds = {}
    # Both ways: the first connection runs the host handshake, the next
    # ones derive their keys from the host pair it made.
    seeds["hostkeys_derived.bin"] = engine(
        [(HANDSHAKE, f0, out), (ADVANCE, MS_1S), (HANDSHAKE, f8, out),
         (ADVANCE, MS_1S), (HANDSHAKE, f16, inn), (ADVANCE, MS_1S),
         (SEND, f8, 40), (PEER_SEND, f16, 40), (ADVANCE, MS_10S),
         (CTL, LIST, 0, 0)], peers=MODERN)
    # A rackd before host keys, where trust is accept-new: refused both
    # ways (anonymous_refused, or set-up's deadline), never managed.
    seeds["hostkeys_refused_anonymous.bin"] = engine(
        [(HANDSHAKE, f0, out), (HANDSHAKE, f1, inn), (ADVANCE, MS_1S),
         (ADVANCE, MS_10S), (CTL, LIST, 0, 0)], peers=ACCEPT_NEW)
    # One remote host before host keys (its flow), the others with.
    seeds["hostkeys_mixed.bin"] = engine(
        [(PEER_STATE, f1, 1, 1 | 2), (HANDSHAKE, f1, out),
         (HANDSHAKE, f0, out), (ADVANCE, MS_1S), (HANDSHAKE, f1, inn),
         (ADVANCE, MS_10S)], peers=MODERN)
    # The remote host gets a new host key: our client refuses it where
    # it met the old one (host_key_mismatch), our server takes it.
    seeds["hostkeys_key_changed.bin"] = engine(
        [(HANDSHAKE, f0, out), (ADVANCE, MS_1S), (PEER_STATE, f0, 1, 1 | 4),
         (HANDSHAKE, f8, out), (ADVANCE, MS_1S), (HANDSHAKE, f16, inn),
         (ADVANCE, MS_10S)], peers=MODERN)
    # Our trust is anonymous, the remote rackds have host keys: its host
    # handshakes are answered, our KEYs refused.
    seeds["hostkeys_trust_anonymous.bin"] = engine(
        [(HANDSHAKE, f0, inn), (HANDSHAKE, f1, out), (ADVANCE, MS_1S),
         (ADVANCE, MS_10S)], peers=HOSTKEYS)
    # Their trust is anonymous: KEY (in the long option) both ways,
    # refused by ours.
    seeds["hostkeys_peer_anonymous.bin"] = engine(
        [(HANDSHAKE, f0, inn), (HANDSHAKE, f1, out), (ADVANCE, MS_1S),
         (ADVANCE, MS_10S)], peers=MODERN | PEER_ANONYMOUS)
    # The host handshake's fragments lost, duplicated, reordered; a
    # forged fragment among them; rackd restarts and forgets the pair.
    seeds["hostkeys_lossy_handshake.bin"] = engine(
        [(CONNECT, f0, 3, 0x0f), (DELIVER, 1, 0), (DELIVER, 1, 0),
         (WIRE, 1), (WIRE, 0), (DELIVER, 3, 2), (ADVANCE, MS_100),
         (RAW, f0, 2, 1, 2, 19, 0x01, 0), (WIRE, 0), (DELIVER, 2, 0),
         (ADVANCE, MS_500), (DRAIN,), (ADVANCE, MS_1S), (DRAIN,),
         (ADVANCE, MS_10S), (RESTART, 0), (AUTO, 1),
         (HANDSHAKE, f8, out), (ADVANCE, MS_10S)], auto=False,
        peers=MODERN)
    # A burst to a host met for the first time: one connection runs the
    # host handshake, the other waits for its host pair and derives
    # (edp_keyed_later); then the remote rackd loses its host pairs, and
    # a burst names one it no longer has: the waiting connection must
    # not derive from that one (setup.c wait_for_pair()).
    seeds["hostkeys_burst.bin"] = engine(
        [(AUTO, 0), (CONNECT, f8, 3, 0x0f), (CONNECT, f16, 3, 0x0f),
         (DRAIN,), (AUTO, 1), (ADVANCE, MS_1S), (PEER_STATE, f0, 1, 1 | 8),
         (AUTO, 0), (CONNECT, f0, 3, 0x0f), (CONNECT, f1, 3, 0x0f),
         (CONNECT, flow(lport=1, rport=1), 3, 0x0f), (DRAIN,), (AUTO, 1),
         (ADVANCE, MS_1S), (ADVANCE, MS_10S)], peers=MODERN)
    write_engine(seeds)


def crash_reproducers():
    """The bugs fuzz_engine found, each as the shortest sequence that
    shows it (tests/fuzz/BUGS.md says what each is). All are fixed:
    they are seeds now (bug-NAME.bin), so every fuzz run replays them."""
    out = 1
    f0 = flow()
    f2 = flow(remote=1)        # f0's local end, another peer host
    up = [(HANDSHAKE, f0, out), (ADVANCE, MS_1S)]
    crashes = {}
    # A FIN with DSCP LE and a malformed racks option, from anyone.
    crashes["repeat-loop.bin"] = engine(
        [(RAW, f0, 4, 1, 1, 15, 0, 0x01)])
    # A SYN with racks' option on a managed connection's tuple.
    crashes["syn-reuse.bin"] = engine(
        up + [(RAW, f0, 0, 0, 0, 1, 0, 0), (ADVANCE, MS_2S5)])
    # rackctl peer whose splice nft refuses.
    crashes["peer-splice-fail.bin"] = engine(
        up + [(NFT_FAIL, 0x01), (CTL, PEER, 0, 2 << 1), (ADVANCE, MS_5S)])
    # The same without any injected failure: the new wire tuple is
    # another connection's.
    crashes["wire-collision.bin"] = engine(
        up + [(HANDSHAKE, f2, out), (ADVANCE, MS_1S),
              (CTL, PEER, 0, 0), (ADVANCE, MS_5S)])
    # Aborted after max_suspend, then the peer asks to adopt it.
    crashes["abort-keeps-keys.bin"] = engine(
        up + [(CUT, 1), (ADVANCE, MS_5S), (CUT, 0),
              (PEER_MSG, f0, 5, 0), (ADVANCE, MS_1S)],
        suspend=1, max_suspend=2)
    # Two reconnections of one connection in one burst of the queue.
    crashes["reconnect-twice.bin"] = engine(
        up + [(PEER_STATE, f0, 3, 2), (PEER_STATE, f0, 3, 1 | 2 << 2),
              (DRAIN,), (ADVANCE, MS_1S)], auto=False)
    # Restarted with its state file, but the spliced connection that
    # kept its address on lo closed meanwhile.
    crashes["restart-orphans-lo.bin"] = engine(
        up + [(ADDR, 0, 1), (ADVANCE, MS_1S), (SOCK, f0, 0, 0),
              (RESTART, 1), (ADVANCE, MS_1S)])
    # An import into a full table (max_connections = 1).
    crashes["import-bound.bin"] = engine(
        up + [(CTL, EXPORT, 0, 0), (CTL, RELEASE, 0, 0),
              (HANDSHAKE, flow(local=1), out), (CTL, IMPORT, 0, 0)],
        maxconn=1)
    # rackctl peer moves two connections onto one wire tuple: nft refuses,
    # but the state file says both are spliced; the next rackd cannot
    # start.
    a6, b6 = flow(v6=1, local=1), flow(v6=1)
    crashes["restart-fatal.bin"] = engine(
        [(HANDSHAKE, a6, out), (HANDSHAKE, b6, out), (ADVANCE, MS_1S),
         (CTL, PEER, 0, 1), (RESTART, 1)])
    # Found on main at 91d66cf. A suspended path moves to a new local
    # address where another connection travels already: the move is
    # refused, and the path keeps no timer.
    f10 = flow(local=1)        # 192.0.2.11:443 -> 198.51.100.2:443
    crashes["migrate-stays-untimed.bin"] = engine(
        [(HANDSHAKE, f10, out), (CONNECT, f0, 3, 0x0f), (CUT, 2),
         (ADVANCE, MS_10S)])
    # A new connection on the tuple a spliced one travels with.
    crashes["splice-new-socket.bin"] = engine(
        [(HANDSHAKE, f10, out), (ADDR, 1 << 1, 1), (ADVANCE, MS_1S),
         (CONNECT, f0, 3, 0x0f), (ADVANCE, MS_1S)])
    # Found on main at f52101d: a spliced connection aborted after
    # max_suspend, still in the table (sock_diag's dumps fail, or the
    # sweep has not come yet) when rackd restarts.
    crashes["restart-orphans-lo-released.bin"] = engine(
        [(SOCKDIAG_FAIL, 1), (HANDSHAKE, f0, out), (ADDR, 0, 1),
         (ADVANCE, 14), (RESTART, 1)],
        auto=False, suspend=1, max_suspend=1)
    # Found on main at 5e45cc6: a move onto the tuple of a socket rackd
    # does not track ([2001:db8::1]:443 -> [2001:db8:1::2]:443, older
    # than rackd); the start-up scan of the next rackd adopts it.
    crashes["move-onto-socket.bin"] = engine(
        [(SOCK, flow(v6=1), 3, 0), (HANDSHAKE, flow(v6=1, local=1), out),
         (LINK, 1, 0), (LINK, 0, 3), (RESTART, 1), (ADVANCE, MS_100)])
    # Found by the peer model with host keys, on engine at ffcff0e: one
    # forged fragment completes message 2 at our client, which starts
    # the host handshake over; the server answers the new message 1 with
    # its message 2 for the old one, which fails again, without end.
    crashes["handshake-restart-loop.bin"] = engine(
        [(CONNECT, f0, 3, 0x0f), (DELIVER, 0, 0), (DELIVER, 0, 0),
         (DELIVER, 1, 0), (DELIVER, 1, 0), (RAW, f0, 0xA2, 1, 1, 19, 0, 0),
         (DRAIN,), (DRAIN,), (DRAIN,), (DRAIN,), (AUTO, 1),
         (ADVANCE, MS_1S)], auto=False, peers=MODERN)
    path = os.path.join(SEEDS, "engine")
    os.makedirs(path, exist_ok=True)
    for name, data in crashes.items():
        with open(os.path.join(path, "bug-" + name), "wb") as f:
            f.write(data)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def tcp(src, dst, sport, dport, seq, ack, flags, opts, payload=b""):
    opts += b"\0" * (-len(opts) % 4)
    doff = (20 + len(opts)) // 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4,
                      flags, 64240, 0, 0) + opts
    seg = hdr + payload
    if len(src) == 4:
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(seg))
    else:
        pseudo = src + dst + struct.pack("!IxxxB", len(seg), 6)
    c = csum(pseudo + seg)
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def ipv4(src, dst, seg):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(seg), 0x1234,
                      0x4000, 64, 6, 0, src, dst)
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + seg


def ipv6(src, dst, nh, rest):
    return struct.pack("!IHBB", 0x60000000, len(rest), nh, 64) + src + \
        dst + rest


def syn_opts(mss, tsval, tsecr, ws):
    return (struct.pack("!BBH", 2, 4, mss) + b"\x04\x02" +
            struct.pack("!BBII", 8, 10, tsval, tsecr) +
            struct.pack("!BBBB", 1, 3, 3, ws))


def main():
    v4a = ipaddress.ip_address("192.0.2.1").packed
    v4b = ipaddress.ip_address("198.51.100.2").packed
    v6a = ipaddress.ip_address("2001:db8::1").packed
    v6b = ipaddress.ip_address("2001:db8::2").packed
    seeds = {}
    seeds["ipv4_syn.bin"] = ipv4(v4a, v4b, tcp(
        v4a, v4b, 40000, 80, 0x6B8B4567, 0, 0x02,
        syn_opts(1460, 0x9A1B2C3D, 0, 7)))
    seeds["ipv6_synack.bin"] = ipv6(v6b, v6a, 6, tcp(
        v6b, v6a, 80, 40000, 0x11223344, 0x6B8B4568, 0x12,
        syn_opts(1440, 0x55667788, 0x9A1B2C3D, 9)))
    sack = struct.pack("!BBIIII", 5, 18, 1000, 2000, 3000, 4000)
    exp = struct.pack("!BBHH", 254, 6, 0x726B, 0xAABB)
    seg = tcp(v6a, v6b, 40000, 80, 0x6B8B4568, 0x11223345, 0x10,
              b"\x01\x01" + sack + exp, b"hello")
    hop = bytes([60, 0]) + b"\x01\x04\0\0\0\0"   # -> dstopts, PadN
    dst = bytes([6, 1]) + b"\x01\x0c" + b"\0" * 12  # -> TCP, 16 bytes
    seeds["ipv6_ext_ack.bin"] = ipv6(v6a, v6b, 0, hop + dst + seg)
    # racks set-up messages: a KEY (37-byte option + 3 NOPs) and a CONFIRM.
    key = bytes([254, 37, 0x72, 0x61, 0x13]) + bytes(range(32)) + b"\x01" * 3
    seeds["ipv4_racks_key.bin"] = ipv4(v4a, v4b, tcp(
        v4a, v4b, 40000, 80, 0x6B8B4568, 0x11223345, 0x10, key))
    confirm = bytes([254, 21, 0x72, 0x61, 0x14]) + bytes(16) + b"\x01" * 3
    seeds["ipv6_racks_confirm.bin"] = ipv6(v6b, v6a, 6, tcp(
        v6b, v6a, 80, 40000, 0x11223345, 0x6B8B4568, 0x10, confirm))
    # A reconnection SYN: 28 bytes of options ending with racks' marker,
    # the RECONNECT message (36 bytes) as payload.
    rc_opts = (struct.pack("!BBH", 2, 4, 1460) + b"\x01\x03\x03\x07" +
               b"\x04\x02" + struct.pack("!BBII", 8, 10, 1, 0) +
               bytes([254, 5, 0x72, 0x61, 0x18, 1, 1, 1]))
    rc_msg = bytes([254, 33, 0x72, 0x61, 0x18]) + bytes(range(8)) + \
        struct.pack("!I", 7) + bytes(16) + b"\x01" * 3
    seeds["ipv4_racks_reconnect_syn.bin"] = ipv4(v4a, v4b, tcp(
        v4a, v4b, 40000, 80, 0x6B8B4568 - 37, 0, 0x02, rc_opts, rc_msg))
    seeds["racks.conf"] = (
        b"# racks.conf seed\nqueue = 4207\nqueue_mode = auto\n"
        b"queue_maxlen = 4096\nmark = 0x7261636b\n"
        b"ports = 22, 80, 5000-5999\nexclude = 10.0.0.0/8, fd00::/8\n"
        b"syn_timeout = 1.5s\nsetup_timeout = 2s\nanswer_probes = no\n"
        b"sweep_interval = 500ms\n"
        b"max_connections = 1000\nlog_level = debug\n")
    seeds["proto_request.txt"] = b"cmd=list\nversion=1\nfilter=a=b\n\n"
    # fuzz_noise.c (first byte: what to parse): a host key; XX's message
    # 0 with a real ephemeral (the public key of the secret 09 00 .. 00);
    # the genuine messages 1 and 2 (an all-zero XOR onto them; payload
    # "pay": 99 and 67 bytes).
    seeds["noise_host_key.txt"] = (
        b"\0racks-x25519:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=")
    seeds["noise_msg0.bin"] = b"\x01" + bytes.fromhex(
        "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079") + \
        b"pay"
    seeds["noise_msg1.bin"] = b"\x02" + bytes(99)
    seeds["noise_msg2.bin"] = b"\x03" + bytes(67)
    os.makedirs(SEEDS, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(SEEDS, name), "wb") as f:
            f.write(data)
    engine_seeds()
    engine_seeds(MODERN, "hk-")
    hostkey_seeds()
    crash_reproducers()


if __name__ == "__main__":
    main()
