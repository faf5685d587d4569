#!/usr/bin/env python3
"""Generates the DASH benchmark inputs into FOLDER:

- segment_list_50k.mpd: one Period, two Representations; a SegmentList with 50,000
  SegmentURLs (media + mediaRange, query tokens) on the video Representation.
- segment_timeline_100k.mpd: a live-style MPD whose AdaptationSet SegmentTemplate has a
  100,000-entry SegmentTimeline, shared by three Representations with their own BaseURLs.

Usage: dash_inputs.py FOLDER
"""
import os
import sys

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" '
    'type="static" mediaPresentationDuration="PT55H33M20S" minBufferTime="PT2S" '
    'profiles="urn:mpeg:dash:profile:full:2011">\n'
    '  <BaseURL>https://cdn.example.com/vod/big/</BaseURL>\n'
)


def segment_list(path, count=50_000):
    with open(path, "w") as f:
        f.write(HEAD)
        f.write('  <Period id="1">\n    <AdaptationSet mimeType="video/mp4" codecs="avc1.64001f">\n')
        f.write('      <Representation id="v1" bandwidth="2000000" width="1280" height="720">\n')
        f.write('        <BaseURL>video/</BaseURL>\n        <SegmentList timescale="1000" duration="4000">\n')
        f.write('          <Initialization sourceURL="init.mp4?tok=a%2Fb" range="0-899"/>\n')
        offset = 0
        for i in range(count):
            size = 100_000 + (i * 7919) % 50_000
            f.write('          <SegmentURL media="seg-%06d.m4s?tok=a%%2Fb&amp;e=%d" mediaRange="%d-%d"/>\n'
                    % (i, 1_700_000_000 + i, offset, offset + size - 1))
            offset += size
        f.write("        </SegmentList>\n      </Representation>\n    </AdaptationSet>\n  </Period>\n</MPD>\n")


def segment_timeline(path, count=100_000):
    with open(path, "w") as f:
        f.write(HEAD)
        f.write('  <Period id="1">\n    <AdaptationSet mimeType="video/mp4" segmentAlignment="true">\n')
        f.write('      <SegmentTemplate timescale="90000" media="$RepresentationID$/t-$Time$.m4s?tok=a%2Fb" '
                'initialization="$RepresentationID$/init.mp4">\n        <SegmentTimeline>\n')
        t = 0
        for i in range(count):
            d = 180_000 if i % 10 else 179_820
            f.write('          <S t="%d" d="%d"/>\n' % (t, d))
            t += d
        f.write("        </SegmentTimeline>\n      </SegmentTemplate>\n")
        for n, rate in enumerate((800_000, 2_000_000, 5_000_000)):
            f.write('      <Representation id="v%d" bandwidth="%d"><BaseURL>q%d/</BaseURL></Representation>\n'
                    % (n, rate, n))
        f.write("    </AdaptationSet>\n  </Period>\n</MPD>\n")


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(argv[0], exist_ok=True)
    segment_list(os.path.join(argv[0], "segment_list_50k.mpd"))
    segment_timeline(os.path.join(argv[0], "segment_timeline_100k.mpd"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
