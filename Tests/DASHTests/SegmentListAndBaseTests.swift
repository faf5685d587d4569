import Manifest
import Testing

/// SegmentList / SegmentURL and SegmentBase single-file Representations.
@Suite struct SegmentListAndBaseTests {
    @Test func segmentURLsKeepTheirRanges() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/list/</BaseURL>
            <Period><AdaptationSet><Representation id="v" bandwidth="1">
              <SegmentList timescale="1" duration="4">
                <Initialization sourceURL="v/init.mp4" range="0-999"/>
                <SegmentURL media="v/1.m4s" mediaRange="0-100" index="v/1.sidx" indexRange="0-20"/>
                <SegmentURL media="v/2.m4s?t=a%2Fb" mediaRange="101-200"/>
              </SegmentList>
            </Representation></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(run.output.contains(#"<Initialization sourceURL="v/init.mp4?xresid=stream-1" range="0-999"/>"#))
        #expect(run.output.contains(#"<SegmentURL media="v/1.m4s?xresid=stream-1" mediaRange="0-100" index="v/1.sidx?xresid=stream-1" indexRange="0-20"/>"#))
        #expect(run.output.contains(#"<SegmentURL media="v/2.m4s?t=a%2Fb&amp;xresid=stream-1" mediaRange="101-200"/>"#))
        #expect(try run.rewrittenURL("v", \.index) == proxied("http://cdn.example.com/list/v/1.sidx"))
    }

    @Test func segmentURLWithoutMediaIsTheBaseURL() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><Representation id="v" bandwidth="1"><BaseURL>http://cdn.example.com/one/file.mp4?k=1</BaseURL>
              <SegmentList duration="4"><SegmentURL mediaRange="0-100"/><SegmentURL mediaRange="101-200"/></SegmentList>
            </Representation></AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("v", \.media) == proxied("http://cdn.example.com/one/file.mp4?k=1"))
        #expect(run.output.contains(#"<SegmentURL mediaRange="0-100"/>"#))
    }

    @Test func segmentBaseSingleFileCarriesXresid() async throws {
        let run = try await FixtureRun(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/od/</BaseURL>
              <Representation id="v" bandwidth="1"><BaseURL>video_1080.mp4</BaseURL>
                <SegmentBase indexRange="800-1500" timescale="90000"><Initialization range="0-799"/></SegmentBase></Representation>
              <Representation id="w" bandwidth="1"><BaseURL>video_720.mp4</BaseURL>
                <SegmentBase><Initialization sourceURL="init_720.mp4"/><RepresentationIndex sourceURL="index_720.sidx" range="0-99"/></SegmentBase></Representation>
            </AdaptationSet></Period>
            """))
        #expect(run.problems == [])
        #expect(try run.rewrittenURL("v", \.media) == proxied("http://cdn.example.com/od/video_1080.mp4"))
        #expect(try run.rewrittenURL("v", \.`init`) == proxied("http://cdn.example.com/od/video_1080.mp4"))
        #expect(run.output.contains(#"<SegmentBase indexRange="800-1500" timescale="90000"><Initialization range="0-799"/></SegmentBase>"#))
        #expect(try run.rewrittenURL("w", \.index) == proxied("http://cdn.example.com/od/index_720.sidx"))
        #expect(run.output.contains(#"<RepresentationIndex sourceURL="index_720.sidx?xresid=stream-1" range="0-99"/>"#))
    }
}
