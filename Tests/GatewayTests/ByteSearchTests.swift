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
