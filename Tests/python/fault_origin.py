"""A misbehaving HTTP origin on loopback for the Origin client's tests.

Binds 127.0.0.1 on a free port (or the port given as the first argument), prints the port on
stdout and serves until killed or until its stdin closes (so it never outlives the test
process that started it). Every request is counted under a key: the `key` query
parameter, else the KEY of /flaky/KEY/N, else the path. /count/KEY reports, for that key,
{"requests", "inflight", "max_inflight", "sent"} (sent = body bytes written so far).

Endpoints:
  /bytes/N           N deterministic bytes (byte i is i % 251); Range (first-last, first-,
                     -suffix) gives 206 or 416; ETag "bytes-N"; If-None-Match gives 304;
                     ?nolength=1: no Content-Length, the body ends when the connection closes;
                     ?cut=B: each answer sends B bytes of its body at most, then closes (a
                     balancer that cuts long transfers; B1,B2,...: the Nth answer for the key
                     cuts at the Nth of them, cycling); ?noetag=1: no ETag (no validator)
  /flaky/KEY/N       the first N requests for KEY answer 500, the later ones 200 "ok"
  /reset             headers (Content-Length 100000) and 5000 bytes, then a TCP RST
                     (?fin=1: a clean close instead, i.e. a short body)
  /stall             200 headers, then nothing for ?seconds=S (default 60); ?head=0: nothing
                     at all, the head neither
  /slow/N            N bytes, one every ?delay=D seconds (default 0.05); ?playlist=1: a
                     playlist's (#EXTM3U, then newlines), as application/vnd.apple.mpegurl
  /redirect          ?to=URL&code=302: a redirect to URL
  /hops/N            302 to /hops/N-1 ... /hops/0 answers 200 "done"
  /need-token        403 unless ?token=secret
  /nocontent         204 with a body (Content-Length: 5, "stray", 0.2 s after the head), which
                     HTTP forbids: the client reads it as the start of its next answer
  /status/N[/...]    N with a short body, and the header N must carry (401: WWW-Authenticate,
                     405: Allow, 407: Proxy-Authenticate)
  /count/KEY         the counters of KEY as JSON
  /echo              "METHOD Content-Type BODY" of the request (POST: its body)
  /accept-encoding   the request's Accept-Encoding ("-" without one)
  /bigheaders/N      200 "ok" after N bytes of X-Filler header lines

POST is answered as GET is (counted the same way), after its body (Content-Length) is read.
"""

import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import loopback_origin

PATTERN = bytes(range(251)) * 300  # longer than 251 + 65536, sliced at any offset
LOCK = threading.Lock()
COUNTERS = {}


def counter(key):
    return COUNTERS.setdefault(key, {"requests": 0, "inflight": 0, "max_inflight": 0, "sent": 0})


def pattern(offset, length):
    start = offset % 251
    return PATTERN[start:start + length]


def parse_range(header, size):
    """(first, last) for a satisfiable single range, "bad" for an unsatisfiable one, None for none."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[6:].strip().partition("-")
    if first == "":
        n = int(last)
        return (max(0, size - n), size - 1) if n > 0 and size > 0 else "bad"
    first = int(first)
    last = min(int(last), size - 1) if last else size - 1
    return (first, last) if first < size and first <= last else "bad"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        self.posted = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()

    def serve_status(self, parts):
        code = int(parts[1])
        extra = {401: ("WWW-Authenticate", 'Basic realm="origin"'), 405: ("Allow", "PUT"),
                 407: ("Proxy-Authenticate", 'Basic realm="proxy"')}.get(code)
        self.answer(code, b"status %d" % code, [extra] if extra else [])

    def serve_echo(self, parts):
        text = "%s %s " % (self.command, self.headers.get("Content-Type", "-"))
        self.answer(200, text.encode() + getattr(self, "posted", b""))

    def serve_bigheaders(self, parts):
        n = int(parts[1])
        lines = [("X-Filler-%d" % i, "x" * 1000) for i in range(n // 1000 + 1)]
        self.answer(200, b"ok", lines)

    def serve_accept_encoding(self, parts):
        self.answer(200, self.headers.get("Accept-Encoding", "-").encode())

    def do_GET(self):
        if self.command != "POST":
            self.posted = b""  # not the body of an earlier POST on this connection
        url = urlsplit(self.path)
        self.query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        key = self.query.get("key") or (parts[1] if parts[0] == "flaky" else url.path)
        with LOCK:
            c = counter(key)
            c["requests"] += 1
            c["inflight"] += 1
            c["max_inflight"] = max(c["max_inflight"], c["inflight"])
        self.key = key
        try:
            getattr(self, "serve_" + parts[0].replace("-", "_"), self.serve_missing)(parts)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            with LOCK:
                counter(key)["inflight"] -= 1

    def send_body(self, data):
        if self.command != "HEAD":
            self.wfile.write(data)
            with LOCK:
                counter(self.key)["sent"] += len(data)

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.send_body(body)

    def serve_missing(self, parts):
        self.answer(404, b"not found")

    def serve_bytes(self, parts):
        size = int(parts[1])
        etag = '"bytes-%d"' % size
        if self.headers.get("If-None-Match") == etag:
            return self.answer(304, headers=[("ETag", etag)])
        r = parse_range(self.headers.get("Range"), size)
        if r == "bad":
            return self.answer(416, headers=[("Content-Range", "bytes */%d" % size)])
        first, last = r or (0, size - 1)
        self.send_response(206 if r else 200)
        if self.query.get("nolength"):
            self.close_connection = True
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(last - first + 1))
        if not self.query.get("noetag"):
            self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if r:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
        self.end_headers()
        offset = first
        if "cut" in self.query:
            cuts = [int(c) for c in self.query["cut"].split(",")]
            with LOCK:
                nth = counter(self.key)["requests"] - 1
            end = min(last, first + cuts[nth % len(cuts)] - 1)
        else:
            end = last
        while offset <= end:
            n = min(65536, end - offset + 1)
            self.send_body(pattern(offset, n))
            offset += n
        if end < last:
            self.wfile.flush()
            self.close_connection = True

    def serve_flaky(self, parts):
        with LOCK:
            failing = counter(self.key)["requests"] <= int(parts[2])
        self.answer(500, b"flaky") if failing else self.answer(200, b"ok")

    def serve_reset(self, parts):
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.send_body(pattern(0, 5000))
        self.wfile.flush()
        if not self.query.get("fin"):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def serve_stall(self, parts):
        if self.query.get("head") == "0":  # silent before its head too
            time.sleep(float(self.query.get("seconds", "60")))
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Length", "10")
        self.end_headers()
        self.wfile.flush()
        time.sleep(float(self.query.get("seconds", "60")))
        self.close_connection = True

    def serve_slow(self, parts):
        size = int(parts[1])
        body = (b"#EXTM3U\n" + b"\n" * size)[:size] if self.query.get("playlist") else None
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        if body is not None:
            self.send_header("Content-Type", "application/vnd.apple.mpegurl")
        self.end_headers()
        for i in range(size):
            self.wfile.flush()
            time.sleep(float(self.query.get("delay", "0.05")))
            self.send_body(body[i:i + 1] if body is not None else pattern(i, 1))

    def serve_redirect(self, parts):
        code = int(self.query.get("code", "302"))
        self.answer(code, b"moved", [("Location", self.query["to"])])

    def serve_hops(self, parts):
        n = int(parts[1])
        if n == 0:
            return self.answer(200, b"done")
        self.answer(302, b"moved", [("Location", "/hops/%d" % (n - 1))])

    def serve_nocontent(self, parts):
        self.send_response(204)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.flush()
        time.sleep(0.2)  # after the client took the answer as whole, and the connection back
        self.send_body(b"stray")

    def serve_need_token(self, parts):
        if self.query.get("token") == "secret":
            return self.answer(200, b"ok")
        self.answer(403, b"token required")

    def serve_count(self, parts):
        with LOCK:
            body = json.dumps(counter(parts[1])).encode()
        self.answer(200, body, [("Content-Type", "application/json")])


if __name__ == "__main__":
    loopback_origin.serve(Handler)
