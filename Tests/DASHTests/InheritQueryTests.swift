import Manifest
import Testing

/// `inherit_query` for DASH: the MPD URL's anti-leech token reaches every URL a player
/// derives from the MPD, in both the absolute and the relative (sibling-BaseURL) forms.
@Suite struct InheritQueryTests {
    func rewrite(_ body: String) throws -> String {
        var options = DASHRewriter.Options()
        options.gateway = "http://gw"
        options.xresid = try XResID("s1")
        options.inheritQuery = .names(["token"])
        let url = try OriginURL("https://cdn.example.com/v/m.mpd?token=abc%2F1&exp=9")
        return String(decoding: try DASHRewriter(mpdURL: url, options: options).rewrite(body).output, as: UTF8.self)
    }

    @Test func theTokenReachesTemplatesAndSegmentURLs() throws {
        let out = try rewrite("""
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period><AdaptationSet>
            <SegmentTemplate media="seg-$Number$.m4s" initialization="init.mp4" duration="2" startNumber="1"/>
            <Representation id="a" bandwidth="1"/>
            </AdaptationSet><AdaptationSet><Representation id="b" bandwidth="1">
            <SegmentList duration="2"><SegmentURL media="b1.m4s?token=own"/><SegmentURL media="b2.m4s"/></SegmentList>
            </Representation></AdaptationSet></Period></MPD>
            """)
        #expect(out.contains(#"media="http://gw/hls.vod.p2p.com/cdn.example.com/v/seg-$Number$.m4s?token=abc%2F1&amp;xresid=s1&amp;xhttps=1""#), "\(out)")
        #expect(out.contains(#"initialization="http://gw/hls.vod.p2p.com/cdn.example.com/v/init.mp4?token=abc%2F1&amp;xresid=s1&amp;xhttps=1""#))
        #expect(out.contains(#"media="http://gw/hls.vod.p2p.com/cdn.example.com/v/b1.m4s?token=own&amp;xresid=s1&amp;xhttps=1""#), "its own token wins")
        #expect(out.contains(#"media="http://gw/hls.vod.p2p.com/cdn.example.com/v/b2.m4s?token=abc%2F1&amp;xresid=s1&amp;xhttps=1""#))
        #expect(!out.contains("exp=9"), "only the named parameters")
    }

    @Test func relativeReferencesBelowSiblingBaseURLsCarryItToo() throws {
        let out = try rewrite("""
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><BaseURL>https://a.example.com/x/</BaseURL><BaseURL>https://b.example.com/x/</BaseURL>
            <Period><AdaptationSet><SegmentTemplate media="s-$Number$.m4s" duration="2"/><Representation id="r" bandwidth="1"/></AdaptationSet></Period></MPD>
            """)
        #expect(out.contains(#"media="s-$Number$.m4s?token=abc%2F1&amp;xresid=s1&amp;xhttps=1""#), "\(out)")
    }
}
