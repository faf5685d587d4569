import Manifest
import Testing

/// xlink, Location, PatchLocation, and what must stay untouched (DRM licence URLs, UTCTiming).
@Suite struct LinkTests {
    @Test func xlinkHrefBecomesAProxyURL() async throws {
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/x/</BaseURL>
            <Period xlink:href="remote/period.xml?p=1" xlink:actuate="onLoad"/>
            <Period id="zero" xlink:href="urn:mpeg:dash:resolve-to-zero:2013" xlink:actuate="onLoad"/>
            <Period><AdaptationSet xlink:href="https://cdn.example.com/sets/a.xml"/></Period>
            """))
        #expect(run.output.contains(#"<Period xlink:href="http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/x/remote/period.xml?p=1&amp;xresid=stream-1" xlink:actuate="onLoad"/>"#))
        #expect(run.output.contains(#"<Period id="zero" xlink:href="urn:mpeg:dash:resolve-to-zero:2013" xlink:actuate="onLoad"/>"#))
        #expect(run.output.contains(#"<AdaptationSet xlink:href="http://gw.example.net:8080/hls.vod.p2p.com/cdn.example.com/sets/a.xml?xresid=stream-1&amp;xhttps=1"/>"#))
        #expect(run.references.filter { $0.role == .xlink }.map(\.origin) == [
            "http://cdn.example.com/x/remote/period.xml?p=1", "https://cdn.example.com/sets/a.xml",
        ])
    }

    @Test func locationAndPatchLocation() async throws {
        let run = try await FixtureRun(mpd("""
            <Location>https://live.example.com/stream/manifest.mpd?token=a%2Fb</Location>
            <Location>next.mpd</Location>
            <PatchLocation ttl="60">patch.mpp?publishTime=2020-05-13T05%3A34%3A06Z</PatchLocation>
            <Period><AdaptationSet><Representation id="v" bandwidth="1"><BaseURL>v.mp4</BaseURL></Representation></AdaptationSet></Period>
            """, attributes: #" publishTime="2020-05-13T05:34:06Z""#))
        #expect(run.problems == [])
        #expect(run.rewritten.locations.count == 3)
        #expect(try run.rewritten.locations[0] == proxied("https://live.example.com/stream/manifest.mpd?token=a%2Fb"))
        #expect(try run.rewritten.locations[1] == proxied("http://origin.example.com/vod/movie/next.mpd"))
        #expect(try run.rewritten.locations[2] == proxied("http://origin.example.com/vod/movie/patch.mpp?publishTime=2020-05-13T05%3A34%3A06Z"))
        #expect(run.output.contains(#"<PatchLocation ttl="60">"#))
    }

    @Test func licenceURLsAndUTCTimingStay() async throws {
        let drm = """
            <ContentProtection xmlns:clearkey="http://dashif.org/guidelines/clearKey" schemeIdUri="urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e" value="ClearKey1.0">
                <clearkey:Laurl Lic_type="EME-1.0">https://drm.example.com/AcquireLicense?k=1</clearkey:Laurl>
                <dashif:laurl xmlns:dashif="https://dashif.org/CPS">https://drm.example.com/dashif</dashif:laurl>
                <ms:laurl xmlns:ms="urn:microsoft" licenseUrl="https://drm.example.com/playready"/>
              </ContentProtection>
            """
        let timing = #"<UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="https://time.example.com/now"/>"#
        let run = try await FixtureRun(mpd("""
            <BaseURL>http://cdn.example.com/drm/</BaseURL>
            <Period><AdaptationSet>
              \(drm)
              <Representation id="v" bandwidth="1"><BaseURL>v.mp4</BaseURL></Representation></AdaptationSet></Period>
            \(timing)
            """))
        #expect(run.problems == [])
        #expect(run.output.contains(drm))
        #expect(run.output.contains(timing))
    }
}
