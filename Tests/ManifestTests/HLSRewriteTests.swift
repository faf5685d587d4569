import Testing

@testable import Manifest

/// Rewrites `text` as if fetched from `base`, with the gateway at http://gw and xresid "s1".
func rewriteHLS(
    _ text: String, base: String = "https://cdn.example.com/vod/movie/index.m3u8?token=T1",
    configure: (inout HLSRewriter.Options) -> Void = { _ in }
) throws -> HLSRewrite {
    var options = HLSRewriter.Options()
    options.gateway = "http://gw"
    options.xresid = try XResID("s1")
    options.collectReferences = true
    configure(&options)
    return try HLSRewriter(playlistURL: try OriginURL(base), options: options).rewrite(text)
}

func rewrittenText(_ text: String, base: String = "https://cdn.example.com/vod/movie/index.m3u8?token=T1",
    configure: (inout HLSRewriter.Options) -> Void = { _ in }) throws -> String {
    String(decoding: try rewriteHLS(text, base: base, configure: configure).output, as: UTF8.self)
}

func expectError(_ code: ManifestError.Code, line: Int? = nil, _ text: String,
    configure: (inout HLSRewriter.Options) -> Void = { _ in }, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let out = try rewrittenText(text, configure: configure)
        Issue.record("expected \(code), got output:\n\(out)", sourceLocation: sourceLocation)
    } catch let error as ManifestError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        if let line { #expect(error.line == line, "\(error)", sourceLocation: sourceLocation) }
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("HLS: every URI-bearing tag")
struct HLSTagTests {
    static let seg = "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie"

    @Test func segmentsBecomeProxyURLs() throws {
        let out = try rewrittenText("#EXTM3U\n#EXTINF:4,\nseg1.ts\n#EXTINF:4,\nseg2.ts?x=1\n")
        #expect(out == "#EXTM3U\n#EXTINF:4,\n\(Self.seg)/seg1.ts?xresid=s1&xhttps=1\n#EXTINF:4,\n\(Self.seg)/seg2.ts?x=1&xresid=s1&xhttps=1\n")
    }

    /// In a path, bytes a player percent-encodes (a space, non-ASCII, `"<>`, `` `{} ``) are
    /// written encoded, as players ask for them; in a query, only what a request line cannot
    /// carry (a space, non-ASCII): the rest of a query stays verbatim (SPEC). `%` and what was
    /// encoded stays as it is. The reference's origin URL (read-ahead's key) is the same.
    @Test func bytesAPlayerEncodesAreWrittenEncoded() throws {
        let r = try rewriteHLS(
            "#EXTM3U\n#EXTINF:4,\nsp ace/第1集.ts?t=a b\"c\n#EXTINF:4,\na%20b{1}.ts?q={x}`\n#EXTINF:4,\n/abs/<x>.ts\n",
            base: "https://cdn.example.com/vod/my movie/index.m3u8?token=T 1")
        #expect(String(decoding: r.output, as: UTF8.self) == """
            #EXTM3U
            #EXTINF:4,
            http://gw/hls.vod.p2p.com/cdn.example.com/vod/my%20movie/sp%20ace/%E7%AC%AC1%E9%9B%86.ts?t=a%20b"c&xresid=s1&xhttps=1
            #EXTINF:4,
            http://gw/hls.vod.p2p.com/cdn.example.com/vod/my%20movie/a%20b%7B1%7D.ts?q={x}`&xresid=s1&xhttps=1
            #EXTINF:4,
            http://gw/hls.vod.p2p.com/cdn.example.com/abs/%3Cx%3E.ts?xresid=s1&xhttps=1

            """)
        #expect(r.references.map(\.origin.string) == [
            "https://cdn.example.com/vod/my%20movie/sp%20ace/%E7%AC%AC1%E9%9B%86.ts?t=a%20b\"c",
            "https://cdn.example.com/vod/my%20movie/a%20b%7B1%7D.ts?q={x}`",
            "https://cdn.example.com/abs/%3Cx%3E.ts",
        ])
        // A query on a line of printable ASCII is searched for a space alone; one with a tab,
        // or expanded from a variable (here to a byte a space search would miss), byte by byte.
        let plain = try rewriteHLS(
            "#EXTM3U\n#EXT-X-DEFINE:NAME=\"v\",VALUE=\"é\"\n#EXTINF:4,\na.ts?t=x y&u=1\n#EXTINF:4,\nb.ts?t=x\ty\n#EXTINF:4,\nc.ts?t={$v}\n",
            base: "https://cdn.example.com/v/index.m3u8")
        #expect(plain.references.map(\.origin.string) == [
            "https://cdn.example.com/v/a.ts?t=x%20y&u=1", "https://cdn.example.com/v/b.ts?t=x%09y", "https://cdn.example.com/v/c.ts?t=%C3%A9",
        ])
        #expect(String(decoding: plain.output, as: UTF8.self).contains("/v/a.ts?t=x%20y&u=1&xresid="))
        let origin = try OriginURL("http://cdn.example.com/a b/é.ts?x=y z")
        #expect(origin.path == "/a%20b/%C3%A9.ts" && origin.query == "x=y%20z")
        #expect(try OriginURL(origin.string) == origin, "encoding twice changes nothing")
    }

    /// A dot written "%2e" is a dot (WHATWG, as players read it): `%2e%2e` climbs a folder. It
    /// was kept as a segment, so a player of the rewritten playlist climbed out of the origin's
    /// path into the proxy URL's host segment, or asked for another object than read-ahead
    /// prepared.
    @Test func encodedDotSegmentsAreRemovedAsPlayersRemoveThem() throws {
        let r = try rewriteHLS(
            "#EXTM3U\n#EXTINF:4,\n%2e%2e/%2E%2e/x/seg.ts\n#EXTINF:4,\na/.%2e/%2e/b.ts\n#EXTINF:4,\n%2e%2ex/c.ts\n",
            base: "https://cdn.example.com/vod/movie/index.m3u8")
        #expect(r.references.map(\.origin.string) == [
            "https://cdn.example.com/x/seg.ts", "https://cdn.example.com/vod/movie/b.ts", "https://cdn.example.com/vod/movie/%2e%2ex/c.ts",
        ])
        #expect(String(decoding: r.output, as: UTF8.self).contains("http://gw/hls.vod.p2p.com/cdn.example.com/x/seg.ts?xresid=s1&xhttps=1\n"))
        #expect(try OriginURL("http://h/a/b/%2E%2E/c.ts").path == "/a/c.ts")
        #expect(try ProxyURL(requestTarget: "/hls.vod.p2p.com/h/a/b/%2e%2e/c.ts").origin.path == "/a/c.ts")
    }

    /// EXT-X-GAP marks the next segment only: it is still rewritten, and known as a gap.
    @Test func aGapMarksTheNextSegmentOnly() throws {
        let r = try rewriteHLS("#EXTM3U\n#EXTINF:4,\na.ts\n#EXT-X-GAP\n#EXTINF:4,\nb.ts\n#EXTINF:4,\nc.ts\n", base: "https://cdn.example.com/v/index.m3u8")
        #expect(r.references.map(\.gap) == [false, true, false])
        #expect(String(decoding: r.output, as: UTF8.self).contains("#EXT-X-GAP\n#EXTINF:4,\nhttp://gw/hls.vod.p2p.com/cdn.example.com/v/b.ts?xresid=s1&xhttps=1\n"))
    }

    /// A backslash in an http(s) reference's path is a slash (WHATWG, as browsers, hls.js and
    /// dash.js read it): a playlist written on Windows (`segs\a.ts`) names the object players
    /// ask for, and `..\` climbs a folder. It was written as it was, and a browser's player of
    /// the rewritten playlist climbed out of the origin's path into the proxy URL's host segment.
    @Test func backslashesInPathsAreSlashesAsPlayersReadThem() throws {
        let r = try rewriteHLS(
            "#EXTM3U\n#EXTINF:4,\nsegs\\a.ts?t=1\\2\n#EXTINF:4,\n..\\..\\..\\other.example.com\\x.ts\n#EXTINF:4,\n\\abs\\c.ts\n",
            base: "https://cdn.example.com/vod/movie/index.m3u8")
        #expect(r.references.map(\.origin.string) == [
            "https://cdn.example.com/vod/movie/segs/a.ts?t=1\\2", "https://cdn.example.com/other.example.com/x.ts", "https://cdn.example.com/abs/c.ts",
        ])
        let written = String(decoding: r.output, as: UTF8.self)
        #expect(written.contains("http://gw/hls.vod.p2p.com/cdn.example.com/other.example.com/x.ts?xresid=s1&xhttps=1\n"))
        #expect(written.contains("http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/segs/a.ts?t=1\\2&xresid=s1&xhttps=1\n"), "a query keeps its bytes")
    }

    @Test(arguments: [
        ("#EXT-X-MAP:URI=\"init.mp4\"", "#EXT-X-MAP:URI=\"\(seg)/init.mp4?xresid=s1&xhttps=1\"", HLSReference.Role.map),
        ("#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"720@0\"", "#EXT-X-MAP:URI=\"\(seg)/init.mp4?xresid=s1&xhttps=1\",BYTERANGE=\"720@0\"", .map),
        ("#EXT-X-PART:DURATION=1.0,URI=\"p1.mp4\",INDEPENDENT=YES", "#EXT-X-PART:DURATION=1.0,URI=\"\(seg)/p1.mp4?xresid=s1&xhttps=1\",INDEPENDENT=YES", .part),
        ("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p2.mp4\"", "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(seg)/p2.mp4?xresid=s1&xhttps=1\"", .preloadHint),
        ("#EXT-X-RENDITION-REPORT:URI=\"../low/i.m3u8\",LAST-MSN=5", "#EXT-X-RENDITION-REPORT:URI=\"http://gw/hls.vod.p2p.com/cdn.example.com/vod/low/i.m3u8?xresid=s1&xhttps=1\",LAST-MSN=5", .renditionReport),
        ("#EXT-X-DATERANGE:ID=\"ad\",START-DATE=\"2020-01-01T00:00:00Z\",X-ASSET-URI=\"ad.m3u8\"", "#EXT-X-DATERANGE:ID=\"ad\",START-DATE=\"2020-01-01T00:00:00Z\",X-ASSET-URI=\"\(seg)/ad.m3u8?xresid=s1&xhttps=1\"", .asset),
        ("#EXT-X-DATERANGE:ID=\"ad\",X-ASSET-LIST=\"/list.json\"", "#EXT-X-DATERANGE:ID=\"ad\",X-ASSET-LIST=\"http://gw/hls.vod.p2p.com/cdn.example.com/list.json?xresid=s1&xhttps=1\"", .asset),
    ])
    func mediaPlaylistTags(line: String, expected: String, role: HLSReference.Role) throws {
        let r = try rewriteHLS("#EXTM3U\n#EXT-X-TARGETDURATION:4\n\(line)\n")
        #expect(String(decoding: r.output, as: UTF8.self) == "#EXTM3U\n#EXT-X-TARGETDURATION:4\n\(expected)\n")
        #expect(r.references.map(\.role) == [role])
        #expect(r.kind == .media)
    }

    /// Found by the fuzzer: a tag with two URI attributes in the opposite order from its rule
    /// table (X-ASSET-LIST before X-ASSET-URI) trapped, because the second rewrite started
    /// before the output already written. Both are rewritten, in place, in line order.
    @Test func aTagsURIAttributesAreRewrittenInLineOrder() throws {
        let line = "#EXT-X-DATERANGE:ID=\"ad\",X-ASSET-LIST=\"l.json\",X-ASSET-URI=\"ad.m3u8\""
        let r = try rewriteHLS("#EXTM3U\n#EXT-X-TARGETDURATION:4\n\(line)\n")
        let expected = "#EXT-X-DATERANGE:ID=\"ad\",X-ASSET-LIST=\"\(Self.seg)/l.json?xresid=s1&xhttps=1\",X-ASSET-URI=\"\(Self.seg)/ad.m3u8?xresid=s1&xhttps=1\""
        #expect(String(decoding: r.output, as: UTF8.self) == "#EXTM3U\n#EXT-X-TARGETDURATION:4\n\(expected)\n")
        #expect(r.references.map { $0.origin.string } == ["https://cdn.example.com/vod/movie/l.json", "https://cdn.example.com/vod/movie/ad.m3u8"])
    }

    @Test(arguments: [
        ("#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI=\"if.m3u8\"", "#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI=\"\(seg)/if.m3u8?xresid=s1&xhttps=1\"", HLSReference.Role.iFrameVariant),
        ("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",URI=\"en/a.m3u8\"", "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",URI=\"\(seg)/en/a.m3u8?xresid=s1&xhttps=1\"", .rendition),
        ("#EXT-X-SESSION-DATA:DATA-ID=\"com.x\",URI=\"data.json\"", "#EXT-X-SESSION-DATA:DATA-ID=\"com.x\",URI=\"\(seg)/data.json?xresid=s1&xhttps=1\"", .sessionData),
        ("#EXT-X-CONTENT-STEERING:SERVER-URI=\"/steer?v=1\",PATHWAY-ID=\"A\"", "#EXT-X-CONTENT-STEERING:SERVER-URI=\"http://gw/hls.vod.p2p.com/cdn.example.com/steer?v=1&xresid=s1&xhttps=1\",PATHWAY-ID=\"A\"", .steering),
        ("#EXT-X-IMAGE-STREAM-INF:BANDWIDTH=1,RESOLUTION=320x180,URI=\"img.m3u8\"", "#EXT-X-IMAGE-STREAM-INF:BANDWIDTH=1,RESOLUTION=320x180,URI=\"\(seg)/img.m3u8?xresid=s1&xhttps=1\"", .imageVariant),
    ])
    func masterPlaylistTags(line: String, expected: String, role: HLSReference.Role) throws {
        let r = try rewriteHLS("#EXTM3U\n\(line)\n")
        #expect(String(decoding: r.output, as: UTF8.self) == "#EXTM3U\n\(expected)\n")
        #expect(r.references.map(\.role) == [role])
        #expect(r.kind == .master)
    }

    @Test func variantsBecomeProxyPlaylistURLs() throws {
        let r = try rewriteHLS("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,CODECS=\"avc1.4d401f,mp4a.40.2\"\nlow/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1600000\nhttp://other.example/high.m3u8\n")
        #expect(r.kind == .master)
        #expect(r.references.map(\.role) == [.variant, .variant])
        #expect(String(decoding: r.output, as: UTF8.self) == """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=800000,CODECS="avc1.4d401f,mp4a.40.2"
            \(Self.seg)/low/index.m3u8?xresid=s1&xhttps=1
            #EXT-X-STREAM-INF:BANDWIDTH=1600000
            http://gw/hls.vod.p2p.com/other.example/high.m3u8?xresid=s1

            """)
    }

    @Test func keysAreOriginURLsByDefault() throws {
        let out = try rewrittenText("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"../keys/k1?kid=1\",IV=0x1\n#EXTINF:4,\ns.ts\n")
        #expect(out.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"https://cdn.example.com/vod/keys/k1?kid=1\",IV=0x1\n"))
    }

    @Test func keysInProxyModeAreMarked() throws {
        let out = try rewrittenText("#EXTM3U\n#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"k.bin\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n") { $0.keyURIs = .proxy }
        #expect(out.contains("URI=\"\(Self.seg)/k.bin?xresid=s1&xhttps=1&xkey=1\""))
        let p = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/vod/movie/k.bin?xresid=s1&xhttps=1&xkey=1")
        #expect(p.isKey)
    }

    @Test func keyMethodNoneAndNonHTTPKeysAreLeftAlone() throws {
        let text = "#EXTM3U\n#EXT-X-KEY:METHOD=NONE\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://key-42\",KEYFORMAT=\"com.apple.streamingkeydelivery\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"data:text/plain;base64,AAAA\"\n#EXTINF:4,\nurn:example:x\n"
        #expect(try rewrittenText(text) { $0.keyURIs = .proxy } == text)
    }
}

@Suite("HLS: relative resolution against the playlist URL")
struct HLSResolutionTests {
    @Test(arguments: [
        ("../x.ts", "http://gw/hls.vod.p2p.com/cdn.example.com/vod/x.ts?xresid=s1&xhttps=1"),
        ("/abs/x.ts", "http://gw/hls.vod.p2p.com/cdn.example.com/abs/x.ts?xresid=s1&xhttps=1"),
        ("//edge.example.net/x.ts", "http://gw/hls.vod.p2p.com/edge.example.net/x.ts?xresid=s1&xhttps=1"),
        ("?only-query=1", "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/index.m3u8?only-query=1&xresid=s1&xhttps=1"),
        ("http://plain.example/x.ts", "http://gw/hls.vod.p2p.com/plain.example/x.ts?xresid=s1"),
        ("https://tls.example:8443/x.ts?a=1", "http://gw/hls.vod.p2p.com/tls.example:8443/x.ts?a=1&xresid=s1&xhttps=1"),
        ("seg%20one.ts?sig=ab%2Fcd%3D%3D", "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/seg%20one.ts?sig=ab%2Fcd%3D%3D&xresid=s1&xhttps=1"),
        ("a/./b/../c.ts#t=5", "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/a/c.ts?xresid=s1&xhttps=1#t=5"),
        ("视频/片段.ts", "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/%E8%A7%86%E9%A2%91/%E7%89%87%E6%AE%B5.ts?xresid=s1&xhttps=1"),
    ])
    func resolves(uri: String, expected: String) throws {
        let out = try rewrittenText("#EXTM3U\n#EXTINF:4,\n\(uri)\n")
        #expect(out == "#EXTM3U\n#EXTINF:4,\n\(expected)\n")
    }

    @Test func theEffectiveURLIsTheBase() throws {
        let out = try rewrittenText("#EXTM3U\n#EXTINF:4,\ns.ts\n", base: "http://redirected.example:8081/other/path/i.m3u8")
        #expect(out.contains("http://gw/hls.vod.p2p.com/redirected.example:8081/other/path/s.ts?xresid=s1\n"))
    }

    @Test func everyRewrittenURIDecodesBackToItsResolvedOrigin() throws {
        let uris = ["../x.ts", "/abs/x.ts?k=1", "//edge.example.net/x.ts", "https://tls.example:8443/x.ts?a=%2F"]
        let base = try OriginURL("https://cdn.example.com/vod/movie/index.m3u8?token=T1")
        let r = try rewriteHLS("#EXTM3U\n" + uris.map { "#EXTINF:4,\n\($0)\n" }.joined())
        let lines = String(decoding: r.output, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("http") }
        #expect(lines.count == uris.count)
        for (uri, line) in zip(uris, lines) {
            let target = String(line.dropFirst("http://gw".count))
            let decoded = try ProxyURL(requestTarget: target)
            #expect(decoded.origin == (try base.resolve(uri)))
            #expect(decoded.xresid.value == "s1")
        }
    }
}

@Suite("HLS: byte ranges, variables, inherited queries, line endings")
struct HLSStateTests {
    @Test func byteRangeSegmentsOfOneResourceShareOneProxyURL() throws {
        let r = try rewriteHLS("#EXTM3U\n#EXTINF:4,\n#EXT-X-BYTERANGE:100@0\nall.ts\n#EXTINF:4,\n#EXT-X-BYTERANGE:50\nall.ts\n#EXTINF:4,\n#EXT-X-BYTERANGE:25@500\nall.ts\n")
        #expect(r.references.map(\.byteRange) == [
            ByteRange(length: 100, offset: 0), ByteRange(length: 50, offset: 100), ByteRange(length: 25, offset: 500),
        ])
        #expect(Set(r.references.map(\.origin)).count == 1)
        let out = String(decoding: r.output, as: UTF8.self)
        #expect(out.components(separatedBy: "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/all.ts?xresid=s1&xhttps=1\n").count == 4)
        #expect(out.contains("#EXT-X-BYTERANGE:50\n"))
    }

    @Test(arguments: ["99999999999999999999@0", "1@18446744073709551615", "18446744073709551615@1", "abc", "", "12@", "-1@0"])
    func malformedByteRangesAreNamed(range: String) {
        expectError(.invalidByteRange, line: 3, "#EXTM3U\n#EXTINF:4,\n#EXT-X-BYTERANGE:\(range)\ns.ts\n")
    }

    @Test func mapByteRangeMustFit() {
        expectError(.invalidByteRange, line: 2, "#EXTM3U\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"1@99999999999999999999\"\n")
    }

    @Test func variablesAreSubstitutedInURIsAndTheDefinesStay() throws {
        let text = "#EXTM3U\n#EXT-X-DEFINE:NAME=\"dir\",VALUE=\"v1\"\n#EXT-X-DEFINE:QUERYPARAM=\"token\"\n#EXT-X-DEFINE:IMPORT=\"cdn\"\n#EXT-X-MAP:URI=\"{$dir}/init.mp4\"\n#EXTINF:4,\n{$cdn}/{$dir}/s.ts?t={$token}\n"
        let r = try rewriteHLS(text) { $0.importedVariables = ["cdn": "https://edge.example"] }
        #expect(String(decoding: r.output, as: UTF8.self) == "#EXTM3U\n#EXT-X-DEFINE:NAME=\"dir\",VALUE=\"v1\"\n#EXT-X-DEFINE:QUERYPARAM=\"token\"\n#EXT-X-DEFINE:IMPORT=\"cdn\"\n#EXT-X-MAP:URI=\"http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/v1/init.mp4?xresid=s1&xhttps=1\"\n#EXTINF:4,\nhttp://gw/hls.vod.p2p.com/edge.example/v1/s.ts?t=T1&xresid=s1&xhttps=1\n")
        #expect(r.variables == ["dir": "v1", "token": "T1", "cdn": "https://edge.example"])
    }

    @Test func substitutionIsOnePassSoValuesAreNotRescanned() throws {
        let out = try rewrittenText("#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"{$b}\"\n#EXT-X-DEFINE:NAME=\"b\",VALUE=\"x\"\n#EXTINF:4,\n{$a}.ts\n")
        // {$a} expands to the text "{$b}", which is not expanded again (RFC 8216bis: one pass),
        // and is written as a player asks for it, encoded: the player, which reads the defines
        // too, finds no "{$b}" to expand again.
        #expect(out.contains("/vod/movie/%7B$b%7D.ts?xresid=s1&xhttps=1\n"))
        #expect(!out.contains("/vod/movie/x.ts"))
        // In a query too: the "{" of a "{$" is encoded (a "}" alone starts no reference), and
        // the reference's origin URL, which read-ahead fetches, is the URL the player will ask
        // for. Any other "{" stays as the line wrote it, with a variable on the line or a "$"
        // (one was encoded: the query a signed URL's origin checks changed).
        let r = try rewriteHLS(
            "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"{$zz}\"\n#EXTINF:4,\ns.ts?q={$a}&r={x}\n#EXTINF:4,\nt.ts?r={x}\n#EXTINF:4,\nu.ts?f={\"a\":1}&p=$1\n")
        let written = String(decoding: r.output, as: UTF8.self)
        #expect(written.contains("/vod/movie/s.ts?q=%7B$zz}&r={x}&xresid=s1"), "\(written)")
        #expect(written.contains("/vod/movie/t.ts?r={x}&xresid=s1"), "\(written)")
        #expect(written.contains("/vod/movie/u.ts?f={\"a\":1}&p=$1&xresid=s1"), "\(written)")
        #expect(r.references.map(\.origin.query) == ["q=%7B$zz}&r={x}", "r={x}", "f={\"a\":1}&p=$1"])
    }

    @Test func variableErrorsAreNamed() {
        expectError(.undefinedVariable, line: 3, "#EXTM3U\n#EXTINF:4,\n{$nope}/s.ts\n")
        expectError(.recursiveVariable, line: 2, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"x{$a}\"\n")
        expectError(.duplicateVariable, line: 3, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"1\"\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"2\"\n")
        expectError(.undefinedVariable, line: 2, "#EXTM3U\n#EXT-X-DEFINE:IMPORT=\"parentVar\"\n")
        expectError(.undefinedVariable, line: 2, "#EXTM3U\n#EXT-X-DEFINE:QUERYPARAM=\"missing\"\n")
        expectError(.invalidVariable, line: 2, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"bad name\",VALUE=\"1\"\n")
        expectError(.invalidVariable, line: 2, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\"\n")
    }

    @Test func tenThousandReferencesOnOneLineAreBounded() throws {
        let refs = String(repeating: "{$v}", count: 10_000)
        // 10,000 × 8 bytes fits the limit and is substituted in one linear pass...
        let ok = try rewrittenText("#EXTM3U\n#EXT-X-DEFINE:NAME=\"v\",VALUE=\"abcdefgh\"\n#EXTINF:4,\n\(refs).ts\n")
        #expect(ok.contains(String(repeating: "abcdefgh", count: 10_000) + ".ts?xresid=s1"))
        // ...while 10,000 × 1 KiB would be 10 MiB: refused, not built.
        let big = String(repeating: "k", count: 1024)
        expectError(.expansionTooLong, line: 4, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"v\",VALUE=\"\(big)\"\n#EXTINF:4,\n\(refs).ts\n")
    }

    /// Each URI within its bound, the whole playlist not: a 1 MiB value used 700 times made
    /// a 735 MB answer from a 1 MB playlist. What variables add in all is bounded.
    @Test func whatVariablesAddToThePlaylistIsBoundedInAll() throws {
        let value = String(repeating: "v", count: (1 << 20) - 200)
        let define = "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"\(value)\"\n"
        let lines = (0..<40).map { _ in "#EXTINF:4,\n{$a}\n" }.joined()
        // Line 68: the 33rd URI passes 32 MiB added (each adds a little under 1 MiB).
        expectError(.expansionTooLong, line: 68, define + lines)
        // The same value a few times stays within it.
        let few = (0..<8).map { _ in "#EXTINF:4,\n{$a}\n" }.joined()
        #expect(try rewrittenText(define + few).utf8.count > 8 << 20)
    }

    /// A URI attribute given twice is refused (RFC 8216bis 4.2): only the first was rewritten,
    /// and a player that reads the last fetched the origin's URL directly.
    @Test func aURIAttributeGivenTwiceIsRefused() throws {
        expectError(.malformedAttributes, line: 2, "#EXTM3U\n#EXT-X-MAP:URI=\"init.mp4\",URI=\"http://cdn.example.com/init.mp4\"\n#EXTINF:4,\na.ts\n")
        expectError(.malformedAttributes, line: 2, "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k1\",URI=\"k2\"\n#EXTINF:4,\na.ts\n")
        expectError(.malformedAttributes, line: 2, "#EXTM3U\n#EXT-X-MAP:URI=\"a\",URI=\"\"\n#EXTINF:4,\na.ts\n")
        // A METHOD given twice could hide the URI from the rewrite (NONE first).
        expectError(.malformedAttributes, line: 2, "#EXTM3U\n#EXT-X-KEY:METHOD=NONE,METHOD=AES-128,URI=\"k.bin\"\n#EXTINF:4,\na.ts\n")
    }

    /// The variables a master's variants carry (`xvars`) count toward the bound too: 20,000
    /// variants with 4 KiB each made an 80 MB answer from a 423 KB master.
    @Test func theVariablesAMastersVariantsCarryCountTowardTheBound() throws {
        let value = String(repeating: "v", count: 2900)
        let variants = (0..<20_000).map { _ in "#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n" }.joined()
        expectError(.expansionTooLong, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"\(value)\"\n" + variants)
    }

    @Test func inheritedQueryParametersAreAppendedWhereMissing() throws {
        let base = "https://cdn.example.com/v/index.m3u8?token=T1&exp=99&_HLS_msn=5&xx=1"
        let text = "#EXTM3U\n#EXTINF:4,\na.ts\n#EXTINF:4,\nb.ts?token=OWN\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n"
        let named = try rewrittenText(text, base: base) { $0.inheritQuery = .names(["token", "exp"]) }
        #expect(named.contains("/v/a.ts?token=T1&exp=99&xresid=s1&xhttps=1\n"))
        #expect(named.contains("/v/b.ts?token=OWN&exp=99&xresid=s1&xhttps=1\n"))
        #expect(named.contains("URI=\"https://cdn.example.com/v/k?token=T1&exp=99\""))
        let all = try rewrittenText(text, base: base) { $0.inheritQuery = .all }
        #expect(all.contains("/v/a.ts?token=T1&exp=99&xx=1&xresid=s1&xhttps=1\n"))
        let none = try rewrittenText(text, base: base)
        #expect(none.contains("/v/a.ts?xresid=s1&xhttps=1\n"))
        #expect(InheritQuery(setting: " token, exp ") == .names(["token", "exp"]))
        #expect(InheritQuery(setting: "*") == .all)
        #expect(InheritQuery(setting: "") == .none)
    }

    @Test(arguments: ["\n", "\r\n"])
    func lineEndingsAndAMissingFinalNewlineSurvive(eol: String) throws {
        let text = ["#EXTM3U", "# a comment", "", "#EXT-X-UNKNOWN-TAG:FOO=\"bar.ts\"", "#EXTINF:4,", "s.ts", "#EXT-X-ENDLIST"].joined(separator: eol)
        let out = try rewrittenText(text)
        #expect(out == text.replacingOccurrences(of: "s.ts" + eol, with: "http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/s.ts?xresid=s1&xhttps=1" + eol))
        #expect(!out.hasSuffix("\n"))
    }

    @Test func mixedLineEndingsAndSurroundingSpacesSurvive() throws {
        let out = try rewrittenText("#EXTM3U\r\n#EXTINF:4,\n  s.ts \t\r\n#EXT-X-ENDLIST")
        #expect(out == "#EXTM3U\r\n#EXTINF:4,\n  http://gw/hls.vod.p2p.com/cdn.example.com/vod/movie/s.ts?xresid=s1&xhttps=1 \t\r\n#EXT-X-ENDLIST")
    }
}

@Suite("HLS: bad input gets a named error")
struct HLSBadInputTests {
    @Test func byteOrderMark() { expectError(.byteOrderMark, line: 1, "\u{FEFF}#EXTM3U\n") }
    @Test func nulByte() { expectError(.controlByte, line: 3, "#EXTM3U\n#EXTINF:4,\ns\0.ts\n") }
    @Test func otherControlBytes() {
        expectError(.controlByte, line: 2, "#EXTM3U\n\u{1B}[31m\n")
        expectError(.controlByte, line: 2, "#EXTM3U\n#EXTINF:4,\rs.ts\n")
    }
    @Test func invalidUTF8() throws {
        for bad: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]] {
            var bytes = Array("#EXTM3U\n#EXTINF:4,\ns".utf8)
            bytes += bad
            bytes += Array(".ts\n".utf8)
            #expect {
                try HLSRewriter(playlistURL: try OriginURL("http://h/i.m3u8")).rewrite(bytes)
            } throws: { ($0 as? ManifestError)?.code == .invalidUTF8 && ($0 as? ManifestError)?.line == 3 }
        }
    }
    @Test func lineOverOneMiB() {
        expectError(.lineTooLong, line: 3, "#EXTM3U\n#EXTINF:4,\n" + String(repeating: "a", count: (1 << 20) + 1) + "\n")
    }
    @Test func inputOverTheLimit() {
        expectError(.inputTooLarge, "#EXTM3U\n" + String(repeating: "#\n", count: 600)) { $0.maxInputSize = 1000 }
    }
    @Test func emptyURI() {
        expectError(.emptyURI, line: 2, "#EXTM3U\n#EXT-X-MAP:URI=\"\"\n")
        expectError(.emptyURI, line: 3, "#EXTM3U\n#EXT-X-DEFINE:NAME=\"e\",VALUE=\"\"\n{$e}\n")
    }
    @Test func unquotedOrUnterminatedURIAttributes() {
        expectError(.malformedAttributes, line: 2, "#EXTM3U\n#EXT-X-MAP:URI=init.mp4\n")
        expectError(.malformedAttributes, line: 2, "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,URI=\"a.m3u8\n")
    }
    @Test(arguments: ["", "hello\n", "<MPD/>", "#EXTINF:4,\ns.ts\n", "\n\n# comment\ns.ts\n"])
    func notAPlaylist(text: String) { expectError(.notAPlaylist, text) }

    @Test func leadingCommentsBeforeTheHeaderAreTolerated() throws {
        let out = try rewrittenText("# made by a packager\n\n#EXTM3U\n#EXTINF:4,\ns.ts\n")
        #expect(out.hasPrefix("# made by a packager\n\n#EXTM3U\n#EXTINF:4,\nhttp://gw/"))
    }
    @Test func userInfoInAURI() { expectError(.invalidURI, line: 3, "#EXTM3U\n#EXTINF:4,\nhttp://u:p@h/s.ts\n") }
    @Test func aGatewayParameterInAnOriginQuery() { expectError(.reservedParameter, line: 3, "#EXTM3U\n#EXTINF:4,\ns.ts?xresid=other\n") }
}
