import Foundation
import Manifest
import Testing

/// Each Representation's segments of a static MPD, listed for read-ahead and prefetch
/// (`DASHRewriter.Options.collectSegments`): templates expanded by timeline or by duration,
/// SegmentLists, inheritance and BaseURLs; the first segments checked against the independent
/// player-side resolver over the corpus.
@Suite struct SegmentListingTests {
    static let mpdURL = "https://origin.example.com/vod/movie/manifest.mpd?token=abc"

    func lists(_ text: String, now: Double? = nil) throws -> [DASHSegmentList] {
        var options = DASHRewriter.Options()
        options.xresid = try XResID("stream-1")
        options.collectSegments = true
        options.now = now
        return try DASHRewriter(mpdURL: try OriginURL(Self.mpdURL), options: options).rewrite(text).segments
    }

    func urls(_ list: DASHSegmentList) -> [String] { list.segments.map(\.url) }

    @Test func aTimelineIsExpandedWithRepeatsTimesAndRepresentationValues() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet><BaseURL>http://cdn.example.com/v/</BaseURL>
              <SegmentTemplate media="$RepresentationID$/$Bandwidth$-$Time%06d$.m4s" initialization="$RepresentationID$/init.mp4" timescale="1000">
                <SegmentTimeline><!-- <S d="1"/> --><S t="500" d="2000" r="2"/><mpd:S xmlns:mpd="urn:mpeg:dash:schema:mpd:2011" d="1500"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="lo" bandwidth="300"/><Representation id="hi" bandwidth="900"/>
            </AdaptationSet></Period>
            """))
        #expect(found.map(\.representationID) == ["lo", "hi"])
        #expect(found.map(\.position) == [0, 1])
        let hi = try #require(found.last)
        #expect(urls(hi) == [
            "http://cdn.example.com/v/hi/init.mp4", "http://cdn.example.com/v/hi/900-000500.m4s", "http://cdn.example.com/v/hi/900-002500.m4s",
            "http://cdn.example.com/v/hi/900-004500.m4s", "http://cdn.example.com/v/hi/900-006500.m4s",
        ])
        #expect(hi.segments.map(\.duration) == [nil, 2, 2, 2, 1.5])
        #expect(hi.segments.map(\.isInitialization) == [true, false, false, false, false])
    }

    /// A BaseURL or template with a space or non-ASCII letters lists its segments as players
    /// ask for them, percent-encoded: read-ahead prepares the objects their requests name.
    @Test func segmentsAreListedAsPlayersAskForThem() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet><BaseURL>my dir/</BaseURL>
              <SegmentTemplate media="第 $Number$.m4s?t=a b" startNumber="1" duration="4"/>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """))
        #expect(found.first.map { Array(urls($0).prefix(2)) } == [
            "https://origin.example.com/vod/movie/my%20dir/%E7%AC%AC%201.m4s?t=a%20b",
            "https://origin.example.com/vod/movie/my%20dir/%E7%AC%AC%202.m4s?t=a%20b",
        ])
    }

    /// A BaseURL that climbs with encoded dots (`%2e%2e/`) climbs as a player's resolution does.
    @Test func encodedDotsInABaseURLClimbAsPlayersClimb() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet><BaseURL>%2e%2e/%2E%2E/x/</BaseURL>
              <SegmentTemplate media="s$Number$.m4s" startNumber="1" duration="4"/>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """))
        #expect(found.first.map { urls($0).first } == "https://origin.example.com/x/s1.m4s")
    }

    @Test func aRepeatToTheEndFillsThePeriod() throws {
        // 10 s presentation, 4 s segments: 3 of them (the last one short).
        let found = try lists(mpd("""
            <Period><AdaptationSet>
              <SegmentTemplate media="seg-$Time$.m4s" timescale="10" presentationTimeOffset="50">
                <SegmentTimeline><S t="50" d="40" r="-1"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """))
        #expect(found.first.map(urls) == ["https://origin.example.com/vod/movie/seg-50.m4s", "https://origin.example.com/vod/movie/seg-90.m4s", "https://origin.example.com/vod/movie/seg-130.m4s"])
    }

    /// `@endNumber` is the last segment's number whatever the addressing: a timeline that runs
    /// on past it (to the Period's end, or a live edge) lists no segment beyond it.
    @Test func aTimelineEndsAtTheEndNumber() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet>
              <SegmentTemplate media="s-$Number$.m4s" startNumber="3" endNumber="5">
                <SegmentTimeline><S d="1" r="-1"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """))
        let base = "https://origin.example.com/vod/movie/"
        #expect(found.first.map(urls) == [base + "s-3.m4s", base + "s-4.m4s", base + "s-5.m4s"], "10 s of 1 s segments, cut at 5")
        // An endNumber below the startNumber is not a bound.
        let unbounded = try lists(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="s-$Number$.m4s" startNumber="3" endNumber="2">
              <SegmentTimeline><S d="1" r="-1"/></SegmentTimeline></SegmentTemplate><Representation id="v"/>
            </AdaptationSet></Period>
            """))
        #expect(unbounded.first?.segments.count == 10)
        // Live: 20 segments announced, numbers 5 to 24, the last ones past endNumber 22.
        let tail = try lists(twentyLiveSegments(templateAttributes: #" endNumber="22""#), now: try epoch("2026-11-24T12:00:00Z") + 60)
        // Without the bound the tail would be 22, 23 and 24 (as in the test above); with it,
        // the newest segments that exist.
        #expect(tail.first.map(urls) == [base + "v/init.mp4", base + "v/20.m4s", base + "v/21.m4s", base + "v/22.m4s"])
        // However far the timeline runs past it (here 14 segments, more than a tail keeps).
        let far = try lists(twentyLiveSegments(templateAttributes: #" endNumber="10""#), now: try epoch("2026-11-24T12:00:00Z") + 60)
        #expect(far.first.map(urls) == [base + "v/init.mp4", base + "v/8.m4s", base + "v/9.m4s", base + "v/10.m4s"])
    }

    @Test func aDurationIsCountedOverThePeriodFromTheStartNumber() throws {
        // Period 2 runs from 6 s to the end of the 10 s presentation: 2 segments of 3 s.
        let found = try lists(mpd("""
            <Period id="1" duration="PT6S"><AdaptationSet>
              <SegmentTemplate media="a/$Number%03d$.m4s" startNumber="7" duration="3" initialization="a/init.mp4"/>
              <Representation id="a"/></AdaptationSet></Period>
            <Period id="2" start="PT6S"><AdaptationSet>
              <SegmentTemplate media="b/$Number$.m4s" duration="3000" timescale="1000"/>
              <Representation id="b"/></AdaptationSet></Period>
            """))
        let base = "https://origin.example.com/vod/movie/"
        #expect(found.count == 2)
        #expect(found.first.map(urls) == [base + "a/init.mp4", base + "a/007.m4s", base + "a/008.m4s"])
        #expect(found.last.map(urls) == [base + "b/1.m4s", base + "b/2.m4s"])
        #expect(found.last?.segments.map(\.duration) == [3, 3])
    }

    @Test func attributesAreInheritedOneByOne() throws {
        let found = try lists(mpd("""
            <Period><SegmentTemplate timescale="1000" startNumber="0"/><AdaptationSet>
              <SegmentTemplate media="$RepresentationID$_$Number$.m4s" duration="5000"/>
              <Representation id="r1"><BaseURL>r1/</BaseURL></Representation>
              <Representation id="r2"><SegmentTemplate startNumber="10"/></Representation>
            </AdaptationSet></Period>
            """))
        let base = "https://origin.example.com/vod/movie/"
        #expect(found.map(urls) == [[base + "r1/r1_0.m4s", base + "r1/r1_1.m4s"], [base + "r2_10.m4s", base + "r2_11.m4s"]])
    }

    @Test func aSegmentListIsListedAsWritten() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet><Representation id="v">
              <SegmentList timescale="10" duration="25"><Initialization sourceURL="init.mp4"/>
                <SegmentURL media="one.m4s"/><SegmentURL media="two.m4s"/>
                <SegmentURL media="whole.mp4" mediaRange="0-99"/><SegmentURL media="whole.mp4" mediaRange="100-199"/>
              </SegmentList></Representation>
            </AdaptationSet></Period>
            """))
        let base = "https://origin.example.com/vod/movie/"
        #expect(found.first.map(urls) == [base + "init.mp4", base + "one.m4s", base + "two.m4s", base + "whole.mp4"])
        #expect(found.first?.segments.map(\.duration) == [nil, 2.5, 2.5, 2.5])
    }

    @Test func whatCannotBeListedIsLeftOut() throws {
        // A live MPD, an identifier no list can fill, $Time$ without a timeline, a template
        // with nothing to count against, SegmentBase: no lists, and the rewrite still works.
        let live = """
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" availabilityStartTime="2024-01-01T00:00:00Z">
            <Period><AdaptationSet><SegmentTemplate media="$Number$.m4s" duration="2"/><Representation id="v"/></AdaptationSet></Period></MPD>
            """
        #expect(try lists(live).isEmpty)
        let odd = try lists(mpd("""
            <Period><AdaptationSet>
              <Representation id="sub"><SegmentTemplate media="$Number$-$SubNumber$.m4s" duration="2"/></Representation>
              <Representation id="time"><SegmentTemplate media="$Time$.m4s" duration="2"/></Representation>
              <Representation id="nolength"><SegmentTemplate media="$Number$.m4s"/></Representation>
              <Representation id="base"><BaseURL>whole.mp4</BaseURL><SegmentBase indexRange="0-99"/></Representation>
              <Representation id="ok"><SegmentTemplate media="$Number$.m4s" duration="5"/></Representation>
            </AdaptationSet></Period>
            """))
        #expect(odd.map(\.representationID) == ["ok"])
        #expect(odd.first?.position == 4)
    }

    @Test func aHostileTimelineIsBoundedAndNeverOverflows() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="$Time$.m4s">
              <SegmentTimeline><S t="9999999999999999000" d="9000000000000000000" r="999999999999"/></SegmentTimeline>
            </SegmentTemplate><Representation id="a"/></AdaptationSet>
            <AdaptationSet><SegmentTemplate media="$Number$.m4s" endNumber="9999999999999999999" duration="1"/>
              <Representation id="e"/></AdaptationSet>
            <AdaptationSet><SegmentTemplate media="$Number$.m4s"><SegmentTimeline><S d="1" r="9223372036854775807"/></SegmentTimeline>
            </SegmentTemplate><Representation id="b"/><Representation id="c"/></AdaptationSet></Period>
            """))
        // a: its times overflow 64 bits after one segment, so it has no list; e: 10 s of 1 s
        // segments, whatever its endNumber; b takes what is left of the bound and c nothing.
        #expect(found.map(\.representationID) == ["e", "b"])
        #expect(found.first?.segments.count == 10)
        #expect(found.last?.segments.count == 200_000 - 1 - 10)
    }

    @Test func thousandsOfRepresentationsThatCannotFillAnInheritedTimelineCostNothing() throws {
        // A template needing an @id, a long timeline, and 3,000 Representations without one:
        // each is refused before its timeline is expanded (expanded, they were 6 x 10^8
        // segments' work inside a request). What this guards against is a test that takes
        // minutes; the outcome is the same either way, which the next test makes visible.
        let found = try lists(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="$RepresentationID$/$Number$.m4s">
              <SegmentTimeline><S d="1" r="199999"/></SegmentTimeline></SegmentTemplate>
              \(String(repeating: "<Representation bandwidth=\"1\"/>", count: 3000))<Representation id="last"/>
            </AdaptationSet></Period>
            """))
        #expect(found.map(\.representationID) == ["last"])
        #expect(found.first?.segments.count == 200_000)
    }

    @Test func longURLsEndTheListingWhereItsBytesRunOut() throws {
        // A 100 kB template with a 200,000-segment timeline would be 20 GB of URLs; the listing
        // stops at 64 MiB of them.
        let long = String(repeating: "a", count: 100_000)
        let found = try lists(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="\(long)/$Number$.m4s">
              <SegmentTimeline><S d="1" r="199999"/></SegmentTimeline></SegmentTemplate>
              <Representation id="v"/></AdaptationSet></Period>
            """))
        let listed = try #require(found.first)
        #expect(listed.segments.count < 700)
        #expect(listed.segments.reduce(0) { $0 + $1.url.utf8.count } <= 64 << 20)
    }

    @Test func segmentsWorkedOutForARepresentationThatFailsAreChargedToTheBound() throws {
        // Times from 10^19 in steps that overflow 64 bits after about 100,000 segments: "a"
        // works out ~100,000 and fails; "b" takes the rest of the bound (no overflow before
        // it ends); "c" gets nothing. Charged only for lists made, "c" would get them all.
        let found = try lists(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="$RepresentationID$/$Time$.m4s">
              <SegmentTimeline><S t="9999999999999999999" d="84467440737095" r="199999"/></SegmentTimeline>
            </SegmentTemplate><Representation id="a"/><Representation id="b"/></AdaptationSet>
            <AdaptationSet><SegmentTemplate media="c/$Number$.m4s" duration="1"/><Representation id="c"/></AdaptationSet></Period>
            """))
        #expect(found.map(\.representationID) == ["b"])
        #expect((found.first?.segments.count ?? 0) < 200_000 - 90_000)
    }

    @Test func timelineMarkupThatIsNotAnSIsSkipped() throws {
        // A comment opened by "<!-->", a CDATA section and a processing instruction holding
        // "<S", a prefixed attribute and a namespace declaration on an S: none of them adds or
        // changes a segment.
        let found = try lists(mpd("""
            <Period><AdaptationSet><SegmentTemplate media="$Time$.m4s" xmlns:ext="urn:example:ext">
              <SegmentTimeline><!--> <S d="9" r="99"/> --><![CDATA[ > <S d="9" r="99"/> ]]><?pi > <S d="9" r="99"/> ?><S xmlns:t="urn:t" t="0" d="2" ext:r="5" r=" 1 "/></SegmentTimeline>
            </SegmentTemplate><Representation id="v"/></AdaptationSet></Period>
            """))
        #expect(found.first.map(urls) == ["https://origin.example.com/vod/movie/0.m4s", "https://origin.example.com/vod/movie/2.m4s"])
    }

    @Test func theInnermostLevelDecidesTheInitializationAndTheSegmentURLs() throws {
        let found = try lists(mpd("""
            <Period><AdaptationSet>
              <SegmentTemplate media="$Number$.m4s" duration="5" initialization="outer-init.mp4"/>
              <SegmentList duration="5"><SegmentURL media="outer-1.m4s"/></SegmentList>
              <Representation id="t"><SegmentTemplate><Initialization sourceURL="inner-init.mp4"/></SegmentTemplate></Representation>
            </AdaptationSet>
            <AdaptationSet>
              <SegmentList duration="5"><SegmentURL media="outer-2.m4s"/></SegmentList>
              <Representation id="l"><SegmentList><SegmentURL mediaRange="0-99"/></SegmentList></Representation>
            </AdaptationSet></Period>
            """))
        let base = "https://origin.example.com/vod/movie/"
        // t: the inner Initialization child; l: its own SegmentURLs (byte ranges only: no
        // list), not the AdaptationSet's.
        #expect(found.map(\.representationID) == ["t"])
        #expect(found.first.map(urls) == [base + "inner-init.mp4", base + "1.m4s", base + "2.m4s"])
    }

    @Test func aPeriodEndAHairOverATickIsThatTick() throws {
        // 0.3 s at 10 ticks a second is 3 ticks, not 4: one 3-tick segment.
        let found = try lists(mpd("""
            <Period duration="PT0.3S"><AdaptationSet><SegmentTemplate media="$Number$.m4s" timescale="10" duration="3"/>
            <Representation id="v"/></AdaptationSet></Period>
            """))
        #expect(found.first?.segments.count == 1)
    }

    @Test(arguments: [("PT1H2M3.5S", 3723.5), ("P1DT1S", 86401), ("PT0S", 0), ("PT10M", 600), ("P0Y0M0DT0H0M16S", 16)])
    func durationsAreRead(text: String, seconds: Double) {
        #expect(DASHSegmentListing.seconds(text) == seconds)
    }

    @Test(arguments: ["P1M", "PT", "1S", "PTS", "PT1H2", "P1Y", "PT-1S", "PT1M1D", "P1DT", "PT1H1H", "PT1.5H", "PT1S1M", "P"])
    func malformedOrCalendarDurationsAreRefused(text: String) {
        #expect(DASHSegmentListing.seconds(text) == nil)
    }

    // MARK: Dynamic MPDs: the live tail

    /// A dynamic MPD around `body`, started at `started`.
    func live(_ body: String, started: String? = "2026-11-24T12:00:00Z") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" \(started.map { "availabilityStartTime=\"\($0)\"" } ?? "") \
        minimumUpdatePeriod="PT2S" minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-live:2011">
        \(body)
        </MPD>
        """
    }

    /// Seconds since 1970, as Foundation reads an xs:dateTime.
    func epoch(_ text: String) throws -> Double {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        return try #require(f.date(from: text) ?? plain.date(from: text)).timeIntervalSince1970
    }

    /// A live MPD started at 2026-11-24T12:00:00Z whose timeline announces 20 segments of 2 s,
    /// numbered 5 to 24.
    func twentyLiveSegments(templateAttributes: String = "") -> String {
        live("""
            <Period start="PT0S"><AdaptationSet>
              <SegmentTemplate media="v/$Number$.m4s" initialization="v/init.mp4" timescale="1000" startNumber="5"\(templateAttributes)>
                <SegmentTimeline><S t="0" d="2000" r="19"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """)
    }

    /// A live timeline lists its initialization and the newest segments that span three of
    /// their durations: where a player starts and what it fetches next, not the past.
    @Test func aLiveTimelineListsItsNewestSegments() throws {
        let text = twentyLiveSegments()
        let started = try epoch("2026-11-24T12:00:00Z")
        let found = try lists(text, now: started + 60)
        // 20 segments of 2 s numbered 5 to 24: the last three span 6 s.
        let base = "https://origin.example.com/vod/movie/v/"
        #expect(found.first.map(urls) == [base + "init.mp4", base + "22.m4s", base + "23.m4s", base + "24.m4s"])
        #expect(found.first?.segments.map(\.duration) == [nil, 2, 2, 2])
        // 35 s after the start, segments announced beyond it (ending after 34 s) are not yet
        // available; before the start, none is.
        #expect(try lists(text, now: started + 35).first.map(urls) == [base + "init.mp4", base + "19.m4s", base + "20.m4s", base + "21.m4s"])
        #expect(try lists(text, now: started - 1).isEmpty)
        #expect(try lists(text, now: nil).isEmpty, "no clock, no live edge: nothing")
    }

    /// A timeline repeated to the end (`@r="-1"`) runs to the live edge: the last segment whole
    /// before now, counted from `availabilityStartTime` and the Period's start.
    @Test func aRepeatToTheEndRunsToTheLiveEdge() throws {
        let text = live("""
            <Period start="PT10S"><AdaptationSet>
              <SegmentTemplate media="a/$Time$.m4s" timescale="10" presentationTimeOffset="30">
                <SegmentTimeline><S t="30" d="40" r="-1"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="a"/>
            </AdaptationSet></Period>
            """)
        // 41.5 s into the Period: ten whole 4 s segments (media times 30 to 390 in tenths).
        let now = try epoch("2026-11-24T12:00:00Z") + 10 + 41.5
        let base = "https://origin.example.com/vod/movie/a/"
        #expect(try lists(text, now: now).first.map(urls) == [base + "310.m4s", base + "350.m4s", base + "390.m4s"])
        #expect(try lists(text, now: now + 0.4).first.map(urls) == [base + "310.m4s", base + "350.m4s", base + "390.m4s"])
        #expect(try lists(text, now: now + 2.5).first.map(urls) == [base + "350.m4s", base + "390.m4s", base + "430.m4s"])
    }

    /// A `@duration` template counts whole segments from the Period's start to now, however
    /// long the stream has run (far past the listing's bound), from `@startNumber`.
    @Test func aDurationTemplateCountsToTheLiveEdgeOfALongRunningStream() throws {
        let body = """
            <Period id="old" start="PT0S"><AdaptationSet>
              <SegmentTemplate media="old/$Number$.ts" duration="2" startNumber="1"/><Representation id="o"/>
            </AdaptationSet></Period>
            <Period id="now" start="PT100S"><AdaptationSet>
              <SegmentTemplate media="$RepresentationID$/$Number$.ts" initialization="$RepresentationID$/init.mp4" duration="2" startNumber="100"/>
              <Representation id="lo"/><Representation id="hi"/>
            </AdaptationSet></Period>
            """
        let text = live(body)
        // 1,000,001 s into the current Period: 500,000 whole segments of 2 s.
        let now = try epoch("2026-11-24T12:00:00Z") + 100 + 1_000_001
        let found = try lists(text, now: now)
        #expect(found.map(\.representationID) == ["lo", "hi"], "only the current Period")
        let base = "https://origin.example.com/vod/movie/hi/"
        #expect(found.last.map(urls) == [base + "init.mp4", base + "500097.ts", base + "500098.ts", base + "500099.ts"])
        // Before the first segment is whole, or with no start time, there is nothing to list.
        #expect(try lists(text, now: try epoch("2026-11-24T12:00:00Z") + 101).isEmpty)
        #expect(try lists(live(body, started: "2026-11-24T13:00:00Z"), now: try epoch("2026-11-24T12:59:00Z")).isEmpty, "starts in the future")
        #expect(try lists(live(body, started: nil), now: now).isEmpty)
    }

    /// Of a live MPD's Periods, the current one is the last that has started: one announced
    /// for later (an ad break) is not listed before its start.
    @Test func aPeriodAnnouncedForLaterIsNotListedBeforeItStarts() throws {
        let text = live("""
            <Period id="show" start="PT0S"><AdaptationSet>
              <SegmentTemplate media="show/$Number$.ts" duration="4" startNumber="1"/><Representation id="show"/>
            </AdaptationSet></Period>
            <Period id="ad" start="PT3600S"><AdaptationSet>
              <SegmentTemplate media="ad/$Number$.ts" timescale="1" startNumber="1">
                <SegmentTimeline><S t="0" d="4" r="2"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="ad"/>
            </AdaptationSet></Period>
            """)
        let started = try epoch("2026-11-24T12:00:00Z")
        let before = try lists(text, now: started + 3000)
        #expect(before.map(\.representationID) == ["show"])
        #expect(before.first?.segments.last?.url == "https://origin.example.com/vod/movie/show/750.ts")
        let after = try lists(text, now: started + 3700)
        #expect(after.map(\.representationID) == ["ad"])
        #expect(after.first.map(urls) == ["https://origin.example.com/vod/movie/ad/1.ts", "https://origin.example.com/vod/movie/ad/2.ts", "https://origin.example.com/vod/movie/ad/3.ts"])
    }

    /// A live tail's numbers and times are those of the whole timeline: repeats far past the
    /// listing's bound are skipped to their end, not cut at the bound; an entry after a
    /// repeat to the end must say where it starts; a long timeline shared by many
    /// Representations is walked once.
    @Test func aLiveTailIsNumberedAsTheWholeTimelineIs() throws {
        let started = try epoch("2026-11-24T12:00:00Z")
        let long = live("""
            <Period start="PT0S"><AdaptationSet>
              <SegmentTemplate media="$Number$-$Time$.m4s" timescale="1" startNumber="1">
                <SegmentTimeline><S t="0" d="2" r="299999"/><S d="1"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """)
        // 300,000 segments of 2 s, then one of 1 s: numbers 1 to 300,001.
        let tail = try lists(long, now: started + 1_000_000).first?.segments.map(\.url)
        #expect(tail?.last == "https://origin.example.com/vod/movie/300001-600000.m4s")
        #expect(tail?.first == "https://origin.example.com/vod/movie/299998-599994.m4s")

        let unanchored = """
            <Period start="PT0S"><AdaptationSet>
              <SegmentTemplate media="$Time$.m4s" timescale="1">
                <SegmentTimeline><S t="0" d="10" r="-1"/><S d="10"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v"/>
            </AdaptationSet></Period>
            """
        #expect(try lists(live(unanchored), now: started + 100).isEmpty)
        #expect(try lists(mpd(unanchored)).isEmpty, "nor in a static MPD")

        // 30,000 entries without repeats, inherited by 8 Representations: each lists the end.
        let entries = (0..<30_000).map { $0 % 2 == 0 ? "<S d=\"2\"/>" : "<S d=\"3\"/>" }.joined()
        let reps = (0..<8).map { "<Representation id=\"r\($0)\"/>" }.joined()
        let shared = try lists(live("""
            <Period start="PT0S"><AdaptationSet>
              <SegmentTemplate media="$RepresentationID$/$Number$.m4s" timescale="1" startNumber="0">
                <SegmentTimeline><S t="0" d="2"/>\(entries)</SegmentTimeline>
              </SegmentTemplate>
              \(reps)
            </AdaptationSet></Period>
            """), now: started + 1_000_000)
        #expect(shared.count == 8)
        #expect(shared.allSatisfy { $0.segments.last?.url.hasSuffix("/30000.m4s") == true }, "\(shared.map { $0.segments.last?.url ?? "-" })")
    }

    /// A live SegmentList lists its newest SegmentURLs.
    @Test func aLiveSegmentListListsItsNewestURLs() throws {
        let urls = (0..<12).map { "<SegmentURL media=\"s\($0).ts\"/>" }.joined()
        let found = try lists(live("""
            <Period start="PT0S"><AdaptationSet><Representation id="r">
              <SegmentList duration="4"><Initialization sourceURL="init.mp4"/>\(urls)</SegmentList>
            </Representation></AdaptationSet></Period>
            """), now: try epoch("2026-11-24T12:00:00Z") + 60)
        let base = "https://origin.example.com/vod/movie/"
        #expect(found.first.map(self.urls) == [base + "init.mp4", base + "s9.ts", base + "s10.ts", base + "s11.ts"])
    }

    @Test(arguments: [
        "2026-11-24T12:00:00Z", "1970-01-01T00:00:00Z", "2000-02-29T23:59:59Z", "2026-11-24T12:00:00.25Z",
        "2026-11-24T12:00:00+05:30", "2026-03-01T00:00:00-08:00", "1969-12-31T23:59:59Z", "2024-02-29T12:00:00Z",
    ])
    func dateTimesAreReadAsFoundationReadsThem(text: String) throws {
        #expect(DASHSegmentListing.epochSeconds(text) == (try epoch(text)))
    }

    @Test(arguments: ["2026-11-24", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-11-24T25:00:00Z", "2026-11-24T12:00:00.Z", "2026-11-24T12:00:00+5:30", "x", ""])
    func malformedDateTimesAreRefused(text: String) {
        #expect(DASHSegmentListing.epochSeconds(text) == nil)
    }

    /// Over the corpus: every static MPD's lists start where a player starts, by the
    /// independent resolver (Tests/python/dash_resolve.py) on the original MPD.
    @Test func theCorpusListsStartWhereAPlayerStarts() async throws {
        let files = DASHTestEnvironment.corpusMPDs
        guard !files.isEmpty else { return }
        var options = DASHRewriter.Options()
        options.xresid = try XResID("corpus.stream-1")
        options.collectSegments = true
        var inputs: [(file: URL, url: String)] = []
        var listed: [String: [DASHSegmentList]] = [:]
        for file in files {
            let origin = try CorpusTests.originURL(file)
            let result = try DASHRewriter(mpdURL: origin, options: options).rewrite([UInt8](Data(contentsOf: file)))
            listed[file.path] = result.segments
            inputs.append((file, origin.string))
        }
        let resolved = try await ResolvedMPD.resolve(inputs)
        var representations = 0
        var segments = 0
        for file in files {
            let lists = listed[file.path] ?? []
            let player = try #require(resolved[file.path])
            for list in lists {
                let rep = player.representations[list.position]
                #expect(rep.id == list.representationID, "\(file.lastPathComponent)")
                let first = list.segments.first { !$0.isInitialization }
                #expect(first?.url == rep.media.first, "\(file.lastPathComponent) \(rep.key)")
                if let initialization = list.segments.first, initialization.isInitialization {
                    #expect(initialization.url == rep.`init`.first, "\(file.lastPathComponent) \(rep.key)")
                }
                representations += 1
                segments += list.segments.count
            }
        }
        // The corpus's static MPDs have 95 Representations with a SegmentTemplate or a
        // SegmentList; those left out are one file each (SegmentURLs of byte ranges only).
        #expect(representations >= 85)
        print("DASH corpus: \(representations) Representations listed, \(segments) objects")
    }
}
