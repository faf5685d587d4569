/// Byte-level URI reference handling (RFC 3986): splitting a reference into its components and
/// resolving it against a base. It works on byte slices and allocates only when a path has dot
/// segments, because a VOD playlist can hold a hundred thousand URIs.
enum ASCII {
    static let slash = UInt8(ascii: "/")
    static let colon = UInt8(ascii: ":")
    static let question = UInt8(ascii: "?")
    static let hash = UInt8(ascii: "#")
    static let dot = UInt8(ascii: ".")
    static let at = UInt8(ascii: "@")
    static let amp = UInt8(ascii: "&")
    static let equals = UInt8(ascii: "=")
    static let quote = UInt8(ascii: "\"")
    static let comma = UInt8(ascii: ",")
    static let lf = UInt8(ascii: "\n")
    static let cr = UInt8(ascii: "\r")
    static let tab = UInt8(ascii: "\t")
    static let space = UInt8(ascii: " ")

    @inline(__always) static func lower(_ b: UInt8) -> UInt8 {
        (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
    }

    static func equalsIgnoringCase(_ a: ArraySlice<UInt8>, _ lowercased: StaticString) -> Bool {
        guard a.count == lowercased.utf8CodeUnitCount else { return false }
        return lowercased.withUTF8Buffer { b in
            var i = a.startIndex
            for c in b {
                if lower(a[i]) != c { return false }
                i += 1
            }
            return true
        }
    }
}

/// The five components of a URI reference, as index ranges into the bytes it was read from
/// (RFC 3986 appendix B). A component that is absent is nil; the path is always present.
struct URIComponents {
    var scheme: Range<Int>?
    var authority: Range<Int>?
    var path: Range<Int>
    var query: Range<Int>?
    var fragment: Range<Int>?

    init(_ b: ArraySlice<UInt8>) {
        var i = b.startIndex
        let end = b.endIndex
        // scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        scheme = nil
        if i < end, Self.isAlpha(b[i]) {
            var j = i + 1
            while j < end, Self.isSchemeByte(b[j]) { j += 1 }
            if j < end, b[j] == ASCII.colon {
                scheme = i..<j
                i = j + 1
            }
        }
        authority = nil
        if end - i >= 2, b[i] == ASCII.slash, b[i + 1] == ASCII.slash {
            var j = i + 2
            while j < end, b[j] != ASCII.slash, b[j] != ASCII.question, b[j] != ASCII.hash { j += 1 }
            authority = (i + 2)..<j
            i = j
        }
        var j = i
        while j < end, b[j] != ASCII.question, b[j] != ASCII.hash { j += 1 }
        path = i..<j
        i = j
        query = nil
        if i < end, b[i] == ASCII.question {
            j = i + 1
            while j < end, b[j] != ASCII.hash { j += 1 }
            query = (i + 1)..<j
            i = j
        }
        fragment = nil
        if i < end, b[i] == ASCII.hash {
            fragment = (i + 1)..<end
        }
    }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
    }
    @inline(__always) static func isSchemeByte(_ c: UInt8) -> Bool {
        isAlpha(c) || (c >= 0x30 && c <= 0x39) || c == 0x2B || c == 0x2D || c == 0x2E
    }
}

/// An absolute http(s) URL resolved from a reference, as views into the base's and the
/// reference's bytes. The path is `pathHead + pathTail`.
struct ResolvedTarget {
    var isHTTPS: Bool
    var authority: ArraySlice<UInt8>
    var pathHead: ArraySlice<UInt8>
    var pathTail: ArraySlice<UInt8>
    var query: ArraySlice<UInt8>?
    var fragment: ArraySlice<UInt8>?

    func write(pathInto out: inout [UInt8]) {
        if pathHead.isEmpty && pathTail.isEmpty {
            out.append(ASCII.slash)
        } else {
            out.append(contentsOf: pathHead)
            out.append(contentsOf: pathTail)
        }
    }
}

/// What a reference turned out to be once resolved.
enum Resolution {
    /// An http or https URL.
    case http(ResolvedTarget)
    /// Another scheme (`skd:`, `data:`, `urn:`...): left exactly as written.
    case other
}

/// A base URL prepared once so that resolving each of many references against it is cheap.
struct ResolutionBase: Sendable {
    let bytes: [UInt8]
    let isHTTPS: Bool
    let authority: Range<Int>
    /// Normalized path (dot segments removed), never empty.
    let path: [UInt8]
    /// `path` up to and including its last "/".
    let directory: ArraySlice<UInt8>
    let query: Range<Int>?

    init(_ url: OriginURL) {
        self.init(validated: Array(url.string.utf8))
    }

    /// `bytes` must be an absolute http(s) URL with an authority: OriginURL checked it.
    private init(validated bytes: [UInt8]) {
        self.bytes = bytes
        let c = URIComponents(bytes[...])
        isHTTPS = ASCII.equalsIgnoringCase(bytes[c.scheme!], "https")
        authority = c.authority!
        var p = Array(bytes[c.path])
        if p.isEmpty { p = [ASCII.slash] }
        if DotSegments.present(p[...]) { p = DotSegments.remove(p[...]) }
        path = p
        let lastSlash = p.lastIndex(of: ASCII.slash) ?? -1
        directory = p[0..<(lastSlash + 1)]
        query = c.query
    }

    /// Resolves `ref` (RFC 3986 section 5.2.2). Throws for an http(s) reference that cannot be an
    /// origin URL: user info in it, or no host.
    func resolve(_ ref: ArraySlice<UInt8>) throws(ManifestError) -> Resolution {
        let c = URIComponents(ref)
        var target: ResolvedTarget
        if let s = c.scheme {
            let scheme = ref[s]
            let https: Bool
            if ASCII.equalsIgnoringCase(scheme, "http") {
                https = false
            } else if ASCII.equalsIgnoringCase(scheme, "https") {
                https = true
            } else {
                return .other
            }
            guard let a = c.authority else {
                throw ManifestError(.invalidURI, "an http(s) URI without a host")
            }
            target = ResolvedTarget(
                isHTTPS: https, authority: ref[a], pathHead: [], pathTail: ref[c.path],
                query: c.query.map { ref[$0] }, fragment: nil)
            Self.normalizeTail(&target)
        } else if let a = c.authority {
            target = ResolvedTarget(
                isHTTPS: isHTTPS, authority: ref[a], pathHead: [], pathTail: ref[c.path],
                query: c.query.map { ref[$0] }, fragment: nil)
            Self.normalizeTail(&target)
        } else {
            target = ResolvedTarget(
                isHTTPS: isHTTPS, authority: bytes[authority], pathHead: [], pathTail: [],
                query: nil, fragment: nil)
            let p = ref[c.path]
            if p.isEmpty {
                target.pathTail = path[...]
                target.query = c.query.map { ref[$0] } ?? query.map { bytes[$0] }
            } else if p.first == ASCII.slash {
                target.pathTail = p
                target.query = c.query.map { ref[$0] }
                Self.normalizeTail(&target)
            } else {
                target.pathHead = directory
                target.pathTail = p
                target.query = c.query.map { ref[$0] }
                if DotSegments.present(p) {
                    var merged = Array(directory)
                    merged.append(contentsOf: p)
                    target.pathHead = []
                    target.pathTail = DotSegments.remove(merged[...])[...]
                }
            }
        }
        target.fragment = c.fragment.map { ref[$0] }
        try Self.checkAuthority(target.authority)
        return .http(target)
    }

    private static func normalizeTail(_ t: inout ResolvedTarget) {
        if DotSegments.present(t.pathTail) {
            t.pathTail = DotSegments.remove(t.pathTail)[...]
        }
    }

    static func checkAuthority(_ a: ArraySlice<UInt8>) throws(ManifestError) {
        if a.isEmpty { throw ManifestError(.invalidURI, "an http(s) URI without a host") }
        if a.contains(ASCII.at) {
            throw ManifestError(.invalidURI, "user info in an origin URL is not supported")
        }
    }
}

/// RFC 3986 section 5.2.4, remove_dot_segments.
enum DotSegments {
    /// Whether any segment of `p` is "." or "..".
    static func present(_ p: ArraySlice<UInt8>) -> Bool {
        var i = p.startIndex
        let end = p.endIndex
        var atSegmentStart = true
        while i < end {
            let b = p[i]
            if b == ASCII.slash {
                atSegmentStart = true
            } else if atSegmentStart {
                atSegmentStart = false
                if b == ASCII.dot {
                    let n = i + 1
                    if n == end || p[n] == ASCII.slash { return true }
                    if p[n] == ASCII.dot && (n + 1 == end || p[n + 1] == ASCII.slash) { return true }
                }
            }
            i += 1
        }
        return false
    }

    static func remove(_ input: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var i = input.startIndex
        let end = input.endIndex
        @inline(__always) func at(_ k: Int, _ c: UInt8) -> Bool { k < end && input[k] == c }
        func popSegment() {
            if let last = out.lastIndex(of: ASCII.slash) {
                out.removeSubrange(last...)
            } else {
                out.removeAll(keepingCapacity: true)
            }
        }
        while i < end {
            let rem = end - i
            if at(i, ASCII.dot) && at(i + 1, ASCII.dot) && at(i + 2, ASCII.slash) { i += 3; continue }  // A
            if at(i, ASCII.dot) && at(i + 1, ASCII.slash) { i += 2; continue }  // A
            if at(i, ASCII.slash) && at(i + 1, ASCII.dot) && at(i + 2, ASCII.slash) { i += 2; continue }  // B
            if rem == 2 && at(i, ASCII.slash) && at(i + 1, ASCII.dot) { out.append(ASCII.slash); break }  // B
            if at(i, ASCII.slash) && at(i + 1, ASCII.dot) && at(i + 2, ASCII.dot) && at(i + 3, ASCII.slash) {
                i += 3; popSegment(); continue  // C
            }
            if rem == 3 && at(i, ASCII.slash) && at(i + 1, ASCII.dot) && at(i + 2, ASCII.dot) {
                popSegment(); out.append(ASCII.slash); break  // C
            }
            if (rem == 1 && at(i, ASCII.dot)) || (rem == 2 && at(i, ASCII.dot) && at(i + 1, ASCII.dot)) { break }  // D
            var j = i
            if input[j] == ASCII.slash { j += 1 }
            while j < end && input[j] != ASCII.slash { j += 1 }
            out.append(contentsOf: input[i..<j])  // E
            i = j
        }
        return out
    }
}
