import Manifest
import Testing

/// The hard case: segment elements declared on an AdaptationSet or Period while the
/// Representations below have their own BaseURLs.
@Suite struct InheritanceTests {
    @Test func adaptationSetTemplateWithRepresentationBaseURLsStaysShared() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet mimeType="video/mp4">
              <SegmentTemplate media="seg-$Number$.m4s?sig=k%2F1" initialization="init.mp4" startNumber="3"/>
              <Representation id="lo" bandwidth="1"><BaseURL>http://cdn-1.example.com/lo/</BaseURL></Representation>
              <Representation id="hi" bandwidth="2"><BaseURL>http://cdn-2.example.com/deep/hi/</BaseURL></Representation>
              <Representation id="md" bandwidth="3"><BaseURL>http://cdn-1.example.com/md/</BaseURL></Representation>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("lo", \.media) == proxied("http://cdn-1.example.com/lo/seg-3.m4s?sig=k%2F1"))
        #expect(try run.rewrittenURL("hi", \.media) == proxied("http://cdn-2.example.com/deep/hi/seg-3.m4s?sig=k%2F1"))
        #expect(try run.rewrittenURL("hi", \.`init`) == proxied("http://cdn-2.example.com/deep/hi/init.mp4"))
        // One shared template, not a copy per Representation.
        #expect(run.output.components(separatedBy: "<SegmentTemplate").count == 2)
    }

    @Test func periodTemplateWithAdaptationSetBaseURLs() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/show/</BaseURL>
            <Period>
              <SegmentTemplate media="$RepresentationID$/$Number$.m4s" initialization="$RepresentationID$/init.mp4"/>
              <AdaptationSet mimeType="video/mp4"><BaseURL>video/</BaseURL><Representation id="v" bandwidth="1"/></AdaptationSet>
              <AdaptationSet mimeType="audio/mp4"><BaseURL>https://audio.example.com/a/</BaseURL><Representation id="a" bandwidth="1"/></AdaptationSet>
            </Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("v", \.media) == proxied("http://cdn.example.com/show/video/v/1.m4s"))
        #expect(try run.rewrittenURL("a", \.media) == proxied("https://audio.example.com/a/a/1.m4s"))
    }

    @Test func mixedSchemesGetTheirOwnCompleteTemplate() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet>
              <SegmentTemplate media="$Number$.m4s" timescale="10" presentationTimeOffset="5">
                <SegmentTimeline><S t="5" d="20" r="2"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="plain" bandwidth="1"><BaseURL>http://cdn.example.com/p/</BaseURL>
                <SegmentTemplate initialization="init.mp4"/></Representation>
              <Representation id="secure" bandwidth="2"><BaseURL>https://cdn.example.com/s/</BaseURL></Representation>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("plain", \.media) == proxied("http://cdn.example.com/p/1.m4s"))
        #expect(try run.rewrittenURL("plain", \.`init`) == proxied("http://cdn.example.com/p/init.mp4"))
        #expect(try run.rewrittenURL("secure", \.media) == proxied("https://cdn.example.com/s/1.m4s"))
        // Each Representation now declares the merged template, timeline included.
        #expect(run.output.components(separatedBy: "<SegmentTimeline>").count == 4)
        #expect(run.output.contains(#"<SegmentTemplate initialization="init.mp4?xresid=stream-1" media="$Number$.m4s?xresid=stream-1" timescale="10" presentationTimeOffset="5"><SegmentTimeline>"#))
        // No namespace declaration is repeated on the copies.
        #expect(run.output.components(separatedBy: "xmlns=").count == 2)
    }

    @Test func someRepresentationsWithoutABaseURL() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet>
              <SegmentTemplate media="$RepresentationID$_$Number$.m4s" initialization="$RepresentationID$_init.mp4"/>
              <Representation id="own" bandwidth="1"><BaseURL>http://cdn.example.com/own/</BaseURL></Representation>
              <Representation id="mpd" bandwidth="2"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("own", \.media) == proxied("http://cdn.example.com/own/own_1.m4s"))
        #expect(try run.rewrittenURL("mpd", \.media) == proxied("http://origin.example.com/vod/movie/mpd_1.m4s"))
    }

    @Test func segmentListOnAnAdaptationSetWithRepresentationBaseURLs() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet>
              <SegmentList duration="2"><Initialization sourceURL="init.mp4"/>
                <SegmentURL media="s1.m4s"/><SegmentURL media="s2.m4s"/></SegmentList>
              <Representation id="x" bandwidth="1"><BaseURL>http://a.example.com/x/</BaseURL></Representation>
              <Representation id="y" bandwidth="2"><BaseURL>https://b.example.com/y/</BaseURL></Representation>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("x", \.media) == proxied("http://a.example.com/x/s1.m4s"))
        #expect(try run.rewrittenURL("y", \.media) == proxied("https://b.example.com/y/s1.m4s"))
        #expect(try run.rewrittenURL("y", \.`init`) == proxied("https://b.example.com/y/init.mp4"))
    }

    @Test func representationOverridesOneAttribute() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/o/</BaseURL>
              <SegmentTemplate media="shared-$Number$.m4s" initialization="shared-init.mp4"/>
              <Representation id="a" bandwidth="1"><SegmentTemplate media="own-$Number$.m4s"/></Representation>
              <Representation id="b" bandwidth="2"/>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("a", \.media) == proxied("http://cdn.example.com/o/own-1.m4s"))
        #expect(try run.rewrittenURL("a", \.`init`) == proxied("http://cdn.example.com/o/shared-init.mp4"))
        #expect(try run.rewrittenURL("b", \.media) == proxied("http://cdn.example.com/o/shared-1.m4s"))
    }
}
