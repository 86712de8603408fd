#!/usr/bin/python3
"""Short TCP connections with a little data each, one after another
(tests/test_bpfopt.py).

  optconn.py serve PORT
      Dual-stack listener on [::]:PORT (IPv4 clients too, as mapped
      addresses); prints READY once listening. Each connection: read to
      EOF, answer with the byte count as text, close. Forever.

  optconn.py connect ADDR PORT N [--bytes B]
      N connections to ADDR:PORT in turn: connect, send B bytes, half
      close, read the answer to EOF, close. Prints one JSON line:
      {"ports": [local port of each], "answers": [...]}.
"""

import argparse
import json
import socket
import sys


def serve(port):
    ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.bind(("::", port))
    ls.listen(4096)
    print("READY", flush=True)
    while True:
        conn, _ = ls.accept()
        with conn:
            n = 0
            while data := conn.recv(65536):
                n += len(data)
            conn.sendall(str(n).encode())


def connect(addr, port, count, size):
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    ports, answers = [], []
    payload = bytes(i % 251 for i in range(size))
    for _ in range(count):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect((addr, port))
            ports.append(s.getsockname()[1])
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while data := s.recv(65536):
                answer += data
            answers.append(answer.decode())
    print(json.dumps({"ports": ports, "answers": answers}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("serve")
    sp.add_argument("port", type=int)
    cp = sub.add_parser("connect")
    cp.add_argument("addr")
    cp.add_argument("port", type=int)
    cp.add_argument("count", type=int)
    cp.add_argument("--bytes", type=int, default=1000)
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args.port)
    else:
        connect(args.addr, args.port, args.count, args.bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
