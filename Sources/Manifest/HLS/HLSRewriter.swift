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
        /// Whether to list every rewritten URI in the result.
        public var collectReferences = false
        /// Inputs larger than this are refused (SPEC: playlists at most 16 MiB).
        public var maxInputSize = 16 << 20
        /// Lines longer than this are refused.
        public var maxLineLength = 1 << 20
        /// A URI longer than this after variable substitution is refused.
        public var maxExpandedURILength = 1 << 20

        public init() {}
    }

    public let playlistURL: OriginURL
    public let options: Options
    let base: ResolutionBase
    let writer: ProxyWriter

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
    }

    /// Rewrites `input`, or throws a `ManifestError` naming the line at fault. Never returns a
    /// partial result.
    public func rewrite(_ input: [UInt8]) throws(ManifestError) -> HLSRewrite {
        var run = HLSRewriteRun(rewriter: self, input: input)
        try run.run()
        return HLSRewrite(
            output: run.out, kind: run.kind, variables: run.definedVariables, references: run.references)
    }

    /// Rewrites text.
    public func rewrite(_ text: String) throws(ManifestError) -> HLSRewrite {
        try rewrite(Array(text.utf8))
    }
}

/// The state of one rewrite.
struct HLSRewriteRun {
    let r: HLSRewriter
    let input: [UInt8]
    var out: [UInt8] = []
    /// Input before this index has been copied to `out`.
    var copied = 0
    var line = 0

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
    var pendingDuration: Double?
    var queryItems: [(item: [UInt8], name: [UInt8])]?

    init(rewriter: HLSRewriter, input: [UInt8]) {
        r = rewriter
        self.input = input
    }

    mutating func run() throws(ManifestError) {
        let b = input
        let count = b.count
        guard count <= r.options.maxInputSize else {
            throw ManifestError(.inputTooLarge, "playlist is \(count) bytes, over the limit of \(r.options.maxInputSize)")
        }
        if count >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
            throw ManifestError(.byteOrderMark, line: 1, "playlist starts with a UTF-8 byte order mark")
        }
        out.reserveCapacity(count + count / 2 + 256)
        var i = 0
        while i < count {
            line += 1
            // Find the end of the line, validating every byte on the way.
            var j = i
            var contentEnd = -1
            while j < count {
                let c = b[j]
                if c >= 0x20 && c < 0x7F {
                    j += 1
                } else if c == ASCII.lf {
                    break
                } else if c == ASCII.tab {
                    j += 1
                } else if c == ASCII.cr && j + 1 < count && b[j + 1] == ASCII.lf {
                    contentEnd = j
                    j += 1
                    break
                } else if c >= 0x80 {
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
        out.append(contentsOf: b[copied..<count])
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
            if b[range].starts(with: "#EXTM3U".utf8) {
                sawHeader = true
            } else if start < end && (b[start] != ASCII.hash || b[start...].starts(with: "#EXT".utf8)) {
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
    }

    mutating func tag(_ range: Range<Int>) throws(ManifestError) {
        let b = input
        var nameEnd = range.lowerBound + 1
        while nameEnd < range.upperBound && b[nameEnd] != ASCII.colon { nameEnd += 1 }
        guard let rule = HLSTagRule.table[b[(range.lowerBound + 1)..<nameEnd]] else { return }
        if rule.kind == .master { sawMasterTag = true }
        let value = min(nameEnd + 1, range.upperBound)..<range.upperBound
        switch rule.action {
        case .none:
            break
        case .streamInf:
            nextURIIsVariant = true
        case .extinf:
            if r.options.collectReferences {
                let comma = b[value].firstIndex(of: ASCII.comma) ?? value.upperBound
                pendingDuration = Double(String(decoding: b[value.lowerBound..<comma], as: UTF8.self))
            }
        case .byteRange:
            pendingByteRange = try byteRange(value, allowImplicitOffset: true)
        case .define:
            try define(value)
        case .key(let role):
            let attrs = try AttributeList(b, value, line: line)
            if let method = attrs.first("METHOD", in: b), b[method.value].elementsEqual("NONE".utf8) { return }
            if let uri = attrs.first("URI", in: b) {
                try rewriteAttribute(uri, role: role)
            }
        case .uris(let names):
            let attrs = try AttributeList(b, value, line: line)
            for (name, role) in names {
                guard let uri = attrs.first(name, in: b) else { continue }
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
        let at = b[range].firstIndex(of: ASCII.at)
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
            defined = Array(b[v.value])
            if containsReference(to: b[n.value], in: defined[...]) {
                throw ManifestError(
                    .recursiveVariable, line: line,
                    "variable '\(String(decoding: b[n.value], as: UTF8.self))' refers to itself")
            }
        } else if let n = attrs.first("IMPORT", in: b) {
            nameAttr = n
            let name = String(decoding: b[n.value], as: UTF8.self)
            guard let v = r.options.importedVariables[name] else {
                throw ManifestError(
                    .undefinedVariable, line: line, "IMPORT of '\(name)', which the parent playlist does not define")
            }
            defined = Array(v.utf8)
        } else if let n = attrs.first("QUERYPARAM", in: b) {
            nameAttr = n
            if queryItems == nil { queryItems = InheritQuery.all.items(of: r.playlistURL.query) }
            let name = b[n.value]
            guard let item = queryItems?.first(where: { $0.name.elementsEqual(name) }) else {
                throw ManifestError(
                    .undefinedVariable, line: line,
                    "QUERYPARAM '\(String(decoding: name, as: UTF8.self))' is not in the playlist URL's query")
            }
            defined = item.item.count > item.name.count ? Array(item.item[(item.name.count + 1)...]) : []
        } else {
            throw ManifestError(.invalidVariable, line: line, "EXT-X-DEFINE needs NAME, IMPORT or QUERYPARAM")
        }
        let name = Array(b[nameAttr.value])
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

    func containsReference(to name: ArraySlice<UInt8>, in s: ArraySlice<UInt8>) -> Bool {
        var found = false
        forEachReference(in: s) { r in if r.elementsEqual(name) { found = true } }
        return found
    }

    /// Calls `body` with the name of each well-formed `{$name}` in `s`.
    func forEachReference(in s: ArraySlice<UInt8>, _ body: (ArraySlice<UInt8>) -> Void) {
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
    func substitute(_ s: ArraySlice<UInt8>) throws(ManifestError) -> [UInt8] {
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
        let raw = input[range]
        var expanded: [UInt8] = []
        var ref = raw
        if raw.count > 1 && raw.contains(UInt8(ascii: "$")) {
            expanded = try substitute(raw)
            ref = expanded[...]
        }
        if ref.isEmpty {
            throw ManifestError(.emptyURI, line: line, "empty URI")
        }
        let target: ResolvedTarget
        do {
            switch try r.base.resolve(ref) {
            case .other: return
            case .http(let t): target = t
            }
            out.append(contentsOf: input[copied..<range.lowerBound])
            if (role == .key || role == .sessionKey) && r.options.keyURIs == .origin {
                r.writer.writeOrigin(target, into: &out)
            } else {
                try r.writer.write(target, isKey: role == .key || role == .sessionKey, into: &out)
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
                    duration: role == .segment ? pendingDuration : nil))
        }
    }
}
