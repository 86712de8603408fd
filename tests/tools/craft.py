#!/usr/bin/python3
"""Send crafted, malformed TCP SYN-ACKs with Scapy (run inside a namespace).

usage: craft.py DST_ADDR DST_PORT CASE [CASE ...] [--count N]

Each CASE names one malformation (see CASES). Every packet is a SYN-ACK:
rackd's ruleset diverts every incoming SYN-ACK (it may answer a SYN that
offered racks), while an incoming SYN reaches rackd only when the kernel
finds racks' option in it, which a malformed option list can hide.
"""

import argparse
import random
import sys

from scapy.all import IP, IPv6, IPv6ExtHdrDestOpt, Raw, TCP, conf, send

conf.verb = 0


def syn(dst, dport, options=b"", doff=None, payload=b""):
    """A SYN-ACK whose raw TCP options are exactly `options` (padded to 4)."""
    options += b"\x00" * (-len(options) % 4)
    hdr_words = 5 + len(options) // 4 if doff is None else doff
    tcp = TCP(sport=random.randint(20000, 60000), dport=dport, flags="SA",
              seq=random.getrandbits(32), ack=random.getrandbits(32), dataofs=hdr_words, options=[])
    l3 = IPv6(dst=dst) if ":" in dst else IP(dst=dst)
    return l3 / tcp / Raw(options + payload)


CASES = {
    # option kind 2 (MSS) with length byte 0
    "opt_len0": lambda d, p: syn(d, p, b"\x02\x00\x05\xb4"),
    # length byte 1 is below the minimum of 2
    "opt_len1": lambda d, p: syn(d, p, b"\x08\x01\x00\x00"),
    # an option running past the end of the header
    "opt_overrun": lambda d, p: syn(d, p, b"\x01\x01\x1e\x28"),
    # MSS with a wrong length
    "mss_len3": lambda d, p: syn(d, p, b"\x02\x03\x05\x01"),
    # timestamps with 8 instead of 10 bytes
    "ts_len8": lambda d, p: syn(d, p, b"\x08\x08" + b"\x00" * 6),
    # SACK block of 7 bytes
    "sack_len9": lambda d, p: syn(d, p, b"\x05\x09" + b"\x00" * 7),
    # data offset claiming 60 bytes of header in a 20-byte segment
    "doff_beyond": lambda d, p: syn(d, p, doff=15),
    # data offset below 5
    "doff_small": lambda d, p: syn(d, p, doff=3, payload=b"\x00" * 8),
    # an experimental option too short to hold its ExID
    "exp_short": lambda d, p: syn(d, p, b"\xfe\x03\xf9\x01"),
    # random option bytes (may or may not be valid)
    "random": lambda d, p: syn(d, p, bytes(random.getrandbits(8)
                                           for _ in range(4 * random.randint(1, 10)))),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dst")
    ap.add_argument("port", type=int)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    random.seed(args.seed)
    for case in args.cases:
        for _ in range(args.count):
            send(CASES[case](args.dst, args.port))
    print(f"sent {args.count * len(args.cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
