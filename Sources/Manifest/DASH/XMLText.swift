/// Attribute values and element text as they stand in the bytes of a well-formed document,
/// decoded to what they mean, and values escaped back for writing (XML 1.0 sections 2.4, 2.11,
/// 3.3.3, 4.1, 4.6). Only the five predefined entities and character references can occur:
/// the gate refuses documents that declare others.
enum XMLText {
    /// An attribute value between its quotes: references replaced, and each white space
    /// character (CR LF as one) read as a space, as attribute-value normalization says.
    static func attributeValue(_ raw: ArraySlice<UInt8>) -> [UInt8] {
        raw.withUnsafeBufferPointer { r in
            var i = 0
            while i < r.count && r[i] != UInt8(ascii: "&") && r[i] >= 0x20 { i += 1 }
            if i == r.count { return Array(r) }
            var out: [UInt8] = []
            out.reserveCapacity(r.count)
            var run = 0
            while i < r.count {
                let c = r[i]
                guard c == UInt8(ascii: "&") || c < 0x20 else {
                    i += 1
                    continue
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: r[run..<i]))
                if c == UInt8(ascii: "&") {
                    i = reference(r, at: i, into: &out)
                } else {
                    out.append(c == ASCII.cr || c == ASCII.lf || c == ASCII.tab ? ASCII.space : c)
                    if c == ASCII.cr, i + 1 < r.count, r[i + 1] == ASCII.lf { i += 1 }
                    i += 1
                }
                run = i
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: r[run..<r.count]))
            return out
        }
    }

    /// The text of an element's content: character data with references replaced and line
    /// ends read as LF, CDATA sections as they are; markup (comments, processing instructions,
    /// tags of child elements) skipped, as a DOM's `textContent` reads it.
    static func content(_ raw: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        var i = raw.startIndex
        while i < raw.endIndex {
            let c = raw[i]
            if c == UInt8(ascii: "<") {
                if raw[i...].starts(with: "<![CDATA[".utf8) {
                    let body = i + 9
                    let close = find(raw, "]]>", from: body)
                    out.append(contentsOf: raw[body..<close])
                    i = min(raw.endIndex, close + 3)
                } else {
                    let terminator = raw[i...].starts(with: "<!--".utf8) ? "-->" : raw[i...].starts(with: "<?".utf8) ? "?>" : ">"
                    i = min(raw.endIndex, find(raw, terminator, from: i + 1) + terminator.utf8.count)
                }
            } else if c == UInt8(ascii: "&") {
                i = reference(raw, at: i, into: &out)
            } else {
                if c == ASCII.cr {
                    out.append(ASCII.lf)
                    if i + 1 < raw.endIndex, raw[i + 1] == ASCII.lf { i += 1 }
                } else {
                    out.append(c)
                }
                i += 1
            }
        }
        return out
    }

    /// `value` as an attribute value delimited by `quote`.
    static func escapedAttribute(_ value: [UInt8], quote: UInt8) -> [UInt8] {
        escaped(value, special: quote == ASCII.quote ? doubleQuotedSpecial : singleQuotedSpecial) { c in
            switch c {
            case UInt8(ascii: "&"): return "&amp;"
            case UInt8(ascii: "<"): return "&lt;"
            case ASCII.quote: return "&quot;"
            case UInt8(ascii: "'"): return "&apos;"
            case ASCII.tab: return "&#9;"
            case ASCII.lf: return "&#10;"
            default: return "&#13;"
            }
        }
    }

    /// `value` as character data.
    static func escapedText(_ value: [UInt8]) -> [UInt8] {
        escaped(value, special: textSpecial) { c in
            switch c {
            case UInt8(ascii: "&"): return "&amp;"
            case UInt8(ascii: "<"): return "&lt;"
            case UInt8(ascii: ">"): return "&gt;"
            default: return "&#13;"
            }
        }
    }

    private static func table(_ bytes: String) -> [Bool] {
        var t = [Bool](repeating: false, count: 256)
        for c in bytes.utf8 { t[Int(c)] = true }
        return t
    }
    private static let doubleQuotedSpecial = table("&<\"\t\n\r")
    private static let singleQuotedSpecial = table("&<'\t\n\r")
    private static let textSpecial = table("&<>\r")

    /// `value` with each byte marked in `special` replaced, runs of other bytes copied whole.
    @inline(__always)
    private static func escaped(_ value: [UInt8], special: [Bool], _ replacement: (UInt8) -> StaticString) -> [UInt8] {
        special.withUnsafeBufferPointer { isSpecial in
            value.withUnsafeBufferPointer { v in
                var i = 0
                while i < v.count && !isSpecial[Int(v[i])] { i += 1 }
                if i == v.count { return value }
                var out: [UInt8] = []
                out.reserveCapacity(v.count + 32)
                var run = 0
                while i < v.count {
                    let c = v[i]
                    if isSpecial[Int(c)] {
                        out.append(contentsOf: UnsafeBufferPointer(rebasing: v[run..<i]))
                        let r = replacement(c)
                        out.append(contentsOf: UnsafeBufferPointer(start: r.utf8Start, count: r.utf8CodeUnitCount))
                        run = i + 1
                    }
                    i += 1
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: v[run..<v.count]))
                return out
            }
        }
    }

    /// Appends what the reference at `i` (`&name;` or `&#...;`) stands for; returns the index
    /// after it. Anything else (impossible after the gate) is kept as it is.
    static func reference(_ r: UnsafeBufferPointer<UInt8>, at i: Int, into out: inout [UInt8]) -> Int {
        @inline(__always) func at(_ k: Int) -> UInt8 { i + k < r.count ? r[i + k] : 0 }
        // The common ones first, without a search for the ";".
        if at(1) == UInt8(ascii: "a"), at(2) == UInt8(ascii: "m"), at(3) == UInt8(ascii: "p"), at(4) == UInt8(ascii: ";") {
            out.append(UInt8(ascii: "&"))
            return i + 5
        }
        var semicolon = i + 1
        while semicolon < r.count && semicolon - i < 12 && r[semicolon] != UInt8(ascii: ";") { semicolon += 1 }
        guard semicolon < r.count, r[semicolon] == UInt8(ascii: ";") else {
            out.append(r[i])
            return i + 1
        }
        let name = Array(UnsafeBufferPointer(rebasing: r[(i + 1)..<semicolon]))
        var scalar: UInt32?
        switch name {
        case Array("lt".utf8): scalar = 0x3C
        case Array("gt".utf8): scalar = 0x3E
        case Array("quot".utf8): scalar = 0x22
        case Array("apos".utf8): scalar = 0x27
        default:
            if name.first == UInt8(ascii: "#") {
                let hex = name.dropFirst().first == UInt8(ascii: "x")
                scalar = UInt32(String(decoding: name.dropFirst(hex ? 2 : 1), as: UTF8.self), radix: hex ? 16 : 10)
            }
        }
        guard let scalar, let u = Unicode.Scalar(scalar) else {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: r[i...semicolon]))
            return semicolon + 1
        }
        out.append(contentsOf: String(Character(u)).utf8)
        return semicolon + 1
    }

    static func reference(_ raw: ArraySlice<UInt8>, at i: Int, into out: inout [UInt8]) -> Int {
        raw.withUnsafeBufferPointer { r in
            reference(r, at: i - raw.startIndex, into: &out) + raw.startIndex
        }
    }

    /// The index of the first `terminator` at or after `from` in `raw`, or its end.
    static func find(_ raw: ArraySlice<UInt8>, _ terminator: String, from: Int) -> Int {
        let t = Array(terminator.utf8)
        var i = from
        while i + t.count <= raw.endIndex {
            if raw[i] == t[0] && raw[i..<(i + t.count)].elementsEqual(t) { return i }
            i += 1
        }
        return raw.endIndex
    }
}
