/// A handle on one element of an `MPDDocument`: the reads and edits the rewriter needs, on
/// the input's bytes. Values are read decoded (`XMLText`) and written escaped.
struct MPDNode {
    let doc: MPDDocument
    let index: Int32

    init(_ doc: MPDDocument, _ index: Int32) {
        self.doc = doc
        self.index = index
    }

    var element: ScannedElement { doc.elements[Int(index)] }

    func hasLocalName(_ name: StaticString) -> Bool {
        doc.equal(element.localName, name)
    }

    /// Index into `MPDDocument.namespaces`; -1 for none.
    var namespace: Int32 { element.namespace }

    var namespaceURI: [UInt8]? { namespace >= 0 ? doc.namespaces[Int(namespace)] : nil }

    /// 1-based line of the element's start tag in the input.
    var line: Int { doc.line(of: element.start) }

    /// Calls `body` with each recorded element child, in order.
    func forEachElementChild(_ body: (MPDNode) throws(ManifestError) -> Void) throws(ManifestError) {
        var c = element.firstChild
        while c >= 0 {
            let next = doc.elements[Int(c)].nextSibling
            try body(MPDNode(doc, c))
            c = next
        }
    }

    /// The element's local name.
    var localName: ArraySlice<UInt8> { doc.bytes[element.localName] }

    // MARK: Attributes

    /// The unprefixed attribute `name` (every DASH attribute is one): its index in
    /// `MPDDocument.attributes`, or its index among the added ones.
    func lookup(_ name: StaticString) -> (source: Int?, added: Int?) {
        let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for a in element.attributes {
            let attr = doc.attributes[a]
            if attr.namespace < 0, attr.qname == attr.localName, doc.equal(attr.qname, name) { return (a, nil) }
        }
        if element.edits >= 0 {
            for (k, added) in doc.edits[Int(element.edits)].added.enumerated() where added.namespace < 0 && added.qname.elementsEqual(wanted) {
                return (nil, k)
            }
        }
        return (nil, nil)
    }

    func hasAttribute(_ name: StaticString) -> Bool {
        let found = lookup(name)
        return found.source != nil || found.added != nil
    }

    /// The current value of the attribute `name`, decoded, or nil when absent.
    func attribute(_ name: StaticString) -> [UInt8]? {
        let found = lookup(name)
        if let a = found.source { return attributeValue(at: a) }
        if let k = found.added { return XMLText.attributeValue(doc.edits[Int(element.edits)].added[k].value[...]) }
        return nil
    }

    /// Sets the attribute `name` to `value` (decoded), in place when it exists.
    func setAttribute(_ name: StaticString, _ value: [UInt8]) {
        let found = lookup(name)
        if let a = found.source { return setAttributeValue(at: a, value) }
        let e = doc.editsIndex(index)
        let escaped = XMLText.escapedAttribute(value, quote: ASCII.quote)
        if let k = found.added {
            doc.edits[e].added[k].value = escaped
        } else {
            let qname = Array(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            doc.edits[e].added.append(AddedAttribute(qname: qname, localName: 0..<qname.count, namespace: -1, value: escaped))
        }
    }

    /// The index of `xlink:href`, if the element has one.
    var xlinkHref: Int? {
        element.attributes.first { a in
            let attr = doc.attributes[a]
            return attr.namespace == MPDDocument.xlink && doc.equal(attr.localName, "href")
        }
    }

    /// The current value of attribute `a` of this element, decoded.
    func attributeValue(at a: Int) -> [UInt8] {
        if a < doc.newValues.count, let edited = doc.newValues[a] { return XMLText.attributeValue(edited[...]) }
        return XMLText.attributeValue(doc.bytes[doc.attributes[a].value])
    }

    func setAttributeValue(at a: Int, _ value: [UInt8]) {
        if doc.newValues.count < doc.attributes.count {
            doc.newValues.append(contentsOf: repeatElement(nil, count: doc.attributes.count - doc.newValues.count))
        }
        doc.newValues[a] = XMLText.escapedAttribute(value, quote: doc.attributes[a].quote)
    }

    // MARK: Text

    private var rawContent: ArraySlice<UInt8> {
        let el = element
        if el.edits >= 0, let content = doc.edits[Int(el.edits)].content { return content[...] }
        if el.isEmpty || el.isShallow { return [] }
        return doc.bytes[(el.tagClose + 1)..<el.contentEnd]
    }

    /// The element's text, decoded (`XMLText.content`).
    var text: [UInt8] { XMLText.content(rawContent) }

    /// Replaces the element's content with the text `value`, keeping the white space around
    /// the old text and a CDATA section if the text was one.
    func setText(_ value: [UInt8]) {
        let raw = rawContent
        var lead = raw.startIndex
        while lead < raw.endIndex, MPDScanner.isSpace(raw[lead]) { lead += 1 }
        var trail = raw.endIndex
        while trail > lead, MPDScanner.isSpace(raw[trail - 1]) { trail -= 1 }
        let core = raw[lead..<trail]
        var out = Array(raw[raw.startIndex..<lead])
        let isOneCDATA = core.starts(with: "<![CDATA[".utf8) && XMLText.find(core, "]]>", from: core.startIndex + 9) == trail - 3
        if isOneCDATA, XMLText.find(value[...], "]]>", from: 0) == value.count {
            out.append(contentsOf: "<![CDATA[".utf8)
            out.append(contentsOf: value)
            out.append(contentsOf: "]]>".utf8)
        } else if core.contains(UInt8(ascii: "<")) {
            // Other markup inside a URL element (a comment, say): the text replaces it all.
            out = XMLText.escapedText(value)
            doc.edits[doc.editsIndex(index)].content = out
            return
        } else {
            out.append(contentsOf: XMLText.escapedText(value))
        }
        out.append(contentsOf: raw[trail...])
        doc.edits[doc.editsIndex(index)].content = out
    }

    // MARK: Copies

    /// A copy of this element linked into `parent` before `before` (or last): the whole
    /// element when `deep`, else its start tag only. It carries this element's edits so far.
    @discardableResult
    func copy(into parent: MPDNode, before: MPDNode?, deep: Bool) -> MPDNode {
        let copy = duplicate(deep: deep)
        doc.elements[Int(copy)].isInserted = true
        doc.link(copy, into: parent.index, before: before?.index)
        return MPDNode(doc, copy)
    }

    /// A copy linked into `parent` right after `after` (first when nil), in constant time.
    func copy(into parent: MPDNode, after: MPDNode?, deep: Bool) -> MPDNode {
        let copy = duplicate(deep: deep)
        doc.elements[Int(copy)].isInserted = true
        doc.link(copy, into: parent.index, after: after?.index)
        return MPDNode(doc, copy)
    }

    private func duplicate(deep: Bool) -> Int32 {
        var record = element
        doc.copiedBytes += deep ? record.end - record.start : record.tagClose - record.start
        record.firstChild = -1
        record.nextSibling = -1
        let first = doc.attributes.count
        // Through a copy: appending a slice of the array to itself would copy the whole array.
        let attributes = Array(doc.attributes[element.attributes])
        doc.attributes.append(contentsOf: attributes)
        for (a, copy) in zip(element.attributes, first..<doc.attributes.count) where a < doc.newValues.count {
            if let value = doc.newValues[a] { setRawValue(copy, value) }
        }
        record.attributes = first..<doc.attributes.count
        record.isShallow = !deep || record.isShallow
        if record.edits >= 0 {
            var edit = doc.edits[Int(record.edits)]
            if !deep { edit.content = nil }
            doc.edits.append(edit)
            record.edits = Int32(doc.edits.count - 1)
        }
        doc.elements.append(record)
        let copy = Int32(doc.elements.count - 1)
        guard deep else { return copy }
        var c = element.firstChild
        var last: Int32 = -1
        while c >= 0 {
            let child = MPDNode(doc, c).duplicate(deep: true)
            doc.elements[Int(child)].parent = copy
            if last < 0 { doc.elements[Int(copy)].firstChild = child } else { doc.elements[Int(last)].nextSibling = child }
            last = child
            c = doc.elements[Int(c)].nextSibling
        }
        return copy
    }

    private func setRawValue(_ a: Int, _ raw: [UInt8]) {
        if doc.newValues.count < doc.attributes.count {
            doc.newValues.append(contentsOf: repeatElement(nil, count: doc.attributes.count - doc.newValues.count))
        }
        doc.newValues[a] = raw
    }

    /// Adds to this element each attribute of `other` that it lacks, except XLink ones (a
    /// remote element's link is not inherited). Used when an inherited segment element is
    /// made explicit on a Representation. Prefixes stay valid: `other` is an ancestor's child.
    func copyMissingAttributes(from other: MPDNode) {
        for a in other.element.attributes {
            let attr = doc.attributes[a]
            let qname = doc.bytes[attr.qname]
            // A prefix the copied attributes use may be declared on `other` itself: its
            // declaration comes along. A default namespace declaration would only rename.
            if attr.namespace == MPDDocument.xlink || qname.elementsEqual("xmlns".utf8) { continue }
            if has(attr) { continue }
            let value = XMLText.escapedAttribute(other.attributeValue(at: a), quote: ASCII.quote)
            let local = (attr.localName.lowerBound - attr.qname.lowerBound)..<(attr.localName.upperBound - attr.qname.lowerBound)
            doc.edits[doc.editsIndex(index)].added.append(
                AddedAttribute(qname: Array(qname), localName: local, namespace: attr.namespace, value: value))
        }
    }

    /// Whether this element has an attribute with the namespace and local name of `attr`.
    private func has(_ attr: ScannedAttribute) -> Bool {
        let qname = doc.bytes[attr.qname]
        if qname.starts(with: "xmlns:".utf8) {
            return element.attributes.contains { doc.bytes[doc.attributes[$0].qname].elementsEqual(qname) }
                || (element.edits >= 0 && doc.edits[Int(element.edits)].added.contains { $0.qname.elementsEqual(qname) })
        }
        let local = doc.bytes[attr.localName]
        for a in element.attributes {
            let mine = doc.attributes[a]
            if mine.namespace == attr.namespace, doc.bytes[mine.localName].elementsEqual(local) { return true }
        }
        guard element.edits >= 0 else { return false }
        return doc.edits[Int(element.edits)].added.contains { added in
            added.namespace == attr.namespace && added.qname[added.localName].elementsEqual(local)
        }
    }
}
