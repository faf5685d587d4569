/// What a relative reference at one level of an MPD resolves against, as the *rewritten* MPD
/// presents it to a player: the BaseURL alternatives in scope (after rewriting, each one a
/// proxy URL), summarised by what the rewriter needs to decide how to write a reference.
struct DASHBase {
    /// The first alternative (a player's default choice), as an origin URL: absolute
    /// references are resolved against it.
    let first: ResolutionBase
    /// True when no BaseURL is in scope: references resolve against the URL the player
    /// fetched the MPD from, which the output cannot pin down, so they are written absolute.
    let isDocument: Bool
    /// The schemes among the alternatives: bit 0 http, bit 1 https.
    let schemes: UInt8
    /// The fewest directory segments among the alternatives' paths (`/a/b/x.mpd` has 2).
    let minDepth: Int

    /// Two bases with the same key make every reference the same.
    struct Key: Hashable {
        let first: [UInt8]
        let isDocument: Bool
        let schemes: UInt8
        let minDepth: Int
    }

    var key: Key { Key(first: first.bytes, isDocument: isDocument, schemes: schemes, minDepth: minDepth) }

    /// What a reference kept relative depends on: bases with the same relative key give it
    /// the same form.
    struct RelativeKey: Hashable {
        let isDocument: Bool
        let schemes: UInt8
        let minDepth: Int
    }

    var relativeKey: RelativeKey { RelativeKey(isDocument: isDocument, schemes: schemes, minDepth: minDepth) }

    /// The MPD's own URL, before any BaseURL.
    init(document url: OriginURL) {
        first = ResolutionBase(url)
        isDocument = true
        schemes = url.isHTTPS ? 2 : 1
        minDepth = Self.depth(first.path[...])
    }

    init(first: ResolutionBase, schemes: UInt8, minDepth: Int) {
        self.first = first
        isDocument = false
        self.schemes = schemes
        self.minDepth = minDepth
    }

    /// The base a BaseURL element sets up below `parent`, given how it was written.
    init(baseURL form: DASHReferenceForm, reference: ArraySlice<UInt8>, parent: DASHBase) throws(ManifestError) {
        let resolved = try parent.first.withResolved(DASHReferenceWriter.trimmed(reference)) { (r) throws(ManifestError) -> OriginURL? in
            if case .http(let t) = r { return OriginURL(t) }
            return nil
        }
        guard let url = resolved else {
            preconditionFailure("a written reference resolves to an http(s) URL")
        }
        if let net = form.relativeDepthChange {
            self.init(first: ResolutionBase(url), schemes: parent.schemes, minDepth: parent.minDepth + net)
        } else {
            self.init(first: ResolutionBase(url), schemes: url.isHTTPS ? 2 : 1, minDepth: Self.depth(Array(url.path.utf8)[...]))
        }
    }

    /// The base of a level with these BaseURL alternatives (in document order).
    init?(alternatives: [DASHBase]) {
        guard let head = alternatives.first else { return nil }
        self.init(
            first: head.first, schemes: alternatives.reduce(0) { $0 | $1.schemes },
            minDepth: alternatives.map(\.minDepth).min()!)
    }

    /// Directory segments of a path: the slashes before its last segment, minus the root one.
    static func depth(_ path: ArraySlice<UInt8>) -> Int {
        max(0, path.reduce(0) { $0 + ($1 == ASCII.slash ? 1 : 0) } - 1)
    }
}

/// A reference as written into the rewritten MPD.
struct DASHReferenceForm: Equatable {
    var bytes: [UInt8]
    /// For a reference kept relative: how many directory levels it moves its base by
    /// (`a/b/x` +2, `../x` -1). Nil for an absolute proxy URL.
    var relativeDepthChange: Int?
}

/// Writes one DASH reference (a BaseURL, a segment template, a SegmentURL...) in the form
/// that makes every URL a player derives from it a proxy URL with the stream's xresid and the
/// origin URL's own query.
///
/// Two forms exist. An *absolute* proxy URL works everywhere but pins the reference to the
/// first BaseURL alternative. A *relative* reference keeps its path and gets
/// `?ORIGIN-QUERY&xresid=ID[&xhttps=1]` as its own query: resolved by a player against any
/// proxy BaseURL above it, it gives exactly the proxy URL of what the original resolved to
/// against the matching origin BaseURL (RFC 3986: a reference with a path brings its own query
/// and drops the base's). That keeps sibling BaseURLs working as alternatives and lets one
/// template serve Representations with different BaseURLs. It is used only when that identity
/// holds for every alternative: a relative-path reference (not `/x`, not `//host/x`), below at
/// least one rewritten BaseURL, whose alternatives share one scheme (xhttps), and whose `..`
/// segments never climb above any alternative's root (in the proxy URL they would eat the
/// origin host).
struct DASHReferenceWriter {
    let proxy: ProxyWriter

    /// The reference `raw` (surrounding XML white space ignored) in `base`, or nil when it is
    /// not an http(s) URL (`urn:`, `data:`...) and stays as it is.
    func form(_ raw: ArraySlice<UInt8>, in base: DASHBase, allowRelative: Bool) throws(ManifestError) -> DASHReferenceForm? {
        let ref = Self.trimmed(raw)
        let c = URIComponents(ref)
        if allowRelative, !base.isDocument, base.schemes == 1 || base.schemes == 2,
            let change = Self.depthChange(ref, c, limit: base.minDepth)
        {
            var out: [UInt8] = []
            out.reserveCapacity(ref.count + proxy.xresidItem.count + 12)
            out.append(contentsOf: ref[c.path])
            out.append(ASCII.question)
            if let q = c.query {
                if let name = ref[q].withUnsafeBufferPointer({ QueryItems.firstGatewayParameter(in: $0) }) {
                    throw ManifestError(.reservedParameter, "the origin query already has the gateway's parameter '\(name)'")
                }
                if !q.isEmpty {
                    out.append(contentsOf: ref[q])
                    out.append(ASCII.amp)
                }
            }
            for (item, name) in proxy.inherited where !(c.query.map { QueryItems.contains(name: name, in: ref[$0]) } ?? false) {
                out.append(contentsOf: item)
                out.append(ASCII.amp)
            }
            out.append(contentsOf: proxy.xresidItem)
            if base.schemes == 2 { out.append(contentsOf: "&xhttps=1".utf8) }
            if let f = c.fragment {
                out.append(ASCII.hash)
                out.append(contentsOf: ref[f])
            }
            return DASHReferenceForm(bytes: out, relativeDepthChange: change)
        }
        let proxy = self.proxy
        return try base.first.withResolved(ref) { (r) throws(ManifestError) -> DASHReferenceForm? in
            guard case .http(let target) = r else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(proxy.prefix.count + ref.count + proxy.xresidItem.count + 64)
            try proxy.write(target, isKey: false, into: &out)
            return DASHReferenceForm(bytes: out, relativeDepthChange: nil)
        }
    }

    /// The origin URL `raw` stands for against `base`'s first alternative (for references).
    func origin(_ raw: ArraySlice<UInt8>, in base: DASHBase) throws(ManifestError) -> String? {
        try base.first.withResolved(Self.trimmed(raw)) { (r) throws(ManifestError) -> String? in
            if case .http(let t) = r { return OriginURL(t).string }
            return nil
        }
    }

    /// For a relative-path reference whose dot segments stay within `limit` directory levels
    /// above its base, the change in directory depth it makes; nil otherwise, and for a path
    /// with a dot written "%2e" or a backslash: players differ in reading those (a browser's
    /// reads `%2e%2e\` as "../"), so such a reference is resolved here, as an absolute proxy URL.
    static func depthChange(_ ref: ArraySlice<UInt8>, _ c: URIComponents, limit: Int) -> Int? {
        guard c.scheme == nil, c.authority == nil, !c.path.isEmpty, ref[c.path.lowerBound] != ASCII.slash else {
            return nil
        }
        let path = ref[c.path]
        if path.contains(ASCII.backslash) || DotSegments.present(path, encoded: true) { return nil }
        var depth = 0
        var lowest = 0
        var start = path.startIndex
        while true {
            let end = path[start...].firstIndex(of: ASCII.slash) ?? path.endIndex
            let segment = path[start..<end]
            let isLast = end == path.endIndex
            if segment.elementsEqual("..".utf8) {
                depth -= 1
            } else if !isLast && !segment.elementsEqual(".".utf8) {
                depth += 1
            }
            lowest = min(lowest, depth)
            if isLast { break }
            start = end + 1
        }
        return -lowest <= limit ? depth : nil
    }

    /// `raw` without XML white space at either end.
    static func trimmed(_ raw: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var s = raw
        while let f = s.first, f == ASCII.space || f == ASCII.tab || f == ASCII.lf || f == ASCII.cr { s = s.dropFirst() }
        while let l = s.last, l == ASCII.space || l == ASCII.tab || l == ASCII.lf || l == ASCII.cr { s = s.dropLast() }
        return s
    }
}
