internal import CLibXML2

/// An element of an `XMLDocument`: the few reads and edits the MPD rewriter needs, on
/// libxml2's own buffers (no Swift strings per node). Valid while its document lives; used by
/// one rewrite at a time, so it is not Sendable.
struct XMLNode {
    let pointer: xmlNodePtr

    init(_ pointer: xmlNodePtr) {
        self.pointer = pointer
    }

    /// The element's name without prefix.
    func hasLocalName(_ name: StaticString) -> Bool {
        Self.equal(pointer.pointee.name, name)
    }

    /// The element's namespace URI, if it has one.
    var namespaceURI: UnsafePointer<UInt8>? {
        pointer.pointee.ns.flatMap { UnsafePointer($0.pointee.href) }
    }

    /// Whether the element is in the namespace `uri` (nil: no namespace).
    func isInNamespace(_ uri: UnsafePointer<UInt8>?) -> Bool {
        let mine = namespaceURI
        if mine == uri { return true }
        guard let mine, let uri else { return false }
        return xmlStrEqual(mine, uri) != 0
    }

    /// 1-based line of the element in the input.
    var line: Int {
        Int(xmlGetLineNo(pointer))
    }

    /// Calls `body` with each element child, in order. Children added by `body` after the
    /// current one are visited too.
    func forEachElementChild(_ body: (XMLNode) throws(ManifestError) -> Void) throws(ManifestError) {
        var c = pointer.pointee.children
        while let node = c {
            c = node.pointee.next
            if node.pointee.type == XML_ELEMENT_NODE { try body(XMLNode(node)) }
        }
    }

    /// The first element child named `name` (any namespace), if any.
    func firstChild(named name: StaticString) -> XMLNode? {
        var c = pointer.pointee.children
        while let node = c {
            if node.pointee.type == XML_ELEMENT_NODE, Self.equal(node.pointee.name, name) { return XMLNode(node) }
            c = node.pointee.next
        }
        return nil
    }

    /// Whether an element child has the same local name as `other`.
    func hasChild(namedLike other: XMLNode) -> Bool {
        var c = pointer.pointee.children
        while let node = c {
            if node.pointee.type == XML_ELEMENT_NODE, xmlStrEqual(node.pointee.name, other.pointer.pointee.name) != 0 {
                return true
            }
            c = node.pointee.next
        }
        return false
    }

    // MARK: Attributes without a namespace (every DASH attribute)

    func hasAttribute(_ name: StaticString) -> Bool {
        xmlHasNsProp(pointer, name.utf8Start, nil) != nil
    }

    /// The value of the attribute `name` (no namespace), or nil when absent.
    func attribute(_ name: StaticString) -> [UInt8]? {
        xmlHasNsProp(pointer, name.utf8Start, nil).map(Self.value)
    }

    /// Sets the attribute `name` (no namespace) to `value`, in place when it exists.
    func setAttribute(_ name: StaticString, _ value: [UInt8]) {
        Self.withCString(value) { xmlSetNsProp(pointer, nil, name.utf8Start, $0) }
    }

    // MARK: Namespaced attributes

    /// The attribute `localName` in the namespace `uri`, as an opaque handle.
    func attribute(_ localName: StaticString, namespace uri: StaticString) -> XMLAttribute? {
        xmlHasNsProp(pointer, localName.utf8Start, uri.utf8Start).map(XMLAttribute.init)
    }

    // MARK: Text content

    /// The text of the element (its text and CDATA children, concatenated).
    var text: [UInt8] {
        var out: [UInt8] = []
        var c = pointer.pointee.children
        while let node = c {
            if node.pointee.type == XML_TEXT_NODE || node.pointee.type == XML_CDATA_SECTION_NODE,
                let content = node.pointee.content
            {
                out.append(contentsOf: UnsafeBufferPointer(start: content, count: Int(xmlStrlen(content))))
            }
            c = node.pointee.next
        }
        return out
    }

    /// Replaces the element's text with `value`, written as plain text (no entity parsing);
    /// comments and other children stay.
    func setText(_ value: [UInt8]) {
        var c = pointer.pointee.children
        var first: xmlNodePtr?
        while let node = c {
            c = node.pointee.next
            guard node.pointee.type == XML_TEXT_NODE || node.pointee.type == XML_CDATA_SECTION_NODE else { continue }
            if first == nil {
                first = node
            } else {
                xmlUnlinkNode(node)
                xmlFreeNode(node)
            }
        }
        if let first {
            Self.withCString(value) { xmlNodeSetContent(first, $0) }
        } else {
            value.withUnsafeBufferPointer { xmlNodeAddContentLen(pointer, $0.baseAddress, Int32($0.count)) }
        }
    }

    // MARK: Building

    /// A copy of this element with its attributes and, when `deep`, its descendants, appended
    /// to `parent` before `before` (or last). Namespaces are matched to the ones in scope at
    /// `parent`, so no declaration is repeated.
    func copy(into parent: XMLNode, before: XMLNode?, deep: Bool) -> XMLNode? {
        var result: xmlNodePtr?
        let status = xmlDOMWrapCloneNode(
            nil, pointer.pointee.doc, pointer, &result, parent.pointer.pointee.doc, parent.pointer, deep ? 1 : 0, 0)
        guard status == 0, let result else { return nil }
        if let before {
            xmlAddPrevSibling(before.pointer, result)
        } else if let last = parent.pointer.pointee.last, last.pointee.type == XML_TEXT_NODE, last != parent.pointer.pointee.children {
            // Before the indentation that closes the parent, so the layout stays tidy.
            xmlAddPrevSibling(last, result)
        } else {
            xmlAddChild(parent.pointer, result)
        }
        return XMLNode(result)
    }

    /// Copies onto this element each attribute of `other` that it lacks, except XLink ones
    /// (a remote element's link is not inherited). Used when an inherited segment element is
    /// made explicit on a Representation.
    func copyMissingAttributes(from other: XMLNode) {
        var a = other.pointer.pointee.properties
        while let attr = a {
            a = attr.pointee.next
            let uri = attr.pointee.ns.flatMap { UnsafePointer($0.pointee.href) }
            if let uri, Self.equal(uri, XMLAttribute.xlinkNamespace) { continue }
            if xmlHasNsProp(pointer, attr.pointee.name, uri) != nil { continue }
            var ns: xmlNsPtr?
            if let uri {
                ns = xmlSearchNsByHref(pointer.pointee.doc, pointer, uri)
                    ?? xmlNewNs(pointer, uri, attr.pointee.ns.pointee.prefix)
            }
            Self.withCString(Self.value(attr)) { xmlSetNsProp(pointer, ns, attr.pointee.name, $0) }
        }
    }

    // MARK: Helpers

    static func value(_ attr: xmlAttrPtr) -> [UInt8] {
        if let t = attr.pointee.children, t.pointee.next == nil, t.pointee.type == XML_TEXT_NODE, let content = t.pointee.content {
            return Array(UnsafeBufferPointer(start: content, count: Int(xmlStrlen(content))))
        }
        guard let joined = xmlNodeListGetString(attr.pointee.doc, attr.pointee.children, 1) else { return [] }
        defer { swarmgate_xml_free(joined) }
        return Array(UnsafeBufferPointer(start: joined, count: Int(xmlStrlen(joined))))
    }

    @discardableResult
    static func withCString<R>(_ value: [UInt8], _ body: (UnsafePointer<UInt8>) -> R) -> R {
        var z = value
        z.append(0)
        return z.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    static func equal(_ a: UnsafePointer<UInt8>?, _ b: StaticString) -> Bool {
        guard let a else { return false }
        return xmlStrEqual(a, b.utf8Start) != 0
    }
}

/// One attribute of an element, for the attributes that are found by namespace (`xlink:href`).
struct XMLAttribute {
    static let xlinkNamespace: StaticString = "http://www.w3.org/1999/xlink"

    let pointer: xmlAttrPtr

    var value: [UInt8] { XMLNode.value(pointer) }

    /// The element the attribute belongs to.
    var owner: XMLNode { XMLNode(pointer.pointee.parent) }

    /// Sets the value, keeping the attribute where it is.
    func setValue(_ value: [UInt8]) {
        XMLNode.withCString(value) { xmlSetNsProp(pointer.pointee.parent, pointer.pointee.ns, pointer.pointee.name, $0) }
    }
}
