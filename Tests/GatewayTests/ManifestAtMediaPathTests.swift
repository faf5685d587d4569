import Foundation
import Testing
import TestScratch

/// SPEC section 1: what an object is (playlist, MPD, media) is decided by the origin's answer,
/// the path's extension only a hint. A playlist or an MPD served at a media path (`list.ts`,
/// `master.jpg`, `manifest.mp4`: sites disguise them so) is fetched and rewritten, through an
/// embedded gateway and through a node of a tracker (whose registry finds out what it is).
/// Before, such a path went to the piece cache: a 302 to the origin at first sight, then the
/// playlist's own bytes served unrewritten, so its players left the gateway.
@Suite("Manifests at media paths", .serialized)
final class ManifestAtMediaPathTests {
    static let token = "d1sgu1sed"
    let folder: URL
    let segment: Data

    init() throws {
        folder = URL(fileURLWithPath: Scratch.path("disguised-origin"))
        let dir = folder.appendingPathComponent("tv")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        segment = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try segment.write(to: dir.appendingPathComponent("seg0.bin"))
        // A segment its origin labels with a playlist's content type: media all the same.
        try Data(segment.reversed()).write(to: dir.appendingPathComponent("mislabeled.ts"))
        try Data("application/vnd.apple.mpegurl\n".utf8).write(to: dir.appendingPathComponent("mislabeled.ts.content-type"))
        let media = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\nseg0.bin\n#EXT-X-ENDLIST\n"
        try Data(media.utf8).write(to: dir.appendingPathComponent("list.ts"))
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nlist.ts\n"
        try Data(master.utf8).write(to: dir.appendingPathComponent("master.jpg"))
        let mpd = """
            <?xml version="1.0" encoding="UTF-8"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S" minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-live:2011">
              <Period><AdaptationSet mimeType="video/mp4">
                <SegmentTemplate media="chunk-$Number%05d$.m4s" initialization="init.mp4" startNumber="1" duration="4" timescale="1"/>
                <Representation id="v" bandwidth="800000"/>
              </AdaptationSet></Period>
            </MPD>

            """
        try Data(mpd.utf8).write(to: dir.appendingPathComponent("manifest.mp4"))
        // A live playlist marked no-store, as live ones often are.
        let live = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:4.0,\nseg0.bin\n"
        try Data(live.utf8).write(to: dir.appendingPathComponent("live.ts"))
        try Data("no-store\n".utf8).write(to: dir.appendingPathComponent("live.ts.cache-control"))
    }

    /// Whether `body` is `expected` (a Bool, so that a failure does not print 300 kB of diff).
    static func same(_ body: Data, _ expected: Data) -> Bool { body == expected }

    /// Plays the disguised streams through the gateway on `port`: every manifest comes back
    /// rewritten (twice: the registry's answer is kept, not only the first), and the
    /// segment the media playlist lists arrives whole through the cache.
    func playsTheDisguisedStreams(port: Int, originPort: Int) async throws {
        let base = "http://127.0.0.1:\(port)"
        let prefix = "\(base)/hls.vod.p2p.com/127.0.0.1:\(originPort)/tv/"
        func proxied(_ name: String) -> String { prefix + name + "?token=\(Self.token)" }

        for _ in 0..<2 {
            let media = try await HTTP.get(proxied("list.ts"))
            #expect(media.status == 200, "\(media.text)")
            #expect(media.text.hasPrefix("#EXTM3U\n"))
            let segmentURL = try #require(media.text.split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init))
            #expect(segmentURL.hasPrefix(prefix + "seg0.bin?token=\(Self.token)&xresid="))
            let served = try await Live.whenReady(segmentURL)
            #expect(served.status == 200)
            #expect(Self.same(served.body, segment))

            // ffmpeg asks a playlist for `bytes=0-`: it is rewritten whole all the same.
            let ranged = try await HTTP.get(proxied("list.ts"), headers: ["Range": "bytes=0-"])
            #expect(ranged.status == 200 && ranged.text == media.text, "\(ranged.status) \(ranged.text)")
            let live = try await HTTP.get(proxied("live.ts"))
            #expect(live.status == 200 && live.text.contains("\n" + prefix + "seg0.bin?token="), "\(live.status) \(live.text)")

            let master = try await HTTP.get(proxied("master.jpg"))
            #expect(master.status == 200, "\(master.text)")
            let variant = try #require(master.text.split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init))
            #expect(variant.hasPrefix(prefix + "list.ts?token=\(Self.token)&xresid="))

            let mpd = try await HTTP.get(proxied("manifest.mp4"))
            #expect(mpd.status == 200, "\(mpd.text)")
            #expect(mpd.text.contains("<MPD"))
            #expect(mpd.text.contains(#"media="\#(prefix)chunk-$Number%05d$.m4s?token=\#(Self.token)"#), "\(mpd.text)")
            #expect(mpd.text.contains(#"initialization="\#(prefix)init.mp4?token=\#(Self.token)"#), "\(mpd.text)")
        }
        // A real media object at a media path is still served from the cache, and so is one
        // labelled as a playlist: its bytes say what it is.
        let direct = try await Live.whenReady(proxied("seg0.bin"))
        #expect(Self.same(direct.body, segment))
        let mislabeled = try await Live.whenReady(proxied("mislabeled.ts"))
        #expect(mislabeled.status == 200)
        #expect(Self.same(mislabeled.body, Data(segment.reversed())))
    }

    @Test func anEmbeddedGatewayRewritesThem() async throws {
        let (origin, originPort) = try await Live.origin(serving: folder, token: Self.token)
        defer { origin.stop() }
        let (gateway, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token"])
        defer { gateway.stop() }
        try await playsTheDisguisedStreams(port: port, originPort: originPort)
    }

    /// `swarmgate prepare` (POST /prepare) of a playlist at a media path queues its segments,
    /// not the playlist as one object; a segment labelled as a playlist is one object.
    @Test func prepareQueuesTheSegmentsOfAPlaylistAtAMediaPath() async throws {
        let (origin, originPort) = try await Live.origin(serving: folder, token: Self.token)
        defer { origin.stop() }
        let (gateway, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token"])
        defer { gateway.stop() }
        func prepared(_ name: String) async throws -> String? {
            let url = "http://127.0.0.1:\(originPort)/tv/\(name)?token=\(Self.token)"
            let r = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(url)\"}")
            #expect(r.status == 202, "\(r.text)")
            let answer = try JSONSerialization.jsonObject(with: r.body) as? [String: Any]
            #expect(answer?["queued"] as? Int == 1, "\(r.text)")
            return (answer?["job"] as? [String: Any])?["url"] as? String
        }
        #expect(try await prepared("list.ts") == "http://127.0.0.1:\(originPort)/tv/seg0.bin?token=\(Self.token)")
        #expect(try await prepared("mislabeled.ts") == "http://127.0.0.1:\(originPort)/tv/mislabeled.ts?token=\(Self.token)")
    }

    @Test func aNodeOfATrackerRewritesThem() async throws {
        let secretFile = Scratch.path("secret")
        try Data("disguised-secret\n".utf8).write(to: URL(fileURLWithPath: secretFile))
        let (origin, originPort) = try await Live.origin(serving: folder, token: Self.token)
        defer { origin.stop() }
        let tracker = try LiveProcess(Live.binary, [
            "tracker", "--listen", "127.0.0.1:0", "--app-secret-file", secretFile, "--db", Scratch.path("registry.sqlite"),
            "--cache-dir", Live.cacheFolder(), "--allow-origin", "127.0.0.1:\(originPort)",
        ])
        defer { tracker.stop() }
        let trackerPort = try await tracker.waitForStderr(#/listening on 127\.0\.0\.1:(\d+)/#)
        let (node, port) = try await Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token",
            "--tracker", "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", "--app-secret-file", secretFile,
        ])
        defer { node.stop() }
        _ = try await node.waitForStderr(#/(logged in) to the tracker/#)
        try await playsTheDisguisedStreams(port: port, originPort: originPort)
        // The node keeps the registry's answer as long as the registry does: the playlist's
        // reloads ask the tracker nothing, and go on while it is away.
        tracker.stop()
        let reload = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/tv/list.ts?token=\(Self.token)")
        #expect(reload.status == 200 && reload.text.hasPrefix("#EXTM3U\n"), "\(reload.status) \(reload.text)")
    }
}
