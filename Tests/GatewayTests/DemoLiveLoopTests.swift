@testable import Gateway
import Testing

/// The demo origin's live streams (`LiveLoop`): a VOD media playlist's segments in a loop by
/// the clock.
@Suite("Demo live loop")
struct DemoLiveLoopTests {
    static let vod = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:0
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:2.0,
        s0.m4s
        #EXTINF:2.0,
        s1.m4s
        #EXTINF:2.0,
        s2.m4s
        #EXT-X-ENDLIST
        """

    /// Segment `g` of the stream is `s(g mod 3)`, ending at `2(g + 1)` s after 1970; the
    /// window is the six last ended, a discontinuity before each `s0` but the very first, and
    /// the discontinuities before the window counted.
    @Test func theWindowFollowsTheClockAndMarksWhereTheLoopStartsAgain() throws {
        let loop = try #require(LiveLoop(vod: Self.vod))
        // 6,001 s: 3,000 segments have ended (g = 0...2999).
        let at6001 = loop.playlist(at: 6001).split(separator: "\n")
        #expect(at6001.prefix(4) == ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2", "#EXT-X-MAP:URI=\"init.mp4\""])
        #expect(at6001.contains("#EXT-X-MEDIA-SEQUENCE:2994"))
        // Discontinuities before g = 3, 6, ..., 2991: 997.
        #expect(at6001.contains("#EXT-X-DISCONTINUITY-SEQUENCE:997"))
        let body = Array(at6001.drop { !$0.hasPrefix("#EXT-X-DISCONTINUITY-SEQUENCE") }.dropFirst())
        #expect(body == [
            "#EXT-X-DISCONTINUITY", "#EXTINF:2.0,", "s0.m4s", "#EXTINF:2.0,", "s1.m4s", "#EXTINF:2.0,", "s2.m4s",
            "#EXT-X-DISCONTINUITY", "#EXTINF:2.0,", "s0.m4s", "#EXTINF:2.0,", "s1.m4s", "#EXTINF:2.0,", "s2.m4s",
        ])
        // 6,004.5 s: two more have ended (g up to 3001); the window starts at 2996 (s2).
        let later = loop.playlist(at: 6004.5)
        #expect(later.contains("#EXT-X-MEDIA-SEQUENCE:2996\n#EXT-X-DISCONTINUITY-SEQUENCE:998\n#EXTINF:2.0,\ns2.m4s\n#EXT-X-DISCONTINUITY\n"))
        #expect(later.hasSuffix("#EXT-X-DISCONTINUITY\n#EXTINF:2.0,\ns0.m4s\n#EXTINF:2.0,\ns1.m4s\n"))
        #expect(!later.contains("ENDLIST") && !later.contains("PLAYLIST-TYPE"))
    }

    /// Segments of different lengths: the window ends at the last segment that has ended,
    /// never one after a segment still playing, and the sequence never goes back.
    @Test func segmentsOfDifferentLengthsEndInOrder() throws {
        let loop = try #require(LiveLoop(vod: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:2,\na\n#EXTINF:6,\nb\n#EXTINF:1,\nc\n#EXTINF:1,\nd\n"))
        // A turn is 10 s; at 10,000 s turn 1,000 starts (segments 4,000 to 4,003).
        var last = -1
        for (offset, newest) in [(0.5, "d"), (2.5, "a"), (7.5, "a"), (8.5, "b"), (9.5, "c")] {
            let text = loop.playlist(at: 10_000 + offset)
            let uris = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
            #expect(uris.last.map(String.init) == newest, "at +\(offset) s")
            let first = Int(try #require(text.firstMatch(of: #/MEDIA-SEQUENCE:(\d+)/#)).1)!
            #expect(first + uris.count - 1 >= last, "the newest never goes back")
            last = first + uris.count - 1
        }
    }

    /// What cannot loop is served as it is: a master playlist (its variants loop), byte
    /// ranges (each continues the one before), a key without an IV (the IV would be the
    /// sequence number, which the loop changes).
    @Test(arguments: [
        "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow.m3u8\n",
        "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:100@0\na.ts\n",
        "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:2,\na.ts\n",
        "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:0,\na.ts\n",
    ])
    func whatCannotLoopIsNotALiveLoop(text: String) {
        #expect(LiveLoop(vod: text) == nil)
    }
}
