/// An MPD as the rewriter sees it: the input bytes, the elements it reads or edits (with their
/// byte positions, found by `MPDScanner`), and the edits made so far. Writing it out copies the
/// input and splices the edits in, so every byte that is not an edited URL stays as it was.
///
/// Elements that a rewrite copies onto a Representation (see `DASHRewriteRun.makeExplicit`)
/// are records too: they point at the bytes of the element they copy and have their own
/// attribute records (same bytes), so each copy's values can differ.
/// Used by one rewrite at a time, so it is not Sendable.
final class MPDDocument {
    let bytes: [UInt8]
    // Exclusivity is not checked at run time on these: a rewrite is single-threaded and never
    // holds an access across a call that could touch them again.
    @exclusivity(unchecked) var elements: [ScannedElement] = []
    @exclusivity(unchecked) var attributes: [ScannedAttribute] = []
    /// Namespace URIs met in the document, decoded; elements and attributes refer to them by
    /// index. The first two are always XLink's and XML's.
    var namespaces: [[UInt8]] = [
        Array("http://www.w3.org/1999/xlink".utf8), Array("http://www.w3.org/XML/1998/namespace".utf8),
    ]
    /// New raw (escaped) attribute values, by index into `attributes` (nil: unchanged).
    @exclusivity(unchecked) var newValues: [[UInt8]?] = []
    @exclusivity(unchecked) var edits: [ElementEdits] = []
    private var lineStarts: [Int]?
    /// Bytes of the input that copies will write again (see `maxCopiedBytes`).
    var copiedBytes = 0

    /// The most that making inherited elements explicit may add to the output, so that a
    /// small hostile MPD cannot turn into gigabytes.
    static let maxCopiedBytes = 64 << 20

    static let xlink: Int32 = 0
    static let xml: Int32 = 1

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The index of namespace `uri`, added if new.
    func namespace(_ uri: [UInt8]) -> Int32 {
        if let i = namespaces.firstIndex(of: uri) { return Int32(i) }
        namespaces.append(uri)
        return Int32(namespaces.count - 1)
    }

    /// 1-based line of the byte at `offset`.
    func line(of offset: Int) -> Int {
        if lineStarts == nil {
            var starts = [0]
            for (i, c) in bytes.enumerated() where c == ASCII.lf { starts.append(i + 1) }
            lineStarts = starts
        }
        let starts = lineStarts!
        var lo = 0
        var hi = starts.count
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if starts[mid] <= offset { lo = mid } else { hi = mid }
        }
        return lo + 1
    }

    /// Whether the bytes at `r` spell `s`.
    @inline(__always)
    func equal(_ r: Range<Int>, _ s: StaticString) -> Bool {
        guard r.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        var k = 0
        for i in r {
            if bytes[i] != p[k] { return false }
            k += 1
        }
        return true
    }

    /// The edits of element `e`, created on first use.
    func editsIndex(_ e: Int32) -> Int {
        if elements[Int(e)].edits < 0 {
            edits.append(ElementEdits())
            elements[Int(e)].edits = Int32(edits.count - 1)
        }
        return Int(elements[Int(e)].edits)
    }

    /// Links `child` into `parent` right after `after` (first when nil).
    func link(_ child: Int32, into parent: Int32, after: Int32?) {
        elements[Int(child)].parent = parent
        if let after {
            elements[Int(child)].nextSibling = elements[Int(after)].nextSibling
            elements[Int(after)].nextSibling = child
        } else {
            elements[Int(child)].nextSibling = elements[Int(parent)].firstChild
            elements[Int(parent)].firstChild = child
        }
    }

    /// Appends `child` as the last child of `parent`, or before `before`.
    func link(_ child: Int32, into parent: Int32, before: Int32?) {
        elements[Int(child)].parent = parent
        var previous: Int32 = -1
        var c = elements[Int(parent)].firstChild
        while c >= 0, c != before {
            previous = c
            c = elements[Int(c)].nextSibling
        }
        elements[Int(child)].nextSibling = c
        if previous < 0 { elements[Int(parent)].firstChild = child } else { elements[Int(previous)].nextSibling = child }
    }
}

/// One element, by byte positions in `MPDDocument.bytes`.
struct ScannedElement {
    /// "<"
    var start: Int
    var qname: Range<Int>
    var localName: Range<Int>
    /// Index into `MPDDocument.namespaces`; -1 for none.
    var namespace: Int32
    /// The start tag's ">", or the "/" of "/>".
    var tagClose: Int
    var isEmpty: Bool
    /// The "<" of the end tag (`tagClose` for an empty element).
    var contentEnd: Int
    /// After the element's last byte.
    var end: Int
    /// Into `MPDDocument.attributes`.
    var attributes: Range<Int>
    var parent: Int32
    var firstChild: Int32 = -1
    var nextSibling: Int32 = -1
    /// Into `MPDDocument.edits`; -1 for none.
    var edits: Int32 = -1
    /// A copy inserted by the rewriter: written where it is linked, not where its bytes are.
    var isInserted = false
    /// A copy of the start tag only: its content is its linked children, not its source's bytes.
    var isShallow = false
}

/// One attribute of a scanned element.
struct ScannedAttribute {
    var qname: Range<Int>
    var localName: Range<Int>
    /// -1: none (unprefixed attributes have no namespace).
    var namespace: Int32
    /// The raw value between the quotes.
    var value: Range<Int>
    var quote: UInt8
}

/// What the rewrite adds to one element (new values of its own attributes are in
/// `MPDDocument.newValues`).
struct ElementEdits {
    /// Attributes added at the end of the start tag (merged in from an outer level).
    var added: [AddedAttribute] = []
    /// New raw content (escaped character data, or a CDATA section).
    var content: [UInt8]?
}

/// An attribute added to a start tag, written `qname="value"`.
struct AddedAttribute {
    var qname: [UInt8]
    var localName: Range<Int>
    var namespace: Int32
    /// Escaped for double quotes.
    var value: [UInt8]
}
