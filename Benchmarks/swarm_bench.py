#!/usr/bin/env python3
"""Swarm benchmarks for scripts/bench, side by side with a CDN-only run, for two CDNs: one on
loopback (a 500 kB segment in about 1 ms: no CDN a gateway sits in front of is that close) and
one 20 ms away (object_origin.py's OBJECT_ORIGIN_RTT_MS: each request waits one round trip, a
new connection's first request two; nodes, tracker and players stay on loopback, as a LAN):
  1. offload for 2, 4 and 8 nodes on one VOD: one tracker, N nodes logged in to it, one player
     per node, players starting 1 s apart; offload = 1 - (media bytes the origin sent) / (media
     bytes the players received), against the ideal 1 - 1/N (the origin sends every byte once)
  2. p95 segment latency of those players vs the same players fetching the same VOD straight
     from the origin (CDN only), and the first player's first segment (startup)
  3. viewers who leave early (loopback CDN): each player watches the first 12 segments of a
     300-segment VOD; offload with the tracker's read-ahead window and with the whole VOD
     prepared at once (--read-ahead all)
  4. a live stream (20 ms CDN): one player per node at the live edge, each reading the playlist
     at its own moment as it gains a segment a second and fetching the newest; offload with
     the nodes' defaults, with --await-preparation, and with no live tail (--read-ahead 0)
  5. the floor of 2 (loopback CDN): one node holding every segment, each request a cache hit,
     against the same segment from the origin, the two asked alternately
Each of 1 and 2 is measured with the nodes' defaults (SPEC's 302 while a segment is being prepared) and
with --await-preparation (a node waits for a preparation that ends within the deadline).
The origin is Tests/python/object_origin.py, which counts the bytes it sends per object; every
run uses a fresh VOD name, so runs share no cache. A player fetches the playlist, then every
segment in order, each on a new connection, following a 302 to the origin as a player does (a
segment's time includes the redirect); every segment's bytes are checked. Players fetch back to
back (each segment as soon as the last one arrived: the stress case). Pacing them like
playback was tried and moved no p95 figure: the p95 falls on players' first segments.
Used by bench.py, or alone: swarm_bench.py SWARMGATE_BIN [PYTHON]. Everything binds 127.0.0.1
only and every loop is bounded."""
import contextlib
import http.client
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urljoin, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGIN = os.path.join(HERE, "..", "Tests", "python", "object_origin.py")
NODE_COUNTS = (2, 4, 8)
TRACKER_FLAGS = os.environ.get("SWARM_BENCH_TRACKER_FLAGS", "").split()
# Each run is made with the nodes' default settings, then with these (SPEC's 302 while a
# segment is being prepared, then waiting for a preparation that ends within the deadline).
NODE_VARIANTS = (("", []), (", --await-preparation", ["--await-preparation"]))
SEGMENTS, SIZE = 12, 500000  # one VOD: 12 segments of 500 kB
# Viewers who leave early: each player watches the first WATCHED segments of a LONG_SEGMENTS
# VOD (4 s each), on the loopback CDN, with the tracker's default read-ahead window and with
# --read-ahead all (the whole VOD prepared when its playlist is opened).
LONG_SEGMENTS, WATCHED, LEAVING_NODE_COUNTS = 300, 12, (2, 8)
READ_AHEAD_VARIANTS = (("", []), (", tracker --read-ahead all", ["--read-ahead", "all"]))
# ms: the CDN on loopback, and one a round trip away; SWARM_BENCH_CDN_RTTS="5 20" measures others.
CDN_RTTS = tuple(int(v) for v in os.environ.get("SWARM_BENCH_CDN_RTTS", "0 20").split())
# A live stream (20 ms CDN): LIVE_STEPS new segments, one each LIVE_STEP seconds (a 4 s segment
# in compressed time), LIVE_WINDOW listed; with the nodes' defaults (a live playlist's newest
# segments prepared as nodes read it) and with --read-ahead 0 on the nodes (prepared only when
# a player asks, as before).
LIVE_STEPS, LIVE_STEP, LIVE_SPREAD, LIVE_WINDOW = 12, 1.0, 0.6, 6
LIVE_VARIANTS = (("", []), (", nodes --await-preparation", ["--await-preparation"]),
                 (", nodes --read-ahead 0 (no live tail)", ["--read-ahead", "0"]),
                 (", nodes --await-preparation --read-ahead 0", ["--await-preparation", "--read-ahead", "0"]))
STAGGER = 1.0  # seconds between one player's start and the next one's
PLAYER_TIMEOUT = 300  # seconds a whole run of players may take


class Child:
    """A process started here, its stderr written to a file: no thread of this process reads
    it while players run, so the players' timing shares the interpreter with nothing else."""

    def __init__(self, cmd, stdout=subprocess.DEVNULL, env=None):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=stdout, stderr=self.log, env=env)

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def wait_stderr(self, pattern, timeout=30):
        """Waits until stderr matches `pattern` (a regex); returns the match."""
        end = time.time() + timeout
        while time.time() < end:
            m = re.search(pattern, self.stderr())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.proc.args[:2]} did not print {pattern!r}; stderr:\n{self.stderr()[-2000:]}")

    def stop(self, kill=False):
        """SIGTERM (SIGKILL if `kill`, or if it has not exited after 10 s); closes its stdin first."""
        try:
            self.proc.stdin.close()  # the origin exits when its stdin closes
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def get(url):
    """One GET on a new connection, redirects not followed: (status, Location, body)."""
    u = urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request("GET", u.path + ("?" + u.query if u.query else ""))
        r = c.getresponse()
        return r.status, r.getheader("Location"), r.read()
    finally:
        c.close()


def segment_bytes(name, k, size):
    """Segment k of VOD `name` as object_origin.py makes it: byte i is (7i + h + 13) % 256 with
    h = sum(utf-8 bytes of the object name) % 256 (every object at version 1)."""
    base = (sum(f"{name}/seg{k}.ts".encode()) + 13) % 256
    start = base * 183 % 256  # 183 is the inverse of 7 mod 256: (7 * start) % 256 == base
    pattern = bytes(7 * j % 256 for j in range(256)) * (size // 256 + 2)
    return pattern[start:start + size]


def play(playlist, expected, total=None):
    """Plays the VOD at URL `playlist` (`total` segments, default as many as `expected`): the
    playlist, then its first len(expected) segments in order, a 302 followed to its Location.
    Returns each segment's seconds and the media bytes received."""
    status, _, body = get(playlist)
    if status != 200:
        raise RuntimeError(f"{playlist}: {status} {body[:200]!r}")
    urls = [urljoin(playlist, line) for line in body.decode().splitlines() if line and not line.startswith("#")]
    if len(urls) != (total or len(expected)):
        raise RuntimeError(f"{playlist}: {len(urls)} segments, expected {total or len(expected)}")
    times, received = [], 0
    for k, url in enumerate(urls[:len(expected)]):
        start = time.perf_counter()
        status, location, data = get(url)
        if status == 302 and location:
            status, _, data = get(urljoin(url, location))
        times.append(time.perf_counter() - start)
        if status != 200:
            raise RuntimeError(f"{url}: {status} {data[:300]!r}")
        if data != expected[k]:
            raise RuntimeError(f"{url}: {len(data)} bytes, wrong bytes")
        received += len(data)
    return times, received


def players(playlists, expected, total=None):
    """One player per playlist URL, started STAGGER seconds apart. Returns every segment's
    seconds over all players and the media bytes they received; a failed player fails the run."""
    results = [None] * len(playlists)

    def one(i):
        time.sleep(i * STAGGER)
        try:
            results[i] = play(playlists[i], expected, total)
        except Exception as e:  # reported by the caller's thread
            results[i] = e
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(playlists))]
    for t in threads:
        t.start()
    end = time.time() + PLAYER_TIMEOUT
    for t in threads:
        t.join(max(0, end - time.time()))
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"players still running after {PLAYER_TIMEOUT} s")
    for r in results:
        if isinstance(r, Exception):
            raise r
    return [s for r in results for s in r[0]], sum(r[1] for r in results)


def p95(values):
    """Nearest-rank 95th percentile."""
    v = sorted(values)
    return v[max(0, -(-95 * len(v) // 100) - 1)]


def origin_bytes(port, name, settle=1.0, timeout=20):
    """Media bytes the origin sent for VOD `name` (nodes, the tracker and players), once the
    figure has not moved for `settle` seconds (the tracker may still be reading ahead)."""
    last, since, end = -1, time.time(), time.time() + timeout
    while time.time() < end:
        _, _, body = get(f"http://127.0.0.1:{port}/__stats")
        sent = sum(s["bytes_sent"] for k, s in json.loads(body).items() if k.startswith(name + "/"))
        if sent != last:
            last, since = sent, time.time()
        elif time.time() - since >= settle:
            break
        time.sleep(0.1)
    return last


def vod(name, segments=SEGMENTS):
    return f"/vod/{name}.m3u8?segments={segments}&size={SIZE}"


def cdn_run(origin_port, n):
    """n players straight from the origin: every segment's seconds."""
    name = f"cdn{n}-{secrets.token_hex(4)}"
    expected = [segment_bytes(name, k, SIZE) for k in range(SEGMENTS)]
    times, _ = players([f"http://127.0.0.1:{origin_port}{vod(name)}"] * n, expected)
    return times


@contextlib.contextmanager
def swarm(swarmgate, tmp, secret_file, origin_port, n, name, node_flags=(), tracker_flags=()):
    """A tracker and n nodes logged in to it, stopped on the way out: yields the nodes' ports."""
    allow = ["--allow-origin", f"127.0.0.1:{origin_port}"]
    children, failed = [], True
    try:
        tdir = os.path.join(tmp, f"tracker-{name}")
        tracker = Child([swarmgate, "tracker", "--listen", "127.0.0.1:0", "--app-secret-file", secret_file,
                         "--db", os.path.join(tdir, "registry.sqlite"), "--cache-dir", tdir] + TRACKER_FLAGS + list(tracker_flags) + allow)
        children.append(tracker)
        tport = int(tracker.wait_stderr(r"listening on 127\.0\.0\.1:(\d+)").group(1))
        for i in range(n):
            children.append(Child([swarmgate, "serve", "--listen", "127.0.0.1:0", "--cache-dir",
                                   os.path.join(tmp, f"node{i}-{name}"), "--tracker",
                                   f"ws://127.0.0.1:{tport}/swarm/v1/ws", "--app-secret-file", secret_file] + list(node_flags) + allow))
        ports = []
        for node in children[1:]:
            ports.append(int(node.wait_stderr(r"listening on 127\.0\.0\.1:(\d+)").group(1)))
            node.wait_stderr(r"logged in to the tracker")
        yield ports
        failed = False
    finally:
        for c in reversed(children):
            c.stop(kill=failed)


def swarm_run(swarmgate, tmp, secret_file, origin_port, n, node_flags=(), tracker_flags=(), segments=SEGMENTS, watched=None):
    """A tracker and n nodes logged in to it, one player per node playing the first `watched`
    (default all) of a VOD's `segments`: every segment's seconds, the media bytes the players
    received and the media bytes the origin sent."""
    name = f"n{n}-{secrets.token_hex(4)}"
    expected = [segment_bytes(name, k, SIZE) for k in range(watched or segments)]
    with swarm(swarmgate, tmp, secret_file, origin_port, n, name, node_flags, tracker_flags) as ports:
        times, received = players([f"http://127.0.0.1:{p}/hls.vod.p2p.com/127.0.0.1:{origin_port}{vod(name, segments)}"
                                   for p in ports], expected, segments)
        sent = origin_bytes(origin_port, name, timeout=120)
    return times, received, sent


def live_run(swarmgate, tmp, secret_file, origin_port, n, node_flags=(), dash=False):
    """A live stream through a tracker and n nodes, one player per node at the live edge. Every
    LIVE_STEP seconds the origin's playlist gains a segment (LIVE_WINDOW listed); each player
    reads its node's playlist at its own moment within the step (spread over the first
    LIVE_SPREAD of it) and fetches the newest segment (at its first read, the last three, where
    players start), a 302 followed. With `dash`, the stream is a dynamic MPD whose
    Representation "hi" the players play (its initialization first; "lo" is not played).
    Returns the media bytes the players received, those the origin sent (for "hi", and for
    "lo"), the players' 302s and every segment's seconds."""
    name = f"live{n}-{secrets.token_hex(4)}"
    objects = f"{name}-hi" if dash else name
    with swarm(swarmgate, tmp, secret_file, origin_port, n, name, node_flags) as ports:
        redirects, received, errors, times = [0] * n, [0] * n, [], [[] for _ in range(n)]
        playlist_times = [[] for _ in range(n)]
        begin = time.time() + 0.5

        def player(i):
            try:
                for step in range(LIVE_STEPS):
                    time.sleep(max(0, begin + step * LIVE_STEP + LIVE_SPREAD * i / n - time.time()))
                    kind = f"dashlive/{name}.mpd" if dash else f"live/{name}.m3u8"
                    playlist = (f"http://127.0.0.1:{ports[i]}/hls.vod.p2p.com/127.0.0.1:{origin_port}"
                                f"/{kind}?segments={LIVE_WINDOW}&first={step}&size={SIZE}")
                    start = time.perf_counter()
                    status, _, body = get(playlist)
                    playlist_times[i].append(time.perf_counter() - start)
                    if status != 200:
                        raise RuntimeError(f"{playlist}: {status}")
                    if dash:
                        def filled(attribute, number=0):
                            template = re.search(attribute + r'="([^"]+)"', body.decode()).group(1).replace("&amp;", "&")
                            return urljoin(playlist, template.replace("$RepresentationID$", "hi").replace("$Number$", str(number)))
                        if step == 0:
                            status, location, _ = get(filled("initialization"))
                            if status == 302 and location:
                                get(urljoin(playlist, location))
                        urls = [filled("media", k) for k in range(step, step + LIVE_WINDOW)]
                    else:
                        urls = [urljoin(playlist, line) for line in body.decode().splitlines() if line and not line.startswith("#")]
                    first = step + LIVE_WINDOW - (3 if step == 0 else 1)
                    for k, url in zip(range(first, step + LIVE_WINDOW), urls[first - step:]):
                        start = time.perf_counter()
                        status, location, data = get(url)
                        if status == 302 and location:
                            redirects[i] += 1
                            status, _, data = get(urljoin(url, location))
                        times[i].append(time.perf_counter() - start)
                        if status != 200 or data != segment_bytes(objects, k, SIZE):
                            raise RuntimeError(f"{url}: {status}, {len(data)} bytes")
                        received[i] += len(data)
            except Exception as e:  # reported by the caller's thread
                errors.append(e)
        threads = [threading.Thread(target=player, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(PLAYER_TIMEOUT)
        if errors or any(t.is_alive() for t in threads):
            raise errors[0] if errors else RuntimeError("live players still running")
        sent = origin_bytes(origin_port, objects, timeout=60)
        unplayed = origin_bytes(origin_port, f"{name}-lo", settle=0.2) if dash else 0
    return (sum(received), sent, unplayed, sum(redirects), [t for ts in times for t in ts],
            [t for ts in playlist_times for t in ts])


def run(swarmgate, python, rows, row):
    with tempfile.TemporaryDirectory() as tmp:
        secret_file = os.path.join(tmp, "secret")
        with open(secret_file, "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        for rtt in CDN_RTTS:
            where = f"CDN {rtt} ms away" if rtt else "CDN on loopback"
            origin = Child([python, ORIGIN], stdout=subprocess.PIPE, env=dict(os.environ, OBJECT_ORIGIN_RTT_MS=str(rtt)))
            failed = True
            try:
                origin_port = int(origin.proc.stdout.readline())
                for n in NODE_COUNTS:
                    cdn_times = cdn_run(origin_port, n)
                    cdn = p95(cdn_times)
                    for label, flags in NODE_VARIANTS:
                        times, received, sent = swarm_run(swarmgate, tmp, secret_file, origin_port, n, flags)
                        offload, ideal = 1 - sent / received, 1 - 1 / n
                        row(f"swarm offload, {n} nodes on one VOD ({SEGMENTS} x {SIZE // 1000} kB), players {STAGGER:g} s apart, {where}{label}",
                            f"{offload:.2f} ({sent / 1e6:.1f} of {received / 1e6:.1f} MB from the origin)",
                            f"{ideal:.2f} ideal (1 - 1/{n})", f"{offload / ideal:.2f}x ideal",
                            f">= 0.8x ideal ({0.8 * ideal:.2f})", offload >= 0.8 * ideal)
                        ours = p95(times)
                        row(f"p95 segment latency, {n} nodes ({len(times)} segments) vs the same players CDN only, {where}{label}",
                            f"{ours * 1000:.1f} ms", f"{cdn * 1000:.1f} ms", f"{ours / cdn:.2f}x CDN", "<= 1.2x", ours <= 1.2 * cdn)
                        # Startup: the first player's first segment (a CDN copy, or a wait for the
                        # registry's), against the same player's straight from the CDN.
                        row(f"the first player's first segment, {n} nodes, {where}{label}",
                            f"{times[0] * 1000:.1f} ms", f"{cdn_times[0] * 1000:.1f} ms",
                            f"{times[0] / cdn_times[0]:.2f}x CDN", "-", True)
                if not rtt:
                    floor(swarmgate, tmp, origin_port, where, row)
                    leaving(swarmgate, tmp, secret_file, origin_port, where, row)
                else:
                    live(swarmgate, tmp, secret_file, origin_port, where, row)
                failed = False
            finally:
                origin.stop(kill=failed)

def floor(swarmgate, tmp, origin_port, where, row, rounds=10):
    """The floor of the p95 rows: one node holding every segment of the VOD (each request a
    cache hit, nothing from peers or the origin) against the same segment straight from the
    origin, asked alternately by this benchmark's client, so both sides share every moment's
    load. No target: it shows what the p95 target leaves a node beyond serving a hit."""
    name = f"floor-{secrets.token_hex(4)}"
    expected = [segment_bytes(name, k, SIZE) for k in range(SEGMENTS)]
    node = Child([swarmgate, "serve", "--listen", "127.0.0.1:0", "--cache-dir", os.path.join(tmp, name),
                  "--allow-origin", f"127.0.0.1:{origin_port}", "--await-preparation", "--log-level", "notice"])
    try:
        port = int(node.wait_stderr(r"listening on 127\.0\.0\.1:(\d+)").group(1))
        playlist = f"http://127.0.0.1:{port}/hls.vod.p2p.com/127.0.0.1:{origin_port}{vod(name)}"
        _, _, body = get(playlist)
        urls = [urljoin(playlist, line) for line in body.decode().splitlines() if line and not line.startswith("#")]
        for _ in range(50):  # until every segment is a hit: 200 from the node, no 302
            if all(get(u)[0] == 200 for u in urls):
                break
            time.sleep(0.2)
        ours, cdn = [], []
        for _ in range(rounds):
            for k, url in enumerate(urls):
                for times, u in ((ours, url), (cdn, f"http://127.0.0.1:{origin_port}/obj/{name}/seg{k}.ts?size={SIZE}&token=abc")):
                    start = time.perf_counter()
                    status, _, data = get(u)
                    times.append(time.perf_counter() - start)
                    if status != 200 or data != expected[k]:
                        raise RuntimeError(f"{u}: {status}, {len(data)} bytes")
        row(f"p95 of a cache hit: one node holding every segment, {len(ours)} requests, vs the same from the CDN, {where}",
            f"{p95(ours) * 1000:.2f} ms", f"{p95(cdn) * 1000:.2f} ms", f"{p95(ours) / p95(cdn):.2f}x CDN", "-", True)
    finally:
        node.stop()


def leaving(swarmgate, tmp, secret_file, origin_port, where, row):
    """Viewers who leave early: offload when each player watches WATCHED of LONG_SEGMENTS, with
    the read-ahead window and with the whole VOD prepared at once. No target: the window's cost
    per viewer who leaves is what it prepared past them."""
    for n in LEAVING_NODE_COUNTS:
        for label, flags in READ_AHEAD_VARIANTS:
            _, received, sent = swarm_run(swarmgate, tmp, secret_file, origin_port, n, tracker_flags=flags,
                                          segments=LONG_SEGMENTS, watched=WATCHED)
            offload, ideal = 1 - sent / received, 1 - 1 / n
            row(f"viewers who leave early: {n} nodes, each player watches {WATCHED} of {LONG_SEGMENTS} segments, {where}{label}",
                f"{offload:.2f} ({sent / 1e6:.1f} of {received / 1e6:.1f} MB from the origin)",
                f"{ideal:.2f} ideal (1 - 1/{n})", f"{offload / ideal:.2f}x ideal", "-", True)


def live(swarmgate, tmp, secret_file, origin_port, where, row):
    """A live stream's offload, and its players sent to the origin, with and without the
    newest segments prepared as nodes read the playlist."""
    for n in NODE_COUNTS:
        for label, flags in LIVE_VARIANTS:
            received, sent, _, redirects, times, playlists = live_run(swarmgate, tmp, secret_file, origin_port, n, flags)
            offload, ideal = 1 - sent / received, 1 - 1 / n
            row(f"live: {n} nodes at the live edge, {LIVE_STEPS} new segments, {where}{label}",
                f"{offload:.2f} ({sent / 1e6:.1f} of {received / 1e6:.1f} MB from the origin; {redirects} players' segments "
                f"sent there; p95 segment {p95(times) * 1000:.0f} ms, playlist {p95(playlists) * 1000:.0f} ms)",
                f"{ideal:.2f} ideal (1 - 1/{n})", f"{offload / ideal:.2f}x ideal", "-", True)
    # The same as a dynamic MPD of two Representations, one played.
    for n in NODE_COUNTS:
        for label, flags in LIVE_VARIANTS[:2]:
            received, sent, unplayed, redirects, times, playlists = live_run(swarmgate, tmp, secret_file, origin_port, n, flags, dash=True)
            offload, ideal = 1 - sent / received, 1 - 1 / n
            row(f"live DASH: {n} nodes at the live edge of a dynamic MPD, one Representation played, {LIVE_STEPS} new segments, {where}{label}",
                f"{offload:.2f} ({sent / 1e6:.1f} of {received / 1e6:.1f} MB from the origin, {unplayed / 1e6:.1f} MB of the other "
                f"Representation; {redirects} players' segments sent there; p95 segment {p95(times) * 1000:.0f} ms, MPD "
                f"{p95(playlists) * 1000:.0f} ms)",
                f"{ideal:.2f} ideal (1 - 1/{n})", f"{offload / ideal:.2f}x ideal", "-", True)


if __name__ == "__main__":
    table = []
    run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else sys.executable, table,
        lambda *r: table.append((*r[:5], "yes" if r[5] else "NO")))
    print("| benchmark | swarmgate | peer | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for r in table:
        print("| " + " | ".join(r) + " |")
    sys.exit(0 if all(r[5] == "yes" for r in table) else 1)
