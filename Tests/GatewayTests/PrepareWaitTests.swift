import Foundation
import Testing

/// `swarmgate prepare --wait` against a gateway whose job does not move: it gives up, and
/// says why, rather than wait for ever. (Its other outcomes are in PieceCacheTests and
/// SwarmTransferTests.) A suite of its own: the wait takes 30 s, beside the others.
@Suite("prepare --wait")
struct PrepareWaitTests {
    @Test func aPausedJobEndsTheWaitAfterThirtySecondsWithoutMovement() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        // A slow object (200 s at its rate), paused by the operator once it has begun.
        let slow = "http://127.0.0.1:\(originPort)/obj/paused-wait.ts?size=2000000&throttle=10000"
        let posted = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(slow)\"}")
        let job = try #require((try JSONSerialization.jsonObject(with: posted.body) as? [String: Any])?["job"] as? [String: Any])
        let id = try #require(job["id"] as? String)
        #expect(try await HTTP.post("\(gateway)/jobs/\(id)/pause", json: "").text.contains("\"state\":\"paused\""))
        let started = ContinuousClock.now
        let cli = try LiveProcess(Live.binary, ["prepare", slow, "--gateway", gateway, "--wait"])
        #expect(await cli.waitForExit(timeout: .seconds(90)) == 1, "\(cli.stderr)")
        #expect(cli.stderr.contains("nothing moved: 0 queued, 1 paused"), "\(cli.stderr)")
        #expect(ContinuousClock.now - started >= .seconds(30))
    }

    @Test func aPrepareQueuedBehindAnotherStreamsJobWaitsForIt() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB", "--prepare-jobs", "1"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        // Another stream's object takes the one job slot for about 45 s (at its rate); this prepare's
        // object waits in the queue behind it all that time, with nothing of its own moving.
        let slow = "http://127.0.0.1:\(originPort)/obj/ahead-of-wait.ts?size=450000&throttle=10000"
        // From before the slow job is posted: a loaded host may answer the post late, with the
        // slow job well under way.
        let started = ContinuousClock.now
        _ = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(slow)\",\"xresid\":\"other\"}")
        let cli = try LiveProcess(Live.binary, ["prepare", "http://127.0.0.1:\(originPort)/obj/behind.ts?size=100000", "--gateway", gateway, "--wait"])
        #expect(await cli.waitForExit(timeout: .seconds(120)) == 0, "\(cli.stderr)")
        #expect(cli.stderr.contains("prepared 1 of 1 objects"), "\(cli.stderr)")
        // Past the 30 s that a wait without movement lasts.
        let waited = ContinuousClock.now - started
        let jobs = waited >= .seconds(33) ? "" : (try? await HTTP.get("\(gateway)/jobs"))?.text ?? "?"
        #expect(waited >= .seconds(33), "the object was not behind the slow one: \(jobs)")
    }
}
