#!/usr/bin/python3
"""Fixed-delay packet forwarder on a TUN device: netem's delay without netem.

The test machines' kernel has no sch_netem (CONFIG_NET_SCH_NETEM is not set,
and there are no modules), so the test-bed emulates a slow link in user space:

    tundelay.py --dev NAME --delay-ms D [--limit PACKETS]

creates the TUN device NAME (IFF_TUN | IFF_NO_PI), prints ``READY`` and then
writes every IP packet it reads from NAME back into NAME D milliseconds later,
in order. The caller routes the packets to delay into NAME (policy routing on
the router); written back, they enter the router's stack again as if received
on NAME and are forwarded on their way. At most --limit packets wait at once
(netem's "limit"); further packets are dropped, like a full queue.

The device disappears when the process exits (SIGTERM ends it).
Standard library only; run inside the namespace, e.g. via ``ip netns exec``.
"""

import argparse
import collections
import fcntl
import os
import select
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
MAX_PACKET = 65536


def open_tun(name):
    """Create TUN device name; return its non-blocking file descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    ifr = struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI)
    fcntl.ioctl(fd, TUNSETIFF, ifr)
    os.set_blocking(fd, False)
    return fd


def read_ready(fd, queue, delay, limit):
    """Queue every packet that can be read now, stamped with its due time."""
    due = time.monotonic() + delay
    while True:
        try:
            packet = os.read(fd, MAX_PACKET)
        except BlockingIOError:
            return
        if len(queue) < limit:
            queue.append((due, packet))


def write_due(fd, queue):
    """Write back every queued packet whose time has come."""
    now = time.monotonic()
    while queue and queue[0][0] <= now:
        _, packet = queue.popleft()
        try:
            os.write(fd, packet)
        except OSError:
            pass   # device down or packet refused: lost, as on a real link


def run(fd, delay, limit):
    queue = collections.deque()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        write_due(fd, queue)
        wait_ms = None
        if queue:
            wait_ms = max(0.0, (queue[0][0] - time.monotonic()) * 1000)
        if poller.poll(wait_ms):
            read_ready(fd, queue, delay, limit)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dev", required=True, help="TUN device to create")
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--limit", type=int, default=10000,
                        help="packets that may wait at once")
    args = parser.parse_args(argv)
    try:
        fd = open_tun(args.dev)
    except OSError as exc:
        print(f"tundelay: cannot create TUN {args.dev}: {exc}", file=sys.stderr)
        return 1
    print("READY", flush=True)
    try:
        run(fd, args.delay_ms / 1000.0, args.limit)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
