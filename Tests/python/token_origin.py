#!/usr/bin/env python3
"""A loopback CDN for swarmgate's end-to-end tests: serves one folder, answers 403 to any
request without ?token=TOKEN (so anti-leech tokens must survive the gateway), supports Range
(206/416), and counts what it sent. FILE.content-type and FILE.cache-control, next to FILE, give FILE's header of that name.

usage: token_origin.py FOLDER TOKEN     prints "PORT" on stdout once listening.
GET /__stats -> {"requests": N, "bytes": N}   (no token needed)
"""
import http.server
import json
import os
import sys
import threading
from urllib.parse import urlsplit, unquote

import loopback_origin

ROOT, TOKEN = os.path.abspath(sys.argv[1]), sys.argv[2]
TYPES = {".m3u8": "application/vnd.apple.mpegurl", ".mpd": "application/dash+xml", ".ts": "video/mp2t",
         ".m4s": "video/iso.segment", ".mp4": "video/mp4"}
lock = threading.Lock()
stats = {"requests": 0, "bytes": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_body(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
            with lock:
                stats["bytes"] += len(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/__stats":
            return self.send_body(200, json.dumps(stats).encode(), [("Content-Type", "application/json")])
        with lock:
            stats["requests"] += 1
        # The token must arrive byte for byte, still percent-encoded as the player sent it.
        if f"token={TOKEN}" not in url.query.split("&"):
            return self.send_body(403, b"token required\n")
        path = os.path.abspath(os.path.join(ROOT, unquote(url.path).lstrip("/")))
        if not path.startswith(ROOT + os.sep) or not os.path.isfile(path):
            return self.send_body(404, b"not found\n")
        data = open(path, "rb").read()
        # FILE.content-type and FILE.cache-control, when there, hold FILE's header of that name
        # (a segment labelled as a playlist, a live playlist marked no-store).
        def sidecar(name, default):
            return open(path + "." + name).read().strip() if os.path.isfile(path + "." + name) else default
        headers = [("Content-Type", sidecar("content-type", TYPES.get(os.path.splitext(path)[1], "application/octet-stream"))),
                   ("Accept-Ranges", "bytes"), ("Cache-Control", sidecar("cache-control", "max-age=60"))]
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and "," not in rng:
            first, _, last = rng[6:].partition("-")
            n = len(data)
            if first == "":
                start, end = max(0, n - int(last)), n - 1
            else:
                start, end = int(first), min(int(last) if last else n - 1, n - 1)
            if start >= n:
                return self.send_body(416, b"", [("Content-Range", f"bytes */{n}")])
            return self.send_body(206, data[start:end + 1], headers + [("Content-Range", f"bytes {start}-{end}/{n}")])
        self.send_body(200, data, headers)


# What every test origin shares: exits when the parent closes our stdin (so no origin
# outlives its test), SIGTERM unblocked, threads, a CDN's backlog, TCP_NODELAY.
loopback_origin.serve(Handler, port=0)
