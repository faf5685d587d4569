#!/usr/bin/env python3
"""scripts/bench's driver: runs swarmgate and the peer it is compared to side by side, in one
run, on the same generated inputs, and prints a table with the ratio and the target.
Usage: bench.py SWARMGATE_BIN MANIFESTBENCH_BIN PYTHON [hls|dash|gateway|swarm|all]"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def wall(cmd, runs):
    """Median wall-clock seconds of a whole process, output thrown away."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def peer(python, script, *args):
    out = subprocess.run([python, os.path.join(HERE, script), *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def inprocess(bench, path, base, iterations, segments=False):
    env = dict(os.environ, MANIFEST_BENCH_SEGMENTS="1" if segments else "0")
    out = subprocess.run([bench, path, base, str(iterations)], check=True, capture_output=True, text=True, env=env).stdout
    fields = dict(kv.split("=") for kv in out.split())
    return float(fields["median_s"]), float(fields["mb_per_s"])


rows = []


def row(name, ours, theirs, ratio, target, ok):
    rows.append((name, ours, theirs, ratio, target, "yes" if ok else "NO"))


def bench_hls(sg, mb, python, tmp):
    path = os.path.join(tmp, "vod-100k.m3u8")
    subprocess.run([python, os.path.join(HERE, "hls_inputs.py"), path, "100000"], check=True)
    base = "https://cdn.example.com/vod/movie/index.m3u8?token=9f86d081884c7d659a2feaa0c55ad015"
    size = os.path.getsize(path)
    ours = wall([sg, "rewrite", "--base-url", base, "--xresid", "bench", path], 7)
    theirs = peer(python, "hls_m3u8.py", path, base, 3)
    row(f"HLS rewrite, 100,000 segments ({size / 1e6:.1f} MB), whole process vs Python m3u8 in-process",
        f"{ours * 1000:.1f} ms", f"{theirs * 1000:.0f} ms", f"{theirs / ours:.0f}x faster", ">= 100x", theirs / ours >= 100)
    median, mbps = inprocess(mb, path, base, 30)
    row("HLS rewrite engine, in-process throughput", f"{mbps:.0f} MB/s", "-", "-", ">= 300 MB/s", mbps >= 300)


def bench_dash(sg, mb, python, tmp):
    folder = os.path.join(tmp, "dash")
    subprocess.run([python, os.path.join(HERE, "dash_inputs.py"), folder], check=True)
    base = "https://cdn.example.com/vod/big/manifest.mpd?token=9f86d081884c7d659a2feaa0c55ad015"
    for name, label in (("segment_list_50k.mpd", "50,000 SegmentURLs"), ("segment_timeline_100k.mpd", "100,000-entry SegmentTimeline")):
        path = os.path.join(folder, name)
        size = os.path.getsize(path)
        ours = wall([sg, "rewrite", "--base-url", base, "--xresid", "bench", path], 7)
        theirs = peer(python, "dash_mpegdash.py", path, 3)
        row(f"DASH rewrite, {label} ({size / 1e6:.1f} MB), whole process vs Python mpegdash parse + write",
            f"{ours * 1000:.1f} ms", f"{theirs * 1000:.0f} ms", f"{theirs / ours:.0f}x faster", ">= 20x", theirs / ours >= 20)
        alone, mbps = inprocess(mb, path, base, 20)
        row(f"DASH rewrite engine, {label}, in-process throughput", f"{mbps:.0f} MB/s", "-", "-", "-", True)
        # The gateway's first request of a static MPD in a minute also lists its segments for
        # read-ahead (at most 200,000): what that adds to the rewrite.
        listing, _ = inprocess(mb, path, base, 20, segments=True)
        row(f"DASH rewrite with its segments listed for read-ahead, {label}, in-process, vs the rewrite alone",
            f"{listing * 1000:.1f} ms", f"{alone * 1000:.1f} ms", f"+{(listing - alone) * 1000:.1f} ms", "-", True)


def main():
    sg, mb, python = sys.argv[1:4]
    which = sys.argv[4] if len(sys.argv) > 4 else "all"
    with tempfile.TemporaryDirectory() as tmp:
        if which in ("hls", "all"):
            bench_hls(sg, mb, python, tmp)
        if which in ("dash", "all"):
            bench_dash(sg, mb, python, tmp)
        sys.path.insert(0, HERE)
        if which in ("gateway", "all"):
            import gateway_bench
            gateway_bench.run(sg, rows, row)
        if which in ("swarm", "all"):
            import swarm_bench
            import tracker_memory
            tracker_memory.run(sg, row)
            swarm_bench.run(sg, python, rows, row)
    print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}")
    print("| benchmark | swarmgate | peer | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    sys.exit(0 if all(r[5] == "yes" for r in rows) else 1)


if __name__ == "__main__":
    main()
