internal import CLibXML2

/// The gate every MPD passes before the rewriter reads it: libxml2 checks that the bytes are a
/// well-formed, namespace-well-formed XML document under swarmgate's safety rules
/// (`swarmgate_xml_check` in the C shim: a SAX parse that builds nothing, with network access,
/// DTD loading and entity substitution off). Only then does `MPDScanner` read positions from the
/// same bytes, which it can do simply because they are known to be well-formed.
///
/// Two lines of defence keep entity expansion (billion laughs) and external entities (XXE,
/// network DTDs) out: `XMLPreScan` refuses DOCTYPE and ENTITY declarations (and elements that would make libxml2 quadratic) before
/// libxml2 sees the bytes, and libxml2 reports any DTD it meets, which is refused too.
enum XMLGate {
    /// libxml2 does not limit a text node when no SAX handler receives it; this is its own
    /// limit without XML_PARSE_HUGE, applied by the scanner.
    static let maxTextLength = 10_000_000

    /// Throws `forbiddenDeclaration`, `xmlSyntax` or `xmlLimit`. `preScan: false`
    /// exists only so that tests can check the second line of defence on its own.
    static func check(_ input: [UInt8], preScan: Bool = true) throws(ManifestError) {
        LibXML.ensureInitialized()
        if preScan { try XMLPreScan.check(input) }
        guard input.count < Int(Int32.max) else {
            throw ManifestError(.inputTooLarge, "XML input is too large")
        }
        var result = swarmgate_xml_check_result()
        let status = input.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                swarmgate_xml_check(chars.baseAddress, Int32(chars.count), &result)
            }
        }
        if result.declarations != 0 {
            throw ManifestError(.forbiddenDeclaration, "a DOCTYPE or ENTITY declaration is not allowed in an MPD")
        }
        if status < 0 { throw ManifestError(.xmlLimit, "out of memory while checking the MPD") }
        if status == 0 { throw error(result) }
    }

    /// libxml2's first error as a ManifestError: its own limits (depth 256, names and attribute
    /// values of 10,000,000 bytes without XML_PARSE_HUGE) are `xmlLimit`, the rest `xmlSyntax`.
    private static func error(_ e: swarmgate_xml_check_result) -> ManifestError {
        var m = e.message
        let message = withUnsafeBytes(of: &m) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }.trimmingSuffix("\n")
        guard e.code != 0 else { return ManifestError(.xmlSyntax, "libxml2 could not parse the document") }
        let lowered = message.lowercased()
        let isLimit =
            e.code == Int32(XML_ERR_INTERNAL_ERROR.rawValue) || e.code == Int32(XML_ERR_NO_MEMORY.rawValue)
            || ["excessive", "huge", "too long", "too big", "too large"].contains { lowered.contains($0) }
        return ManifestError(isLimit ? .xmlLimit : .xmlSyntax, line: e.line > 0 ? Int(e.line) : nil, message)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ c: Character) -> String {
        var s = Substring(self)
        while s.last == c || s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
