#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// A pass over the raw bytes before libxml2 sees them, refusing what must never reach it:
///
/// - any `<!DOCTYPE` or `<!ENTITY` outside comments, CDATA sections and processing
///   instructions: the first line of defence against entity expansion (billion laughs) and
///   external entities (XXE, network DTDs);
/// - an element with more than `maxAttributes` attributes, or more than `maxNamespaces`
///   namespace declarations in scope at once. libxml2 2.9 checks attributes for duplicates
///   and looks prefixes up by linear search, so 200,000 attributes on one element take it
///   15 seconds; no MPD needs more than a few dozen.
///
/// It is exact because the parser reads the bytes as UTF-8 whatever the declaration says, and
/// in well-formed XML every literal `<` starts markup (it cannot stand in text or in an
/// attribute value). Anything this lets through that is not markup is a syntax error anyway.
enum XMLPreScan {
    static let maxAttributes = 128
    static let maxNamespaces = 128

    static func check(_ input: [UInt8]) throws(ManifestError) {
        let outcome = input.withUnsafeBufferPointer { b in
            Result { () throws(Refusal) in try scan(b) }
        }
        guard case .failure(let refusal) = outcome else { return }
        let line = 1 + input[..<refusal.offset].reduce(0) { $0 + ($1 == ASCII.lf ? 1 : 0) }
        throw ManifestError(refusal.code, line: line, refusal.message)
    }

    /// What was refused, at which byte.
    private struct Refusal: Error {
        var code: ManifestError.Code
        var offset: Int
        var message: String
    }

    private static func scan(_ b: UnsafeBufferPointer<UInt8>) throws(Refusal) {
        guard let base = b.baseAddress else { return }
        let end = b.count
        var open: [Int] = []
        var inScope = 0
        var i = 0
        while i < end {
            // memchr finds the next "<" far faster than a byte loop on large text.
            guard let hit = memchr(base + i, Int32(UInt8(ascii: "<")), end - i) else { return }
            i = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
            let next = i + 1 < end ? b[i + 1] : 0
            if next == UInt8(ascii: "?") {
                i = skip(b, from: i + 2, past: "?>")
            } else if next == UInt8(ascii: "/") {
                inScope -= open.popLast() ?? 0
                i += 2
            } else if next != UInt8(ascii: "!") {
                let (after, attributes, namespaces, isEmpty) = startTag(b, at: i)
                if attributes > maxAttributes {
                    throw Refusal(code: .xmlLimit, offset: i, message: "an element has more than \(maxAttributes) attributes")
                }
                inScope += namespaces
                if inScope > maxNamespaces {
                    throw Refusal(code: .xmlLimit, offset: i, message: "more than \(maxNamespaces) namespace declarations in scope")
                }
                if isEmpty { inScope -= namespaces } else { open.append(namespaces) }
                i = after
            } else if starts(b, at: i, "<!--") {
                i = skip(b, from: i + 4, past: "-->")
            } else if starts(b, at: i, "<![CDATA[") {
                i = skip(b, from: i + 9, past: "]]>")
            } else if startsIgnoringCase(b, at: i, "<!doctype") || startsIgnoringCase(b, at: i, "<!entity") {
                throw Refusal(
                    code: .forbiddenDeclaration, offset: i,
                    message: "DOCTYPE and ENTITY declarations are not allowed in an MPD (they are how XXE and entity expansion attacks work)")
            } else {
                i += 1
            }
        }
    }

    /// Reads the start tag at `start` up to its `>` (quotes respected): the index after it,
    /// how many attributes and namespace declarations it has, and whether it ends with `/>`.
    private static func startTag(_ b: UnsafeBufferPointer<UInt8>, at start: Int) -> (Int, Int, Int, Bool) {
        var attributes = 0
        var namespaces = 0
        var nameStart = -1
        var i = start + 1
        while i < b.count {
            let c = b[i]
            if c == ASCII.quote || c == UInt8(ascii: "'") {
                guard let close = index(of: c, in: b, from: i + 1) else { return (b.count, attributes, namespaces, false) }
                i = close + 1
                nameStart = -1
                continue
            }
            if c == UInt8(ascii: ">") {
                return (i + 1, attributes, namespaces, i > start && b[i - 1] == UInt8(ascii: "/"))
            }
            if c == ASCII.space || c == ASCII.tab || c == ASCII.lf || c == ASCII.cr {
                nameStart = i + 1
            } else if c == ASCII.equals {
                attributes += 1
                if nameStart >= 0, starts(b, at: nameStart, "xmlns") { namespaces += 1 }
                nameStart = -1
            }
            i += 1
        }
        return (b.count, attributes, namespaces, false)
    }

    private static func index(of c: UInt8, in b: UnsafeBufferPointer<UInt8>, from i: Int) -> Int? {
        guard i < b.count, let base = b.baseAddress, let hit = memchr(base + i, Int32(c), b.count - i) else { return nil }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }

    private static func starts(_ b: UnsafeBufferPointer<UInt8>, at i: Int, _ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard b.count - i >= n else { return false }
        let p = s.utf8Start
        for k in 0..<n where b[i + k] != p[k] { return false }
        return true
    }

    private static func startsIgnoringCase(_ b: UnsafeBufferPointer<UInt8>, at i: Int, _ lowercased: StaticString) -> Bool {
        let n = lowercased.utf8CodeUnitCount
        guard b.count - i >= n else { return false }
        let p = lowercased.utf8Start
        for k in 0..<n where ASCII.lower(b[i + k]) != p[k] { return false }
        return true
    }

    /// The index after the first `terminator` at or after `from`, or the end.
    private static func skip(_ b: UnsafeBufferPointer<UInt8>, from: Int, past terminator: StaticString) -> Int {
        var i = from
        let first = terminator.utf8Start[0]
        while let hit = index(of: first, in: b, from: i) {
            if starts(b, at: hit, terminator) { return hit + terminator.utf8CodeUnitCount }
            i = hit + 1
        }
        return b.count
    }
}
