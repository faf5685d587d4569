"""A versioned object origin on loopback for the piece-cache tests.

Binds 127.0.0.1 on a free port (or the port given as the first argument), prints the port on
stdout and serves until killed or until its stdin closes (so it never outlives the test
process that started it). Objects are generated on the fly: byte i of NAME at VERSION is
(i*7 + h + VERSION*13) % 256 with h = sum(utf-8 bytes of NAME) % 256; every object starts
at version 1. Unknown query parameters (token=..., etc.) are ignored.

Endpoints:
  /obj/NAME          NAME is the whole (percent-decoded) path after /obj/, e.g. a/b/c.mp4.
                     ?size=N (default 1000000, up to 2 GiB and beyond). GET and HEAD;
                     Content-Type from the extension; Accept-Ranges: bytes; ETag "NAME-vV"
                     and Last-Modified (fixed per version) unless ?novalidators=1.
                     Range bytes=a-b, a-, -n gives 206, an unsatisfiable one 416 with
                     Content-Range bytes */SIZE, several ranges are ignored (200). An If-Range
                     that is neither the current ETag nor Last-Modified turns a Range into 200.
                     ?throttle=B: at most B body bytes per second. ?nolength=1: no
                     Content-Length, the body ends when the connection closes. ?coding=C: a
                     Content-Encoding: C header (the bytes are the same). ?cc=V: a
                     Cache-Control: V header, ?cc2=W a second Cache-Control line (playlists
                     too). ?noranges=1:
                     Range is ignored (200, the whole object).
                     ?resetafter=N[&resets=K]: the first K (default 1) responses for NAME whose
                     body spans offset N send the bytes before N, then a TCP RST.
                     ?bumpafter=N: the first time a response for NAME reaches offset N (every
                     byte before N sent), NAME's version is bumped (the response itself keeps
                     its version; the next request sees new bytes and a new ETag).
  /redirect/NAME     302 to /obj/NAME with the same query
  /vod/NAME.m3u8     a VOD media playlist of ?segments=N (default 10) segments of ?size=S
                     bytes (default 200000), 4 s each: /obj/NAME/segK.ts?size=S&token=abc, NAME
                     percent-decoded (written raw: a space stays a space); ?ext=E: segKE
                     (?ext= : segK, a path without an extension); ?gap=K: an EXT-X-GAP
                     before segment K
  /live/NAME.m3u8    a live media playlist (no ENDLIST) of ?segments=N (default 10) segments
                     from ?first=K (default 0): EXT-X-MEDIA-SEQUENCE K, then segK... as /vod/
                     lists them; ?map=1 adds an EXT-X-MAP /obj/NAME/init.mp4?size=1000&token=abc;
                     ?duration=D writes D as every EXTINF's duration (default 4.0), ?target=T
                     T as the target duration (default 4).
                     ?parts=1 makes it low-latency (RFC 8216bis): SERVER-CONTROL with
                     CAN-BLOCK-RELOAD, PART-INF, four EXT-X-PART of /obj/NAME/segK.partI.ts for
                     each of the last two segments, a PRELOAD-HINT of the next part and a
                     RENDITION-REPORT of /live/NAME-alt.m3u8. A request with _HLS_msn waits
                     ?block=S seconds (default 0) first, as a blocking reload of a segment not
                     yet out; with ?hold=KEY instead, until /__release?key=KEY (60 s at most). Every playlist request's query is kept in the stats of
                     live/NAME.m3u8 ("queries").
  /live/NAME         the same playlist at a path without an extension
  /dash/NAME.mpd     the same as a static DASH MPD: Representations "lo" and "hi", each a
                     SegmentTemplate of /obj/NAME-ID/segK.ts?size=S&token=abc (4 s each,
                     from 0) with an initialization /obj/NAME-ID/init.mp4?size=1000&token=abc
  /dashlive/NAME.mpd the same as a dynamic (live) MPD: a SegmentTimeline of ?segments=N (default
                     10) segments numbered from ?first=K (default 0), 4 s each (only the
                     timeline says where the live edge is); ?ast=TIME: its availabilityStartTime
  /peer/v1/...       a lying peer: any piece request is answered 200 with 65536 bytes of garbage
  /slow/peer/v1/...  the same at 10 KB/s (a peer on a bad link)
  /long/peer/v1/...  the same with a byte more (65537: longer than any piece of 64 KiB)
  /__version         ?name=NAME[&bump=1][&gone=1|0][&size=N][&noranges=1][&throttle=B]: bump
                     NAME's version if asked, or have NAME answer 404 from now on (removed from
                     the origin), or again as before; size / noranges / throttle: from now on
                     NAME is N bytes / ignores ranges / is sent at B bytes per second (0: at
                     full speed), whatever its URLs' queries say; answer {"name", "version"}
  /__stats           ?name=NAME: {"requests", "full" (200s with a body), "ranges" (Range
                     header per request, "" for none), "if_range" (If-Range values received),
                     "bytes_sent", "inflight", "max_inflight"} for /obj/ and /redirect/
                     requests of NAME; without name: {NAME: {...}, ...}
  /__reset           forget all stats, versions, resets and bumps
  /__release         ?key=KEY: answer the blocking reloads held with ?hold=KEY, now and later
  /__blackhole       {"port": N}: a loopback port whose connections never complete (a listener
                     whose queue is full and that never accepts: a peer whose machine is gone)

A CDN some distance away: with OBJECT_ORIGIN_RTT_MS=R in the environment, every request but
the /__ ones waits R ms before it is answered (its round trip), and the first request on a
connection another R ms (the TCP handshake).
"""

import fcntl
import json
import os
import signal
import socket
import struct
import sys
import termios
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, quote, unquote, urlsplit

import loopback_origin

# (7j) % 256 for j = 0...: byte i of an object is (7i + base) % 256 = PATTERN[i + base*183],
# since 183 is the inverse of 7 mod 256. Long enough to slice 64 KiB at any shift.
PATTERN = bytes(7 * j % 256 for j in range(256)) * 258
CHUNK = 65536
RTT = float(os.environ.get("OBJECT_ORIGIN_RTT_MS", "0")) / 1000
TYPES = {".ts": "video/mp2t", ".m4s": "video/mp4", ".mp4": "video/mp4", ".flv": "video/x-flv",
         ".bin": "application/octet-stream"}
LOCK = threading.Lock()
OBJECTS = {}  # NAME -> {"version", "resets" (RSTs done), "bumped", "stats", "gone" if removed}
HOLDS = {}  # KEY -> the threading.Event that /__release?key=KEY sets


def fresh_stats():
    return {"requests": 0, "full": 0, "ranges": [], "if_range": [], "bytes_sent": 0,
            "inflight": 0, "max_inflight": 0}


def held(key):
    """The event that releases the blocking reloads held with ?hold=KEY."""
    with LOCK:
        return HOLDS.setdefault(key, threading.Event())


def obj(name):
    return OBJECTS.setdefault(name, {"version": 1, "resets": 0, "bumped": False, "stats": fresh_stats()})


def content(name, version, offset, length):
    base = (sum(name.encode()) + version * 13) % 256
    start = (offset + base * 183) % 256
    return PATTERN[start:start + length]


def validators(name, version):
    # A header is ASCII: a name with a space or non-ASCII letters is percent-encoded there.
    ascii_name = "".join(c if " " < c < "\x7f" and c != '"' else quote(c) for c in name)
    return '"%s-v%d"' % (ascii_name, version), formatdate(1700000000 + 86400 * version, usegmt=True)


def parse_range(header, size):
    """(first, last) for a satisfiable single range, "bad" for an unsatisfiable one, None to ignore."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[6:].strip().partition("-")
    try:
        if first == "":
            n = int(last)
            return (max(0, size - n), size - 1) if n > 0 and size > 0 else "bad"
        first, last = int(first), (int(last) if last else None)
    except ValueError:
        return None
    if last is not None and last < first:
        return None  # syntactically invalid: ignored (RFC 9110)
    last = size - 1 if last is None else min(last, size - 1)
    return (first, last) if first < size else "bad"


def drain(sock, timeout=2.0):
    """Wait (a little) until the kernel has sent what we wrote, so a RST does not discard it."""
    deadline = time.monotonic() + timeout
    buf = bytearray(4)
    while time.monotonic() < deadline:
        try:
            fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, buf)
        except (OSError, AttributeError):
            return  # no TIOCOUTQ on sockets here: best effort
        if struct.unpack("i", buf)[0] == 0:
            return
        time.sleep(0.005)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        self.query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        kind, _, rest = url.path.lstrip("/").partition("/")
        if RTT and not kind.startswith("__"):
            time.sleep(RTT if getattr(self, "answered", False) else 2 * RTT)
            self.answered = True
        try:
            if kind in ("obj", "redirect") and rest:
                self.serve_object(kind, unquote(rest), url)
            elif kind == "vod" and rest.endswith(".m3u8"):
                self.serve_vod(unquote(rest[:-len(".m3u8")]))
            elif kind == "live" and rest.endswith(".m3u8"):
                self.serve_live(rest[:-len(".m3u8")])
            elif kind == "live" and rest and "." not in rest:
                self.serve_live(rest)
            elif kind == "dash" and rest.endswith(".mpd"):
                self.serve_dash(rest[:-len(".mpd")])
            elif kind == "dashlive" and rest.endswith(".mpd"):
                self.serve_dash(rest[:-len(".mpd")], live=True)
            elif kind == "peer" or (kind in ("slow", "long") and rest.startswith("peer/")):
                self.serve_garbage(10000 if kind == "slow" else 0, 65537 if kind == "long" else 65536)
            elif kind in ("__version", "__stats", "__reset", "__release", "__blackhole"):
                getattr(self, "serve" + kind)()
            else:
                self.answer(404, b"not found")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except (ValueError, KeyError):
            self.answer(400, b"bad query")  # a malformed number or a missing name=

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.cache_control()
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def cache_control(self):
        for key in ("cc", "cc2"):
            if self.query.get(key):
                self.send_header("Cache-Control", self.query[key])

    def serve_vod(self, name):
        n = int(self.query.get("segments", "10"))
        size = int(self.query.get("size", "200000"))
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:4", "#EXT-X-PLAYLIST-TYPE:VOD"]
        gap = int(self.query.get("gap", "-1"))
        for k in range(n):
            if k == gap:
                lines.append("#EXT-X-GAP")
            lines += ["#EXTINF:4.0,", "/obj/%s/seg%d%s?size=%d&token=abc" % (name, k, self.query.get("ext", ".ts"), size)]
        lines.append("#EXT-X-ENDLIST")
        self.answer(200, ("\n".join(lines) + "\n").encode(), [("Content-Type", "application/vnd.apple.mpegurl")])

    def serve_live(self, name):
        n = int(self.query.get("segments", "10"))
        first = int(self.query.get("first", "0"))
        size = int(self.query.get("size", "200000"))
        target = int(self.query.get("target", "4"))
        lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-TARGETDURATION:%d" % target, "#EXT-X-MEDIA-SEQUENCE:%d" % first]
        if self.query.get("map") == "1":
            lines.append('#EXT-X-MAP:URI="/obj/%s/init.mp4?size=1000&token=abc"' % name)
        duration = self.query.get("duration", "4.0")
        parts = self.query.get("parts") == "1"
        with LOCK:
            obj("live/%s.m3u8" % name)["stats"].setdefault("queries", []).append(urlsplit(self.path).query)
        if parts:
            if "_HLS_msn" in self.query and "hold" in self.query:
                held(self.query["hold"]).wait(60)
            elif "_HLS_msn" in self.query:
                time.sleep(float(self.query.get("block", "0")))
            lines[1] = "#EXT-X-VERSION:9"
            lines[2:2] = ["#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=3.0", "#EXT-X-PART-INF:PART-TARGET=1.0"]
        part = '#EXT-X-PART:DURATION=1.0,URI="/obj/%s/seg%d.part%d.ts?size=50000&token=abc"'
        for k in range(first, first + n):
            if parts and k >= first + n - 2:
                lines += [part % (name, k, i) + (",INDEPENDENT=YES" if i == 0 else "") for i in range(4)]
            lines += ["#EXTINF:%s," % duration, "/obj/%s/seg%d.ts?size=%d&token=abc" % (name, k, size)]
        if parts:
            lines += ['#EXT-X-PRELOAD-HINT:TYPE=PART,URI="/obj/%s/seg%d.part0.ts?size=50000&token=abc"' % (name, first + n),
                      '#EXT-X-RENDITION-REPORT:URI="/live/%s-alt.m3u8?parts=1",LAST-MSN=%d,LAST-PART=3' % (name, first + n - 1)]
        self.answer(200, ("\n".join(lines) + "\n").encode(), [("Content-Type", "application/vnd.apple.mpegurl")])

    def serve_dash(self, name, live=False):
        """A static MPD of ?segments=N 4 s segments by @duration, or live, a dynamic one whose
        SegmentTimeline lists N segments from number ?first=K."""
        n = int(self.query.get("segments", "10"))
        first = int(self.query.get("first", "0"))
        size = int(self.query.get("size", "200000"))
        if live:
            kind = ('type="dynamic" availabilityStartTime="%s" minimumUpdatePeriod="PT2S"' % self.query.get("ast", "1970-01-01T00:00:00Z"))
            timing = ('timescale="1" startNumber="%d"' % first,
                      '<SegmentTimeline><S t="%d" d="4" r="%d"/></SegmentTimeline>' % (4 * first, n - 1))
        else:
            kind = 'type="static" mediaPresentationDuration="PT%dS"' % (4 * n)
            timing = ('startNumber="0" duration="4"', "")
        reps = "".join('<Representation id="%s" bandwidth="%d"/>' % (r, b) for r, b in (("lo", 300000), ("hi", 900000)))
        media = "/obj/%s-$RepresentationID$" % name
        body = ('<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" %s minBufferTime="PT2S" '
                'profiles="urn:mpeg:dash:profile:isoff-live:2011"><Period id="p0" start="PT0S">'
                '<AdaptationSet mimeType="video/mp2t"><SegmentTemplate %s '
                'media="%s/seg$Number$.ts?size=%d&amp;token=abc" initialization="%s/init.mp4?size=1000&amp;token=abc">'
                '%s</SegmentTemplate>%s</AdaptationSet></Period></MPD>\n') % (kind, timing[0], media, size, media, timing[1], reps)
        self.answer(200, body.encode(), [("Content-Type", "application/dash+xml")])

    def serve_garbage(self, rate, size):
        body = bytes((i * 31 + 5) % 256 for i in range(size))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = max(1, rate // 10) if rate else len(body)
        for i in range(0, len(body), step):
            self.wfile.write(body[i:i + step])
            self.wfile.flush()
            if rate:
                time.sleep(step / rate)

    def answer_json(self, value):
        self.answer(200, json.dumps(value).encode(), [("Content-Type", "application/json")])

    def serve_object(self, kind, name, url):
        with LOCK:
            s = obj(name)["stats"]
            s["requests"] += 1
            s["ranges"].append(self.headers.get("Range", ""))
            if "If-Range" in self.headers:
                s["if_range"].append(self.headers["If-Range"])
            s["inflight"] += 1
            s["max_inflight"] = max(s["max_inflight"], s["inflight"])
            version = obj(name)["version"]
            gone = obj(name).get("gone", False)
        try:
            if gone:
                return self.answer(404, b"not found")
            if kind == "redirect":
                location = "/obj/" + url.path.split("/", 2)[2] + ("?" + url.query if url.query else "")
                return self.answer(302, b"moved", [("Location", location)])
            self.send_object(name, version)
        finally:
            with LOCK:
                s["inflight"] -= 1

    def send_object(self, name, version):
        q = self.query
        with LOCK:
            o = dict(obj(name))
        size = int(o.get("size") or q.get("size", "1000000"))
        etag, modified = validators(name, version)
        noranges = o.get("noranges") or q.get("noranges") == "1"
        r = None if noranges else parse_range(self.headers.get("Range"), size)
        if_range = self.headers.get("If-Range")
        if if_range is not None and if_range not in (etag, modified):
            r = None  # the client's copy is stale: send the whole current object
        if r == "bad":
            return self.answer(416, headers=[("Content-Range", "bytes */%d" % size)])
        first, last = r or (0, size - 1)
        head = self.command == "HEAD"
        stop, rate = last + 1, o.get("throttle", int(q.get("throttle", "0")))
        reset_at, bump_at = int(q.get("resetafter", "-1")), int(q.get("bumpafter", "-1"))
        resets = int(q.get("resets", "1"))
        with LOCK:
            o = obj(name)
            if not head and first <= reset_at <= last and o["resets"] < resets:
                o["resets"] += 1
                stop = reset_at
            else:
                reset_at = -1
            if head or o["bumped"] or not first <= bump_at <= stop:
                bump_at = -1
            if not head and not r:
                o["stats"]["full"] += 1
        self.send_response(206 if r else 200)
        self.send_header("Content-Type", TYPES.get(os.path.splitext(name)[1], "application/octet-stream"))
        if q.get("nolength") == "1":
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(last - first + 1))
        self.send_header("Accept-Ranges", "bytes")
        if r:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
        if q.get("novalidators") != "1":
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", modified)
        if q.get("coding"):
            self.send_header("Content-Encoding", q["coding"])
        self.cache_control()
        self.end_headers()
        if head:
            return
        chunk = min(CHUNK, max(1, rate // 20)) if rate > 0 else CHUNK
        pos, started = first, time.monotonic()
        while True:
            if pos == bump_at:
                with LOCK:
                    if not o["bumped"]:
                        o["bumped"] = True
                        o["version"] += 1
                bump_at = -1
            if pos >= stop:
                break
            if rate > 0:  # pace: never ahead of `rate` bytes per second since the start
                time.sleep(max(0.0, started + (pos - first) / rate - time.monotonic()))
            n = min(chunk, stop - pos, bump_at - pos if bump_at > pos else chunk)
            self.wfile.write(content(name, version, pos, n))
            pos += n
            with LOCK:
                o["stats"]["bytes_sent"] += n
        if reset_at >= 0:
            drain(self.connection)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True

    def serve__version(self):
        name = self.query["name"]
        with LOCK:
            if self.query.get("bump") == "1":
                obj(name)["version"] += 1
            if self.query.get("gone") == "1":
                obj(name)["gone"] = True
            elif self.query.get("gone") == "0":
                obj(name).pop("gone", None)
            if "size" in self.query:
                obj(name)["size"] = self.query["size"]
            if self.query.get("noranges") == "1":
                obj(name)["noranges"] = True
            if "throttle" in self.query:
                obj(name)["throttle"] = int(self.query["throttle"])
            version = OBJECTS[name]["version"] if name in OBJECTS else 1
        self.answer_json({"name": name, "version": version})

    def serve__stats(self):
        name = self.query.get("name")
        with LOCK:
            if name is None:
                value = {k: o["stats"] for k, o in OBJECTS.items()}
            else:
                value = OBJECTS[name]["stats"] if name in OBJECTS else fresh_stats()
            value = json.loads(json.dumps(value))  # a snapshot: requests may be running
        self.answer_json(value)

    def serve__release(self):
        held(self.query["key"]).set()
        self.answer_json({"released": self.query["key"]})

    def serve__blackhole(self):
        self.answer_json({"port": blackhole_port()})

    def serve__reset(self):
        with LOCK:
            OBJECTS.clear()
        self.answer_json({"reset": True})


BLACKHOLE = []


def blackhole_port():
    """A listener with a queue of one, filled and never accepted: Linux drops the SYNs of any
    further connection, which then waits for its connect timeout."""
    with LOCK:
        if not BLACKHOLE:
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(0)
            fillers = []
            for _ in range(2):
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(listener.getsockname())
                fillers.append(filler)
            time.sleep(0.2)  # the handshakes that can complete, completed
            BLACKHOLE.extend([listener] + fillers)
        return BLACKHOLE[0].getsockname()[1]


if __name__ == "__main__":
    loopback_origin.serve(Handler)
