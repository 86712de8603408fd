#!/usr/bin/python3
"""Hostile racks options and set-up messages, crafted with Scapy.

usage: edpcraft.py SPEC [SPEC ...]

Each SPEC is CASE,SRC,SPORT,DST,DPORT[,SEQ,ACK[,HEX]]. CASE is one of:
syn-bad-length, syn-bad-version, syn-bad-type, syn-truncated,
key-oversized, forged-key, forged-confirm, raw (send the option bytes HEX
on a zero-length ACK). SEQ and ACK default to 1000 and 0. All packets go
out in one run: Scapy starts slowly.
"""

import argparse
import os
import sys

from scapy.all import IP, IPv6, TCP, conf, send

conf.verb = 0
EXID = b"\x72\x61"


def opt(version, type_, body, length=None):
    raw = bytes([254, 0]) + EXID + bytes([version << 4 | type_]) + body
    raw = raw[:1] + bytes([length if length is not None else len(raw)]) + raw[2:]
    return raw


CASES = {
    # (flags, option bytes)
    "syn-bad-length": ("S", opt(1, 1, b"\x00\x00")),      # 7 bytes for a SYN
    "syn-bad-version": ("S", opt(2, 1, b"\x00")),
    "syn-bad-type": ("S", opt(1, 15, b"\x00")),
    "syn-truncated": ("S", bytes([254, 4]) + EXID),
    "key-oversized": ("A", opt(1, 3, os.urandom(34))),    # 39 bytes
    "forged-key": ("A", opt(1, 3, os.urandom(32))),
    "forged-confirm": ("A", opt(1, 4, os.urandom(16))),
}


def build(spec):
    case, src, sport, dst, dport, *rest = spec.split(",")
    seq = int(rest[0]) if rest else 1000
    ack = int(rest[1]) if len(rest) > 1 else 0
    if case == "raw":
        flags, option = "A", bytes.fromhex(rest[2])
    else:
        flags, option = CASES[case]
    option += b"\x01" * (-len(option) % 4)
    l3 = (IPv6 if ":" in dst else IP)(src=src, dst=dst)
    tcp = TCP(sport=int(sport), dport=int(dport), flags=flags, seq=seq,
              ack=ack, window=65535, options=[])
    # Raw option bytes: scapy's option encoder would re-validate them.
    tcp.dataofs = 5 + len(option) // 4
    return l3 / tcp / option


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()
    send([build(spec) for spec in args.specs])
    return 0


if __name__ == "__main__":
    sys.exit(main())
