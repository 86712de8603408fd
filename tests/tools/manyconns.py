#!/usr/bin/python3
"""Many idle TCP connections, checked on demand (test_adopt.py).

    server:  manyconns.py server --port P
    client:  manyconns.py client --to HOST --port P --count N

The server echoes whatever it receives on every connection. The client
opens COUNT connections (at most 64 handshakes in flight), prints
"CONNECTED N" and then, for every line "CHECK" on its stdin, sends 32
distinct bytes on every connection, reads them back and prints one JSON
line {"ok": n, "bad": [indexes]}. It exits when its stdin closes.
Standard library only; one thread, selectors.
"""

import argparse
import json
import os
import selectors
import socket
import sys
import time


def server(port):
    sel = selectors.DefaultSelector()
    fam = socket.AF_INET6
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.bind(("::", port))
    ls.listen(4096)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ)
    print("READY", flush=True)
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            if s is ls:
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    continue
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
                continue
            try:
                data = s.recv(65536)
            except (BlockingIOError, ConnectionError):
                data = b"" if not isinstance(sys.exc_info()[1],
                                             BlockingIOError) else None
            if data is None:
                continue
            if not data:
                sel.unregister(s)
                s.close()
                continue
            s.sendall(data)


def connect_all(host, port, count):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    sel = selectors.DefaultSelector()
    socks, pending, nxt = [None] * count, 0, 0
    while nxt < count or pending:
        while nxt < count and pending < 64:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((host, port))
            sel.register(s, selectors.EVENT_WRITE, nxt)
            socks[nxt] = s
            nxt += 1
            pending += 1
        for key, _ in sel.select(30):
            s = key.fileobj
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, f"connection {key.data}: "
                              f"{os.strerror(err)}")
            sel.unregister(s)
            pending -= 1
    return socks


def check(socks):
    bad = []
    for i, s in enumerate(socks):
        msg = (f"{i:08d}" * 4).encode()
        try:
            s.setblocking(True)
            s.settimeout(20)
            s.sendall(msg)
            got = b""
            while len(got) < len(msg):
                chunk = s.recv(len(msg) - len(got))
                if not chunk:
                    break
                got += chunk
            if got != msg:
                bad.append(i)
        except OSError:
            bad.append(i)
    return {"ok": len(socks) - len(bad), "bad": bad}


def client(host, port, count):
    t0 = time.monotonic()
    socks = connect_all(host, port, count)
    print(f"CONNECTED {len(socks)} {time.monotonic() - t0:.2f}", flush=True)
    for line in sys.stdin:
        if line.strip() == "CHECK":
            print(json.dumps(check(socks)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["server", "client"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--to")
    ap.add_argument("--count", type=int, default=1)
    a = ap.parse_args()
    if a.role == "server":
        server(a.port)
    else:
        client(a.to, a.port, a.count)


if __name__ == "__main__":
    main()
