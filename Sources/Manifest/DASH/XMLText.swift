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
        while i < raw.endIndex {
            let c = raw[i]
            if c == UInt8(ascii: "&") {
                i = reference(raw, at: i, into: &out)
                continue
            }
            if c == ASCII.cr || c == ASCII.lf || c == ASCII.tab {
                out.append(ASCII.space)
                if c == ASCII.cr, i + 1 < raw.endIndex, raw[i + 1] == ASCII.lf { i += 1 }
            } else {
                out.append(c)
            }
            i += 1
        }
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
        guard value.contains(where: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == quote || $0 < 0x20 }) else {
            return value
        }
        var out: [UInt8] = []
        out.reserveCapacity(value.count + 16)
        for c in value {
            switch c {
            case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
            case quote: out.append(contentsOf: (quote == ASCII.quote ? "&quot;" : "&apos;").utf8)
            case ASCII.tab: out.append(contentsOf: "&#9;".utf8)
            case ASCII.lf: out.append(contentsOf: "&#10;".utf8)
            case ASCII.cr: out.append(contentsOf: "&#13;".utf8)
            default: out.append(c)
            }
        }
        return out
    }

    /// `value` as character data.
    static func escapedText(_ value: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(value.count + 16)
        for c in value {
            switch c {
            case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): out.append(contentsOf: "&gt;".utf8)
            case ASCII.cr: out.append(contentsOf: "&#13;".utf8)
            default: out.append(c)
            }
        }
        return out
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
        switch String(decoding: name, as: UTF8.self) {
        case "lt": scalar = 0x3C
        case "gt": scalar = 0x3E
        case "amp": scalar = 0x26
        case "apos": scalar = 0x27
        case "quot": scalar = 0x22
        default:
            if name.first == UInt8(ascii: "#") {
                let hex = name.dropFirst().first == UInt8(ascii: "x")
                scalar = UInt32(String(decoding: name.dropFirst(hex ? 2 : 1), as: UTF8.self), radix: hex ? 16 : 10)
            }
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
