#!/usr/bin/env python3
"""The tracker's memory for what nodes hold, for scripts/bench swarm: SESSIONS nodes log in to a
real `swarmgate tracker` over WebSocket (login signed as SPEC section 3 says) and each announces
OBJECTS object ids, as a node does at login (`have` messages of at most 20,000 ids). Measured:
the growth of the tracker's resident memory (VmRSS) per announced id, from every node holding
half its objects to all of them, against the id's own text, the 64 hex digits every `have`
carries. 300 gateways holding 60,000 segments each are 18 million ids: at the 168 bytes each
measured before the tracker packed them, 3 GB.
Used by bench.py, or alone: tracker_memory.py SWARMGATE_BIN. Everything binds 127.0.0.1 only
and every wait is bounded."""
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import socket
import struct
import sys
import tempfile
import time

from swarm_bench import Child

SESSIONS, OBJECTS, PER_MESSAGE = 20, 60000, 20000
APP_ID = "swarmgate"


class Socket:
    """A WebSocket client, just enough for the tracker: text frames, masked with a zero key
    (valid on the wire, and no byte of a 1.4 MB `have` is touched in Python), in frames of at
    most 16 KiB."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        self.sock.sendall((f"GET /swarm/v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("the tracker closed the connection during the handshake")
            head += chunk
        head, self.buffered = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"no WebSocket upgrade: {head[:200]!r}")

    def send(self, message):
        """One text message, in frames of at most 16 KiB (what the tracker's server takes)."""
        payload = json.dumps(message, separators=(",", ":")).encode()
        frames = [payload[i:i + 16384] for i in range(0, len(payload), 16384)] or [b""]
        out = []
        for k, frame in enumerate(frames):
            first = (0x80 if k == len(frames) - 1 else 0) | (0x1 if k == 0 else 0x0)
            n = len(frame)
            if n < 126:
                out.append(struct.pack("!BB", first, 0x80 | n))
            else:
                out.append(struct.pack("!BBH", first, 0x80 | 126, n))
            out += [b"\0\0\0\0", frame]
        self.sock.sendall(b"".join(out))

    def read(self, n):
        while len(self.buffered) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the tracker closed the connection")
            self.buffered += chunk
        out, self.buffered = self.buffered[:n], self.buffered[n:]
        return out

    def receive(self):
        """The next text message, as JSON (pings and other control frames skipped)."""
        while True:
            first, second = self.read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self.read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self.read(8))[0]
            payload = self.read(n)
            if first & 0x0F == 0x1:
                return json.loads(payload)
            if first & 0x0F == 0x8:
                raise RuntimeError(f"the tracker closed the session: {payload[2:]!r}")

    def close(self):
        self.sock.close()


def login(port, secret, peer):
    ws = Socket(port)
    ts, nonce = int(time.time()), secrets.token_hex(16)
    sig = hmac.new(secret.encode(), f"{APP_ID}\n{peer}\n{ts}\n{nonce}".encode(), hashlib.sha256).hexdigest()
    ws.send({"type": "login", "appId": APP_ID, "peerId": peer, "ts": ts, "nonce": nonce, "sig": sig,
             "url": f"http://127.0.0.1:9/{peer}"})
    answer = ws.receive()
    if answer.get("type") != "welcome":
        raise RuntimeError(f"login refused: {answer}")
    return ws


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def announced(port):
    """The tracker's count of announced objects (None from a binary without it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    m = re.search(r"^swarmgate_tracker_announced_objects (\d+)", text, re.M)
    return int(m.group(1)) if m else None


def settled(port, sockets, expected=None):
    """Waits until the tracker has taken every message sent (each socket's pong); then checks
    that it keeps the `expected` objects announced, if given."""
    for ws in sockets:
        ws.send({"type": "ping"})
    for ws in sockets:
        if ws.receive().get("type") != "pong":
            raise RuntimeError("no pong")
    if expected is None:
        return
    held = announced(port)
    if held is not None and held != expected:
        raise RuntimeError(f"the tracker keeps {held} announced objects, not {expected}")


def measure(swarmgate, sessions=SESSIONS, objects=OBJECTS):
    """Bytes of the tracker's memory per announced id, and the ids announced: the growth of its
    resident memory from every node holding half its objects to every node holding all of
    them, so that what the first half's messages left in the allocator is not counted."""
    with tempfile.TemporaryDirectory() as tmp:
        secret = secrets.token_hex(16)
        secret_file = os.path.join(tmp, "secret")
        with open(secret_file, "w") as f:
            f.write(secret + "\n")
        tracker = Child([swarmgate, "tracker", "--listen", "127.0.0.1:0", "--app-secret-file", secret_file,
                         "--db", os.path.join(tmp, "registry.sqlite"), "--cache-dir", os.path.join(tmp, "cache")])
        failed, sockets = True, []
        try:
            port = int(tracker.wait_stderr(r"listening on 127\.0\.0\.1:(\d+)").group(1))
            ids = [[hashlib.sha256(f"{i}/{k}".encode()).hexdigest() for k in range(objects)] for i in range(sessions)]
            half = objects // 2
            for i in range(sessions):
                sockets.append(login(port, secret, f"node-{i}"))
            memory = []
            for part in (slice(0, half), slice(half, objects)):
                for ws, mine in zip(sockets, ids):
                    mine = mine[part]
                    for start in range(0, len(mine), PER_MESSAGE):
                        ws.send({"type": "have", "objects": mine[start:start + PER_MESSAGE], "whole": True})
                    # Every session heard from within its heartbeats (30 s of silence ends one).
                    settled(port, sockets)
                settled(port, sockets, expected=sessions * part.stop)
                time.sleep(1)
                memory.append(rss(tracker.proc.pid))
            failed = False
        finally:
            for ws in sockets:
                ws.close()
            tracker.stop(kill=failed)
    return (memory[1] - memory[0]) / (sessions * (objects - half)), sessions * objects


def run(swarmgate, row):
    per_id, ids = measure(swarmgate)
    row(f"tracker memory per announced object id ({SESSIONS} nodes x {OBJECTS:,} ids; VmRSS growth over the second half)",
        f"{per_id:.0f} B ({per_id * ids / 2**20:.0f} MiB for {ids:,} ids)", "64 B (the id's hex text)",
        f"{per_id / 64:.2f}x the id's text", "<= 1.0x", per_id <= 64)


if __name__ == "__main__":
    run(sys.argv[1], lambda *r: print(" | ".join(str(v) for v in r)))
