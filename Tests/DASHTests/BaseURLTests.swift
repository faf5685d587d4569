import Manifest
import Testing

/// BaseURL at every level, resolved as a chain from the MPD URL, and sibling BaseURLs.
@Suite struct BaseURLTests {
    @Test func chainFromMPDToRepresentation() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/root/</BaseURL>
            <Period><BaseURL>period/</BaseURL>
              <AdaptationSet mimeType="video/mp4"><BaseURL>set/</BaseURL>
                <Representation id="v" bandwidth="1"><BaseURL>rep/file.mp4</BaseURL><SegmentBase indexRange="0-99"/></Representation>
              </AdaptationSet>
            </Period>
            """))
        #expect(run.problems == [])
        #expect(run.originalURL("v", \.media) == "http://cdn.example.com/root/period/set/rep/file.mp4")
        #expect(try run.rewrittenURL("v", \.media) == proxied("http://cdn.example.com/root/period/set/rep/file.mp4"))
        // The top BaseURL becomes an absolute proxy URL; the ones below stay relative.
        #expect(run.output.contains("<BaseURL>http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/root/?xresid=stream-1</BaseURL>"))
        #expect(run.output.contains("<BaseURL>period/?xresid=stream-1</BaseURL>"))
        #expect(run.output.contains("<BaseURL>rep/file.mp4?xresid=stream-1</BaseURL>"))
    }

    /// A relative reference with a dot written "%2e" or with a backslash is resolved here, as
    /// a browser's player resolves it (WHATWG: `%2e%2e` is "..", `\` is "/"), into an absolute
    /// proxy URL. Kept relative, its climb was not counted: a player went up into the proxy
    /// URL's host segment (`…/hls.vod.p2p.com/init.mp4`, `…/hls.vod.p2p.com/other-host/a.m4s`).
    @Test func aReferencePlayersReadDifferentlyIsResolvedHere() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>https://cdn1.example.com/root/</BaseURL>
            <Period><AdaptationSet><Representation id="v" bandwidth="1">
              <SegmentList duration="2"><Initialization sourceURL="%2e%2e/%2E%2e/init.mp4"/>
                <SegmentURL media="..\\..\\other.example.com\\a.m4s"/><SegmentURL media="segs\\b.m4s"/></SegmentList>
            </Representation></AdaptationSet></Period>
            """))
        let written = ["init.mp4", "other.example.com/a.m4s", "root/segs/b.m4s"].map { "https://cdn1.example.com/" + $0 }
        for url in written {
            #expect(run.output.contains("\"" + (try proxied(url)).replacingOccurrences(of: "&", with: "&amp;") + "\""), "\(run.output)")
        }
        #expect(run.references.filter { $0.role != .baseURL }.map(\.origin) == written)
        #expect(!run.output.contains("%2e") && !run.output.contains("\\"))
    }

    @Test func relativeChainWithoutAbsoluteBaseStartsAtTheMPD() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><BaseURL>../media/</BaseURL>
              <AdaptationSet><Representation id="a" bandwidth="1"><BaseURL>a.mp4</BaseURL></Representation></AdaptationSet>
            </Period>
            """))
        #expect(run.problems == [])
        #expect(run.originalURL("a", \.media) == "http://origin.example.com/vod/media/a.mp4")
        // Below the MPD URL (which a player may have fetched from anywhere) references are absolute.
        #expect(run.output.contains("<BaseURL>http://gw.example.net:8080/hls.vod.p2p.com/origin.example.com/vod/media/?xresid=stream-1</BaseURL>"))
    }

    @Test func siblingBaseURLsStayAlternatives() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL serviceLocation="a">http://cdn-a.example.com/v/</BaseURL>
            <BaseURL serviceLocation="b">http://cdn-b.example.com/w/x/</BaseURL>
            <Period><AdaptationSet>
              <SegmentTemplate media="$RepresentationID$/$Number$.m4s" initialization="$RepresentationID$/init.mp4"/>
              <Representation id="v1" bandwidth="1"/><Representation id="v2" bandwidth="2"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.collapsed == 0)
        let v1 = try #require(run.rewritten.representations.first)
        #expect(v1.media.count == 2)
        #expect(try v1.media[1] == proxied("http://cdn-b.example.com/w/x/v1/1.m4s"))
        #expect(run.output.contains(#"<BaseURL serviceLocation="b">http://gw.example.net:8080/hls.vod.p2p.com/cdn-b.example.com/w/x/?xresid=stream-1</BaseURL>"#))
    }

    @Test func alternativesWithDifferentSchemesCollapseToTheFirst() async throws {
        // A relative reference cannot carry xhttps for both, so it is pinned to the first.
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn-a.example.com/v/</BaseURL>
            <BaseURL>https://cdn-b.example.com/v/</BaseURL>
            <Period><AdaptationSet><SegmentTemplate media="$Number$.m4s"/>
              <Representation id="v1" bandwidth="1"/></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.collapsed == 1)
        #expect(try run.rewrittenURL("v1", \.media) == proxied("http://cdn-a.example.com/v/1.m4s"))
        #expect(run.output.contains("<BaseURL>http://gw.example.net:8080/hls.vod.p2p.com/cdn-b.example.com/v/?xresid=stream-1&amp;xhttps=1</BaseURL>"))
    }

    @Test func climbingAboveAnAlternativesRootIsWrittenAbsolute() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/a/</BaseURL>
            <Period><AdaptationSet><SegmentTemplate media="../../x/$Number$.m4s"/>
              <Representation id="v" bandwidth="1"/></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.originalURL("v", \.media) == "http://cdn.example.com/x/1.m4s")
        #expect(run.output.contains(#"media="http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/x/$Number$.m4s?xresid=stream-1""#))
    }

    @Test func httpsOriginsCarryXhttps() async throws {
        let run = try await FixtureRun(
            mpd("""
                <Period><AdaptationSet><Representation id="v" bandwidth="1"><BaseURL>v.mp4</BaseURL></Representation></AdaptationSet></Period>
                """), url: "https://secure.example.com/s/manifest.mpd")
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("v", \.media) == proxied("https://secure.example.com/s/v.mp4"))
        #expect(run.rewrittenURL("v", \.media)?.hasSuffix("&xhttps=1") == true)
    }

    @Test func queryTokensStayByteForByte() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/v/?auth=a%2Fb%3D%3D&amp;e=9</BaseURL>
            <Period><AdaptationSet><SegmentTemplate media="$Number$.m4s?tok=x%2Fy%2F&amp;n=$Number$" initialization="init.mp4?tok=x%2Fy%2F"/>
              <Representation id="v" bandwidth="1"/></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.rewrittenURL("v", \.media) == "http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/v/1.m4s?tok=x%2Fy%2F&n=1&xresid=stream-1")
        #expect(run.output.contains("<BaseURL>http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/v/?auth=a%2Fb%3D%3D&amp;e=9&amp;xresid=stream-1</BaseURL>"))
    }

    @Test(arguments: ["data:video/mp4;base64,AAAA", "urn:example:media"])
    func nonHTTPBaseURLsStay(_ url: String) async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><Representation id="v" bandwidth="1"><BaseURL>\(url)</BaseURL></Representation></AdaptationSet></Period>
            """))
        #expect(run.output.contains("<BaseURL>\(url)</BaseURL>"))
        #expect(run.problems == [])
    }
}
