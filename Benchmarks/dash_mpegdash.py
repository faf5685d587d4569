#!/usr/bin/env python3
"""Times the Python `mpegdash` package (PyPI) parsing an MPD file and writing it back out:
the reference point swarmgate's DASH rewriting is compared with. Prints the seconds taken
(best of RUNS, default 1) on stdout.

Usage: dash_mpegdash.py FILE [RUNS]
"""
import os
import sys
import tempfile
import time

from mpegdash.parser import MPEGDASHParser


def once(path, out):
    start = time.perf_counter()
    mpd = MPEGDASHParser.parse(path)
    MPEGDASHParser.write(mpd, out)
    return time.perf_counter() - start


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    runs = int(argv[1]) if len(argv) == 2 else 1
    fd, out = tempfile.mkstemp(suffix=".mpd")
    os.close(fd)
    try:
        best = min(once(argv[0], out) for _ in range(runs))
    finally:
        os.unlink(out)
    print("%.3f" % best)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
