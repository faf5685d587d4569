#!/usr/bin/env python3
"""Writes the HLS benchmark input: a VOD media playlist of N segments (default 100,000) with
relative URIs that carry a token query, as a packager with anti-leech signing would write it."""
import sys


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:6", "#EXT-X-MEDIA-SEQUENCE:0",
             "#EXT-X-PLAYLIST-TYPE:VOD"]
    for i in range(n):
        lines.append("#EXTINF:6.000,")
        lines.append(f"segments/seg_{i:06d}.ts?token=9f86d081884c7d659a2feaa0c55ad015&expires=1767225600&sig=a%2Fb{i % 97}")
    lines.append("#EXT-X-ENDLIST")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
