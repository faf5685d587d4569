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
        #expect(HTTPDate.seconds("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.seconds("Thu, 29 Feb 2024 00:00:00 GMT") == 1_709_164_800)
    }

    /// The obsolete forms' (RFC 850's two-digit year is the last such year past when it would
    /// be more than 50 years ahead), and days each month has.
    @Test func theObsoleteFormsAndTheCalendarAreRead() {
        let now = 1_764_000_000.0  // November 2025
        #expect(HTTPDate.seconds("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == 784_111_777)
        #expect(HTTPDate.seconds("Tuesday, 29-Feb-00 00:00:00 GMT", now: now) == 951_782_400, "2000: a leap year (divisible by 400)")
        #expect(HTTPDate.seconds("Tuesday, 01-Jan-80 00:00:00 GMT", now: now) == 315_532_800, "80: 2080 is over 50 years ahead")
        #expect(HTTPDate.seconds("Saturday, 01-Jan-50 00:00:00 GMT", now: now) == 2_524_608_000, "50: 2050 is not")
        #expect(HTTPDate.seconds("Thu Feb 29 00:00:00 2024", now: now) == 1_709_164_800)
        #expect(HTTPDate.seconds("Fri Dec 31 23:59:59 1999", now: now) == 946_684_799)
        #expect(HTTPDate.seconds("  Sun, 06 Nov 1994 08:49:37 GMT ") == 784_111_777, "surrounding white space")
    }

    @Test(arguments: [
        "", "yesterday", "Sun, 06 Nov 1994 08:49:37 +0100", "Sun, 06 Nov 1994 25:49:37 GMT", "Thu, 30 Feb 2024 00:00:00 GMT",
        "Fri, 29 Feb 2030 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT x", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 116 08:49:37 1994", "Sun Nov  6 08:49 1994",
        "Son, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:60:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
    ])
    func anythingElseIsNotADate(text: String) {
        #expect(HTTPDate.seconds(text) == nil)
    }
}
