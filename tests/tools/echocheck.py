#!/usr/bin/python3
"""Many checked echo streams at once, for migrating a process that holds
many connections (test_rackckpt.py).

    server:  echocheck.py server --port P
    client:  echocheck.py client --to HOST:PORT:COUNT [--to ...]
                                 --seconds S [--rate BYTES_PER_S]

The client opens COUNT connections to each HOST:PORT. Each connection
starts with its 8-byte stream id, then sends the stream of that id
(paced at --rate) for S seconds, half-closes, and reads until EOF. The
server checks every byte it receives against the stream of the id and
echoes it back; the client checks that the echo is exactly what it sent.
So a byte lost, duplicated or changed anywhere, either way, is an error
at the offset where it happened.

The server prints READY, then one JSON line per finished connection:
    {"id": .., "checked": N, "error": ".." (only on a mismatch)}
The client prints "CONNECTED N" once every connection is up, then one
JSON line when all are done:
    {"conns": [{"id", "sent", "echoed", "max_gap", "error"?}, ...]}
where max_gap is the longest wait, in seconds, between two echoed chunks.
Exit status 0 only if every stream arrived whole both ways.

The stream of id I is SHA-256(I, k) for k = 0, 1, ...: cheap, never
periodic, and a pure function of (I, offset). Standard library only.
"""

import argparse
import hashlib
import json
import socket
import struct
import sys
import threading
import time

# print() writes a line's text and its newline separately: the servers'
# threads would interleave them ('{...}{...}' then two newlines).
_OUT = threading.Lock()


def say(line):
    with _OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


CHUNK = 4096


class Stream:
    """The bytes of stream ID from offset 0 on, generated as needed."""

    def __init__(self, sid):
        self.sid = sid
        self.block = 0
        self.buf = b""

    def take(self, n):
        while len(self.buf) < n:
            self.buf += hashlib.sha256(
                struct.pack(">QQ", self.sid, self.block)).digest() * 4
            self.block += 1
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("EOF in the stream id")
        data += chunk
    return data


def serve_one(conn):
    report = {"id": None, "checked": 0}
    try:
        sid = struct.unpack(">Q", recv_exact(conn, 8))[0]
        report["id"] = sid
        want = Stream(sid)
        while True:
            data = conn.recv(65536)
            if not data:
                break
            if data != want.take(len(data)):
                report["error"] = f"mismatch at offset {report['checked']}"
                break
            report["checked"] += len(data)
            conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
    except OSError as exc:
        report["error"] = str(exc)
    finally:
        conn.close()
    say(json.dumps(report))


def server(args):
    lsock = socket.socket(socket.AF_INET6 if ":" in args.bind
                          else socket.AF_INET)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((args.bind, args.port))
    lsock.listen(128)
    print("READY", flush=True)
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


class Client:
    def __init__(self, sid, sock, seconds, rate):
        self.sid, self.sock = sid, sock
        self.seconds, self.rate = seconds, rate
        self.sent = self.echoed = 0
        self.max_gap = 0.0
        self.error = None

    def send(self):
        stream = Stream(self.sid)
        start = time.monotonic()
        try:
            self.sock.sendall(struct.pack(">Q", self.sid))
            while time.monotonic() - start < self.seconds:
                self.sock.sendall(stream.take(CHUNK))
                self.sent += CHUNK
                ahead = self.sent / self.rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
            self.sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            self.error = f"send: {exc}"

    def recv(self):
        want = Stream(self.sid)
        last = time.monotonic()
        try:
            while True:
                data = self.sock.recv(65536)
                now = time.monotonic()
                if not data:
                    break
                self.max_gap = max(self.max_gap, now - last)
                last = now
                if data != want.take(len(data)):
                    self.error = f"echo mismatch at offset {self.echoed}"
                    return
                self.echoed += len(data)
        except OSError as exc:
            self.error = f"recv: {exc}"

    def report(self):
        out = {"id": self.sid, "sent": self.sent, "echoed": self.echoed,
               "max_gap": round(self.max_gap, 3)}
        if self.error:
            out["error"] = self.error
        elif self.echoed != self.sent:
            out["error"] = f"echoed {self.echoed} of {self.sent} bytes"
        return out


def client(args):
    clients = []
    for to in args.to:
        host, port, count = to.rsplit(":", 2)
        for _ in range(int(count)):
            sock = socket.create_connection((host.strip("[]"), int(port)),
                                            timeout=10)
            sock.settimeout(None)
            clients.append(Client(len(clients), sock, args.seconds,
                                  args.rate))
    print(f"CONNECTED {len(clients)}", flush=True)
    threads = [threading.Thread(target=f) for c in clients
               for f in (c.send, c.recv)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reports = [c.report() for c in clients]
    print(json.dumps({"conns": reports}), flush=True)
    return 1 if any("error" in r for r in reports) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    srv = sub.add_parser("server")
    srv.add_argument("--port", type=int, required=True)
    srv.add_argument("--bind", default="0.0.0.0")
    cli = sub.add_parser("client")
    cli.add_argument("--to", action="append", required=True,
                     help="HOST:PORT:COUNT")
    cli.add_argument("--seconds", type=float, required=True)
    cli.add_argument("--rate", type=float, default=64 * 1024)
    args = parser.parse_args()
    if args.mode == "server":
        server(args)
        return 0
    return client(args)


if __name__ == "__main__":
    sys.exit(main())
