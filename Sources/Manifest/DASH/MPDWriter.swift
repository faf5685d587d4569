extension MPDDocument {
    /// The document with the edits spliced in: the input's bytes wherever nothing changed.
    func serialized() -> [UInt8] {
        guard let root = elements.first else { return bytes }
        var out: [UInt8] = []
        var growth = 0
        for (a, value) in newValues.enumerated() {
            if let value { growth += value.count - attributes[a].value.count }
        }
        // Copies made for Representations are not counted: they are rare and small.
        out.reserveCapacity(bytes.count + max(0, growth) + 4096)
        out.append(contentsOf: bytes[0..<root.start])
        write(0, into: &out)
        out.append(contentsOf: bytes[root.end...])
        return out
    }

    /// Writes element `e`: its start tag with edited and added attributes, then its content
    /// (new text, or the source bytes with each recorded child written in its place and
    /// inserted copies where they are linked), then its end tag.
    private func write(_ e: Int32, into out: inout [UInt8]) {
        let el = elements[Int(e)]
        let edit = el.edits >= 0 ? edits[Int(el.edits)] : nil
        var pos = el.start
        if !newValues.isEmpty {
            for a in el.attributes {
                guard let value = newValues[a] else { continue }
                let range = attributes[a].value
                out.append(contentsOf: bytes[pos..<range.lowerBound])
                out.append(contentsOf: value)
                pos = range.upperBound
            }
        }
        out.append(contentsOf: bytes[pos..<el.tagClose])
        for added in edit?.added ?? [] {
            out.append(ASCII.space)
            out.append(contentsOf: added.qname)
            out.append(contentsOf: "=\"".utf8)
            out.append(contentsOf: added.value)
            out.append(ASCII.quote)
        }
        let content = edit?.content
        if el.isShallow || el.isEmpty {
            guard content != nil || el.firstChild >= 0 else {
                if el.isShallow { out.append(contentsOf: "/>".utf8) } else { out.append(contentsOf: bytes[el.tagClose..<el.end]) }
                return
            }
            out.append(UInt8(ascii: ">"))
            if let content {
                out.append(contentsOf: content)
            } else {
                var c = el.firstChild
                while c >= 0 {
                    write(c, into: &out)
                    c = elements[Int(c)].nextSibling
                }
            }
            out.append(contentsOf: "</".utf8)
            out.append(contentsOf: bytes[el.qname])
            out.append(UInt8(ascii: ">"))
            return
        }
        out.append(UInt8(ascii: ">"))
        if let content {
            out.append(contentsOf: content)
        } else {
            pos = el.tagClose + 1
            var c = el.firstChild
            while c >= 0 {
                let child = elements[Int(c)]
                if !child.isInserted {
                    out.append(contentsOf: bytes[pos..<child.start])
                    pos = child.end
                }
                write(c, into: &out)
                c = child.nextSibling
            }
            out.append(contentsOf: bytes[pos..<el.contentEnd])
        }
        out.append(contentsOf: bytes[el.contentEnd..<el.end])
    }
}
