#!/usr/bin/python3
"""A TCP client or server protected by a TCP-MD5 signature (RFC 2385).

The signature option takes 18 of the SYN's 40 option bytes, which leaves
no room for racks' option: a real kernel-made SYN that rackd must leave
alone.

usage: md5peer.py server PORT PEER_ADDR | client ADDR PORT
"""

import socket
import struct
import sys

TCP_MD5SIG = 14
KEY = b"racks-md5-test"


def md5sig(addr):
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    if family == socket.AF_INET:
        sa = struct.pack("=H", family) + struct.pack("!H4s", 0,
                                                      socket.inet_aton(addr))
    else:
        sa = struct.pack("=H", family) + struct.pack(
            "!HI16sI", 0, 0, socket.inet_pton(family, addr), 0)
    return sa.ljust(128, b"\0") + struct.pack("=BBHi", 0, 0, len(KEY), 0) + \
        KEY.ljust(80, b"\0")


def main():
    if sys.argv[1] == "server":
        port, peer = int(sys.argv[2]), sys.argv[3]
        s = socket.socket(socket.AF_INET6 if ":" in peer else socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.IPPROTO_TCP, TCP_MD5SIG, md5sig(peer))
        s.bind(("", port))
        s.listen()
        print("READY", flush=True)
        conn, _ = s.accept()
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
        conn.sendall(data[::-1])
        conn.close()
        return 0
    addr, port = sys.argv[2], int(sys.argv[3])
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    s.setsockopt(socket.IPPROTO_TCP, TCP_MD5SIG, md5sig(addr))
    s.settimeout(10)
    s.connect((addr, port))
    s.sendall(b"signed hello")
    s.shutdown(socket.SHUT_WR)
    reply = b""
    while chunk := s.recv(65536):
        reply += chunk
    print(reply.decode())
    return 0 if reply == b"signed hello"[::-1] else 1


if __name__ == "__main__":
    sys.exit(main())
