/// An HLS attribute list (`NAME=VALUE,NAME="quoted"`, RFC 8216bis 4.2) read as ranges into the
/// line's bytes, so that one value can be replaced without touching the rest.
struct AttributeList {
    struct Attribute {
        var name: Range<Int>
        /// Inside the quotes, for a quoted string.
        var value: Range<Int>
        var isQuoted: Bool
    }

    var attributes: [Attribute] = []

    /// Reads the attributes of `b[range]`. An unterminated quoted string is an error; anything
    /// else odd (a name without `=`) is skipped, as players do.
    init(_ b: ByteView, _ range: Range<Int>, line: Int) throws(ManifestError) {
        var i = range.lowerBound
        let end = range.upperBound
        while i < end {
            while i < end && (b[i] == ASCII.space || b[i] == ASCII.comma) { i += 1 }
            let nameStart = i
            while i < end && b[i] != ASCII.equals && b[i] != ASCII.comma { i += 1 }
            guard i < end, b[i] == ASCII.equals else { continue }
            let name = nameStart..<i
            i += 1
            if i < end && b[i] == ASCII.quote {
                let valueStart = i + 1
                var j = valueStart
                while j < end && b[j] != ASCII.quote { j += 1 }
                guard j < end else {
                    throw ManifestError(.malformedAttributes, line: line, "unterminated quoted string")
                }
                attributes.append(Attribute(name: name, value: valueStart..<j, isQuoted: true))
                i = j + 1
            } else {
                let valueStart = i
                while i < end && b[i] != ASCII.comma { i += 1 }
                attributes.append(Attribute(name: name, value: valueStart..<i, isQuoted: false))
            }
        }
    }

    /// The attribute `name` if present; more than one is an error (RFC 8216bis 4.2 forbids it),
    /// for a URI one above all: a player that reads the last would fetch what the gateway did
    /// not rewrite.
    func only(_ name: StaticString, in b: ByteView, line: Int) throws(ManifestError) -> Attribute? {
        var found: Attribute?
        for a in attributes where name.withUTF8Buffer({ n in b[a.name].elementsEqual(n) }) {
            guard found == nil else {
                throw ManifestError(.malformedAttributes, line: line, "attribute \(name) appears more than once")
            }
            found = a
        }
        return found
    }

    func first(_ name: StaticString, in b: ByteView) -> Attribute? {
        attributes.first { a in
            name.withUTF8Buffer { n in b[a.name].elementsEqual(n) }
        }
    }
}
