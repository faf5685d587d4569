#!/usr/bin/env python3
"""Gateway benchmarks for scripts/bench, side by side with nginx on loopback (wrk as client):
  1. a 4 MiB object through the gateway vs straight from nginx (throughput ratio)
  2. a playlist through the gateway vs straight from nginx (median latency added)
  3. peak RSS of the gateway with 1,000 concurrent slow clients
Used by bench.py; everything binds 127.0.0.1 only and every loop is bounded."""
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
            wrk(proxied + "/object.bin", 4, 1)  # warm up
            n_rps, _ = wrk(direct + "/object.bin", 32, 5)
            g_rps, _ = wrk(proxied + "/object.bin", 32, 5)
            ratio = g_rps / n_rps
            row("4 MiB object, 32 connections (wrk): gateway vs nginx", f"{g_rps * 4 / 1024:.2f} GiB/s",
                f"{n_rps * 4 / 1024:.2f} GiB/s", f"{ratio:.2f}x nginx", ">= 0.7x", ratio >= 0.7)
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
            row("RSS with 1,000 concurrent slow clients on a 4 MiB object", f"{mb:.0f} MB", "-", "-", "<= 150 MB", mb <= 150)
        finally:
            gw.terminate()
            nginx.terminate()
            gw.wait(10)
            nginx.wait(10)
