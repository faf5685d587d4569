#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// Finds the byte positions of the elements the rewriter needs in a document that
/// `XMLGate` has found well-formed: the root, every child of the structural DASH elements
/// (MPD, Period, AdaptationSet, Representation, SegmentBase, SegmentList, SegmentTemplate),
/// and any element with an `xlink:href`. Everything else (a SegmentTimeline's thousands of `S`,
/// DRM children, extensions) is skipped over without a record, so memory stays a small
/// multiple of the interesting part. One pass, no recursion; namespaces are resolved as XML
/// Namespaces says.
struct MPDScanner {
    private var doc: MPDDocument
    private var stack: [Open] = []
    /// In-scope namespace bindings: prefix (empty for the default namespace) and URI index.
    private var bindings: [(prefix: Range<Int>, uri: Int32)] = []
    private var pending: [ScannedAttribute] = []
    private var dash: Int32 = -1

    private struct Open {
        var record: Int32
        var nearestRecord: Int32
        var isStructural: Bool
        var bindings: Int
        var lastChild: Int32 = -1
    }

    private init(_ bytes: [UInt8]) {
        doc = MPDDocument(bytes: bytes)
        doc.elements.reserveCapacity(bytes.count / 128)
        doc.attributes.reserveCapacity(bytes.count / 64)
    }

    static func scan(_ bytes: [UInt8]) throws(ManifestError) -> MPDDocument {
        var scanner = MPDScanner(bytes)
        let outcome = bytes.withUnsafeBufferPointer { b in
            Result { () throws(ManifestError) in try scanner.run(b) }
        }
        try outcome.get()
        return scanner.doc
    }

    private mutating func run(_ b: UnsafeBufferPointer<UInt8>) throws(ManifestError) {
        guard let base = b.baseAddress else { throw Self.malformed }
        let n = b.count
        var i = 0
        while i < n {
            guard let hit = memchr(base + i, Int32(UInt8(ascii: "<")), n - i) else {
                try Self.checkText(n - i, at: i)
                break
            }
            let lt = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
            try Self.checkText(lt - i, at: i)
            i = lt
            switch Self.at(b, i + 1) {
            case UInt8(ascii: "!"):
                if Self.starts(b, i, "<!--") {
                    i = Self.after(b, "-->", from: i + 4)
                } else if Self.starts(b, i, "<![CDATA[") {
                    let close = Self.after(b, "]]>", from: i + 9)
                    try Self.checkText(close - i, at: i)
                    i = close
                } else {
                    throw ManifestError(.forbiddenDeclaration, "a declaration is not allowed in an MPD")
                }
            case UInt8(ascii: "?"):
                i = Self.after(b, "?>", from: i + 2)
            case UInt8(ascii: "/"):
                i = try endTag(b, at: i)
            default:
                i = try startTag(b, at: i)
            }
        }
        guard stack.isEmpty, !doc.elements.isEmpty else { throw Self.malformed }
    }

    private mutating func endTag(_ b: UnsafeBufferPointer<UInt8>, at i: Int) throws(ManifestError) -> Int {
        guard let open = stack.popLast(), let gt = Self.index(of: UInt8(ascii: ">"), in: b, from: i) else { throw Self.malformed }
        if open.record >= 0 {
            doc.elements[Int(open.record)].contentEnd = i
            doc.elements[Int(open.record)].end = gt + 1
        }
        bindings.removeLast(bindings.count - open.bindings)
        return gt + 1
    }

    private mutating func startTag(_ b: UnsafeBufferPointer<UInt8>, at start: Int) throws(ManifestError) -> Int {
        var i = start + 1
        let qname = Self.name(b, &i)
        guard !qname.isEmpty else { throw Self.malformed }
        pending.removeAll(keepingCapacity: true)
        var tagClose = -1
        var isEmpty = false
        while i < b.count {
            Self.skipSpace(b, &i)
            let c = Self.at(b, i)
            if c == UInt8(ascii: ">") {
                tagClose = i
                break
            }
            if c == UInt8(ascii: "/") {
                tagClose = i
                isEmpty = true
                break
            }
            let aname = Self.name(b, &i)
            Self.skipSpace(b, &i)
            guard !aname.isEmpty, Self.at(b, i) == ASCII.equals else { throw Self.malformed }
            i += 1
            Self.skipSpace(b, &i)
            let quote = Self.at(b, i)
            guard quote == ASCII.quote || quote == UInt8(ascii: "'"), let close = Self.index(of: quote, in: b, from: i + 1) else {
                throw Self.malformed
            }
            pending.append(
                ScannedAttribute(qname: aname, localName: Self.localPart(b, aname), namespace: -1, value: (i + 1)..<close, quote: quote))
            i = close + 1
        }
        guard tagClose >= 0 else { throw Self.malformed }
        let after = isEmpty ? tagClose + 2 : tagClose + 1

        let scopeStart = bindings.count
        for a in pending where Self.equal(b, a.qname, "xmlns") || Self.hasPrefix(b, a.qname, "xmlns:") {
            let prefix = Self.equal(b, a.qname, "xmlns") ? a.qname.upperBound..<a.qname.upperBound : a.localName
            let uri = XMLText.attributeValue(doc.bytes[a.value])
            bindings.append((prefix, uri.isEmpty ? -1 : doc.namespace(uri)))
        }
        let isRoot = doc.elements.isEmpty
        let parent = stack.last
        var hasXLink = false
        for k in pending.indices where pending[k].localName.lowerBound > pending[k].qname.lowerBound {
            pending[k].namespace = resolve(b, prefixOf: pending[k].qname, isAttribute: true)
            if pending[k].namespace == MPDDocument.xlink, Self.equal(b, pending[k].localName, "href") { hasXLink = true }
        }
        let isRecorded = isRoot || parent?.isStructural == true || hasXLink
        let localName = Self.localPart(b, qname)
        let namespace = resolve(b, prefixOf: qname, isAttribute: false)
        if isRoot { dash = namespace }
        var record: Int32 = -1
        if isRecorded {
            record = Int32(doc.elements.count)
            let first = doc.attributes.count
            doc.attributes.append(contentsOf: pending)
            let parentRecord = parent?.nearestRecord ?? -1
            doc.elements.append(
                ScannedElement(
                    start: start, qname: qname, localName: localName, namespace: namespace, tagClose: tagClose,
                    isEmpty: isEmpty, contentEnd: tagClose, end: after, attributes: first..<doc.attributes.count,
                    parent: parentRecord))
            try link(record, toParentRecord: parentRecord)
        }
        let isStructural = isRecorded && namespace == dash && (isRoot || Self.isStructuralName(b, localName))
        if isEmpty {
            bindings.removeLast(bindings.count - scopeStart)
        } else {
            stack.append(Open(record: record, nearestRecord: isRecorded ? record : (parent?.nearestRecord ?? -1), isStructural: isStructural, bindings: scopeStart))
        }
        return after
    }

    /// Links a new record as the last child of its nearest recorded ancestor.
    private mutating func link(_ record: Int32, toParentRecord parent: Int32) throws(ManifestError) {
        guard parent >= 0 else { return }
        guard let k = stack.lastIndex(where: { $0.record == parent }) else { throw Self.malformed }
        let last = stack[k].lastChild
        if last < 0 { doc.elements[Int(parent)].firstChild = record } else { doc.elements[Int(last)].nextSibling = record }
        stack[k].lastChild = record
    }

    private func resolve(_ b: UnsafeBufferPointer<UInt8>, prefixOf qname: Range<Int>, isAttribute: Bool) -> Int32 {
        let colon = (qname.lowerBound..<qname.upperBound).first { b[$0] == ASCII.colon }
        guard let colon else {
            if isAttribute { return -1 }
            return bindings.last { $0.prefix.isEmpty }?.uri ?? -1
        }
        let prefix = qname.lowerBound..<colon
        if Self.equal(b, prefix, "xml") { return MPDDocument.xml }
        return bindings.last { Self.equal(b, $0.prefix, prefix) }?.uri ?? -1
    }

    // MARK: Bytes

    static let malformed = ManifestError(.xmlSyntax, "unexpected markup")

    static func checkText(_ length: Int, at offset: Int) throws(ManifestError) {
        if length > XMLGate.maxTextLength {
            throw ManifestError(.xmlLimit, "a text node is longer than \(XMLGate.maxTextLength) bytes")
        }
    }

    static let structuralNames: [StaticString] = [
        "Period", "AdaptationSet", "Representation", "SegmentBase", "SegmentList", "SegmentTemplate",
    ]

    static func isStructuralName(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Bool {
        structuralNames.contains { equal(b, r, $0) }
    }

    @inline(__always) static func at(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt8 {
        i < b.count ? b[i] : 0
    }

    @inline(__always) static func isSpace(_ c: UInt8) -> Bool {
        c == ASCII.space || c == ASCII.lf || c == ASCII.tab || c == ASCII.cr
    }

    static func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int) {
        while i < b.count, isSpace(b[i]) { i += 1 }
    }

    /// A name: up to white space, "=", "/" or ">".
    static func name(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Range<Int> {
        let start = i
        while i < b.count {
            let c = b[i]
            if isSpace(c) || c == ASCII.equals || c == UInt8(ascii: "/") || c == UInt8(ascii: ">") { break }
            i += 1
        }
        return start..<i
    }

    static func localPart(_ b: UnsafeBufferPointer<UInt8>, _ qname: Range<Int>) -> Range<Int> {
        guard let colon = (qname.lowerBound..<qname.upperBound).first(where: { b[$0] == ASCII.colon }) else { return qname }
        return (colon + 1)..<qname.upperBound
    }

    static func index(of c: UInt8, in b: UnsafeBufferPointer<UInt8>, from i: Int) -> Int? {
        guard i < b.count, let base = b.baseAddress, let hit = memchr(base + i, Int32(c), b.count - i) else { return nil }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }

    static func starts(_ b: UnsafeBufferPointer<UInt8>, _ i: Int, _ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard b.count - i >= n else { return false }
        for k in 0..<n where b[i + k] != s.utf8Start[k] { return false }
        return true
    }

    /// The index after the first `terminator` at or after `from`, or the end.
    static func after(_ b: UnsafeBufferPointer<UInt8>, _ terminator: StaticString, from: Int) -> Int {
        var i = from
        let first = terminator.utf8Start[0]
        while let hit = index(of: first, in: b, from: i) {
            if starts(b, hit, terminator) { return hit + terminator.utf8CodeUnitCount }
            i = hit + 1
        }
        return b.count
    }

    static func equal(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ s: StaticString) -> Bool {
        guard r.count == s.utf8CodeUnitCount else { return false }
        for k in 0..<r.count where b[r.lowerBound + k] != s.utf8Start[k] { return false }
        return true
    }

    static func equal(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ other: Range<Int>) -> Bool {
        guard r.count == other.count else { return false }
        for k in 0..<r.count where b[r.lowerBound + k] != b[other.lowerBound + k] { return false }
        return true
    }

    static func hasPrefix(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ s: StaticString) -> Bool {
        r.count > s.utf8CodeUnitCount && starts(b, r.lowerBound, s)
    }
}
