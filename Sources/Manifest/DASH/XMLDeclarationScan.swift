#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// The first line of defence against entity expansion (billion laughs) and external entities
/// (XXE, network DTDs): a pass over the raw bytes that refuses any `<!DOCTYPE` or `<!ENTITY`
/// outside comments, CDATA sections and processing instructions, before libxml2 sees them.
///
/// It is exact because the parser reads the bytes as UTF-8 whatever the declaration says, and
/// in well-formed XML every literal `<` starts markup (it cannot stand in text or in an
/// attribute value). Anything this lets through that is not markup is a syntax error anyway.
enum XMLDeclarationScan {
    static func check(_ input: [UInt8]) throws(ManifestError) {
        let found: Int? = input.withUnsafeBufferPointer { b in
            let end = b.count
            guard let base = b.baseAddress else { return nil }
            var i = 0
            while i < end {
                // memchr finds the next "<" far faster than a byte loop on large text.
                guard let hit = memchr(base + i, Int32(UInt8(ascii: "<")), end - i) else { return nil }
                i = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
                let next = i + 1 < end ? b[i + 1] : 0
                if next == UInt8(ascii: "?") {
                    i = skip(b, from: i + 2, past: "?>")
                } else if next != UInt8(ascii: "!") {
                    i += 1
                } else if starts(b, at: i, "<!--") {
                    i = skip(b, from: i + 4, past: "-->")
                } else if starts(b, at: i, "<![CDATA[") {
                    i = skip(b, from: i + 9, past: "]]>")
                } else if startsIgnoringCase(b, at: i, "<!doctype") || startsIgnoringCase(b, at: i, "<!entity") {
                    return i
                } else {
                    i += 1
                }
            }
            return nil
        }
        if let found {
            let line = 1 + input[..<found].reduce(0) { $0 + ($1 == ASCII.lf ? 1 : 0) }
            throw ManifestError(
                .forbiddenDeclaration, line: line,
                "DOCTYPE and ENTITY declarations are not allowed in an MPD (they are how XXE and entity expansion attacks work)")
        }
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
        while i < b.count {
            if b[i] == first && starts(b, at: i, terminator) { return i + terminator.utf8CodeUnitCount }
            i += 1
        }
        return b.count
    }
}
