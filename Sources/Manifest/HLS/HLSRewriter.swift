/// Rewrites an HLS playlist so that every URI a player would fetch comes back through the
/// gateway (SPEC section 1, "Rewriting, HLS"). One pass over the bytes: it validates each line,
/// follows the state that URIs depend on (variables, byte ranges, the tag before a URI line)
/// and splices new URI tokens into a copy of the input, so that every other byte is unchanged.
public struct HLSRewriter: Sendable {
    /// How the rewrite is done.
    public struct Options: Sendable {
        /// The gateway's public URL that proxy URLs start with.
        public var gateway: String = "http://127.0.0.1:8080"
        /// The stream's swarm; nil derives it from the playlist URL (host + path).
        public var xresid: XResID?
        public var inheritQuery: InheritQuery = .none
        public var keyURIs: KeyURIMode = .origin
        /// Values for `EXT-X-DEFINE:IMPORT`, from the playlist that referenced this one.
        public var importedVariables: [String: String] = [:]
        /// The `xvars` value (`PlaylistVariables`) that the URIs of the playlists this one
        /// references carry: a media playlist passes on the one it came with to its rendition
        /// reports. A master's own variables replace it in its variants and renditions.
        public var variablesParameter: String?
        /// Whether to list every rewritten URI in the result.
        public var collectReferences = false
        /// Inputs larger than this are refused (SPEC: playlists at most 16 MiB).
        public var maxInputSize = 16 << 20
        /// Lines longer than this are refused.
        public var maxLineLength = 1 << 20
        /// A URI longer than this after variable substitution is refused.
        public var maxExpandedURILength = 1 << 20
        /// A playlist whose variables add more than this to its URIs in all is refused: the
        /// output stays within a few times the 16 MiB input.
        public var maxAddedByVariables = 32 << 20

        public init() {}
    }

    public let playlistURL: OriginURL
    public let options: Options
    let base: ResolutionBase
    let writer: ProxyWriter
    /// `&xvars=…` for the URIs of playlists, or nothing.
    let variablesItem: [UInt8]

    /// `playlistURL` is the effective URL the playlist was fetched from (after redirects):
    /// relative URIs resolve against it and `QUERYPARAM` variables read its query.
    public init(playlistURL: OriginURL, options: Options = Options()) {
        self.playlistURL = playlistURL
        self.options = options
        base = ResolutionBase(playlistURL)
        var w = ProxyWriter(
            gateway: options.gateway, virtualHost: .hls,
            xresid: options.xresid ?? XResID(derivedFrom: playlistURL))
        w.inherited = options.inheritQuery.items(of: playlistURL.query)
        writer = w
        variablesItem = options.variablesParameter.map(PlaylistVariables.queryItem) ?? []
    }

    /// Rewrites `input`, or throws a `ManifestError` naming the line at fault. Never returns a
    /// partial result.
    public func rewrite(_ input: [UInt8]) throws(ManifestError) -> HLSRewrite {
        try input.withUnsafeBufferPointer { (bytes) throws(ManifestError) -> HLSRewrite in try rewrite(bytes) }
    }

    /// Rewrites bytes the caller owns (a mapped file, say) without copying them first.
    public func rewrite(_ input: UnsafeBufferPointer<UInt8>) throws(ManifestError) -> HLSRewrite {
        guard input.count <= options.maxInputSize else {
            throw ManifestError(.inputTooLarge, "playlist is \(input.count) bytes, over the limit of \(options.maxInputSize)")
        }
        let result = try base.withView { (base) throws(ManifestError) -> HLSRewrite in
            var run = HLSRewriteRun(rewriter: self, input: input, base: base)
            try run.run()
            return HLSRewrite(
                output: run.out, kind: run.kind, variables: run.definedVariables, references: run.references)
        }
        // A master's variants and renditions carry its own variables, which are known once it
        // has been read: it is rewritten again with them (masters are short).
        guard result.kind == .master else { return result }
        let own = PlaylistVariables.encode(result.variables)
        guard own != options.variablesParameter else { return result }
        var again = options
        again.variablesParameter = own
        return try HLSRewriter(playlistURL: playlistURL, options: again).rewrite(input)
    }

    /// Rewrites text.
    public func rewrite(_ text: String) throws(ManifestError) -> HLSRewrite {
        try rewrite(Array(text.utf8))
    }
}

/// The state of one rewrite. It borrows the input and the base (see `ByteView`), so it lives
/// only inside `HLSRewriter.rewrite`.
struct HLSRewriteRun {
    let r: HLSRewriter
    let input: ByteView
    let base: BaseView
    var out: [UInt8] = []
    /// Input before this index has been copied to `out`.
    var copied = 0
    var line = 0
    /// Whether the line being processed is printable ASCII and spaces only (no tab, no byte
    /// from 0x80), as its scan found: its URIs' queries then need no check of their own.
    var linePrintable = true

    var sawHeader = false
    /// A playlist with any master-only tag is a master; stray media tags in it (a
    /// TARGETDURATION, say) are tolerated, since they change nothing in the rewrite.
    var sawMasterTag = false
    var kind: HLSPlaylistKind { sawMasterTag ? .master : .media }
    var nextURIIsVariant = false
    var variables: [[UInt8]: [UInt8]] = [:]
    var definedVariables: [String: String] = [:]
    var references: [HLSReference] = []
    var pendingByteRange: ByteRange?
    var lastByteRangeEnd: UInt64 = 0
    /// Bytes that variable substitution added to URIs so far.
    var addedByVariables = 0
    var pendingDuration: Double?
    /// The next segment is marked `EXT-X-GAP`.
    var pendingGap = false
    var queryItems: [(item: [UInt8], name: [UInt8])]?

    /// `GATEWAY/hls.vod.p2p.com/AUTHORITY/DIRECTORY/` of the playlist URL.
    let directoryPrefix: [UInt8]

    init(rewriter: HLSRewriter, input: ByteView, base: BaseView) {
        r = rewriter
        self.input = input
        self.base = base
        var prefix = rewriter.writer.prefix + Array(base.authority)
        URLBytes.appendPath(base.directory, to: &prefix)
        directoryPrefix = prefix
    }

    mutating func run() throws(ManifestError) {
        let b = input
        let count = b.count
        if count >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
            throw ManifestError(.byteOrderMark, line: 1, "playlist starts with a UTF-8 byte order mark")
        }
        // Proxy URLs are longer than the relative URIs they replace: a segment-heavy playlist
        // roughly doubles, and growing a large buffer midway would copy it.
        out.reserveCapacity(2 * count + 4096)
        LargeBuffer.preferHugePages(&out)
        var i = 0
        while i < count {
            line += 1
            // Find the end of the line, validating every byte on the way.
            var j = i
            var contentEnd = -1
            linePrintable = true
            while j < count {
                j = Self.skipPlainASCII(b, from: j)
                guard j < count else { break }
                let c = b[j]
                if c >= 0x20 && c < 0x7F {
                    j += 1
                } else if c == ASCII.lf {
                    break
                } else if c == ASCII.tab {
                    linePrintable = false
                    j += 1
                } else if c == ASCII.cr && j + 1 < count && b[j + 1] == ASCII.lf {
                    contentEnd = j
                    j += 1
                    break
                } else if c >= 0x80 {
                    linePrintable = false
                    j = try validateUTF8(at: j)
                } else {
                    throw ManifestError(.controlByte, line: line, "control byte 0x\(String(c, radix: 16)) in the playlist")
                }
            }
            if contentEnd < 0 { contentEnd = j }
            if contentEnd - i > r.options.maxLineLength {
                throw ManifestError(.lineTooLong, line: line, "line is longer than \(r.options.maxLineLength) bytes")
            }
            try process(i..<contentEnd)
            i = j + 1
        }
        if !sawHeader {
            throw ManifestError(.notAPlaylist, "no #EXTM3U header: this is not an HLS playlist")
        }
        out.append(contentsOf: b.view(copied..<count))
    }

    /// The index of the first byte at or after `i` that is not printable ASCII (0x20-0x7E),
    /// looking at eight bytes at a time; `b.count` if there is none.
    @inline(__always)
    static func skipPlainASCII(_ b: ByteView, from i: Int) -> Int {
        var i = i
        let count = b.count
        if let base = b.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= count {
                let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let high = x & 0x8080_8080_8080_8080  // >= 0x80
                let below = (x &- 0x2020_2020_2020_2020) & ~x & 0x8080_8080_8080_8080  // < 0x20
                let y = x ^ 0x7F7F_7F7F_7F7F_7F7F
                let del = (y &- 0x0101_0101_0101_0101) & ~y & 0x8080_8080_8080_8080  // == 0x7F
                if high | below | del != 0 { break }
                i += 8
            }
        }
        while i < count {
            let c = b[i]
            if c < 0x20 || c >= 0x7F { return i }
            i += 1
        }
        return count
    }

    /// Checks the UTF-8 sequence starting at `j` and returns the index after it.
    func validateUTF8(at j: Int) throws(ManifestError) -> Int {
        let b = input
        let c = b[j]
        var need = 0
        var lo: UInt8 = 0x80
        var hi: UInt8 = 0xBF
        switch c {
        case 0xC2...0xDF: need = 1
        case 0xE0: need = 2; lo = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: need = 2
        case 0xED: need = 2; hi = 0x9F
        case 0xF0: need = 3; lo = 0x90
        case 0xF1...0xF3: need = 3
        case 0xF4: need = 3; hi = 0x8F
        default: throw ManifestError(.invalidUTF8, line: line, "invalid UTF-8 byte 0x\(String(c, radix: 16))")
        }
        guard j + need < b.count else {
            throw ManifestError(.invalidUTF8, line: line, "truncated UTF-8 sequence")
        }
        let first = b[j + 1]
        guard first >= lo && first <= hi else {
            throw ManifestError(.invalidUTF8, line: line, "invalid UTF-8 sequence")
        }
        var k = 2
        while k <= need {
            guard b[j + k] & 0xC0 == 0x80 else {
                throw ManifestError(.invalidUTF8, line: line, "invalid UTF-8 sequence")
            }
            k += 1
        }
        return j + need + 1
    }

    mutating func process(_ range: Range<Int>) throws(ManifestError) {
        let b = input
        var start = range.lowerBound
        var end = range.upperBound
        while start < end && (b[start] == ASCII.space || b[start] == ASCII.tab) { start += 1 }
        while end > start && (b[end - 1] == ASCII.space || b[end - 1] == ASCII.tab) { end -= 1 }
        if !sawHeader {
            // RFC 8216 wants #EXTM3U on the first line; comment and blank lines before it are
            // tolerated, as lenient players do, so the gateway never breaks a stream that plays.
            if b.view(range).starts(with: "#EXTM3U".utf8) {
                sawHeader = true
            } else if start < end && (b[start] != ASCII.hash || b.view(start..<end).starts(with: "#EXT".utf8)) {
                throw ManifestError(.notAPlaylist, line: line, "no #EXTM3U header before this line: this is not an HLS playlist")
            }
            return
        }
        if start == end { return }
        if b[start] == ASCII.hash {
            if end - start > 4 && b[start + 1] == UInt8(ascii: "E") && b[start + 2] == UInt8(ascii: "X")
                && b[start + 3] == UInt8(ascii: "T")
            {
                try tag(start..<end)
            }
            return
        }
        // A URI line: a segment, or a variant after EXT-X-STREAM-INF.
        let role: HLSReference.Role = nextURIIsVariant ? .variant : .segment
        nextURIIsVariant = false
        try rewriteURI(start..<end, role: role)
        pendingByteRange = nil
        pendingDuration = nil
        pendingGap = false
    }

    mutating func tag(_ range: Range<Int>) throws(ManifestError) {
        let b = input
        var nameEnd = range.lowerBound + 1
        while nameEnd < range.upperBound && b[nameEnd] != ASCII.colon { nameEnd += 1 }
        let name = b.view((range.lowerBound + 1)..<nameEnd)
        let rule: HLSTagRule
        if name.count == 6 && name[0] == 0x45 && name[1] == 0x58 && name[2] == 0x54 && name[3] == 0x49
            && name[4] == 0x4E && name[5] == 0x46
        {  // "EXTINF"
            // By far the most common tag: skip the table.
            if r.options.collectReferences {
                let value = min(nameEnd + 1, range.upperBound)..<range.upperBound
                let comma = b.view(value).firstIndex(of: ASCII.comma).map { $0 + value.lowerBound } ?? value.upperBound
                // A duration that is not a finite number ("nan", "inf") is no duration.
                pendingDuration = Double(String(decoding: b.view(value.lowerBound..<comma), as: UTF8.self)).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
            }
            return
        }
        if name.elementsEqual("EXT-X-GAP".utf8) {
            pendingGap = true
            return
        }
        if let known = HLSTagRule.rule(named: name) { rule = known } else { return }
        if rule.kind == .master { sawMasterTag = true }
        let value = min(nameEnd + 1, range.upperBound)..<range.upperBound
        switch rule.action {
        case .none:
            break
        case .streamInf:
            nextURIIsVariant = true
        case .byteRange:
            pendingByteRange = try byteRange(value, allowImplicitOffset: true)
        case .define:
            try define(value)
        case .key(let role):
            let attrs = try AttributeList(b, value, line: line)
            let uri = try attrs.only("URI", in: b, line: line)
            if let method = try attrs.only("METHOD", in: b, line: line), b.view(method.value).elementsEqual("NONE".utf8) { return }
            if let uri {
                try rewriteAttribute(uri, role: role)
            }
        case .uris(let names):
            let attrs = try AttributeList(b, value, line: line)
            // The output is written front to back, so the URIs are rewritten in the order they
            // stand on the line, whatever order the tag's table lists them in.
            var found: [(uri: AttributeList.Attribute, role: HLSReference.Role)] = []
            for (name, role) in names {
                if let uri = try attrs.only(name, in: b, line: line) { found.append((uri, role)) }
            }
            for (uri, role) in found.sorted(by: { $0.uri.value.lowerBound < $1.uri.value.lowerBound }) {
                var range: ByteRange?
                if role == .map || role == .part, let br = attrs.first("BYTERANGE", in: b) {
                    range = try byteRange(br.value, allowImplicitOffset: role == .part)
                }
                pendingByteRange = range ?? pendingByteRange
                try rewriteAttribute(uri, role: role)
                if role == .map || role == .part { pendingByteRange = nil }
            }
        }
    }

    mutating func rewriteAttribute(_ a: AttributeList.Attribute, role: HLSReference.Role) throws(ManifestError) {
        guard a.isQuoted else {
            throw ManifestError(.malformedAttributes, line: line, "a URI attribute must be a quoted string")
        }
        try rewriteURI(a.value, role: role)
    }

    /// `length[@offset]`, each a decimal that fits in 64 bits, and their sum too.
    mutating func byteRange(_ range: Range<Int>, allowImplicitOffset: Bool) throws(ManifestError) -> ByteRange {
        let b = input
        let at = b.view(range).firstIndex(of: ASCII.at).map { $0 + range.lowerBound }
        func number(_ r: Range<Int>) throws(ManifestError) -> UInt64 {
            guard !r.isEmpty, r.count <= 20 else {
                throw ManifestError(.invalidByteRange, line: line, "byte range is not length[@offset]")
            }
            var v: UInt64 = 0
            for i in r {
                let d = b[i] &- 0x30
                guard d < 10 else {
                    throw ManifestError(.invalidByteRange, line: line, "byte range is not length[@offset]")
                }
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(d))
                guard !o1 && !o2 else {
                    throw ManifestError(.invalidByteRange, line: line, "byte range does not fit in 64 bits")
                }
                v = s
            }
            return v
        }
        let length = try number(range.lowerBound..<(at ?? range.upperBound))
        let offset: UInt64
        if let at {
            offset = try number((at + 1)..<range.upperBound)
        } else if allowImplicitOffset {
            offset = lastByteRangeEnd
        } else {
            throw ManifestError(.invalidByteRange, line: line, "byte range needs an offset here")
        }
        let (end, overflow) = offset.addingReportingOverflow(length)
        guard !overflow else {
            throw ManifestError(.invalidByteRange, line: line, "byte range end does not fit in 64 bits")
        }
        lastByteRangeEnd = end
        return ByteRange(length: length, offset: offset)
    }

    mutating func define(_ value: Range<Int>) throws(ManifestError) {
        let b = input
        let attrs = try AttributeList(b, value, line: line)
        let nameAttr: AttributeList.Attribute
        let defined: [UInt8]
        if let n = attrs.first("NAME", in: b) {
            guard let v = attrs.first("VALUE", in: b) else {
                throw ManifestError(.invalidVariable, line: line, "EXT-X-DEFINE with NAME needs a VALUE")
            }
            nameAttr = n
            defined = Array(b.view(v.value))
            if containsReference(to: Array(b.view(n.value)), in: defined) {
                throw ManifestError(
                    .recursiveVariable, line: line,
                    "variable '\(String(decoding: b.view(n.value), as: UTF8.self))' refers to itself")
            }
        } else if let n = attrs.first("IMPORT", in: b) {
            nameAttr = n
            let name = String(decoding: b.view(n.value), as: UTF8.self)
            guard let v = r.options.importedVariables[name] else {
                throw ManifestError.missingImport(name, line: line)
            }
            defined = Array(v.utf8)
        } else if let n = attrs.first("QUERYPARAM", in: b) {
            nameAttr = n
            if queryItems == nil { queryItems = InheritQuery.all.items(of: r.playlistURL.query) }
            let name = b.view(n.value)
            guard let item = queryItems?.first(where: { $0.name.elementsEqual(name) }) else {
                throw ManifestError(
                    .undefinedVariable, line: line,
                    "QUERYPARAM '\(String(decoding: name, as: UTF8.self))' is not in the playlist URL's query")
            }
            defined = item.item.count > item.name.count ? Array(item.item[(item.name.count + 1)...]) : []
        } else {
            throw ManifestError(.invalidVariable, line: line, "EXT-X-DEFINE needs NAME, IMPORT or QUERYPARAM")
        }
        let name = Array(b.view(nameAttr.value))
        guard nameAttr.isQuoted, !name.isEmpty, name.allSatisfy(Self.isVariableNameByte) else {
            throw ManifestError(.invalidVariable, line: line, "variable names are [A-Za-z0-9_-]+ in quotes")
        }
        guard variables[name] == nil else {
            throw ManifestError(
                .duplicateVariable, line: line, "variable '\(String(decoding: name, as: UTF8.self))' is defined twice")
        }
        variables[name] = defined
        definedVariables[String(decoding: name, as: UTF8.self)] = String(decoding: defined, as: UTF8.self)
    }

    static func isVariableNameByte(_ c: UInt8) -> Bool {
        URIComponents.isAlpha(c) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
    }

    func containsReference(to name: [UInt8], in s: [UInt8]) -> Bool {
        var found = false
        forEachReference(in: s) { r in if r.elementsEqual(name) { found = true } }
        return found
    }

    /// Calls `body` with the name of each well-formed `{$name}` in `s`.
    func forEachReference<C: RandomAccessCollection<UInt8>>(in s: C, _ body: (C.SubSequence) -> Void) where C.Index == Int {
        var i = s.startIndex
        while i + 1 < s.endIndex {
            if s[i] == UInt8(ascii: "{") && s[i + 1] == UInt8(ascii: "$") {
                var j = i + 2
                while j < s.endIndex && Self.isVariableNameByte(s[j]) { j += 1 }
                if j < s.endIndex && j > i + 2 && s[j] == UInt8(ascii: "}") {
                    body(s[(i + 2)..<j])
                    i = j + 1
                    continue
                }
            }
            i += 1
        }
    }

    /// `s` with every `{$name}` replaced by its value: one pass, values are not rescanned.
    func substitute(_ s: ByteView) throws(ManifestError) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        var copiedTo = i
        var failure: ManifestError?
        let limit = r.options.maxExpandedURILength
        while i + 1 < s.endIndex {
            if s[i] == UInt8(ascii: "{") && s[i + 1] == UInt8(ascii: "$") {
                var j = i + 2
                while j < s.endIndex && Self.isVariableNameByte(s[j]) { j += 1 }
                if j < s.endIndex && j > i + 2 && s[j] == UInt8(ascii: "}") {
                    let name = s[(i + 2)..<j]
                    guard let value = variables[Array(name)] else {
                        failure = ManifestError(
                            .undefinedVariable, line: line,
                            "variable '\(String(decoding: name, as: UTF8.self))' is not defined")
                        break
                    }
                    out.append(contentsOf: s[copiedTo..<i])
                    out.append(contentsOf: value)
                    if out.count > limit {
                        failure = ManifestError(
                            .expansionTooLong, line: line, "URI is longer than \(limit) bytes after substitution")
                        break
                    }
                    i = j + 1
                    copiedTo = i
                    continue
                }
            }
            i += 1
        }
        if let failure { throw failure }
        out.append(contentsOf: s[copiedTo..<s.endIndex])
        if out.count > limit {
            throw ManifestError(.expansionTooLong, line: line, "URI is longer than \(limit) bytes after substitution")
        }
        return out
    }

    mutating func rewriteURI(_ range: Range<Int>, role: HLSReference.Role) throws(ManifestError) {
        let raw = input.view(range)
        if raw.count > 1 && raw.index(of: UInt8(ascii: "$"), from: 0) < raw.count {
            let expanded = try substitute(raw)
            // What variables add, over the whole playlist: each URI's bound alone let a small
            // playlist grow into gigabytes (a 1 MiB value used 700 times).
            try addVariableBytes(max(0, expanded.count - raw.count))
            try expanded.withUnsafeBufferPointer { (ref) throws(ManifestError) in
                try rewriteURI(ref, replacing: range, role: role, source: .expansion)
            }
        } else {
            try rewriteURI(raw, replacing: range, role: role, source: linePrintable ? .printableLine : .unknown)
        }
    }

    /// What a URI of `role` carries after the gateway's parameters: the variables, for a
    /// playlist (`Options.variablesParameter`), counted toward what variables add to the
    /// playlist (`maxAddedByVariables`).
    mutating func extra(for role: HLSReference.Role) throws(ManifestError) -> [UInt8] {
        switch role {
        case .variant, .iFrameVariant, .imageVariant, .rendition, .renditionReport:
            try addVariableBytes(r.variablesItem.count)
            return r.variablesItem
        default:
            return []
        }
    }

    /// Counts `n` more bytes that variables add to the playlist; past the bound, an error.
    mutating func addVariableBytes(_ n: Int) throws(ManifestError) {
        addedByVariables += n
        if addedByVariables > r.options.maxAddedByVariables {
            throw ManifestError(
                .expansionTooLong, line: line, "variables add more than \(r.options.maxAddedByVariables) bytes to the playlist")
        }
    }

    /// Writes the proxy (or origin) URL for `ref` in place of the input bytes in `range`.
    /// `source`: what is known of `ref`'s bytes (`linePrintable`, or written by variables).
    mutating func rewriteURI(_ ref: ByteView, replacing range: Range<Int>, role: HLSReference.Role, source: URLBytes.Source) throws(ManifestError) {
        if ref.isEmpty {
            throw ManifestError(.emptyURI, line: line, "empty URI")
        }
        var target: ResolvedTarget
        do {
            switch try base.resolve(ref) {
            case .other: return
            case .http(let t): target = t
            }
            target.reference = ref
            target.source = source
            out.append(contentsOf: input.view(copied..<range.lowerBound))
            let isKey = role == .key || role == .sessionKey
            if isKey && r.options.keyURIs == .origin {
                r.writer.writeOrigin(target, into: &out)
            } else if target.normalizedPath == nil && target.pathHead.baseAddress == base.directory.baseAddress
                && target.authority.baseAddress == base.authority.baseAddress && target.pathHead.count > 0
            {
                // The common case, a path relative to the playlist's folder: the proxy URL up to
                // the end of that folder is the same for every such URI.
                out.append(contentsOf: directoryPrefix)
                try r.writer.write(afterPrefix: target, isKey: isKey, skippingAuthorityAndHead: true, extra: try extra(for: role), into: &out)
            } else {
                try r.writer.write(target, isKey: isKey, extra: try extra(for: role), into: &out)
            }
        } catch {
            throw ManifestError(error.code, line: line, error.message)
        }
        copied = range.upperBound
        if r.options.collectReferences {
            references.append(
                HLSReference(
                    role: role, origin: OriginURL(target), line: line,
                    byteRange: role == .segment || role == .map || role == .part ? pendingByteRange : nil,
                    duration: role == .segment ? pendingDuration : nil, gap: role == .segment && pendingGap))
        }
    }
}
