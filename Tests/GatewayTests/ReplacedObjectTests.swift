import Foundation
@testable import Gateway
import Testing
import TestScratch

/// Objects the origin replaced under their names. A live encoder that restarts writes its
/// segment names again (`s0.ts`…) with other bytes, and its playlist's media sequence starts
/// over. Every node served the last run's copies
/// (found by an attack; an fMP4 stream's old init segment made the new frames undecodable).
/// Now a player gets the new run's bytes or a 302 to the origin, never the old ones: on a
/// gateway whose registry is the swarm's, and on a node of a tracker.
@Suite("Objects the origin replaced under their names")
struct ReplacedObjectTests {
    static let token = "restart-token"

    /// Segment `n` of run `run`: 200,000 bytes, other ones in each run.
    static func segment(_ run: Int, _ n: Int) -> Data {
        Data((0..<200_000).map { i in UInt8(truncatingIfNeeded: (i &* 31) ^ (n &* 7) ^ (run &* 101)) })
    }

    /// Writes run `run`'s playlist (media sequence `first`, segments `first..<first+3`) and
    /// those segments into `folder`.
    static func write(run: Int, first: Int, to folder: URL) throws {
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
        for n in first..<(first + 3) {
            try segment(run, n).write(to: folder.appendingPathComponent("s\(n).ts"), options: .atomic)
            playlist += "#EXTINF:2.0,\ns\(n).ts\n"
        }
        try Data(playlist.utf8).write(to: folder.appendingPathComponent("live.m3u8"), options: .atomic)
    }

    /// A gateway fetching from the origin at `originPort`: one whose registry is the swarm's,
    /// or a node of a tracker (logged in), the tracker given `shared` too. Returns the
    /// processes started and its port.
    static func gateway(withTracker: Bool, originPort: Int, _ arguments: [String], shared: [String] = []) async throws -> ([LiveProcess], Int) {
        let allow = ["--allow-origin", "127.0.0.1:\(originPort)"] + shared
        guard withTracker else {
            let (gateway, port) = try await Live.gateway(allow + arguments)
            return ([gateway], port)
        }
        let secret = Scratch.path("replaced-secret")
        try "replaced-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let dir = Live.cacheFolder()
        let tracker = try LiveProcess(Live.binary, [
            "tracker", "--listen", "127.0.0.1:0", "--app-secret-file", secret, "--db", dir + "-registry.sqlite", "--cache-dir", dir,
        ] + allow)
        do {
            let trackerPort = try await tracker.waitForStderr(#/listening on 127\.0\.0\.1:(\d+)/#)
            let (node, port) = try await Live.gateway(allow + arguments + ["--tracker", "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", "--app-secret-file", secret])
            do {
                try await Live.waitForLogins(node, 1)
            } catch {
                node.stop()
                throw error
            }
            return ([tracker, node], port)
        } catch {
            tracker.stop()
            throw error
        }
    }

    /// With `--read-ahead 0` (no live tails) too: the restart was not looked for then.
    @Test(arguments: zip([false, true, false], [[], [], ["--read-ahead", "0"]]))
    func aPlayerNeverGetsTheLastRunsSegments(withTracker: Bool, flags: [String]) async throws {
        let folder = Scratch.url("live-restart")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.write(run: 1, first: 0, to: folder)
        let (origin, originPort) = try await Live.origin(serving: folder, token: Self.token)
        defer { origin.stop() }
        let (processes, port) = try await Self.gateway(withTracker: withTracker, originPort: originPort, ["--inherit-query", "token"] + flags)
        defer { for p in processes { p.stop() } }
        let base = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)"
        func play(_ run: Int, _ segments: Range<Int>) async throws {
            let list = try await HTTP.get(base + "/live.m3u8?token=\(Self.token)")
            #expect(list.status == 200)
            let uris = list.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
            #expect(uris.count == 3, "\(list.text)")
            for (n, uri) in zip(segments, uris) {
                let deadline = ContinuousClock.now + .seconds(30)
                while true {
                    let r = try await HTTP.get(uri)
                    if r.status == 200 {
                        // Compared as a Bool: a failed `==` of two 200 kB Data is diffed, for minutes.
                        let right = r.body == Self.segment(run, n)
                        #expect(right, "run \(run), s\(n).ts: \(r.body == Self.segment(1, n) ? "the last run's bytes" : "other bytes")")
                        break
                    }
                    #expect(r.status == 302, "s\(n).ts: \(r.status)")
                    guard ContinuousClock.now < deadline else { throw TestFailure("s\(n).ts not served from the swarm within 30 s") }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        // The first run, until the swarm holds its segments, then on (media sequence 3).
        try await play(1, 0..<3)
        try Self.write(run: 1, first: 3, to: folder)
        try await play(1, 3..<6)
        // The encoder restarts: s0.ts-s2.ts again, with other bytes, media sequence 0.
        try Self.write(run: 2, first: 0, to: folder)
        try await play(2, 0..<3)
        // The registry prepared them again: they come from the swarm, not only by 302.
        try await play(2, 0..<3)
        // The new run goes on to the old run's later names (s3.ts-s5.ts), held from before.
        try Self.write(run: 2, first: 3, to: folder)
        try await play(2, 3..<6)
    }

    /// The same for a live MPD: the encoder restarts, numbering its segments from the start
    /// again, and the MPD's availabilityStartTime changes (Tests/python/object_origin.py:
    /// `?ast=`; `/__version` gives the segments other bytes under the same URLs).
    @Test(arguments: [[], ["--read-ahead", "0"]])
    func aDASHPlayerNeverGetsTheLastRunsSegments(flags: [String]) async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let host = "127.0.0.1:\(originPort)"
        let (gateway, port) = try await Live.gateway(["--allow-origin", host] + flags)
        defer { gateway.stop() }
        let mpd = "http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)/dashlive/restart.mpd?segments=3&first=5"
        let segment = "/obj/restart-lo/seg7.ts?size=200000&token=abc"
        func play(_ ast: String) async throws {
            let answer = try await HTTP.get(mpd + "&ast=\(ast)")
            #expect(answer.status == 200 && answer.text.contains(ast))
            let want = try await HTTP.get("http://\(host)\(segment)").body
            let xresid = try #require(answer.text.firstMatch(of: #/xresid=([0-9a-f]+)/#).map { String($0.1) })
            let url = "http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)\(segment)&xresid=\(xresid)"
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                let r = try await HTTP.get(url)
                if r.status == 200 {
                    let right = r.body == want  // a Bool: a failed `==` of two Data is diffed for minutes
                    #expect(right, "\(ast): seg7 served with other bytes than the origin's")
                    return
                }
                #expect(r.status == 302, "\(r.status)")
                guard ContinuousClock.now < deadline else { throw TestFailure("seg7 not served from the swarm within 30 s") }
                try await Task.sleep(for: .milliseconds(100))
                _ = try await HTTP.get(mpd + "&ast=\(ast)")
            }
        }
        try await play("2026-01-01T00:00:00Z")
        for k in 5..<8 { _ = try await HTTP.get("http://\(host)/__version?name=restart-lo/seg\(k).ts&bump=1") }
        try await play("2026-01-01T00:10:00Z")
    }

    /// A VOD file replaced at the origin under its name (new bytes, another length) was served
    /// as it was, by every node, for ever. A copy older than `--revalidate-after` is checked
    /// against the origin when a player asks for it; the new bytes follow, through 302s.
    @Test(arguments: [false, true])
    func aReplacedFileIsServedAnewOnceItsCopyIsOld(withTracker: Bool) async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let host = "127.0.0.1:\(originPort)"
        let (processes, port) = try await Self.gateway(withTracker: withTracker, originPort: originPort, [], shared: ["--revalidate-after", "1"])
        defer { for p in processes { p.stop() } }
        let path = "/obj/replaced.ts?size=300000"
        let url = "http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)\(path)"
        let before = try await HTTP.get("http://\(host)\(path)").body
        let first = try await Live.whenReady(url)
        #expect(first.status == 200 && first.body == before)
        _ = try await HTTP.get("http://\(host)/__version?name=replaced.ts&bump=1&size=250000")
        let after = try await HTTP.get("http://\(host)\(path)").body
        #expect(after.count == 250_000)
        try await Task.sleep(for: .milliseconds(1200))
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let r = try await HTTP.get(url)
            let new = r.status == 200 && r.body == after, old = r.status == 200 && r.body == before  // Bools: see above
            #expect(new || old || r.status == 302, "\(r.status), \(r.body.count) bytes of neither copy")
            if new { break }
            guard ContinuousClock.now < deadline else { throw TestFailure("still the old copy 60 s after it was due to be checked") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// What counts as a list started over: a media sequence back to 0, or so far back that the
    /// new list shares no segment with the last; not a list one or two segments behind (an
    /// origin edge that lags, behind a CDN), which is not kept as the newest either. An MPD
    /// whose availabilityStartTime changes.
    @Test func aListStartsOverWhenItsSequenceGoesBackPastItsLength() {
        let sequences = LiveSequences()
        #expect(!sequences.wentBack("a", to: 10, listing: 6))
        #expect(!sequences.wentBack("a", to: 12, listing: 6))
        #expect(!sequences.wentBack("a", to: 11, listing: 6), "a lagging edge")
        #expect(!sequences.wentBack("a", to: 7, listing: 6), "five back, still sharing segments with 12's list")
        #expect(!sequences.wentBack("a", to: 13, listing: 6))
        #expect(sequences.wentBack("a", to: 0, listing: 6))
        #expect(!sequences.wentBack("a", to: 1, listing: 6))
        #expect(!sequences.wentBack("b", to: 30, listing: 3))
        #expect(sequences.wentBack("b", to: 27, listing: 3))
        #expect(!sequences.wentBack("c", to: 0, listing: 6), "first sight")
        // A list that never slides (an EVENT list: its sequence stays): one that lists far
        // fewer segments than it did started over; one or two fewer is a lagging edge. Its
        // restarts were never seen.
        #expect(!sequences.wentBack("e", to: 0, listing: 5))
        #expect(!sequences.wentBack("e", to: 0, listing: 8))
        #expect(!sequences.wentBack("e", to: 0, listing: 6), "a lagging edge")
        #expect(!sequences.wentBack("e", to: 0, listing: 8))
        #expect(sequences.wentBack("e", to: 0, listing: 3))
        #expect(!sequences.wentBack("e", to: 0, listing: 4))
        #expect(!sequences.wentBack("f", to: 0, listing: 4))
        #expect(sequences.wentBack("f", to: 0, listing: 1), "a short list started over")
        // A delta update (EXT-X-SKIP) stands for the segments it skips too.
        let full = "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:40\n" + String(repeating: "#EXTINF:4,\ns.ts\n", count: 12)
        let delta = "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:40\n#EXT-X-SKIP:SKIPPED-SEGMENTS=9\n" + String(repeating: "#EXTINF:4,\ns.ts\n", count: 3)
        #expect(GatewayResponder.listing(Array(full.utf8)) == 12 && GatewayResponder.listing(Array(delta.utf8)) == 12)
        #expect(!sequences.wentBack("g", to: 40, listing: GatewayResponder.listing(Array(full.utf8))))
        #expect(!sequences.wentBack("g", to: 40, listing: GatewayResponder.listing(Array(delta.utf8))), "a delta update")
        #expect(!sequences.startedOver("m", at: "2026-01-01T00:00:00Z"))
        #expect(!sequences.startedOver("m", at: "2026-01-01T00:00:00Z"))
        #expect(sequences.startedOver("m", at: "2026-01-01T00:10:00Z"))
        #expect(!sequences.startedOver("m", at: "2026-01-01T00:00:00Z"), "an origin's lagging copy")
        #expect(!sequences.startedOver("m", at: "2026-01-01T00:10:00Z"))
        #expect(!sequences.startedOver("m", at: nil))
        // As instants, not as text: half a second later, and the same instant in another zone.
        #expect(sequences.startedOver("m", at: "2026-01-01T00:10:00.5Z"))
        #expect(!sequences.startedOver("m", at: "2026-01-01T01:10:00.5+01:00"), "the same instant")
        #expect(sequences.startedOver("m", at: "2026-01-01T01:20:00+01:00"))
        #expect(sequences.restarted("m") != nil && sequences.restarted("a") != nil && sequences.restarted("c") == nil)
    }
}
