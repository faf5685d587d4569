#!/usr/bin/env python3
"""Checks that the `mpegdash` package (PyPI) parses each MPD given and can write it back.

Usage: check_mpegdash.py FILE...
Prints one line per file that fails and exits 1 if any did.
"""
import sys
import warnings

from mpegdash.parser import MPEGDASHParser


def check(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mpd = MPEGDASHParser.parse(path)
        if mpd is None:
            raise ValueError("parsed to nothing")
        MPEGDASHParser.get_as_doc(mpd).toxml()


def main(paths):
    failed = 0
    for path in paths:
        try:
            check(path)
        except Exception as e:  # noqa: BLE001 - any failure of the parser is a finding
            failed += 1
            print("%s: %s: %s" % (path, type(e).__name__, e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
