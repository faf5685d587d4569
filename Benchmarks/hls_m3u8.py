#!/usr/bin/env python3
"""The peer for the HLS benchmark: the same job done with the `m3u8` package (load, set every
segment URI to its proxy URL, dumps). Prints the median seconds of the runs, interpreter start
excluded (which favours the peer)."""
import statistics
import sys
import time
from urllib.parse import urljoin, urlsplit

import m3u8


def rewrite(text, base, gateway, xresid):
    playlist = m3u8.loads(text)
    for seg in playlist.segments:
        u = urlsplit(urljoin(base, seg.uri))
        query = (u.query + "&" if u.query else "") + "xresid=" + xresid + ("&xhttps=1" if u.scheme == "https" else "")
        seg.uri = f"{gateway}/hls.vod.p2p.com/{u.netloc}{u.path}?{query}"
    return playlist.dumps()


def main():
    path, base, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    text = open(path).read()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = rewrite(text, base, "http://127.0.0.1:8080", "bench")
        times.append(time.perf_counter() - t)
    assert "xresid=bench" in out
    print(f"{statistics.median(times):.6f}")


if __name__ == "__main__":
    main()
