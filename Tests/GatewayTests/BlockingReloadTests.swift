import Foundation
@testable import Gateway
import Manifest
import Synchronization
import Testing

/// Low-latency HLS blocking reloads (`_HLS_msn`, RFC 8216bis 6.2.5.2) that the origin holds
/// until the segment is out (Tests/python/object_origin.py: `?block=S`, or `?hold=KEY` until
/// released). The rest of their
/// behaviour (passed through byte for byte, shared, not held) is in SwarmTransferTests.
@Suite("Blocking reloads")
struct BlockingReloadTests {
    /// Each rendition a node's players watch parks a reload at the origin at all times. Ten
    /// distinct ones, more than the origin client's eight transfers per host, are all at the
    /// origin together, and the node's other requests to that host are answered meanwhile.
    @Test func parkedReloadsDoNotHoldUpOtherRequestsToTheirOrigin() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let host = "127.0.0.1:\(originPort)"
        // The node waits 55 s for a reload (the origin holds one 60 s at most), past the time
        // a loaded host may take to park the ten and release them.
        let (gateway, port) = try await Live.gateway(["--allow-origin", host, "--origin-idle-timeout", "55"])
        defer { gateway.stop() }
        let base = "http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)"
        let renditions = 10
        let answered = Answered()
        // Released at the end, or on the way out of a failure: each waits there until then.
        func release() async { _ = try? await HTTP.get("http://\(host)/__release?key=parked") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<renditions {
                group.addTask {
                    let r = try await HTTP.get("\(base)/live/parked\(k).m3u8?segments=6&first=3&parts=1&hold=parked&_HLS_msn=9", timeout: 120)
                    #expect(r.status == 200 && r.text.contains("#EXT-X-PART:"), "\(r.status) \(r.text)")
                    answered.count.withLock { $0 += 1 }
                }
            }
            do {
                // The origin keeps each playlist request's query as it arrives, before it blocks.
                func parked() async throws -> Int {
                    var n = 0
                    for k in 0..<renditions {
                        let r = try await HTTP.get("http://\(host)/__stats?name=live/parked\(k).m3u8")
                        let queries = (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["queries"] as? [String]
                        n += queries?.isEmpty == false ? 1 : 0
                    }
                    return n
                }
                // Generous (the whole suite runs at once on two cores), well within the 55 s a
                // reload waits at the origin.
                let deadline = ContinuousClock.now + .seconds(40)
                var atOrigin = try await parked()
                while atOrigin < renditions && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    atOrigin = try await parked()
                }
                #expect(atOrigin == renditions, "reloads at the origin together")
                let vod = try await HTTP.get("\(base)/vod/beside-parked.m3u8?segments=2")
                #expect(vod.status == 200 && vod.text.contains("xresid="), "\(vod.status) \(vod.text)")
                #expect(answered.count.withLock { $0 } == 0, "the playlist was answered after a parked reload")
            } catch {
                await release()
                throw error
            }
            await release()
            try await group.waitForAll()
        }
        #expect(answered.count.withLock { $0 } == renditions)
    }

    /// An origin holds a blocking reload up to three target durations: a stream of 20 s
    /// segments, up to 60 s. The node read the playlist, so it waits that long (65 s here; the
    /// origin answers at 32 s, with room for a loaded host); it gave up at 30 s with a 504
    /// whatever the target duration.
    @Test func aReloadOfAPlaylistWithLongSegmentsWaitsThreeTargetDurations() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let host = "127.0.0.1:\(originPort)"
        let (gateway, port) = try await Live.gateway(["--allow-origin", host])
        defer { gateway.stop() }
        let playlist = "http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)/live/long-target.m3u8?segments=6&first=3&parts=1&target=20"
        let first = try await HTTP.get(playlist)
        #expect(first.status == 200 && first.text.contains("#EXT-X-TARGETDURATION:20"))
        let release = Task {
            try? await Task.sleep(for: .seconds(32))
            _ = try? await HTTP.get("http://\(host)/__release?key=long-target")
        }
        // Not cancelled at the end but waited for: cancelling a task inside URLSession's
        // request (the release answered, its task not yet done) deadlocked FoundationNetworking
        // (`URLSessionTask.cancel` waits on a queue), and the whole test run hung.
        let started = ContinuousClock.now
        let reload = try await HTTP.get(playlist + "&hold=long-target&_HLS_msn=9", timeout: 90)
        await release.value
        #expect(reload.status == 200 && reload.text.contains("#EXT-X-PART:"), "\(reload.status) after \(ContinuousClock.now - started)")
        #expect(GatewayResponder.blockingReloadWait(
            try ProxyURL(requestTarget: "/hls.vod.p2p.com/\(host)/live/x.m3u8?_HLS_msn=9"), configured: .seconds(10), targetDuration: 40) == .seconds(120),
            "at most 120 s")
    }

    /// A live playlist's players reload it together: those whose requests come while one is
    /// at the origin share it (each went to the origin), and all get the same answer, which
    /// no cache between the gateway and its players keeps (`no-cache`, when the origin said
    /// nothing; found by an attack).
    @Test func identicalReloadsUnderWayShareOneOriginFetch() async throws {
        let (origin, originPort) = try await Live.objectOrigin(rttMilliseconds: 300)
        defer { origin.stop() }
        let host = "127.0.0.1:\(originPort)"
        let (gateway, port) = try await Live.gateway(["--allow-origin", host])
        defer { gateway.stop() }
        let playlist = "http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)/live/together.m3u8?segments=4&first=7"
        let answers = try await withThrowingTaskGroup(of: HTTPResult.self) { group in
            for _ in 0..<10 { group.addTask { try await HTTP.get(playlist) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 200 && $0.text == answers[0].text && $0.text.contains("seg10.ts") })
        let r = try await HTTP.get("http://\(host)/__stats?name=live/together.m3u8")
        let fetched = ((try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["queries"] as? [String])?.count ?? -1
        #expect((1...2).contains(fetched), "origin fetches for 10 reloads at once: \(fetched)")
        // The origin says nothing of caching: a live list is `no-cache`, a VOD one left alone.
        #expect(answers[0].headers["cache-control"] == "no-cache", "\(answers[0].headers)")
        let vod = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)/vod/together.m3u8?segments=4")
        #expect(vod.status == 200 && vod.headers["cache-control"] == nil, "\(vod.headers)")
    }

    /// Reloads answered so far, counted by the tasks that sent them.
    final class Answered: Sendable {
        let count = Mutex(0)
    }
}
