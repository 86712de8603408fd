#!/usr/bin/python3
"""Deterministic TCP byte-stream transfer tool for the racks test-bed.

Run one end in each network namespace; both ends hash everything they send
and receive, so a test can prove that a stream crossed the network intact
(for example while rackd moved it to another address):

    server:  xfer.py server --port P [--bind ADDR] [--send N] [--count K]
    client:  xfer.py client HOST PORT --bytes N [--seed S] [--recv]

The server prints ``READY`` once it listens, then one JSON line per finished
connection::

    {"recv_bytes": .., "recv_sha256": .., "sent_bytes": .., "sent_sha256": ..,
     "peer": "10.71.1.2", "peer_port": .., "local": .., "local_port": ..}

The client sends N bytes, half-closes (SHUT_WR), reads until EOF and prints
one JSON line::

    {"sent_bytes", "sent_sha256", "recv_bytes", "recv_sha256",
     "seconds", "connect_seconds", "local", "local_port"}

Both exit non-zero with a message on stderr on any socket error (the JSON
line is still printed, with an "error" key, so a test sees what got through).

The byte stream is a pure function of (length, seed): a 1 MiB block from
``random.Random(seed).randbytes`` whose first 8 bytes are replaced by the
block's big-endian index, so the stream is cheap to produce yet never
periodic. ``expected_sha256(n, seed)`` gives a test the hash to expect.

Standard library only (Python 3.11).
"""

import argparse
import functools
import hashlib
import ipaddress
import json
import random
import socket
import sys
import threading
import time

BLOCK = 1 << 20          # size of one generated block
RECV_BUF = 1 << 20       # bytes read per recv_into()
PACED_CHUNK = 16 << 10   # send size while --rate paces the sender
CLIENT_SEED = 0          # default seeds differ so an echo is never mistaken
SERVER_SEED = 1          # for the expected reply


# --- deterministic stream -------------------------------------------------

@functools.lru_cache(maxsize=4)
def _block(seed: int) -> bytes:
    return random.Random(seed).randbytes(BLOCK)


def stream(nbytes: int, seed: int = CLIENT_SEED):
    """Yield memoryviews that together make the nbytes-long stream of seed.

    Every view points into one reused buffer: use it before asking for the
    next one.
    """
    buf = bytearray(_block(seed))
    view = memoryview(buf)
    index = 0
    left = nbytes
    while left > 0:
        buf[0:8] = index.to_bytes(8, "big")
        size = min(left, BLOCK)
        yield view[:size]
        left -= size
        index += 1


@functools.lru_cache(maxsize=64)
def expected_sha256(nbytes: int, seed: int = CLIENT_SEED) -> str:
    """Hex sha256 of the stream that ``stream(nbytes, seed)`` produces."""
    digest = hashlib.sha256()
    for chunk in stream(nbytes, seed):
        digest.update(chunk)
    return digest.hexdigest()


# --- the two halves of a connection ----------------------------------------

class Half:
    """Byte count and running sha256 of one direction of a connection."""

    def __init__(self):
        self.bytes = 0
        self.digest = hashlib.sha256()
        self.error = None

    def add(self, data):
        self.bytes += len(data)
        self.digest.update(data)


def send_stream(sock, half, nbytes, seed, rate=None):
    """Send the stream of (nbytes, seed) on sock, paced to rate bytes/s."""
    start = time.monotonic()
    for chunk in stream(nbytes, seed):
        step = PACED_CHUNK if rate else len(chunk)
        for offset in range(0, len(chunk), step):
            piece = chunk[offset:offset + step]
            sock.sendall(piece)
            half.add(piece)
            if rate:
                _pace(start, half.bytes, rate)


def _pace(start, sent, rate):
    ahead = sent / rate - (time.monotonic() - start)
    if ahead > 0:
        time.sleep(ahead)


def recv_until_eof(sock, half):
    """Read sock until EOF, hashing what arrives."""
    buf = bytearray(RECV_BUF)
    view = memoryview(buf)
    while True:
        n = sock.recv_into(buf)
        if n == 0:
            return
        half.add(view[:n])


def in_thread(target, half, *args):
    """Run target(*args) in a thread; an exception lands in half.error."""
    def body():
        try:
            target(*args)
        except OSError as exc:
            half.error = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def report(sent, received, **extra):
    """The JSON-able summary of a connection."""
    out = {
        "sent_bytes": sent.bytes,
        "sent_sha256": sent.digest.hexdigest(),
        "recv_bytes": received.bytes,
        "recv_sha256": received.digest.hexdigest(),
    }
    out.update(extra)
    errors = [str(h.error) for h in (sent, received) if h.error]
    if errors:
        out["error"] = "; ".join(errors)
    return out


def plain_address(addr):
    """'::ffff:10.0.0.1' -> '10.0.0.1'; other addresses unchanged."""
    ip = ipaddress.ip_address(addr.split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped:
        return str(ip.ipv4_mapped)
    return str(ip)


# --- server -----------------------------------------------------------------

def listen(bind, port):
    """A listening socket: dual-stack [::] unless bind names an address."""
    if bind is None:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        bind = "::"
    else:
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((bind, port))
    sock.listen(128)
    return sock


def serve_one(conn, peer, args):
    """Receive until EOF while sending --send bytes back; return a report."""
    conn.settimeout(args.timeout)
    sent, received = Half(), Half()
    sender = None
    if args.send is not None:
        sender = in_thread(_send_then_shutdown, sent, conn, sent,
                           args.send, args.seed, args.rate)
    try:
        recv_until_eof(conn, received)
    except OSError as exc:
        received.error = exc
    if sender:
        sender.join()
    local = conn.getsockname()
    conn.close()
    return report(sent, received, peer=plain_address(peer[0]),
                  peer_port=peer[1], local=plain_address(local[0]),
                  local_port=local[1])


def _send_then_shutdown(conn, half, nbytes, seed, rate):
    send_stream(conn, half, nbytes, seed, rate)
    conn.shutdown(socket.SHUT_WR)


def run_server(args):
    sock = listen(args.bind, args.port)
    print("READY", flush=True)
    lock = threading.Lock()
    failures = []

    def handle(conn, peer):
        result = serve_one(conn, peer, args)
        with lock:
            print(json.dumps(result), flush=True)
            if "error" in result:
                failures.append(result["error"])

    workers = []
    accepted = 0
    while args.count == 0 or accepted < args.count:
        conn, peer = sock.accept()
        accepted += 1
        worker = threading.Thread(target=handle, args=(conn, peer))
        worker.start()
        workers.append(worker)
    for worker in workers:
        worker.join()
    for failure in failures:
        print(f"xfer server: error: {failure}", file=sys.stderr)
    return 1 if failures else 0


# --- client -----------------------------------------------------------------

def connect(args):
    """Connect to HOST PORT; return (socket, seconds the connect took)."""
    source = (args.bind, 0) if args.bind else None
    start = time.monotonic()
    sock = socket.create_connection((args.host, args.port),
                                    timeout=args.connect_timeout,
                                    source_address=source)
    elapsed = time.monotonic() - start
    sock.settimeout(args.timeout)
    return sock, elapsed


def exchange(sock, args, sent, received):
    """Send the stream, half-close, read until EOF (concurrently if --recv)."""
    reader = in_thread(recv_until_eof, received, sock, received) \
        if args.recv else None
    try:
        send_stream(sock, sent, args.bytes, args.seed, args.rate)
        sock.shutdown(socket.SHUT_WR)
    except OSError as exc:
        sent.error = exc
    if reader:
        reader.join()
    elif sent.error is None:
        try:
            recv_until_eof(sock, received)
        except OSError as exc:
            received.error = exc


def run_client(args):
    start = time.monotonic()
    try:
        sock, connect_seconds = connect(args)
    except OSError as exc:
        print(f"xfer client: connect to {args.host} port {args.port}: {exc}",
              file=sys.stderr)
        return 1
    local = sock.getsockname()
    if args.announce:
        print(f"CONNECTED {plain_address(local[0])} {local[1]}", flush=True)
    sent, received = Half(), Half()
    exchange(sock, args, sent, received)
    sock.close()
    result = report(sent, received,
                    seconds=round(time.monotonic() - start, 6),
                    connect_seconds=round(connect_seconds, 6),
                    local=plain_address(local[0]), local_port=local[1])
    print(json.dumps(result), flush=True)
    if "error" in result:
        print(f"xfer client: error: {result['error']}", file=sys.stderr)
        return 1
    return 0


# --- command line -------------------------------------------------------------

def positive_float(text):
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)

    server = sub.add_parser("server", help="accept K connections")
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--bind", help="address to listen on "
                        "(default: dual-stack [::])")
    server.add_argument("--send", type=int, metavar="N",
                        help="send N bytes back on every connection")
    server.add_argument("--seed", type=int, default=SERVER_SEED)
    server.add_argument("--count", type=int, default=1, metavar="K",
                        help="connections to serve, 0 = forever")
    server.add_argument("--rate", type=positive_float, metavar="BPS",
                        help="pace --send to BPS bytes per second")
    server.add_argument("--timeout", type=positive_float, default=None,
                        help="idle seconds before a socket call fails")

    client = sub.add_parser("client", help="send N bytes to HOST PORT")
    client.add_argument("host")
    client.add_argument("port", type=int)
    client.add_argument("--bytes", type=int, required=True, metavar="N")
    client.add_argument("--seed", type=int, default=CLIENT_SEED)
    client.add_argument("--recv", action="store_true",
                        help="read concurrently while sending (full duplex)")
    client.add_argument("--bind", help="local source address")
    client.add_argument("--rate", type=positive_float, metavar="BPS",
                        help="pace sending to BPS bytes per second")
    client.add_argument("--connect-timeout", type=positive_float, default=10)
    client.add_argument("--timeout", type=positive_float, default=60,
                        help="idle seconds before a socket call fails")
    client.add_argument("--announce", action="store_true",
                        help="print 'CONNECTED ADDR PORT' once connected")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        return run_server(args) if args.mode == "server" else run_client(args)
    except OSError as exc:
        print(f"xfer {args.mode}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
