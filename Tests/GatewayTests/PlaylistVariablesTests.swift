import Foundation
import Manifest
import Testing
import TestScratch

/// A media playlist's `EXT-X-DEFINE:IMPORT` takes its values from the master its player read
/// (SPEC section 1), which its URL on the gateway carries (`xvars`). The gateway kept the last
/// master's variables per stream: one viewer's master then gave another viewer's media
/// playlist its token, and anyone could set what a stream's media playlists imported.
@Suite("Playlist variables")
struct PlaylistVariablesTests {
    static let master = """
        #EXTM3U
        #EXT-X-DEFINE:QUERYPARAM="user"
        #EXT-X-STREAM-INF:BANDWIDTH=800000
        media.m3u8?token=t

        """
    static let media = """
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-DEFINE:IMPORT="user"
        #EXTINF:4,
        seg.ts?token=t&user={$user}
        #EXT-X-ENDLIST

        """

    @Test func eachViewersMediaPlaylistImportsTheMasterItsPlayerRead() async throws {
        let folder = URL(fileURLWithPath: Scratch.path("variables-origin"))
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("v"), withIntermediateDirectories: true)
        try Self.master.write(to: folder.appendingPathComponent("v/master.m3u8"), atomically: true, encoding: .utf8)
        try Self.media.write(to: folder.appendingPathComponent("v/media.m3u8"), atomically: true, encoding: .utf8)
        let (origin, originPort) = try await Live.origin(serving: folder, token: "t")
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let base = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/v/"
        func variant(of user: String) async throws -> String {
            let m = try await HTTP.get(base + "master.m3u8?token=t&user=\(user)")
            #expect(m.status == 200, "\(m.text)")
            return try #require(m.text.split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init))
        }
        let alice = try await variant(of: "alice")
        let bob = try await variant(of: "bob")  // read after Alice's, under the same stream
        for (url, user) in [(alice, "alice"), (bob, "bob")] {
            let m = try await HTTP.get(url)
            #expect(m.status == 200 && m.text.contains("/v/seg.ts?token=t&user=\(user)&xresid="), "\(user): \(m.text)")
        }
        // A media playlist asked for without its master's variables cannot import them: an
        // error, not another viewer's values; forged ones are the caller's error.
        let bare = try await HTTP.get(base + "media.m3u8?token=t")
        #expect(bare.status == 400 && bare.text.contains("xvars"), "\(bare.status) \(bare.text)")
        let forged = try await HTTP.get(base + "media.m3u8?token=t&xvars=%%%")
        #expect(forged.status == 400, "\(forged.status) \(forged.text)")
        // A value no playlist could define (a line break adds a line): refused.
        let injected = try #require(PlaylistVariables.encode(["user": "x\n#EXT-X-KEY:METHOD=AES-128,URI=\"http://evil.example/k\""]))
        #expect(try await HTTP.get(base + "media.m3u8?token=t&xvars=" + injected).status == 400)
    }

    @Test func variablesTravelAsTheyWere() throws {
        let variables = ["a": "https://edge.example/x?y=1&z=\u{e9}", "b": "", "c-2_": "{$d}"]
        let carried = try #require(PlaylistVariables.encode(variables))
        #expect(carried.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) || $0 == 0x2d || $0 == 0x5f })
        #expect(try PlaylistVariables.decode(carried) == variables)
        #expect(PlaylistVariables.encode([:]) == nil)
        #expect(PlaylistVariables.encode(["big": String(repeating: "v", count: 4000)]) == nil, "too long to travel")
        for bad in [["a b": "x"], ["a": "x\ny"], ["a": "q\"q"], ["": "x"]] {
            #expect(throws: ManifestError.self) { try PlaylistVariables.decode(PlaylistVariables.encode(bad)!) }
        }
    }
}
