import Foundation
import PieceStore
import Testing

/// `POST /prepare` and the jobs it makes, against a real gateway and real origins: what is
/// prepared (and what never is), under which stream, and that a job ends with the copy the
/// origin has, whatever happened to the transfer on the way.
@Suite("POST /prepare")
struct PrepareRequestTests {
    static func json(_ r: HTTPResult) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: r.body) as? [String: Any]) ?? [:]
    }

    /// Waits until every object `ids` names is done; fails on a failed one or after `timeout`.
    static func done(_ gateway: String, _ ids: [String], timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        let body = "{\"ids\":[" + ids.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
        while true {
            let status = json(try await HTTP.post("\(gateway)/jobs/status", json: body))
            if status["done"] as? Int == ids.count { return }
            if (status["failed"] as? Int ?? 0) > 0 { throw TestFailure("failed: \(status) \(try await HTTP.get("\(gateway)/jobs").text)") }
            guard ContinuousClock.now < deadline else { throw TestFailure("not done within \(timeout): \(status)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// A key (`xkey=1`) is never kept or given to a peer (SPEC section 1): a prepare of one is
    /// refused (it was prepared, its bytes written to disk and made ready for peers).
    @Test func aKeyIsNeverPrepared() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let key = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/keys/k1.key?size=16&xkey=1"
        let r = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(key)\"}")
        #expect(r.status == 400 && r.text.contains("never prepared"), "\(r.status) \(r.text)")
        #expect(!(try await HTTP.get("http://127.0.0.1:\(port)/jobs").text.contains("k1.key")), "no job made")
    }

    /// A proxy URL is one whose path starts with a VHOST; an origin URL with one further on is
    /// that origin's object (it was taken for a proxy URL of another host, `z.ts`). An xresid
    /// beside a proxy URL without one is its stream (it was dropped); one that differs from the
    /// URL's own is refused.
    @Test func whatAPrepareNamesIsWhatIsPrepared() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        let host = "127.0.0.1:\(originPort)"
        let mirrored = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"http://\(host)/obj/mirror/hls.vod.p2p.com/z.ts?size=1000\"}")
        #expect(mirrored.status == 202, "\(mirrored.status) \(mirrored.text)")
        let path = "/obj/mirror/hls.vod.p2p.com/z.ts"
        #expect(Self.json(mirrored)["objects"] as? [String] == [ObjectKey(xresid: XResIDs.derived(host, path), host: host, path: path).id], "\(mirrored.text)")

        let proxied = "\(gateway)/hls.vod.p2p.com/\(host)/obj/streamed.ts?size=1000"
        let named = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(proxied)\",\"xresid\":\"mystream\"}")
        #expect(named.status == 202 && Self.json(named)["xresid"] as? String == "mystream", "\(named.text)")
        #expect(Self.json(named)["objects"] as? [String] == [ObjectKey(xresid: "mystream", host: host, path: "/obj/streamed.ts").id])
        let twice = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(proxied)&xresid=one\",\"xresid\":\"other\"}")
        #expect(twice.status == 400 && twice.text.contains("differs"), "\(twice.status) \(twice.text)")
        let same = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(proxied)&xresid=one\",\"xresid\":\"one\"}")
        #expect(same.status == 202 && Self.json(same)["xresid"] as? String == "one", "\(same.text)")
    }

    /// An origin (or a balancer before it) that cuts every transfer after 300 kB: each cut is
    /// resumed where the last whole piece ended, and a 3 MB object is prepared however many
    /// cuts it takes (it failed after four, however far each got).
    @Test func aTransferCutAgainAndAgainIsPreparedWhileItMovesOn() async throws {
        let (origin, originPort) = try await Live.faultOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        let url = "http://127.0.0.1:\(originPort)/bytes/3000000?cut=300000&key=cut"
        let posted = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(url)\"}")
        let ids = try #require(Self.json(posted)["objects"] as? [String])
        try await Self.done(gateway, ids)
        let counts = Self.json(try await HTTP.get("http://127.0.0.1:\(originPort)/count/cut"))
        #expect((counts["requests"] as? Int ?? 0) >= 10, "cut about ten times: \(counts)")
        let served = try await HTTP.get("\(gateway)/hls.vod.p2p.com/127.0.0.1:\(originPort)/bytes/3000000?cut=300000&key=cut")
        #expect(served.status == 200 && served.body == Data((0..<3_000_000).map { UInt8($0 % 251) }))
    }

    /// A job whose origin copy changed while it was paused starts over from the first byte,
    /// and the pieces it held of the old copy go: kept (the store keeps a piece it holds), they
    /// were served against the new copy's checksums, failed them as bad pieces, and were
    /// fetched again from the origin.
    @Test func aJobThatStartsOverKeepsNothingOfTheOldCopy() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        let url = "http://127.0.0.1:\(originPort)/obj/changing.mp4?size=1500000&throttle=1000000"
        let posted = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(url)\"}")
        let job = try #require(Self.json(posted)["job"] as? [String: Any])
        let id = try #require(job["id"] as? String)
        // Paused with a few pieces held, the origin's copy replaced, resumed.
        var done = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while done < 2 * 262_144 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            done = Self.json(try await HTTP.get("\(gateway)/jobs/\(id)"))["bytesDone"] as? Int ?? 0
        }
        #expect(try await HTTP.post("\(gateway)/jobs/\(id)/pause", json: "").text.contains("\"state\":\"paused\""))
        _ = try await HTTP.get("http://127.0.0.1:\(originPort)/__version?name=changing.mp4&bump=1")
        #expect(try await HTTP.post("\(gateway)/jobs/\(id)/resume", json: "").status == 200)
        try await Self.done(gateway, try #require(Self.json(posted)["objects"] as? [String]))
        let served = try await HTTP.get("\(gateway)/hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/changing.mp4?size=1500000&throttle=1000000")
        let now = try await HTTP.get("http://127.0.0.1:\(originPort)/obj/changing.mp4?size=1500000")
        #expect(served.status == 200 && served.body == now.body, "the origin's copy now")
        let stat = Self.json(try await HTTP.get("\(gateway)/stat"))
        #expect(stat["badPieces"] as? Int == 0, "\(stat)")
    }
}
