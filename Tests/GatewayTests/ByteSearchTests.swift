@testable import Gateway
import Testing

@Suite("Finding a tag in a playlist body")
struct ByteSearchTests {
    static let needle = Array("#EXT-X-ENDLIST".utf8)

    @Test(arguments: [
        ("#EXT-X-ENDLIST", true),
        ("#EXTM3U\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n", true),
        ("#EXTM3U\n#EXT-X-ENDLIS", false),
        ("##EXT-X-ENDLIST", true),
        ("#EXT-X-ENDLIS#EXT-X-ENDLIST", true),
        ("#EXT-X-ENDLIS\n#EXT-X-ENDLISt", false),
        ("", false),
        ("#", false),
    ])
    func findsTheTagWhereverItIs(body: String, found: Bool) {
        #expect(GatewayResponder.contains(Array(body.utf8), Self.needle) == found)
    }

    @Test func aVODPlaylistIsToldFromALiveOne() {
        #expect(GatewayResponder.isVOD(Array("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:VOD\n".utf8)))
        #expect(!GatewayResponder.isVOD(Array("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:4,\na.ts\n".utf8)))
    }
}

/// The origin's clock, from a live MPD answer's `Date`.
@Suite("HTTP dates")
struct HTTPDateTests {
    @Test func anIMFFixdateIsReadAsUTC() {
        // RFC 9110's own example, and a leap day (seconds since 1970 worked out by hand:
        // 784,111,777 is 1994-11-06T08:49:37Z; 1,709,164,800 is 2024-02-29T00:00:00Z).
        #expect(GatewayResponder.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(GatewayResponder.httpDate("Thu, 29 Feb 2024 00:00:00 GMT") == 1_709_164_800)
    }

    // (The obsolete RFC 850 and asctime forms are not read: the node then uses its own clock.)
    @Test(arguments: ["", "yesterday", "Sun, 06 Nov 1994 08:49:37 +0100", "Sun, 06 Nov 1994 25:49:37 GMT"])
    func anythingElseIsNotADate(text: String) {
        #expect(GatewayResponder.httpDate(text) == nil)
    }
}
