#!/usr/bin/env python3
"""Independent check of swarmgate's HLS rewrite with the `m3u8` package (PyPI).

Reads a JSON list of {"name", "original", "rewritten", "base", "gateway"} on stdin. For each
pair it parses both playlists with m3u8 and checks that segment counts, durations, byte ranges,
variants, renditions, keys and maps are the same before and after, and that every rewritten
URI is a proxy URL that decodes to the original URI resolved against the playlist URL.
Prints one line per problem; exits 1 if there is any, 0 otherwise. Files that m3u8 itself
cannot parse (before the rewrite) are listed as skipped.
"""
import json
import sys
from urllib.parse import urljoin, urldefrag

import m3u8

GATEWAY_PARAMS = {"xresid", "xmode", "xhttps", "xkey", "xvars"}


def decode_proxy(url, gateway):
    """The origin URL a proxy URL stands for, written independently of the code under test."""
    prefix = gateway.rstrip("/") + "/hls.vod.p2p.com/"
    if not url.startswith(prefix):
        return None, {}
    rest = urldefrag(url[len(prefix):])[0]
    path, _, query = rest.partition("?")
    host, slash, tail = path.partition("/")
    kept, ours = [], {}
    for item in query.split("&") if query else []:
        name = item.split("=", 1)[0]
        if name in GATEWAY_PARAMS:
            ours[name] = item.split("=", 1)[1] if "=" in item else ""
        else:
            kept.append(item)
    scheme = "https" if ours.get("xhttps") == "1" else "http"
    origin = f"{scheme}://{host}/{tail}" + ("?" + "&".join(kept) if kept else "")
    return origin, ours


def expected_origin(uri, base):
    target = urldefrag(urljoin(base, uri))[0]
    return target[:-1] if target.endswith("?") else target


def check_uri(name, what, before, after, base, gateway, problems, key=False, key_mode="origin"):
    if before is None or after is None:
        if before != after:
            problems.append(f"{name}: {what}: {before!r} became {after!r}")
        return
    if "{$" in before:
        return  # variables: the Swift suite checks substitution
    scheme = before.split(":", 1)[0].lower() if ":" in before.split("/", 1)[0] else None
    if scheme not in (None, "http", "https"):
        if before != after:
            problems.append(f"{name}: {what}: non-HTTP URI {before!r} changed to {after!r}")
        return
    want = expected_origin(before, base)
    if key and key_mode == "origin":
        if after != want:
            problems.append(f"{name}: {what}: key {after!r} is not the origin URL {want!r}")
        return
    origin, ours = decode_proxy(after, gateway)
    if origin is None:
        problems.append(f"{name}: {what}: {after!r} is not a proxy URL")
    elif origin != want:
        problems.append(f"{name}: {what}: {after!r} decodes to {origin!r}, expected {want!r}")
    elif not ours.get("xresid"):
        problems.append(f"{name}: {what}: {after!r} carries no xresid")


def compare(case, problems):
    name, base, gateway = case["name"], case["base"], case["gateway"]
    try:
        a = m3u8.loads(case["original"], uri=base)
    except Exception as e:  # m3u8 cannot read the original: nothing to compare against
        print(f"skipped {name}: m3u8 cannot parse the original ({type(e).__name__})")
        return
    try:
        b = m3u8.loads(case["rewritten"], uri=base)
    except Exception as e:
        problems.append(f"{name}: m3u8 parses the original but not the rewrite: {e}")
        return

    def same(what, x, y):
        if x != y:
            problems.append(f"{name}: {what} differs: {x!r} vs {y!r}")

    same("is_variant", a.is_variant, b.is_variant)
    same("segment count", len(a.segments), len(b.segments))
    for i, (s, t) in enumerate(zip(a.segments, b.segments)):
        same(f"segment {i} duration", s.duration, t.duration)
        same(f"segment {i} byterange", s.byterange, t.byterange)
        same(f"segment {i} title", s.title, t.title)
        check_uri(name, f"segment {i}", s.uri, t.uri, base, gateway, problems)
        for j, (p, q) in enumerate(zip(s.parts, t.parts)):
            same(f"segment {i} part {j} byterange", p.byterange, q.byterange)
            check_uri(name, f"segment {i} part {j}", p.uri, q.uri, base, gateway, problems)
        same(f"segment {i} part count", len(s.parts), len(t.parts))
        if s.init_section or t.init_section:
            sa, sb = s.init_section or {}, t.init_section or {}
            same(f"segment {i} map byterange", getattr(sa, "byterange", None), getattr(sb, "byterange", None))
            check_uri(name, f"segment {i} map", getattr(sa, "uri", None), getattr(sb, "uri", None), base, gateway, problems)
    same("variant count", len(a.playlists), len(b.playlists))
    for i, (p, q) in enumerate(zip(a.playlists, b.playlists)):
        same(f"variant {i} bandwidth", p.stream_info.bandwidth, q.stream_info.bandwidth)
        same(f"variant {i} codecs", p.stream_info.codecs, q.stream_info.codecs)
        check_uri(name, f"variant {i}", p.uri, q.uri, base, gateway, problems)
    same("i-frame variant count", len(a.iframe_playlists), len(b.iframe_playlists))
    for i, (p, q) in enumerate(zip(a.iframe_playlists, b.iframe_playlists)):
        check_uri(name, f"i-frame variant {i}", p.uri, q.uri, base, gateway, problems)
    same("rendition count", len(a.media), len(b.media))
    for i, (p, q) in enumerate(zip(a.media, b.media)):
        same(f"rendition {i}", (p.type, p.group_id, p.name, p.language), (q.type, q.group_id, q.name, q.language))
        check_uri(name, f"rendition {i}", p.uri, q.uri, base, gateway, problems)
    same("key count", len(a.keys), len(b.keys))
    for i, (p, q) in enumerate(zip(a.keys, b.keys)):
        if p is None or q is None:
            same(f"key {i}", p, q)
            continue
        same(f"key {i} method", p.method, q.method)
        same(f"key {i} iv", p.iv, q.iv)
        check_uri(name, f"key {i}", p.uri, q.uri, base, gateway, problems, key=True, key_mode=case.get("keyMode", "origin"))
    same("session data count", len(a.session_data), len(b.session_data))
    for i, (p, q) in enumerate(zip(a.session_data, b.session_data)):
        check_uri(name, f"session data {i}", p.uri, q.uri, base, gateway, problems)
    same("rendition report count", len(a.rendition_reports), len(b.rendition_reports))
    for i, (p, q) in enumerate(zip(a.rendition_reports, b.rendition_reports)):
        check_uri(name, f"rendition report {i}", p.uri, q.uri, base, gateway, problems)
    if a.preload_hint or b.preload_hint:
        check_uri(name, "preload hint", getattr(a.preload_hint, "uri", None), getattr(b.preload_hint, "uri", None), base, gateway, problems)
    same("target duration", a.target_duration, b.target_duration)
    same("media sequence", a.media_sequence, b.media_sequence)
    same("endlist", a.is_endlist, b.is_endlist)


def main():
    cases = json.load(sys.stdin)
    problems = []
    for case in cases:
        compare(case, problems)
    for p in problems:
        print(p)
    print(f"checked {len(cases)} playlists, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
