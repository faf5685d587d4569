import Foundation
import TestScratch
import Testing

/// Playlists and MPDs are read whole before they are rewritten, up to 16 MiB each; all of
/// them being read at once are bounded too (`--manifest-memory`): distinct URLs, or long
/// polls, each held one, without end. Past the bound a request is answered 503 with
/// `Retry-After`, and what a read took is given back when it ends.
@Suite("Manifest memory")
struct ManifestMemoryTests {
    @Test func manifestsBeingReadAreBoundedInAllAndTheirBytesGivenBack() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--manifest-memory", "1MiB"])
        defer { g.stop() }
        func playlist(_ segments: Int) -> String {
            "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/vod/mem-\(segments).m3u8?segments=\(segments)&size=1000"
        }
        // About 1.6 MB: more than the bound alone.
        let big = try await HTTP.get(playlist(30_000))
        #expect(big.status == 503 && big.headers["retry-after"] == "1", "\(big.status) \(big.text.prefix(200))")
        #expect(big.text.contains("manifest-memory"))
        // About 0.55 MB each, one after the other: each read gives its bytes back.
        for _ in 0..<4 {
            let small = try await HTTP.get(playlist(10_000))
            #expect(small.status == 200 && small.text.hasPrefix("#EXTM3U"), "\(small.status)")
        }
        let refused = try await ProgramRun.run(Live.binary, ["serve", "--manifest-memory", "64KiB", "--listen", "127.0.0.1:0"])
        #expect(refused.status != 0 && refused.err.contains("manifest-memory"), "\(refused.err)")
    }

    /// A playlist is bounded by the manifests' 16 MiB, not by `--max-object-size` (SPEC 5:
    /// that is the media objects'): a largest object smaller than a playlist refused it, 502.
    @Test func aPlaylistIsNotBoundedByTheLargestMediaObject() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--max-object-size", "1000"])
        defer { g.stop() }
        let list = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/vod/bounded.m3u8?segments=100&size=5000")
        #expect(list.status == 200 && list.text.hasPrefix("#EXTM3U") && list.text.utf8.count > 1000, "\(list.status) \(list.text.prefix(200))")
    }
}
