/// Byte-level URI reference handling (RFC 3986): splitting a reference into its components and
/// resolving it against a base. A VOD playlist can hold a hundred thousand URIs, so this works
/// on borrowed byte views (no reference counting) and allocates only for dot segments.
///
/// A `ByteView` borrows memory: it is valid only inside the `withUnsafeBufferPointer` call that
/// produced it, and nothing holding one (`ResolvedTarget`, `BaseView`) may outlive that call.
typealias ByteView = UnsafeBufferPointer<UInt8>

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Musl)
    internal import Musl
#elseif canImport(Darwin)
    internal import Darwin
#endif

extension UnsafeBufferPointer where Element == UInt8 {
    static var empty: ByteView { ByteView(start: nil, count: 0) }

    @inline(__always) func view(_ r: Range<Int>) -> ByteView { ByteView(rebasing: self[r]) }

    /// The index of the first `byte` in `from..<count` (libc's vectorised memchr), or `count`.
    @inline(__always) func index(of byte: UInt8, from: Int) -> Int {
        guard from < count, let base = baseAddress else { return count }
        guard let hit = memchr(base + from, Int32(byte), count - from) else { return count }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }

    /// The index of the first `byte` in `from..<end`, or `end`.
    @inline(__always) func index(of byte: UInt8, from: Int, to end: Int) -> Int {
        guard from < end, let base = baseAddress else { return end }
        guard let hit = memchr(base + from, Int32(byte), end - from) else { return end }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }
}

enum ASCII {
    static let slash = UInt8(ascii: "/")
    static let backslash = UInt8(ascii: "\\")
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

    static func equalsIgnoringCase<C: Collection<UInt8>>(_ a: C, _ lowercased: StaticString) -> Bool {
        guard a.count == lowercased.utf8CodeUnitCount else { return false }
        return lowercased.withUTF8Buffer { b in
            zip(a, b).allSatisfy { lower($0) == $1 }
        }
    }
}

/// Bytes percent-encoded in the URLs the gateway writes, fetches and keys. In a path: those
/// players encode (the WHATWG URL standard's path set, as browsers, hls.js and the platforms'
/// players apply it: controls, space, non-ASCII, `"<>`, backquote, `{}`). A manifest may write
/// them raw (`seg 1.ts`, `第1集.ts`); written encoded, a player's request names the object
/// read-ahead prepared (keys hold the path, not the query). In a query, only what a request
/// line cannot carry (controls, space, non-ASCII): SPEC keeps a URI's query verbatim, and an
/// origin that signs it reads the other bytes as written. A `%` is left as it is: what was
/// encoded stays encoded.
public enum URLBytes {
    @inline(__always) static func isUnsafeInPath(_ b: UInt8) -> Bool {
        b >= 0x80 || (b < 0x40 ? pathLow >> b : pathHigh >> (b &- 0x40)) & 1 != 0
    }

    @inline(__always) static func isUnsafeInQuery(_ b: UInt8) -> Bool {
        b <= 0x20 || b >= 0x7F
    }

    /// The path set as bits (a bit per byte below 0x80; every byte from 0x80 is in it): a
    /// shift and a test per byte of every URI the rewriter writes, not eight comparisons.
    /// Below 0x40: controls, space, `"`, `<`, `>`; from 0x40: backquote, `{`, `}`, DEL.
    static let pathLow: UInt64 = (1 << 33 - 1) | 1 << 0x22 | 1 << 0x3C | 1 << 0x3E
    static let pathHigh: UInt64 = 1 << (0x60 - 0x40) | 1 << (0x7B - 0x40) | 1 << (0x7D - 0x40) | 1 << (0x7F - 0x40)

    /// A file or folder name as one path segment: the path set, and `%`, `?`, `#` (which a name
    /// holds literally).
    public static func pathSegment(_ name: String) -> String {
        string(name.utf8) { b in isUnsafeInPath(b) || b == UInt8(ascii: "%") || b == UInt8(ascii: "?") || b == UInt8(ascii: "#") }
    }

    /// Appends `bytes`, each one `unsafe` says a player encodes as `%XX`.
    @inline(__always)
    static func append<C: Collection<UInt8>>(_ bytes: C, encoding unsafe: (UInt8) -> Bool, to out: inout [UInt8]) {
        guard bytes.contains(where: unsafe) else {
            out.append(contentsOf: bytes)
            return
        }
        encode(bytes, unsafe, to: &out)
    }

    /// `appendPath` for the rewriter's views: one pass to find that no byte needs encoding
    /// (nearly every URI), eight bytes at a time. With the query's check (`appendQuery`) it
    /// costs the engine about a tenth (100,000 URIs of 85 bytes: 22.2 ms against 19.7 ms
    /// without, in-process; byte by byte it was 27.5 ms, and a 16-byte SIMD check slower).
    @inline(__always)
    static func appendPath(_ bytes: ByteView, to out: inout [UInt8]) {
        if pathSetFree(bytes) { out.append(contentsOf: bytes) } else { encode(bytes, isUnsafeInPath, to: &out) }
    }

    /// What the HLS rewriter knows of a reference's bytes.
    enum Source {
        case unknown
        /// Printable ASCII or spaces: a line the playlist scan found so.
        case printableLine
        /// Written by variable substitution.
        case expansion
    }

    /// `appendQuery` for the rewriter's views, as `appendPath`. On a printable line only a
    /// space can need encoding, and memchr finds one: a URI's query is most of its bytes. In a
    /// query that variables wrote, the `{` of a `{$` is encoded too: the player reads the
    /// playlist's defines and would expand a `{$x}` that a value held (RFC 8216bis substitutes
    /// once, and a reference to a variable not defined fails the player's parse). Any other
    /// `{` stays as written (a signed query holding one would fail at the origin).
    @inline(__always)
    static func appendQuery(_ bytes: ByteView, source: Source = .unknown, to out: inout [UInt8]) {
        let free: Bool
        switch source {
        case .unknown: free = querySetFree(bytes)
        case .printableLine: free = bytes.index(of: ASCII.space, from: 0) == bytes.count
        case .expansion:
            var i = 0
            while i < bytes.count {
                let b = bytes[i]
                if isUnsafeInQuery(b) || (b == UInt8(ascii: "{") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "$")) {
                    out.append(UInt8(ascii: "%"))
                    out.append(hex[Int(b >> 4)])
                    out.append(hex[Int(b & 0xF)])
                } else {
                    out.append(b)
                }
                i += 1
            }
            return
        }
        if free { out.append(contentsOf: bytes) } else { encode(bytes, isUnsafeInQuery, to: &out) }
    }

    /// Whether no byte of `bytes` is in the path set: eight bytes at a time (`pathSetHits`).
    static func pathSetFree(_ bytes: ByteView) -> Bool { setFree(bytes, pathSetHits, isUnsafeInPath) }

    /// Whether no byte of `bytes` is in the query set, as `pathSetFree`.
    static func querySetFree(_ bytes: ByteView) -> Bool { setFree(bytes, querySetHits, isUnsafeInQuery) }

    /// Whether `hits` finds none of a set's bytes in any word of `bytes`, the last one
    /// overlapping the word before (`unsafe` for fewer than eight bytes).
    @inline(__always)
    static func setFree(_ bytes: ByteView, _ hits: (UInt64) -> UInt64, _ unsafe: (UInt8) -> Bool) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        guard bytes.count >= 8 else { return !bytes.contains(where: unsafe) }
        let raw = UnsafeRawPointer(base)
        var i = 0
        var found: UInt64 = 0
        while i + 8 <= bytes.count {
            found |= hits(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        found |= hits(raw.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
        return found == 0
    }

    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Non-zero when a byte of `x` is zero (as a test of the whole word: exact).
    @inline(__always) static func zeroByte(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }

    /// Non-zero when one of the eight bytes of `x` is in the query set: below 0x21, 0x7F, or
    /// from 0x80.
    @inline(__always) static func querySetHits(_ x: UInt64) -> UInt64 {
        (x & highs) | ((x &- 0x21 &* ones) & ~x & highs) | zeroByte(x ^ (0x7F &* ones))
    }

    /// Non-zero when one of the eight bytes of `x` is in the path set: the query set's, and
    /// `"`, `<` or `>` (0x3C and 0x3E, one test with bit 1 set), backquote, `{`, `}`.
    @inline(__always) static func pathSetHits(_ x: UInt64) -> UInt64 {
        querySetHits(x) | zeroByte(x ^ (0x22 &* ones)) | zeroByte((x | 0x02 &* ones) ^ (0x3E &* ones))
            | zeroByte(x ^ (0x60 &* ones)) | zeroByte(x ^ (0x7B &* ones)) | zeroByte(x ^ (0x7D &* ones))
    }

    static func encode<C: Collection<UInt8>>(_ bytes: C, _ unsafe: (UInt8) -> Bool, to out: inout [UInt8]) {
        for b in bytes {
            if unsafe(b) {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            } else {
                out.append(b)
            }
        }
    }

    static func appendPath<C: Collection<UInt8>>(_ bytes: C, to out: inout [UInt8]) { append(bytes, encoding: isUnsafeInPath, to: &out) }
    static func appendQuery<C: Collection<UInt8>>(_ bytes: C, to out: inout [UInt8]) { append(bytes, encoding: isUnsafeInQuery, to: &out) }

    /// `bytes` of a path or (`query`) a query as the gateway writes them, as text.
    static func string<C: Collection<UInt8>>(_ bytes: C, query: Bool) -> String {
        string(bytes, encoding: query ? isUnsafeInQuery : isUnsafeInPath)
    }

    static func string<C: Collection<UInt8>>(_ bytes: C, encoding unsafe: (UInt8) -> Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        append(bytes, encoding: unsafe, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
}

/// The five components of a URI reference, as index ranges into the bytes it was read from
/// (RFC 3986 appendix B). A component that is absent is nil; the path is always present.
struct URIComponents {
    var scheme: Range<Int>?
    var authority: Range<Int>?
    var path: Range<Int>
    var query: Range<Int>?
    var fragment: Range<Int>?
    /// Whether the path must be normalized when resolved: a segment of it is "." or ".."
    /// (found while scanning, for free), or it holds a backslash (`DotSegments`).
    var pathNeedsNormalizing = false

    init(_ b: ByteView) {
        var i = 0
        let end = b.count
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
        // The path ends at the first "?" or "#"; paths rarely hold a "#", so find "?" first
        // and look for a "#" before it. Each search stops at the path's end.
        let questionMark = b.index(of: ASCII.question, from: i)
        var j = b.index(of: ASCII.hash, from: i, to: questionMark)
        path = i..<j
        // A "." starts a dot segment when it begins a segment and is followed by the end of
        // the path, "/", or one more "." and then the end or "/".
        var dot = b.index(of: ASCII.dot, from: i, to: j)
        while dot < j {
            if dot == i || b[dot - 1] == ASCII.slash {
                let n = dot + 1
                if n == j || b[n] == ASCII.slash || (b[n] == ASCII.dot && (n + 1 == j || b[n + 1] == ASCII.slash)) {
                    pathNeedsNormalizing = true
                    break
                }
            }
            dot = b.index(of: ASCII.dot, from: dot + 1, to: j)
        }
        // A dot may be written "%2e", and a slash "\", as players read them too (the WHATWG
        // URL standard).
        if !pathNeedsNormalizing && b.index(of: ASCII.backslash, from: i, to: j) < j {
            pathNeedsNormalizing = true
        }
        if !pathNeedsNormalizing && b.index(of: UInt8(ascii: "%"), from: i, to: j) < j {
            pathNeedsNormalizing = DotSegments.present(b[i..<j])
        }
        i = j
        query = nil
        if i < end, b[i] == ASCII.question {
            j = b.index(of: ASCII.hash, from: i + 1)
            query = (i + 1)..<j
            i = j
        }
        fragment = nil
        if i < end, b[i] == ASCII.hash {
            fragment = (i + 1)..<end
        }
    }

    /// The components of an array slice, as index ranges of the slice (not of a 0-based copy).
    init(_ s: ArraySlice<UInt8>) {
        var c = s.withUnsafeBufferPointer { URIComponents($0) }
        let o = s.startIndex
        func shift(_ r: Range<Int>?) -> Range<Int>? { r.map { ($0.lowerBound + o)..<($0.upperBound + o) } }
        c.scheme = shift(c.scheme)
        c.authority = shift(c.authority)
        c.path = shift(c.path)!
        c.query = shift(c.query)
        c.fragment = shift(c.fragment)
        self = c
    }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
    }
    @inline(__always) static func isSchemeByte(_ c: UInt8) -> Bool {
        isAlpha(c) || (c >= 0x30 && c <= 0x39) || c == 0x2B || c == 0x2D || c == 0x2E
    }
}

/// An absolute http(s) URL resolved from a reference, as views into the base's and the
/// reference's bytes. The path is `normalizedPath` when dot segments had to be removed,
/// else `pathHead + pathTail`.
struct ResolvedTarget {
    var isHTTPS: Bool
    var authority: ByteView
    var pathHead: ByteView = .empty
    var pathTail: ByteView = .empty
    var normalizedPath: [UInt8]?
    var query: ByteView?
    var fragment: ByteView?
    /// The reference's bytes, when the rewriter knows what they are (`source`); else empty.
    var reference: ByteView = .empty
    var source = URLBytes.Source.unknown

    /// What is known of `v`'s bytes: the reference's `source` if `v` lies in it (a query may
    /// come from the base URL instead).
    func source(of v: ByteView) -> URLBytes.Source {
        guard let start = reference.baseAddress, let p = v.baseAddress, p >= start, p + v.count <= start + reference.count
        else { return .unknown }
        return source
    }

    /// Writes the path as players ask for it (`URLBytes`).
    func write(pathInto out: inout [UInt8]) {
        if let normalizedPath {
            URLBytes.appendPath(normalizedPath.isEmpty ? [ASCII.slash] : normalizedPath, to: &out)
        } else if pathHead.isEmpty && pathTail.isEmpty {
            out.append(ASCII.slash)
        } else {
            URLBytes.appendPath(pathHead, to: &out)
            URLBytes.appendPath(pathTail, to: &out)
        }
    }

    /// Removes dot segments from the path (RFC 3986 5.2.4), a backslash read as a slash.
    mutating func normalizePath() {
        var merged = Array(pathHead)
        merged.append(contentsOf: pathTail)
        normalizedPath = DotSegments.remove(merged)
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
    /// Length of `path` up to and including its last "/".
    let directoryLength: Int
    let query: Range<Int>?

    init(_ url: OriginURL) {
        let bytes = Array(url.string.utf8)
        self.bytes = bytes
        // OriginURL checked that this is an absolute http(s) URL with an authority.
        let c = bytes.withUnsafeBufferPointer { URIComponents($0) }
        isHTTPS = url.isHTTPS
        authority = c.authority!
        var p = Array(bytes[c.path])
        if p.isEmpty { p = [ASCII.slash] }
        p = p.withUnsafeBufferPointer { DotSegments.present($0) ? DotSegments.remove($0) : Array($0) }
        path = p
        directoryLength = (p.lastIndex(of: ASCII.slash) ?? -1) + 1
        query = c.query
    }

    /// Lends the base's bytes as views for the duration of `body`.
    func withView<R, E: Error>(_ body: (BaseView) throws(E) -> R) throws(E) -> R {
        try bytes.withUnsafeBufferPointer { (b) throws(E) -> R in
            try path.withUnsafeBufferPointer { (p) throws(E) -> R in
                try body(BaseView(
                    isHTTPS: isHTTPS, authority: b.view(authority), path: p,
                    directory: p.view(0..<directoryLength), query: query.map { b.view($0) }))
            }
        }
    }

    /// Resolves `ref` and hands the result to `body` while its views are valid.
    func withResolved<R>(_ ref: ArraySlice<UInt8>, _ body: (Resolution) throws(ManifestError) -> R) throws(ManifestError) -> R {
        try withView { (base) throws(ManifestError) -> R in
            try ref.withUnsafeBufferPointer { (r) throws(ManifestError) -> R in try body(try base.resolve(r)) }
        }
    }

    static func checkAuthority<C: Collection<UInt8>>(_ a: C) throws(ManifestError) {
        if a.isEmpty { throw ManifestError(.invalidURI, "an http(s) URI without a host") }
        if a.contains(ASCII.at) {
            throw ManifestError(.invalidURI, "user info in an origin URL is not supported")
        }
    }
}

/// A ResolutionBase's bytes, borrowed: see `ByteView`.
struct BaseView {
    let isHTTPS: Bool
    let authority: ByteView
    let path: ByteView
    let directory: ByteView
    let query: ByteView?

    /// Resolves `ref` (RFC 3986 section 5.2.2). Throws for an http(s) reference that cannot be an
    /// origin URL: user info in it, or no host.
    func resolve(_ ref: ByteView) throws(ManifestError) -> Resolution {
        let c = URIComponents(ref)
        var target: ResolvedTarget
        if let s = c.scheme {
            let scheme = ref.view(s)
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
                isHTTPS: https, authority: ref.view(a), pathTail: ref.view(c.path), query: c.query.map { ref.view($0) })
            if c.pathNeedsNormalizing { target.normalizePath() }
        } else if let a = c.authority {
            target = ResolvedTarget(
                isHTTPS: isHTTPS, authority: ref.view(a), pathTail: ref.view(c.path), query: c.query.map { ref.view($0) })
            if c.pathNeedsNormalizing { target.normalizePath() }
        } else {
            target = ResolvedTarget(isHTTPS: isHTTPS, authority: authority)
            let p = ref.view(c.path)
            if p.isEmpty {
                target.pathTail = path
                target.query = c.query.map { ref.view($0) } ?? query
            } else if p[0] == ASCII.slash || p[0] == ASCII.backslash {
                target.pathTail = p
                target.query = c.query.map { ref.view($0) }
                if c.pathNeedsNormalizing { target.normalizePath() }
            } else {
                target.pathHead = directory
                target.pathTail = p
                target.query = c.query.map { ref.view($0) }
                if c.pathNeedsNormalizing { target.normalizePath() }
            }
        }
        target.fragment = c.fragment.map { ref.view($0) }
        if target.authority.baseAddress != authority.baseAddress {  // the base's was checked already
            try ResolutionBase.checkAuthority(target.authority)
        }
        return .http(target)
    }
}

/// RFC 3986 section 5.2.4, remove_dot_segments, with a dot also written "%2e" or "%2E", and a
/// slash also written "\" (the WHATWG URL standard, which browsers, hls.js and dash.js follow,
/// reads `%2e%2e` as ".." and, in an http(s) URL, `\` as "/"): a player of a rewritten
/// manifest would otherwise climb out of the origin's path into the proxy URL's host segment
/// (`..\..\other-host\x.ts`), or ask for another object than read-ahead prepared. The
/// normalized path holds no backslash.
enum DotSegments {
    /// Whether any segment of `p` is "." or "..", dots written either way (`encoded`: a
    /// segment with a "%2e").
    static func present<C: RandomAccessCollection<UInt8>>(_ p: C, encoded: Bool = false) -> Bool where C.Index == Int {
        var start = p.startIndex
        while start <= p.endIndex {
            var end = start
            while end < p.endIndex && p[end] != ASCII.slash { end += 1 }
            if dots(in: p[start..<end]) > 0 && (!encoded || end - start > 2) { return true }
            start = end + 1
        }
        return false
    }

    /// 1 for a segment that is ".", 2 for "..", each dot written "." or "%2e"; else 0.
    static func dots<C: RandomAccessCollection<UInt8>>(in segment: C) -> Int where C.Index == Int {
        var count = 0
        var i = segment.startIndex
        while i < segment.endIndex {
            if segment[i] == ASCII.dot {
                i += 1
            } else if segment[i] == UInt8(ascii: "%") && i + 2 < segment.endIndex && segment[i + 1] == UInt8(ascii: "2")
                && (segment[i + 2] | 0x20) == UInt8(ascii: "e")
            {
                i += 3
            } else {
                return 0
            }
            count += 1
            if count > 2 { return 0 }
        }
        return count
    }

    static func remove<C: RandomAccessCollection<UInt8>>(_ input: C) -> [UInt8] where C.Index == Int {
        if input.contains(ASCII.backslash) { return remove(input.map { $0 == ASCII.backslash ? ASCII.slash : $0 }) }
        // Encoded dots first: each dot segment written with "%2e" becomes "." or "..".
        if input.contains(UInt8(ascii: "%")) {
            var decoded: [UInt8] = []
            decoded.reserveCapacity(input.count)
            var start = input.startIndex
            while start <= input.endIndex {
                var end = start
                while end < input.endIndex && input[end] != ASCII.slash { end += 1 }
                let n = dots(in: input[start..<end])
                if n > 0 { decoded.append(contentsOf: repeatElement(ASCII.dot, count: n)) } else { decoded.append(contentsOf: input[start..<end]) }
                if end < input.endIndex { decoded.append(ASCII.slash) }
                start = end + 1
            }
            return removeLiteral(decoded)
        }
        return removeLiteral(input)
    }

    private static func removeLiteral<C: RandomAccessCollection<UInt8>>(_ input: C) -> [UInt8] where C.Index == Int {
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var i = input.startIndex
        let end = input.endIndex
        func at(_ k: Int, _ c: UInt8) -> Bool { k < end && input[k] == c }
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
