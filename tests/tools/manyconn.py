#!/usr/bin/python3
"""Many idle TCP connections from one process, each checked end to end.

  manyconn.py serve PORT
      Echo server for any number of connections (one thread, selectors);
      prints READY once listening.

  manyconn.py connect HOST PORT N [--bytes K] [--timeout S]
      Opens N connections to HOST:PORT at once (non-blocking connects) and
      prints one JSON line once every one is connected or has failed:
      {"connected": n, "failed": f, "seconds": t, "ports": [...]}. Then,
      for each line "echo" on stdin, every connection sends K bytes of its
      own (derived from its local port) and reads them back; one JSON line
      {"echoed": n, "bad": [ports...]} follows. EOF on stdin closes them
      all and exits.

A test uses it to open a thousand connections through a lossy router and
to check afterwards that every one still carries its bytes unchanged.
"""

import argparse
import hashlib
import json
import resource
import selectors
import socket
import sys
import time


def serve(port):
    sel = selectors.DefaultSelector()
    lsock = socket.socket(socket.AF_INET6)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("::", port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ, None)
    print("READY", flush=True)
    pending = {}
    while True:
        for key, events in sel.select():
            if key.data is None:
                conn, _ = lsock.accept()
                conn.setblocking(False)
                pending[conn] = b""
                sel.register(conn, selectors.EVENT_READ, "conn")
                continue
            conn = key.fileobj
            if events & selectors.EVENT_READ:
                try:
                    data = conn.recv(65536)
                except ConnectionError:
                    data = b""
                if not data:
                    sel.unregister(conn)
                    pending.pop(conn, None)
                    conn.close()
                    continue
                pending[conn] += data
            if pending.get(conn):
                try:
                    sent = conn.send(pending[conn])
                except BlockingIOError:
                    sent = 0
                pending[conn] = pending[conn][sent:]
            sel.modify(conn, selectors.EVENT_READ |
                       (selectors.EVENT_WRITE if pending[conn] else 0), "conn")


def payload(port, nbytes):
    out = b""
    seed = str(port).encode()
    while len(out) < nbytes:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return out[:nbytes]


def connect_all(host, port, n, timeout):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sel = selectors.DefaultSelector()
    socks, failed = [], 0
    start = time.monotonic()
    for _ in range(n):
        s = socket.socket(family)
        s.setblocking(False)
        s.connect_ex((host, port))
        sel.register(s, selectors.EVENT_WRITE)
    while len(sel.get_map()) and time.monotonic() - start < timeout:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            sel.unregister(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                failed += 1
                s.close()
            else:
                socks.append(s)
    failed += len(sel.get_map())
    print(json.dumps({"connected": len(socks), "failed": failed,
                      "seconds": round(time.monotonic() - start, 3),
                      "ports": [s.getsockname()[1] for s in socks]}),
          flush=True)
    return socks


def echo_all(socks, nbytes, timeout=60):
    sel = selectors.DefaultSelector()
    state = {}
    for s in socks:
        port = s.getsockname()[1]
        state[s] = [payload(port, nbytes), b"", port]
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    bad, done = [], 0
    deadline = time.monotonic() + timeout
    while len(sel.get_map()) and time.monotonic() < deadline:
        for key, events in sel.select(timeout=0.5):
            s = key.fileobj
            out, got, port = state[s]
            try:
                if events & selectors.EVENT_WRITE and out:
                    sent = s.send(out)
                    out = out[sent:]
                if events & selectors.EVENT_READ:
                    got += s.recv(65536)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                bad.append(port)
                sel.unregister(s)
                continue
            state[s] = [out, got, port]
            if not out:
                sel.modify(s, selectors.EVENT_READ)
            if len(got) >= nbytes:
                sel.unregister(s)
                if got == payload(port, nbytes):
                    done += 1
                else:
                    bad.append(port)
    bad += [state[k.fileobj][2] for k in sel.get_map().values()]
    print(json.dumps({"echoed": done, "bad": bad}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("port", type=int)
    cl = sub.add_parser("connect")
    cl.add_argument("host")
    cl.add_argument("port", type=int)
    cl.add_argument("n", type=int)
    cl.add_argument("--bytes", type=int, default=1000)
    cl.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.cmd == "serve":
        serve(args.port)
        return 0
    socks = connect_all(args.host, args.port, args.n, args.timeout)
    for line in sys.stdin:
        if line.strip() == "echo":
            echo_all(socks, args.bytes)
    for s in socks:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
