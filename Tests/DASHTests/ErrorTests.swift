import Manifest
import Testing

/// Inputs that are refused, each with its named error.
@Suite struct ErrorTests {
    static let rewriter = DASHRewriter(mpdURL: try! OriginURL("http://o.example.com/m.mpd"))

    static func code(_ input: String) -> ManifestError.Code? {
        do {
            _ = try rewriter.rewrite(input)
            return nil
        } catch {
            return error.code
        }
    }

    @Test(arguments: [
        ("<Period/>", ManifestError.Code.notAnMPD),
        (#"<MPD xmlns="urn:other"/>"#, .notAnMPD),
        ("<html><body>not found</body></html>", .notAnMPD),
        ("", .xmlSyntax),
        ("#EXTM3U\n#EXT-X-ENDLIST\n", .xmlSyntax),
        ("<MPD><Period></MPD>", .xmlSyntax),
        ("<MPD>&undefined;</MPD>", .xmlSyntax),
        ("<MPD><p:x/></MPD>", .xmlSyntax),
        ("\u{FEFF}<MPD/>".replacingOccurrences(of: "\u{FEFF}", with: "\0"), .xmlSyntax),
        (#"<MPD><BaseURL>http://user:pw@cdn.example.com/</BaseURL></MPD>"#, .invalidURI),
        (#"<MPD><BaseURL>http:///nohost</BaseURL></MPD>"#, .invalidURI),
        (#"<MPD><BaseURL>http://c.example.com/?xresid=other</BaseURL></MPD>"#, .reservedParameter),
        (#"<MPD><BaseURL>http://c.example.com/</BaseURL><Period><AdaptationSet><SegmentTemplate media="$Number$.ts?xkey=1"/><Representation id="a" bandwidth="1"/></AdaptationSet></Period></MPD>"#, .reservedParameter),
    ])
    func refused(_ input: String, _ expected: ManifestError.Code) {
        #expect(Self.code(input) == expected)
    }

    @Test func syntaxErrorsNameTheLine() throws {
        let error = #expect(throws: ManifestError.self) { try Self.rewriter.rewrite("<MPD>\n<Period>\n</Perio>\n</MPD>") }
        #expect(error?.code == .xmlSyntax)
        #expect(error?.line == 3)
    }

    @Test func urlErrorsNameTheLine() throws {
        let error = #expect(throws: ManifestError.self) {
            try Self.rewriter.rewrite("<MPD>\n<Period>\n<BaseURL>http://u@h.example.com/</BaseURL></Period>\n</MPD>")
        }
        #expect(error?.code == .invalidURI)
        #expect(error?.line == 3)
    }

    @Test func earlyNamespaceSpellingIsAnMPD() throws {
        #expect(Self.code(#"<MPD xmlns="urn:mpeg:DASH:schema:MPD:2011"/>"#) == nil)
    }
}
