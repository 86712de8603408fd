#!/usr/bin/python3
"""ICMP / ICMPv6 echo ("ping") for the racks test-bed, standard library only.

The test machines have no ping binary (iputils-ping is not installed), so
the test-bed pings with this tool, run inside a namespace as root:

    pinger.py ADDR [--count N] [--interval S] [--timeout S]

sends N echo requests, one every S seconds, each answered or given up after
--timeout seconds, and prints one JSON line::

    {"target": ADDR, "sent": N, "received": M, "rtt_ms": [...], "errors": [...]}

Exit status 0 if at least one reply came back (like ping), 1 otherwise,
2 on bad usage.
"""

import argparse
import ipaddress
import json
import os
import select
import socket
import struct
import sys
import time

ECHO_REQUEST = {4: 8, 6: 128}
ECHO_REPLY = {4: 0, 6: 129}
PAYLOAD = b"racks-testbed-ping" * 2


def checksum(data):
    """RFC 1071 internet checksum."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def open_socket(version):
    if version == 4:
        return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    # The kernel fills in ICMPv6 checksums of raw ICMPv6 sockets itself.
    return socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)


def echo_request(version, ident, seq):
    header = struct.pack("!BBHHH", ECHO_REQUEST[version], 0, 0, ident, seq)
    if version == 4:
        header = struct.pack("!BBHHH", ECHO_REQUEST[4], 0,
                             checksum(header + PAYLOAD), ident, seq)
    return header + PAYLOAD


def parse_reply(version, packet, ident, seq):
    """True if packet is the echo reply to (ident, seq)."""
    if version == 4:
        packet = packet[(packet[0] & 0x0F) * 4:]     # raw v4 includes the IP header
    if len(packet) < 8:
        return False
    kind, _, _, r_ident, r_seq = struct.unpack("!BBHHH", packet[:8])
    return kind == ECHO_REPLY[version] and r_ident == ident and r_seq == seq


def wait_reply(sock, version, target, ident, seq, deadline):
    """Wait for the reply to seq until deadline; True if it came."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            return False
        packet, peer = sock.recvfrom(65535)
        if ipaddress.ip_address(peer[0].split("%")[0]) == target and \
                parse_reply(version, packet, ident, seq):
            return True


def probe(sock, target, ident, seq, timeout):
    """Send one echo request; return the RTT in ms, or None if unanswered."""
    start = time.monotonic()
    sock.sendto(echo_request(target.version, ident, seq), (str(target), 0))
    if wait_reply(sock, target.version, target, ident, seq, start + timeout):
        return (time.monotonic() - start) * 1000.0
    return None


def ping(target, count, interval, timeout):
    sock = open_socket(target.version)
    ident = os.getpid() & 0xFFFF
    result = {"target": str(target), "sent": 0, "received": 0,
              "rtt_ms": [], "errors": []}
    for seq in range(count):
        started = time.monotonic()
        result["sent"] += 1
        try:
            rtt = probe(sock, target, ident, seq, timeout)
        except OSError as exc:
            result["errors"].append(str(exc))
            rtt = None
        if rtt is not None:
            result["received"] += 1
            result["rtt_ms"].append(round(rtt, 3))
        if seq + 1 < count:
            time.sleep(max(0.0, started + interval - time.monotonic()))
    sock.close()
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", type=ipaddress.ip_address)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=1.0)
    args = parser.parse_args(argv)
    try:
        result = ping(args.target, args.count, args.interval, args.timeout)
    except OSError as exc:
        print(f"pinger: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0 if result["received"] else 1


if __name__ == "__main__":
    sys.exit(main())
