import Manifest
import Testing

/// SegmentTemplate URLs: every attribute, identifiers left intact, absolute and
/// protocol-relative templates.
@Suite struct SegmentTemplateTests {
    @Test func everyURLAttributeIsRewrittenWithIdentifiersIntact() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet>
              <SegmentTemplate media="$RepresentationID$/$Bandwidth$/$Number%05d$-$SubNumber$.m4s" initialization="$RepresentationID$/init.mp4"
                index="$RepresentationID$/$Number$.sidx" bitstreamSwitching="$RepresentationID$/bss.mp4" startNumber="7" timescale="1000" duration="2000"/>
              <Representation id="v" bandwidth="500"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        let dir = "http://gw.example.net:8080/hls.vod.p2p.com/origin.example.com/vod/movie/"
        #expect(run.output.contains(#"media="\#(dir)$RepresentationID$/$Bandwidth$/$Number%05d$-$SubNumber$.m4s?xresid=stream-1""#))
        #expect(run.output.contains(#"initialization="\#(dir)$RepresentationID$/init.mp4?xresid=stream-1""#))
        #expect(run.output.contains(#"index="\#(dir)$RepresentationID$/$Number$.sidx?xresid=stream-1""#))
        #expect(run.output.contains(#"bitstreamSwitching="\#(dir)$RepresentationID$/bss.mp4?xresid=stream-1""#))
        #expect(run.output.contains(#"startNumber="7" timescale="1000" duration="2000""#))
        #expect(run.rewrittenURL("v", \.media) == "\(dir)v/500/00007-1.m4s?xresid=stream-1")
    }

    @Test func timeTemplatesWithATimeline() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/live/</BaseURL>
              <SegmentTemplate media="$RepresentationID$-$Time$.m4s" initialization="$RepresentationID$-init.m4s" timescale="90000">
                <SegmentTimeline><S t="900" d="180000" r="4"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="a" bandwidth="1"/><Representation id="b" bandwidth="2"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("b", \.media) == proxied("http://cdn.example.com/live/b-900.m4s"))
        #expect(run.output.contains(#"<S t="900" d="180000" r="4"/>"#))
    }

    @Test func dollarEscapesStay() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/d/</BaseURL>
              <SegmentTemplate media="price$$-$Number$$$.m4s" initialization="init$$.mp4"/>
              <Representation id="v" bandwidth="1"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.output.contains(#"media="price$$-$Number$$$.m4s?xresid=stream-1""#))
        #expect(try run.rewrittenURL("v", \.media) == proxied("http://cdn.example.com/d/price$-1$.m4s"))
    }

    @Test func absoluteTemplatesIgnoreTheBase() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/base/</BaseURL>
            <Period><AdaptationSet>
              <SegmentTemplate media="https://other.example.com:8443/abs/$Number$.m4s?k=1" initialization="http://third.example.com/i.mp4"/>
              <Representation id="v" bandwidth="1"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.output.contains(#"media="http://gw.example.net:8080/hls.vod.p2p.com/other.example.com:8443/abs/$Number$.m4s?k=1&amp;xresid=stream-1&amp;xhttps=1""#))
        #expect(try run.rewrittenURL("v", \.`init`) == proxied("http://third.example.com/i.mp4"))
    }

    @Test func protocolRelativeTemplatesTakeTheBaseScheme() async throws {
        let run = try await FixtureRun(
            mpd("""
                <Period><AdaptationSet><SegmentTemplate media="//edge.example.com/p/$Number$.m4s"/>
                  <Representation id="v" bandwidth="1"/></AdaptationSet></Period>
                """), url: "https://origin.example.com/m.mpd")
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("v", \.media) == proxied("https://edge.example.com/p/1.m4s"))
    }

    @Test func aQuestionMarkInATemplateStartsItsQuery() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/q/</BaseURL>
              <SegmentTemplate media="seg.m4s?n=$Number$&amp;id=$RepresentationID$"/>
              <Representation id="v" bandwidth="1"/></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.rewrittenURL("v", \.media) == "http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/q/seg.m4s?n=1&id=v&xresid=stream-1")
    }

    @Test func initializationChildElement() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/c/</BaseURL>
              <SegmentTemplate media="$Number$.m4s"><Initialization sourceURL="init-$RepresentationID$.mp4" range="0-800"/></SegmentTemplate>
              <Representation id="v" bandwidth="1"/></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.output.contains(#"<Initialization sourceURL="init-$RepresentationID$.mp4?xresid=stream-1" range="0-800"/>"#))
    }
}
