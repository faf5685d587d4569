"""Holds a tracker's login gate full, as a flood without the secret would.

Usage: login_flood.py PORT SOURCES PER_SOURCE HOLD_SECONDS

Opens SOURCES x PER_SOURCE WebSocket upgrades to ws://127.0.0.1:PORT/swarm/v1/ws, each from
its source address 127.0.0.(2+s), and sends nothing after the upgrade. Prints "held N" on
stderr once the upgrades are answered (N of them with 101), then watches the connections
for HOLD_SECONDS and prints "evicted K told T": how many the tracker closed as too many waiting
(a close frame saying so, or the connection's end), and how many of those were told anything
else first (a `refused` text message).
"""
import base64
import os
import select
import socket
import sys
import time


def main():
    port, sources, per, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    conns = []
    for s in range(sources):
        for _ in range(per):
            c = socket.socket()
            c.bind((f"127.0.0.{2 + s}", 0))
            c.connect(("127.0.0.1", port))
            key = base64.b64encode(os.urandom(16)).decode()
            c.sendall(
                f"GET /swarm/v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
            )
            conns.append(c)
    held, early = 0, set()
    for c in conns:
        c.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data:
            d = c.recv(4096)
            if not d:
                break
            data += d
        if data.startswith(b"HTTP/1.1 101"):
            held += 1
        if b"too many connections" in data:
            early.add(c)
    sys.stderr.write(f"held {held - len(early)}\n")
    sys.stderr.flush()
    closed, told = set(early), 0
    deadline = time.time() + hold
    while time.time() < deadline:
        readable, _, _ = select.select([c for c in conns if c not in closed], [], [], 0.1)
        for c in readable:
            d = c.recv(4096)
            if b"refused" in d:
                told += 1
            if not d or b"too many connections" in d:
                closed.add(c)
    sys.stderr.write(f"evicted {len(closed - early)} told {told}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    main()
