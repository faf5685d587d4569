internal import CLibXML2

/// A libxml2 document parsed under swarmgate's safety rules, freed when the value goes away.
/// Parsing refuses DOCTYPE and ENTITY declarations before libxml2 sees the bytes
/// (`XMLDeclarationScan`), reads the bytes as UTF-8 whatever the XML declaration says (so that
/// the scan sees what libxml2 sees) and turns libxml2's limits into `xmlLimit`.
final class XMLDocument {
    private let doc: xmlDocPtr
    /// Whether the input began with an XML declaration (`<?xml ...?>`).
    let hadDeclaration: Bool

    private init(doc: xmlDocPtr, hadDeclaration: Bool) {
        self.doc = doc
        self.hadDeclaration = hadDeclaration
    }

    deinit {
        xmlFreeDoc(doc)
    }

    /// Parses `input`; throws `forbiddenDeclaration`, `xmlSyntax` or `xmlLimit`.
    /// `scanDeclarations: false` exists only so that tests can check the second line of defence
    /// (libxml2's options and the DTD check after parsing) on its own.
    static func parse(_ input: [UInt8], scanDeclarations: Bool = true) throws(ManifestError) -> XMLDocument {
        LibXML.ensureInitialized()
        if scanDeclarations { try XMLDeclarationScan.check(input) }
        guard input.count < Int(Int32.max) else {
            throw ManifestError(.inputTooLarge, "XML input is too large")
        }
        var first = swarmgate_xml_error()
        let parsed: xmlDocPtr? = withUnsafeMutablePointer(to: &first) { sink in
            guard let ctxt = swarmgate_xml_new_parser(sink) else { return nil }
            defer { xmlFreeParserCtxt(ctxt) }
            return input.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    xmlCtxtReadMemory(
                        ctxt, chars.baseAddress, Int32(chars.count), nil, "UTF-8",
                        swarmgate_xml_safe_parse_options())
                }
            }
        }
        guard let parsed, first.code == 0 else {
            if let parsed { xmlFreeDoc(parsed) }
            throw Self.error(first)
        }
        let document = XMLDocument(doc: parsed, hadDeclaration: Self.startsWithDeclaration(input))
        // Second line: the scan above should make this impossible.
        if parsed.pointee.intSubset != nil || parsed.pointee.extSubset != nil {
            throw ManifestError(.forbiddenDeclaration, "a DOCTYPE declaration is not allowed in an MPD")
        }
        return document
    }

    /// The root element, if the document has one.
    var root: XMLNode? {
        xmlDocGetRootElement(doc).map(XMLNode.init)
    }

    /// The document as UTF-8 bytes, as parsed and edited, without reformatting. The XML
    /// declaration is written when the input had one.
    func serialized() throws(ManifestError) -> [UInt8] {
        guard let buffer = xmlBufferCreate() else {
            throw ManifestError(.xmlLimit, "out of memory while writing the MPD")
        }
        defer { xmlBufferFree(buffer) }
        guard let save = xmlSaveToBuffer(buffer, "UTF-8", swarmgate_xml_save_options(hadDeclaration ? 1 : 0)) else {
            throw ManifestError(.xmlLimit, "cannot write the MPD")
        }
        let written = xmlSaveDoc(save, doc)
        let closed = xmlSaveClose(save)
        guard written >= 0, closed >= 0, let content = xmlBufferContent(buffer) else {
            throw ManifestError(.xmlLimit, "cannot write the MPD")
        }
        return Array(UnsafeBufferPointer(start: content, count: Int(xmlBufferLength(buffer))))
    }

    /// `<?xml` then white space, after an optional UTF-8 byte order mark.
    static func startsWithDeclaration(_ b: [UInt8]) -> Bool {
        let start = b.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard b.count >= start + 6, b[start...].starts(with: "<?xml".utf8) else { return false }
        let next = b[start + 5]
        return next == ASCII.space || next == ASCII.tab || next == ASCII.cr || next == ASCII.lf
    }

    /// libxml2's first error as a ManifestError: its own limits (depth 256, text and names of
    /// 10,000,000 bytes without XML_PARSE_HUGE) are `xmlLimit`, everything else `xmlSyntax`.
    private static func error(_ e: swarmgate_xml_error) -> ManifestError {
        var m = e.message
        let message = withUnsafeBytes(of: &m) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }.trimmingCharacters(in: [" ", "\n"])
        let line = e.line > 0 ? Int(e.line) : nil
        let lowered = message.lowercased()
        let isLimit =
            e.code == XML_ERR_INTERNAL_ERROR.rawValue || e.code == XML_ERR_NO_MEMORY.rawValue
            || ["excessive", "huge", "too long", "too big", "too large"].contains { lowered.contains($0) }
        if e.code == 0 {
            return ManifestError(.xmlSyntax, "libxml2 could not parse the document")
        }
        return ManifestError(isLimit ? .xmlLimit : .xmlSyntax, line: line, message)
    }
}

extension String {
    /// The string without the given characters at either end.
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
