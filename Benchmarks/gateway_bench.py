#!/usr/bin/env python3
"""Gateway benchmarks for scripts/bench, side by side with nginx on loopback (wrk as client):
  1. a cached 4 MiB object from the gateway's piece store (every piece SHA-256-verified as it
     is read) vs the same bytes as a static file from nginx (throughput ratio)
  2. time to first byte of a cache hit vs nginx (median of many requests)
  3. a playlist through the gateway vs straight from nginx (median latency added)
  4. peak RSS of the gateway with 1,000 concurrent slow clients on the cached object
  5. preparing a VOD's objects (POST /prepare: fetch, hash, keep), small and segment-sized,
     vs curl fetching the same objects as many at a time (objects per second)
  6. cache hits read from disk while large objects are evicted (each one prepared into a
     full store evicts an older one) vs the same hits on an idle gateway (p99.9 latency and the slowest)
  7. preparing small objects into a store that holds half of them (each one past the half
     evicts one) vs curl fetching them (objects per second)
Used by bench.py; everything binds 127.0.0.1 only and every loop is bounded."""
import contextlib
import os
import re
import socket
import subprocess
import tempfile
import threading
import time

NGINX_CONF = """daemon off; worker_processes auto; pid {tmp}/nginx.pid; error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{ access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  types {{ application/vnd.apple.mpegurl m3u8; video/mp2t ts; application/octet-stream bin; }}
  client_body_temp_path {tmp}; proxy_temp_path {tmp}; fastcgi_temp_path {tmp}; uwsgi_temp_path {tmp}; scgi_temp_path {tmp};
  server {{ listen 127.0.0.1:{port}; root {root}; }} }}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def wrk(url, connections, seconds, threads=2):
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", url],
                         check=True, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1000.0}[p50.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{url}: {errors.group(1)} error responses")
    return rps, float(p50.group(1)) * scale


def get_status(port, path):
    """Status of one GET (redirects not followed); the body is read and dropped."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def until_ready(port, path, timeout=60):
    """GETs path until the gateway stops answering 302 (its checksums are ready)."""
    end = time.time() + timeout
    while time.time() < end:
        if get_status(port, path) != 302:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{path} not ready")


def get_times_ms(port, path, count, whole):
    """Milliseconds of each of `count` GETs of path on one kept-alive connection, to the first
    body byte, or to the last when `whole`; every answer must be a 200."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"{path}: {head.splitlines()[0]!r}")
        while not body:
            body = s.recv(65536)
        if not whole:
            times.append((time.perf_counter() - start) * 1000)
        length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
        got = len(body)
        while got < length:
            got += len(s.recv(1 << 20))
        if whole:
            times.append((time.perf_counter() - start) * 1000)
    s.close()
    return times


def ttfb_ms(port, path, count=300):
    """Median milliseconds from sending a GET to its first body byte, on one kept-alive connection."""
    return percentile(get_times_ms(port, path, count, whole=False), 0.5)


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def slow_clients(port, path, count, seconds):
    """count connections that each ask for path and read 1 KiB every 100 ms for `seconds`."""
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        socks.append(s)
    end = time.time() + seconds
    while time.time() < end:
        for s in socks:
            s.setblocking(False)
            try:
                s.recv(1024)
            except BlockingIOError:
                pass
        time.sleep(0.1)
    for s in socks:
        s.close()


def post_json(port, path, body):
    import http.client
    import json
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status not in (200, 202):
        raise RuntimeError(f"{path}: {r.status} {data[:200]!r}")
    return json.loads(data)


def prepare_rate(gport, nport, root, tmp, count, size, jobs=3, name=None):
    """Objects per second: the gateway preparing a VOD of `count` objects of `size` bytes from
    nginx (POST /prepare, timed until /jobs/status says every one is done), and curl fetching
    the same objects `jobs` at a time (the gateway's prepare jobs that run at once)."""
    name = name or f"prep-{size}"
    os.makedirs(os.path.join(root, name))
    for i in range(count):
        with open(os.path.join(root, name, f"seg-{i:05d}.ts"), "wb") as f:
            f.write(os.urandom(size))
    with open(os.path.join(root, name, "index.m3u8"), "w") as f:
        f.write("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
                + "".join(f"#EXTINF:6.0,\nseg-{i:05d}.ts\n" for i in range(count)) + "#EXT-X-ENDLIST\n")
    urls = [f"http://127.0.0.1:{nport}/{name}/seg-{i:05d}.ts" for i in range(count)]
    config = os.path.join(tmp, f"{name}.curl")
    with open(config, "w") as f:
        f.write("".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in urls))
    start = time.perf_counter()
    subprocess.run(["curl", "-sS", "--fail", "-Z", "--parallel-max", str(jobs), "-K", config], check=True)
    curl_s = time.perf_counter() - start
    start = time.perf_counter()
    ids = post_json(gport, "/prepare", {"url": f"http://127.0.0.1:{nport}/{name}/index.m3u8"})["objects"]
    if len(ids) != count:
        raise RuntimeError(f"/prepare listed {len(ids)} objects, not {count}")
    # Jobs run in playlist order: the last object is asked after alone (a status of every id,
    # 5,000 of them, costs the gateway a parse and a look-up each, beside what it measures),
    # then every one.
    end = time.time() + 600
    watched = ids[-1:]
    while time.time() < end:
        counts = post_json(gport, "/jobs/status", {"ids": watched})
        if counts.get("failed", 0) or counts.get("cancelled", 0):
            raise RuntimeError(f"preparation failed: {counts}")
        if counts.get("done", 0) == len(watched):
            if len(watched) == count:
                break
            watched = ids
            continue
        time.sleep(0.01 if len(watched) == 1 else 0.05)
    else:
        raise RuntimeError(f"not prepared in time: {counts}")
    gateway_s = time.perf_counter() - start
    return count / gateway_s, count / curl_s


def percentile(times, p):
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


@contextlib.contextmanager
def gateway(swarmgate, nport, tmp, name, *flags):
    """A gateway of its own (cache in tmp/name) in front of nginx at nport; yields its port."""
    port = free_port()
    gw = subprocess.Popen([swarmgate, "serve", "--listen", f"127.0.0.1:{port}", "--allow-origin", f"127.0.0.1:{nport}",
                           "--cache-dir", os.path.join(tmp, name), *flags], stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        yield port
    finally:
        gw.terminate()
        gw.wait(10)


def hits_under_eviction(swarmgate, nport, root, tmp, count=3000, big_mb=100):
    """A 100 kB object read from the piece store (no memory cache) `count` times, on a gateway
    doing nothing else, then while objects of `big_mb` MB are prepared one after another into a
    store that holds two of them, so that each one evicts an older one. Returns the idle and
    the churn times (ms) and how many large objects were prepared meanwhile."""
    with open(os.path.join(root, "hit.bin"), "wb") as f:
        f.write(os.urandom(100_000))
    with open(os.path.join(root, "big.bin"), "wb") as f:
        for _ in range(big_mb):
            f.write(os.urandom(1 << 20))
    for i in range(400):
        os.symlink(os.path.join(root, "big.bin"), os.path.join(root, f"big-{i}.bin"))
    # What the rows before wrote goes to the disk now, not while the hits are timed.
    os.sync()
    with gateway(swarmgate, nport, tmp, "churn-cache", "--cache-size", f"{big_mb * 5 // 2}MiB", "--memory-cache-size", "0") as port:
        hit = f"/hls.vod.p2p.com/127.0.0.1:{nport}/hit.bin"
        until_ready(port, hit)
        get_times_ms(port, hit, 300, whole=True)  # warm up
        idle = get_times_ms(port, hit, count, whole=True)
        stop = threading.Event()
        prepared = [0]
        failure = []

        def churn():
            try:
                while not stop.is_set():
                    ids = post_json(port, "/prepare", {"url": f"http://127.0.0.1:{nport}/big-{prepared[0]}.bin"})["objects"]
                    end = time.time() + 120
                    while time.time() < end and post_json(port, "/jobs/status", {"ids": ids}).get("done", 0) < len(ids):
                        time.sleep(0.01)
                    # On the disk, as the least recently used objects a store evicts are
                    # (written back long before): freeing a file's blocks is what costs.
                    os.sync()
                    prepared[0] += 1
            except Exception as e:  # noqa: BLE001 - reported by the caller
                failure.append(e)
        t = threading.Thread(target=churn)
        t.start()
        # The store fills with two large objects before the hits are timed: every one after
        # that evicts.
        end = time.time() + 120
        while prepared[0] < 2 and not failure and time.time() < end:
            time.sleep(0.05)
        busy = get_times_ms(port, hit, count, whole=True)
        stop.set()
        t.join()
        if failure:
            raise failure[0]
        return idle, busy, prepared[0]


def run(swarmgate, rows, row):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "www")
        os.makedirs(root)
        with open(os.path.join(root, "object.bin"), "wb") as f:
            f.write(os.urandom(4 << 20))
        with open(os.path.join(root, "index.m3u8"), "w") as f:
            f.write("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
                    + "".join(f"#EXTINF:6.0,\nseg-{i:04d}.ts?token=abc\n" for i in range(300)) + "#EXT-X-ENDLIST\n")
        nport, gport = free_port(), free_port()
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(tmp=tmp, port=nport, root=root))
        nginx = subprocess.Popen(["nginx", "-c", os.path.join(tmp, "nginx.conf"), "-p", tmp],
                                 stderr=subprocess.DEVNULL)
        gw = subprocess.Popen([swarmgate, "serve", "--listen", f"127.0.0.1:{gport}", "--allow-origin", f"127.0.0.1:{nport}",
                               "--cache-dir", os.path.join(tmp, "cache")], stderr=subprocess.DEVNULL)
        try:
            wait_port(nport)
            wait_port(gport)
            direct = f"http://127.0.0.1:{nport}"
            proxied = f"http://127.0.0.1:{gport}/hls.vod.p2p.com/127.0.0.1:{nport}"
            obj = f"/hls.vod.p2p.com/127.0.0.1:{nport}/object.bin"
            until_ready(gport, obj)  # first sight is a 302 while the registry prepares it
            wrk(proxied + "/object.bin", 4, 1)  # warm up
            n_rps, _ = wrk(direct + "/object.bin", 32, 5)
            g_rps, _ = wrk(proxied + "/object.bin", 32, 5)
            ratio = g_rps / n_rps
            row("cached 4 MiB object, 32 connections (wrk): gateway vs nginx", f"{g_rps * 4 / 1024:.2f} GiB/s",
                f"{n_rps * 4 / 1024:.2f} GiB/s", f"{ratio:.2f}x nginx", ">= 0.8x", ratio >= 0.8)
            n_ttfb = ttfb_ms(nport, "/object.bin")
            g_ttfb = ttfb_ms(gport, obj)
            row("time to first byte, cache hit (median of 300)", f"{g_ttfb:.3f} ms", f"{n_ttfb:.3f} ms",
                f"+{g_ttfb - n_ttfb:.3f} ms", "<= 1 ms", g_ttfb <= 1.0)
            _, n_p50 = wrk(direct + "/index.m3u8?token=abc", 1, 5, threads=1)
            _, g_p50 = wrk(proxied + "/index.m3u8?token=abc", 1, 5, threads=1)
            added = g_p50 - n_p50
            row("playlist (300 segments), 1 connection: median latency", f"{g_p50:.3f} ms", f"{n_p50:.3f} ms",
                f"+{added:.3f} ms", "<= +1 ms", added <= 1.0)
            peak = [rss_kb(gw.pid)]
            done = threading.Event()

            def watch():
                while not done.is_set():
                    peak[0] = max(peak[0], rss_kb(gw.pid))
                    time.sleep(0.05)
            t = threading.Thread(target=watch)
            t.start()
            slow_clients(gport, f"/hls.vod.p2p.com/127.0.0.1:{nport}/object.bin", 1000, 8)
            done.set()
            t.join()
            mb = peak[0] / 1024
            row("RSS with 1,000 concurrent slow clients on a cached 4 MiB object", f"{mb:.0f} MB", "-", "-", "<= 150 MB", mb <= 150)
            for count, size, label in ((5000, 1000, "1 kB"), (400, 500_000, "500 kB")):
                ours, curl = prepare_rate(gport, nport, root, tmp, count, size)
                row(f"preparing a VOD of {count:,} objects of {label} (POST /prepare, 3 jobs at once) vs curl fetching them 3 at a time",
                    f"{ours:.0f} objects/s", f"{curl:.0f} objects/s", f"{ours / curl:.2f}x curl", "-", True)
            # Every object's disk blocks (4 KiB) counted: the store holds half of them.
            with gateway(swarmgate, nport, tmp, "full-cache", "--cache-size", "40000KiB") as port:
                ours, curl = prepare_rate(port, nport, root, tmp, 20000, 1000, name="prep-full")
            row("preparing a VOD of 20,000 objects of 1 kB into a store that holds 10,000 (each one past them evicts one) vs curl",
                f"{ours:.0f} objects/s", f"{curl:.0f} objects/s", f"{ours / curl:.2f}x curl", "-", True)
            idle, busy, evicted = hits_under_eviction(swarmgate, nport, root, tmp)
            # An eviction is a moment among 3,000 hits: p99.9 and the slowest show it.
            i999, b999 = percentile(idle, 0.999), percentile(busy, 0.999)
            row(f"cache hit of 100 kB read from disk, p99.9 (max) of 3,000: while {evicted} objects of 100 MB were prepared into a full "
                "store, each evicting an older one, vs the same gateway idle",
                f"{b999:.2f} ms ({max(busy):.1f} ms)", f"{i999:.2f} ms ({max(idle):.1f} ms)", f"{b999 / i999:.2f}x idle", "-", True)
        finally:
            gw.terminate()
            nginx.terminate()
            gw.wait(10)
            nginx.wait(10)
