#!/usr/bin/env python3
"""An independent DASH player-side URL resolver for the tests (standard library only).

It knows nothing of swarmgate: it reads an MPD as a player does and derives, for every
Representation, the URLs a player would fetch first: the initialization segment, the first
media segment and the index segment. BaseURLs resolve as a chain from the MPD's URL
(RFC 3986, urllib.parse.urljoin); segment elements inherit attribute by attribute and child by
child from Period to AdaptationSet to Representation (ISO/IEC 23009-1 5.3.9); templates are
filled with the first segment's values.

Every combination of BaseURL alternatives is listed (parent alternatives x own BaseURLs, as
Shaka Player does), first combination first, which is the one players use by default.

Usage: dash_resolve.py FILE URL [FILE URL ...]
Prints JSON: {FILE: {"representations": [...], "locations": [...]}}, each representation
{"key": "p0/a1/r2", "id": ..., "init": [...], "media": [...], "index": [...]}, each list
holding one URL per BaseURL combination (empty when the MPD has no such URL).
"""
import json
import re
import sys
import xml.etree.ElementTree as ET
from urllib.parse import urljoin, urldefrag

MAX_ALTERNATIVES = 64
TEMPLATE = re.compile(r"\$(RepresentationID|Number|Time|Bandwidth|SubNumber|)(%0(\d+)d)?\$")


def local(tag):
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def namespace(tag):
    return tag[1:].split("}", 1)[0] if isinstance(tag, str) and tag.startswith("{") else ""


class MPD:
    def __init__(self, root):
        self.ns = namespace(root.tag)

    def kids(self, element, name):
        return [c for c in element if local(c.tag) == name and namespace(c.tag) == self.ns]

    def kid(self, element, name):
        found = self.kids(element, name)
        return found[0] if found else None

    def bases(self, element, parents):
        own = [(b.text or "").strip() for b in self.kids(element, "BaseURL")]
        if not own:
            return parents
        return [urljoin(p, b) for p in parents for b in own][:MAX_ALTERNATIVES]


def fill(template, rep, number, time):
    def replace(m):
        name, width = m.group(1), m.group(3)
        if name == "":
            return "$"
        value = {
            "RepresentationID": rep.get("id", ""),
            "Number": str(number),
            "Time": str(time),
            "Bandwidth": rep.get("bandwidth", ""),
            "SubNumber": "1",
        }[name]
        if width and name != "RepresentationID":
            value = value.zfill(int(width))
        return value

    return TEMPLATE.sub(replace, template)


def merged(mpd, chain, name):
    """Attributes and children of the segment element `name` along the chain, inner winning."""
    elements = [mpd.kid(level, name) for level in chain]
    elements = [e for e in elements if e is not None]
    if not elements:
        return None
    attributes = {}
    children = {}
    for e in elements:
        attributes.update({local(k): v for k, v in e.attrib.items()})
        kinds = {}
        for c in e:
            if namespace(c.tag) == mpd.ns:
                kinds.setdefault(local(c.tag), []).append(c)
        children.update(kinds)
    return attributes, children


def join_all(bases, reference):
    if reference is None:
        return []
    return [urldefrag(urljoin(b, reference))[0] for b in bases]


def child_url(children, *names):
    """The child's @sourceURL; "" (the BaseURL itself, by range) for a child without one."""
    for name in names:
        for c in children.get(name, []):
            return c.attrib.get("sourceURL", "")
    return None


def representation_urls(mpd, chain, rep, bases):
    template = merged(mpd, chain, "SegmentTemplate")
    listing = merged(mpd, chain, "SegmentList")
    single = merged(mpd, chain, "SegmentBase")
    init = media = index = None
    if template is not None:
        attrs, children = template
        number = int(attrs.get("startNumber", "1"))
        time = 0
        timeline = children.get("SegmentTimeline")
        if timeline:
            first = next((s for s in timeline[0] if local(s.tag) == "S"), None)
            if first is not None:
                time = int(first.get("t", "0"))
        if "initialization" in attrs:
            init = fill(attrs["initialization"], rep, number, time)
        else:
            init = child_url(children, "Initialization", "Initialisation")
        if "media" in attrs:
            media = fill(attrs["media"], rep, number, time)
        if "index" in attrs:
            index = fill(attrs["index"], rep, number, time)
        else:
            index = child_url(children, "RepresentationIndex")
    elif listing is not None:
        _, children = listing
        init = child_url(children, "Initialization", "Initialisation")
        index = child_url(children, "RepresentationIndex")
        urls = children.get("SegmentURL", [])
        if urls:
            media = urls[0].get("media", "")
            index = urls[0].get("index", index)
    else:
        media = ""
        if single is not None:
            _, children = single
            init = child_url(children, "Initialization", "Initialisation")
            index = child_url(children, "RepresentationIndex")
    return {"init": join_all(bases, init), "media": join_all(bases, media), "index": join_all(bases, index)}


def resolve(path, url):
    root = ET.parse(path).getroot()
    mpd = MPD(root)
    top = mpd.bases(root, [url])
    out = []
    for p, period in enumerate(mpd.kids(root, "Period")):
        period_bases = mpd.bases(period, top)
        for a, adaptation in enumerate(mpd.kids(period, "AdaptationSet")):
            set_bases = mpd.bases(adaptation, period_bases)
            for r, rep in enumerate(mpd.kids(adaptation, "Representation")):
                bases = mpd.bases(rep, set_bases)
                entry = {"key": "p%d/a%d/r%d" % (p, a, r), "id": rep.get("id")}
                entry.update(representation_urls(mpd, [period, adaptation, rep], rep, bases))
                out.append(entry)
    locations = [urljoin(url, (e.text or "").strip()) for name in ("Location", "PatchLocation") for e in mpd.kids(root, name)]
    return {"representations": out, "locations": locations}


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    result = {}
    for i in range(0, len(argv), 2):
        result[argv[i]] = resolve(argv[i], argv[i + 1])
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
