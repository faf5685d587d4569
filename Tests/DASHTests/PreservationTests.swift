import Manifest
import Testing

/// What is not a URL survives byte for byte: namespaces, prefixes, unknown elements and
/// attributes, attribute order, comments, CDATA, references, the XML declaration (or its absence).
@Suite struct PreservationTests {
    static let gateway: DASHRewriter = {
        var o = DASHRewriter.Options()
        o.xresid = try! XResID("s")
        return DASHRewriter(mpdURL: try! OriginURL("http://o.example.com/m.mpd"), options: o)
    }()

    @Test func everythingButURLsSurvives() throws {
        let input = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- produced by packager 1.2 -->
            <dash:MPD xmlns:dash="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" xmlns:ext="urn:example:ext" xmlns:xlink="http://www.w3.org/1999/xlink" type="static" ext:flavour="x" minBufferTime="PT2S">
              <ext:Custom a="1" z="2"><ext:Inner>keep &amp; this</ext:Inner></ext:Custom>
              <dash:Period id="p1" ext:note="n">
                <!-- video -->
                <dash:AdaptationSet zeta="1" alpha="2" mimeType="video/mp4">
                  <dash:ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" cenc:default_KID="34e5db32-8625-47cd-ba06-68fca0655a72"/>
                  <dash:ContentProtection schemeIdUri="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"><cenc:pssh>AAAANHBzc2g=</cenc:pssh></dash:ContentProtection>
                  <dash:Representation id="v" bandwidth="1" ext:x="y"><dash:BaseURL><![CDATA[v.mp4]]></dash:BaseURL><dash:Label>A &lt; B</dash:Label></dash:Representation>
                </dash:AdaptationSet>
                <dash:EventStream xlink:href="events.xml" schemeIdUri="urn:example"/>
              </dash:Period>
            </dash:MPD>
            """
        let out = String(decoding: try Self.gateway.rewrite(input).output, as: UTF8.self)
        let expected = input
            .replacingOccurrences(of: "<![CDATA[v.mp4]]>", with: "<![CDATA[http://127.0.0.1:8080/hls.vod.p2p.com/o.example.com/v.mp4?xresid=s]]>")
            .replacingOccurrences(
                of: #"xlink:href="events.xml""#,
                with: #"xlink:href="http://127.0.0.1:8080/hls.vod.p2p.com/o.example.com/events.xml?xresid=s""#)
        #expect(out == expected)
    }

    @Test func namespaceDeclarationsReferencesAndQuotesStayAsWritten() throws {
        let input = """
            <MPD type="static" xmlns="urn:mpeg:dash:schema:mpd:2011" profiles='p&#x3A;1' xmlns:cenc="urn:mpeg:cenc:2013">\r
              <Period   id = "1" ><AdaptationSet><Representation id='a' bandwidth="1"><BaseURL>a.mp4?x=1&amp;y=&#50;</BaseURL></Representation></AdaptationSet></Period>\r
            </MPD>
            """
        let out = String(decoding: try Self.gateway.rewrite(input).output, as: UTF8.self)
        #expect(out == input.replacingOccurrences(
            of: "<BaseURL>a.mp4?x=1&amp;y=&#50;</BaseURL>",
            with: "<BaseURL>http://127.0.0.1:8080/hls.vod.p2p.com/o.example.com/a.mp4?x=1&amp;y=2&amp;xresid=s</BaseURL>"))
    }

    @Test func singleQuotedValuesAreEscapedForTheirQuote() throws {
        let input = #"<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><Period><AdaptationSet><SegmentTemplate media='it&apos;s-$Number$.m4s?a="b"'/><Representation id="r" bandwidth="1"/></AdaptationSet></Period></MPD>"#
        let out = String(decoding: try Self.gateway.rewrite(input).output, as: UTF8.self)
        #expect(out.contains(#"media='http://127.0.0.1:8080/hls.vod.p2p.com/o.example.com/it&apos;s-$Number$.m4s?a="b"&amp;xresid=s'"#))
    }

    @Test func noDeclarationIsAddedWhenThereWasNone() throws {
        let out = String(decoding: try Self.gateway.rewrite(#"<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><BaseURL>a/</BaseURL></MPD>"#).output, as: UTF8.self)
        #expect(out == #"<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><BaseURL>http://127.0.0.1:8080/hls.vod.p2p.com/o.example.com/a/?xresid=s</BaseURL></MPD>"#)
    }

    @Test func bytesAreReadAsUTF8WhateverTheDeclarationSays() throws {
        // The declaration stays as written; the bytes must be UTF-8 (ASCII-compatible reading
        // is what keeps the DOCTYPE scan exact: "UTF-7" here would otherwise hide one).
        let input = "<?xml version=\"1.0\" encoding=\"UTF-7\"?>\n<MPD><ProgramInformation><Title>caf\u{e9} +ADw-</Title></ProgramInformation></MPD>"
        #expect(String(decoding: try Self.gateway.rewrite(input).output, as: UTF8.self) == input)
        let latin1: [UInt8] = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><MPD><Title>caf".utf8) + [0xE9] + Array("</Title></MPD>".utf8)
        #expect(throws: ManifestError.self) { try Self.gateway.rewrite(latin1) }
    }

    @Test func referencesAreListedWhenAsked() throws {
        var o = DASHRewriter.Options()
        o.collectReferences = true
        let url = try OriginURL("http://o.example.com/vod/m.mpd")
        let result = try DASHRewriter(mpdURL: url, options: o).rewrite(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="$Number$.m4s" initialization="i.mp4"/>
              <Representation id="v" bandwidth="1"><BaseURL>v/</BaseURL></Representation></AdaptationSet></Period>
            """))
        #expect(result.references.map(\.role) == [.baseURL, .media, .initialization])
        #expect(result.references.map(\.origin) == ["http://o.example.com/vod/v/", "http://o.example.com/vod/v/$Number$.m4s", "http://o.example.com/vod/v/i.mp4"])
        #expect(result.references[0].representationID == nil)
        // The default xresid is derived from the MPD's host and path.
        #expect(String(decoding: result.output, as: UTF8.self).contains("xresid=\(XResID(derivedFrom: url).value)"))
    }
}
