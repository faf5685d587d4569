/// Attribute values and element text as they stand in the bytes of a well-formed document,
/// decoded to what they mean, and values escaped back for writing (XML 1.0 sections 2.4, 2.11,
/// 3.3.3, 4.1, 4.6). Only the five predefined entities and character references can occur:
/// the gate refuses documents that declare others.
enum XMLText {
    /// An attribute value between its quotes: references replaced, and each white space
    /// character (CR LF as one) read as a space, as attribute-value normalization says.
    static func attributeValue(_ raw: ArraySlice<UInt8>) -> [UInt8] {
        guard raw.contains(where: { $0 == UInt8(ascii: "&") || $0 < 0x20 }) else { return Array(raw) }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        var run = i
        while i < raw.endIndex {
            let c = raw[i]
            guard c == UInt8(ascii: "&") || c < 0x20 else {
                i += 1
                continue
            }
            out.append(contentsOf: raw[run..<i])
            if c == UInt8(ascii: "&") {
                i = reference(raw, at: i, into: &out)
            } else {
                if c == ASCII.cr || c == ASCII.lf || c == ASCII.tab { out.append(ASCII.space) } else { out.append(c) }
                if c == ASCII.cr, i + 1 < raw.endIndex, raw[i + 1] == ASCII.lf { i += 1 }
                i += 1
            }
            run = i
        }
        out.append(contentsOf: raw[run..<raw.endIndex])
        return out
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
    static func reference(_ raw: ArraySlice<UInt8>, at i: Int, into out: inout [UInt8]) -> Int {
        guard let semicolon = raw[i...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            out.append(raw[i])
            return i + 1
        }
        let name = raw[(i + 1)..<semicolon]
        var scalar: UInt32?
        if name.elementsEqual("amp".utf8) {
            scalar = 0x26
        } else if name.elementsEqual("lt".utf8) {
            scalar = 0x3C
        } else if name.elementsEqual("gt".utf8) {
            scalar = 0x3E
        } else if name.elementsEqual("quot".utf8) {
            scalar = 0x22
        } else if name.elementsEqual("apos".utf8) {
            scalar = 0x27
        } else if name.first == UInt8(ascii: "#") {
            let hex = name.dropFirst().first == UInt8(ascii: "x")
            scalar = UInt32(String(decoding: name.dropFirst(hex ? 2 : 1), as: UTF8.self), radix: hex ? 16 : 10)
        }
        if let s = scalar, s < 0x80 {
            out.append(UInt8(s))
            return semicolon + 1
        }
        guard let scalar, let u = Unicode.Scalar(scalar) else {
            out.append(contentsOf: raw[i...semicolon])
            return semicolon + 1
        }
        out.append(contentsOf: String(Character(u)).utf8)
        return semicolon + 1
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
