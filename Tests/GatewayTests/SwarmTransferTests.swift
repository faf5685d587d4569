import Foundation
@testable import Gateway
import PieceStore
import Swarm
import Testing
import TestScratch

/// Pieces moving between real processes on loopback: one tracker (registry and first seed),
/// several gateway nodes, a byte-counting origin (Tests/python/object_origin.py) and players
/// that fetch a VOD through their own node, following 302s to the origin as players do.
@Suite("Swarm transfers", .serialized)
final class SwarmTransferTests {
    let secretFile: String
    static let secret = "transfer-secret-7"

    init() throws {
        secretFile = Scratch.path("secret")
        try Data((Self.secret + "\n").utf8).write(to: URL(fileURLWithPath: secretFile))
    }

    /// `swarmgate tracker` keeping its registry and seed in `dir`.
    func tracker(port: Int = 0, dir: String, originPort: Int, _ extra: [String] = []) async throws -> (LiveProcess, Int) {
        let p = try LiveProcess(Live.binary, [
            "tracker", "--listen", "127.0.0.1:\(port)", "--app-secret-file", secretFile, "--db", dir + "/registry.sqlite",
            "--cache-dir", dir, "--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB",
        ] + extra)
        let bound = try await p.waitForStderr(#/listening on 127\.0\.0\.1:(\d+)/#)
        return (p, Int(bound)!)
    }

    /// A node logged in to the tracker on `trackerPort`.
    func node(trackerPort: Int, originPort: Int, _ extra: [String] = [], cache: String = Live.cacheFolder()) async throws -> (LiveProcess, Int) {
        let (g, port) = try await Live.gateway(
            ["--allow-origin", "127.0.0.1:\(originPort)", "--tracker", "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", "--app-secret-file", secretFile]
                + extra, cache: cache)
        _ = try await g.waitForStderr(#/(logged in) to the tracker/#)
        return (g, port)
    }

    /// A node whose peers are never in time: every piece it lacks comes from the origin.
    func nodeWithoutPeers(trackerPort: Int, originPort: Int) async throws -> (LiveProcess, Int) {
        try await node(trackerPort: trackerPort, originPort: originPort, ["--peer-deadline", "0"])
    }

    static func playlist(_ name: String, originPort: Int, segments: Int, size: Int = 200_000) -> String {
        "/hls.vod.p2p.com/127.0.0.1:\(originPort)/vod/\(name).m3u8?segments=\(segments)&size=\(size)"
    }

    /// One media object as a player got it: its bytes, how long it took, and whether the
    /// node sent the player to the origin (a 302) for it.
    typealias Played = (body: Data, seconds: Double, redirected: Bool)

    /// Plays `playlist` through the gateway on `port`: the playlist, then each segment in
    /// order (the first `count`), a 302 followed to the origin. Returns each segment's bytes
    /// and how long it took.
    static func play(port: Int, playlist: String, count: Int = .max) async throws -> [Played] {
        let list = try await HTTP.get("http://127.0.0.1:\(port)\(playlist)")
        guard list.status == 200 else { throw TestFailure("playlist: \(list.status) \(list.text)") }
        return try await fetch(Array(segmentURLs(list).prefix(count)))
    }

    /// Fetches media URLs in order as a player does (a 302 followed to the origin): each one's
    /// bytes and how long it took.
    static func fetch(_ urls: [String]) async throws -> [Played] {
        var out: [Played] = []
        for url in urls {
            let start = ContinuousClock.now
            var r = try await HTTP.get(url)
            let redirected = r.status == 302
            if redirected, let location = r.headers.first(where: { $0.key.lowercased() == "location" })?.value { r = try await HTTP.get(location) }
            guard r.status == 200 else { throw TestFailure("\(url): \(r.status) \(r.text)") }
            let d = ContinuousClock.now - start
            out.append((r.body, Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18, redirected))
        }
        return out
    }

    /// The media URLs a playlist lists, in order.
    static func segmentURLs(_ playlist: HTTPResult) -> [String] {
        playlist.text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
    }

    /// The bytes of segment `k` of VOD `name` as the origin makes them (see object_origin.py).
    static func segment(_ name: String, _ k: Int, size: Int = 200_000) -> Data {
        let object = "\(name)/seg\(k).ts"
        let h = object.utf8.reduce(0) { ($0 + Int($1)) } % 256
        return Data((0..<size).map { UInt8(($0 * 7 + h + 13) % 256) })
    }

    /// Media bytes the origin sent for VOD `name` (segments fetched by nodes, the tracker and players).
    static func originBytes(_ originPort: Int, _ name: String) async throws -> Int {
        let r = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats")
        let all = try JSONSerialization.jsonObject(with: r.body) as? [String: [String: Any]] ?? [:]
        return all.filter { $0.key.hasPrefix(name + "/") }.values.reduce(0) { $0 + (($1["bytes_sent"] as? Int) ?? 0) }
    }

    /// The segment numbers of VOD `name` the origin has sent, once they include `expected`
    /// (or 30 s passed) and then have not grown for a second (the tracker may still be
    /// reading ahead).
    static func settledOriginSegments(_ originPort: Int, _ name: String, including expected: ClosedRange<Int>) async throws -> Set<Int> {
        var last = Set<Int>()
        var stableSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let r = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats")
            let all = try JSONSerialization.jsonObject(with: r.body) as? [String: [String: Any]] ?? [:]
            let now = Set(all.keys.compactMap { Live.segmentNumber(in: $0, of: name) })
            if now != last || !now.isSuperset(of: expected) { stableSince = .now }
            last = now
            if ContinuousClock.now - stableSince >= .seconds(1) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    static func stat(_ port: Int) async throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(port)/stat").body) as? [String: Any] ?? [:]
    }

    static func objectIDs(_ name: String, originPort: Int, segments: Int) -> [String] {
        let host = "127.0.0.1:\(originPort)"
        let xresid = XResIDs.derived(host, "/vod/\(name).m3u8")
        return (0..<segments).map { ObjectKey(xresid: xresid, host: host, path: "/obj/\(name)/seg\($0).ts").id }
    }

    /// A peer that logs in with the right secret and claims every segment of VOD `name`
    /// (`have`); its pieces come from `url` (object_origin.py's lying, slow or unreachable
    /// peer). Returns once the tracker has taken the claim (or the exchange ended); cancelling
    /// the task ends its session.
    static func fakePeer(
        trackerPort: Int, id: String, url: String, claiming name: String, originPort: Int, segments: Int
    ) async -> Task<[SwarmMessage], any Error> {
        let have = SwarmMessage.have(objectIDs(name, originPort: originPort, segments: segments))
        let messages = [SwarmMessage.login(LoginProof.sign(appID: "swarmgate", peerID: id, secret: secret), url: url), have, SwarmMessage(type: "ping")]
        let (announced, signal) = AsyncStream.makeStream(of: Void.self)
        let exchange = Task {
            defer { signal.finish() }
            return try await WSExchange.run(
                "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", send: messages, replies: 2, hold: .seconds(20), onReplies: { signal.yield() })
        }
        for await _ in announced { break }
        return exchange
    }

    /// The origin sent every segment of `covering` and none past `upTo` (read-ahead's window).
    func expectPrepared(_ sent: Set<Int>, covering: ClosedRange<Int>, upTo last: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sent.isSuperset(of: covering), "\(sent.sorted())", sourceLocation: sourceLocation)
        #expect(sent.max() ?? 0 <= last, "\(sent.sorted())", sourceLocation: sourceLocation)
    }

    func expectCorrect(_ played: [Played], _ name: String, segments: Int, from first: Int = 0, size: Int = 200_000) {
        #expect(played.count == segments)
        for (k, p) in played.enumerated() { #expect(p.body == Self.segment(name, first + k, size: size), "segment \(first + k) of \(name)") }
    }

    /// An origin, a tracker and nodes A and B logged in to it, where A has played VOD `name`
    /// (`segments` long) through: every object is ready at the tracker.
    struct PlayedOnA {
        let origin: LiveProcess, originPort: Int
        let tracker: LiveProcess, trackerPort: Int
        let a: LiveProcess, portA: Int
        let b: LiveProcess, portB: Int
        let playlist: String

        func stop() {
            for p in [b, a, tracker, origin] { p.stop() }
        }
    }

    /// An origin on loopback, a tracker (with `trackerFlags`) and nodes A and B logged in to it.
    struct TwoNodes {
        let origin: LiveProcess, originPort: Int
        let tracker: LiveProcess, trackerPort: Int
        let a: LiveProcess, portA: Int
        let b: LiveProcess, portB: Int

        func stop() {
            for p in [b, a, tracker, origin] { p.stop() }
        }
    }

    func twoNodes(trackerFlags: [String] = []) async throws -> TwoNodes {
        let (origin, originPort) = try await Live.objectOrigin()
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort, trackerFlags)
        let (a, portA) = try await node(trackerPort: trackerPort, originPort: originPort)
        let (b, portB) = try await node(trackerPort: trackerPort, originPort: originPort)
        return TwoNodes(origin: origin, originPort: originPort, tracker: t, trackerPort: trackerPort, a: a, portA: portA, b: b, portB: portB)
    }

    /// An origin a second away (each of its answers a round trip after the question), a
    /// tracker and one node logged in to it, and VOD `name` (3 segments) fetched through the
    /// node: its objects are queued for preparation and stay unready for seconds.
    struct FarFromOrigin {
        let origin: LiveProcess, originPort: Int
        let tracker: LiveProcess
        let node: LiveProcess, port: Int
        let list: HTTPResult

        func stop() {
            for p in [node, tracker, origin] { p.stop() }
        }
    }

    func farFromOrigin(_ name: String, nodeFlags: [String] = []) async throws -> FarFromOrigin {
        let (origin, originPort) = try await Live.objectOrigin(rttMilliseconds: 1000)
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        let (n, port) = try await node(trackerPort: trackerPort, originPort: originPort, nodeFlags)
        let list: HTTPResult
        do {
            list = try await HTTP.get("http://127.0.0.1:\(port)\(Self.playlist(name, originPort: originPort, segments: 3))")
        } catch {
            for p in [n, t, origin] { p.stop() }
            throw error
        }
        #expect(list.status == 200)
        return FarFromOrigin(origin: origin, originPort: originPort, tracker: t, node: n, port: port, list: list)
    }

    func playedOnA(_ name: String, segments: Int, bFlags: [String] = [], bCache: String = Live.cacheFolder()) async throws -> PlayedOnA {
        let (origin, originPort) = try await Live.objectOrigin()
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        let (a, portA) = try await node(trackerPort: trackerPort, originPort: originPort)
        let (b, portB) = try await node(trackerPort: trackerPort, originPort: originPort, bFlags, cache: bCache)
        let list = Self.playlist(name, originPort: originPort, segments: segments)
        let swarm = PlayedOnA(origin: origin, originPort: originPort, tracker: t, trackerPort: trackerPort, a: a, portA: portA, b: b, portB: portB, playlist: list)
        do {
            expectCorrect(try await Self.play(port: portA, playlist: list), name, segments: segments)
        } catch {
            swarm.stop()
            throw error
        }
        return swarm
    }

    @Test func fourNodesPlayingOneVODTakeMostBytesFromEachOther() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        var nodes: [(LiveProcess, Int)] = []
        defer { for n in nodes { n.0.stop() } }
        for _ in 0..<4 { nodes.append(try await node(trackerPort: trackerPort, originPort: originPort)) }
        let peers = try await HTTP.get("http://127.0.0.1:\(trackerPort)/peers")
        #expect(((try JSONSerialization.jsonObject(with: peers.body) as? [String: Any])?["peers"] as? [String])?.count == 4)
        let segments = 12
        // A tracker serves nodes, not players.
        #expect(try await HTTP.get("http://127.0.0.1:\(trackerPort)\(Self.playlist("four", originPort: originPort, segments: segments))").status == 404)
        let list = Self.playlist("four", originPort: originPort, segments: segments)
        // Players start 2 s apart, each through its own node.
        let played = try await withThrowingTaskGroup(of: (Int, [Played]).self) { group in
            for (i, n) in nodes.enumerated() {
                group.addTask {
                    try await Task.sleep(for: .seconds(2 * i))
                    return (i, try await Self.play(port: n.1, playlist: list))
                }
            }
            return try await group.reduce(into: [[Played]](repeating: [], count: nodes.count)) { $0[$1.0] = $1.1 }
        }
        for p in played { expectCorrect(p, "four", segments: segments) }
        let oneCopy = segments * 200_000
        let received = played.reduce(0) { $0 + $1.reduce(0) { $0 + $1.body.count } }
        #expect(received == 4 * oneCopy)
        var stats: [[String: Any]] = []
        for n in nodes { stats.append(try await Self.stat(n.1)) }
        func number(_ key: String, _ stat: [String: Any]) -> Int { stat[key] as? Int ?? 0 }
        // What a player got from the origin: the objects its node sent it there for (302), and
        // what its node fetched from the CDN itself (a counted fallback; also the playlist).
        let fromOriginFor = (0..<nodes.count).map { i in
            played[i].filter(\.redirected).reduce(0) { $0 + $1.body.count } + number("cdnBytes", stats[i])
        }
        // The origin sent the swarm one copy of the VOD (the tracker's preparation) and,
        // beyond it, what players were sent to it for or their nodes fell back to it for. And
        // a little more: a read-ahead job that a player's preempts resumes by range from its
        // last whole piece, and what the origin had sent past that piece is sent again.
        let fromOrigin = try await Self.originBytes(originPort, "four")
        #expect(fromOrigin - oneCopy <= fromOriginFor.reduce(0, +) + oneCopy / 4, "the origin sent \(fromOrigin) bytes, \(fromOriginFor) accounted for")
        // The first player may outrun the preparation (each object it is ahead for is a 302,
        // so it never waits); the three that follow it take most of the VOD from the swarm
        // (all of it, unless a stalled machine slows the preparation down to their pace).
        let later = fromOriginFor.dropFirst().reduce(0, +)
        #expect(Double(later) <= 0.35 * Double(3 * oneCopy), "the later players got \(fromOriginFor.dropFirst()) bytes from the origin")
        // Pieces came from peers (the tracker's seed or other nodes), counted as such.
        let p2p = stats.reduce(0) { $0 + number("p2pBytes", $1) }
        #expect(p2p > received / 2, "p2pBytes \(p2p)")
        #expect(number("peers", stats[3]) >= 1)
    }

    /// A tracker and one node logged in to it, before a byte-counting origin.
    struct OneNode {
        let origin: LiveProcess, originPort: Int
        let tracker: LiveProcess, trackerPort: Int
        let node: LiveProcess, port: Int

        func stop() {
            for p in [node, tracker, origin] { p.stop() }
        }
    }

    func oneNode() async throws -> OneNode {
        let (origin, originPort) = try await Live.objectOrigin()
        do {
            let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
            do {
                let (n, port) = try await node(trackerPort: trackerPort, originPort: originPort)
                return OneNode(origin: origin, originPort: originPort, tracker: t, trackerPort: trackerPort, node: n, port: port)
            } catch {
                t.stop()
                throw error
            }
        } catch {
            origin.stop()
            throw error
        }
    }

    /// `swarmgate prepare` through a node in a swarm: the tracker's registry prepares the
    /// objects (a playlist's and a single one alike), the answer names the tracker's `/jobs`,
    /// and `--wait` follows that list to the end; the origin sends each object once.
    @Test func prepareThroughANodeIsTheTrackersAndWaitFollowsItsJobs() async throws {
        let swarm = try await oneNode()
        defer { swarm.stop() }
        let (originPort, trackerPort, port) = (swarm.originPort, swarm.trackerPort, swarm.port)
        let gateway = "http://127.0.0.1:\(port)"
        let cli = try LiveProcess(Live.binary, ["prepare", "http://127.0.0.1:\(originPort)/vod/prep.m3u8?segments=4&size=200000", "--gateway", gateway, "--wait"])
        #expect(await cli.waitForExit(timeout: .seconds(60)) == 0, "\(cli.stderr)")
        #expect(cli.stderr.contains("prepared 4 of 4 objects"), "\(cli.stderr)")
        let answer = try await JSONSerialization.jsonObject(with: Data(cli.firstStdoutLine().utf8)) as? [String: Any]
        #expect(answer?["jobs"] as? String == "http://127.0.0.1:\(trackerPort)/jobs")
        #expect(try await Self.originBytes(originPort, "prep") == 4 * 200_000, "each segment once, to the tracker")
        // The tracker counts what its preparation cost the origin; the node, nothing.
        #expect(try await Self.stat(trackerPort)["prepareBytes"] as? Int == 4 * 200_000)
        #expect(try await Self.stat(port)["prepareBytes"] as? Int == 0)
        func jobs(_ port: Int) async throws -> [[String: Any]] {
            let r = try await HTTP.get("http://127.0.0.1:\(port)/jobs")
            return (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["jobs"] as? [[String: Any]] ?? []
        }
        // A single object too: the tracker lists it, the node does not.
        let one = "http://127.0.0.1:\(originPort)/obj/prep-one.ts?size=300000"
        let single = try LiveProcess(Live.binary, ["prepare", one, "--gateway", gateway, "--wait"])
        #expect(await single.waitForExit(timeout: .seconds(60)) == 0, "\(single.stderr)")
        #expect(single.stderr.contains("prepared 1 of 1 objects"), "\(single.stderr)")
        #expect(try await jobs(trackerPort).contains { $0["url"] as? String == one && $0["state"] as? String == "done" })
        #expect(try await jobs(port).isEmpty)
        // Once to the tracker, and its first 4 KiB to the node, which asks whether it is a
        // playlist (a media extension is only a hint).
        let sent = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=prep-one.ts")
        #expect((try JSONSerialization.jsonObject(with: sent.body) as? [String: Any])?["bytes_sent"] as? Int == 300_000 + 4096)
        // --wait follows the objects of its own prepare, not the stream's: a slow object under
        // the same xresid as the finished ones is waited for to its end.
        let xresid = try #require(answer?["xresid"] as? String)
        let slow = "http://127.0.0.1:\(originPort)/obj/prep-slow.ts?size=400000&throttle=200000"
        let later = try LiveProcess(Live.binary, ["prepare", slow, "--xresid", xresid, "--gateway", gateway, "--wait"])
        #expect(await later.waitForExit(timeout: .seconds(60)) == 0, "\(later.stderr)")
        let slowSent = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=prep-slow.ts")
        #expect((try JSONSerialization.jsonObject(with: slowSent.body) as? [String: Any])?["bytes_sent"] as? Int == 400_000 + 4096, "done before it was")
        // The node has the checksums of the first objects the tracker prepared for it, and no
        // job for them: its status counts them as done, an unknown id as unknown.
        let ids = Self.objectIDs("prep", originPort: originPort, segments: 4)
        var counts: [String: Int]?
        let told = ContinuousClock.now + .seconds(10)
        repeat {
            let status = try await HTTP.post("\(gateway)/jobs/status", json: "{\"ids\":[\"\(ids[0])\",\"\(String(repeating: "0", count: 64))\"]}")
            counts = try JSONSerialization.jsonObject(with: status.body) as? [String: Int]
            if counts?["done"] != 1 { try await Task.sleep(for: .milliseconds(100)) }
        } while counts?["done"] != 1 && ContinuousClock.now < told
        #expect(counts?["done"] == 1 && counts?["unknown"] == 1, "\(String(describing: counts))")
        // An object the origin lacks fails at the tracker; once the origin has it, a second
        // prepare through the node has the tracker queue it again, and waits for it.
        let lacking = "http://127.0.0.1:\(originPort)/obj/prep-lacking.ts?size=1000"
        _ = try await HTTP.get("http://127.0.0.1:\(originPort)/__version?name=prep-lacking.ts&gone=1")
        let failing = try LiveProcess(Live.binary, ["prepare", lacking, "--gateway", gateway, "--wait"])
        #expect(await failing.waitForExit(timeout: .seconds(60)) == 1 && failing.stderr.contains("prepared 0 of 1"), "\(failing.stderr)")
        _ = try await HTTP.get("http://127.0.0.1:\(originPort)/__version?name=prep-lacking.ts&gone=0")
        let retried = try LiveProcess(Live.binary, ["prepare", lacking, "--gateway", gateway, "--wait"])
        #expect(await retried.waitForExit(timeout: .seconds(60)) == 0 && retried.stderr.contains("prepared 1 of 1"), "\(retried.stderr)")
        // Ids that are not object ids are refused.
        #expect(try await HTTP.post("\(gateway)/jobs/status", json: "{\"ids\":[\"\(String(ids[0].prefix(16)))\"]}").status == 400)
        // 50,000 ids are taken however the JSON is spaced (pretty-printed, 3.6 MB); one more
        // is refused, and so is a body no such list could fill.
        func spaced(_ n: Int) -> String {
            "{\n  \"ids\" : [\n" + (0..<n).map { "    \"\(String(format: "%064x", $0))\"" }.joined(separator: ",\n") + "\n  ]\n}"
        }
        let full = try await HTTP.post("\(gateway)/jobs/status", json: spaced(50_000))
        #expect(full.status == 200 && full.text.contains("\"unknown\":50000"), "\(full.status) \(full.text.prefix(200))")
        #expect(try await HTTP.post("\(gateway)/jobs/status", json: spaced(50_001)).status == 400)
        #expect(try await HTTP.post("\(gateway)/jobs/status", json: spaced(50_000) + String(repeating: " ", count: 3 << 20)).status == 413)
        // A prepare's body is 64 KiB at most: too large, not malformed (it was 400).
        #expect(try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"http://h/\(String(repeating: "a", count: 70_000))\"}").status == 413)
    }

    /// A long VOD's objects reach the tracker however many they are: a read-ahead list over
    /// the 1 MiB that a message once was (which ended the node's session, and the list with
    /// it), and a `prepare` of more objects than one message carries, in several.
    @Test func aLongVODsObjectsReachTheTrackerWithoutEndingTheSession() async throws {
        let swarm = try await oneNode()
        defer { swarm.stop() }
        let (originPort, trackerPort, n, port) = (swarm.originPort, swarm.trackerPort, swarm.node, swarm.port)
        // 6,000 segments: about 1.5 MB of objects in the read-ahead list.
        let played = try await Self.play(port: port, playlist: "/hls.vod.p2p.com/127.0.0.1:\(originPort)/vod/long-read.m3u8?segments=6000&size=1000", count: 1)
        #expect(played.count == 1)
        func requested(_ name: String) async throws -> Int {
            let r = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=\(name)")
            return (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["requests"] as? Int ?? 0
        }
        var deadline = ContinuousClock.now + .seconds(15)
        while try await requested("long-read/seg1.ts") == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await requested("long-read/seg1.ts") > 0, "the tracker read ahead of the player")
        // 10,500 objects to prepare: more than one message carries (10,000).
        let posted = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"http://127.0.0.1:\(originPort)/vod/long-whole.m3u8?segments=10500&size=100\"}")
        #expect(posted.status == 202 && posted.text.contains("\"queued\":10500"), "\(posted.status) \(posted.text)")
        func listed(_ object: String) async throws -> Bool {
            let r = try await HTTP.get("http://127.0.0.1:\(trackerPort)/jobs")
            let jobs = (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["jobs"] as? [[String: Any]] ?? []
            return jobs.contains { ($0["url"] as? String)?.contains(object) == true }
        }
        deadline = ContinuousClock.now + .seconds(15)
        while try await !listed("/long-whole/seg10499.ts") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(try await listed("/long-whole/seg10499.ts"), "the last object, in the second message, is queued")
        #expect(n.stderr.components(separatedBy: "logged in to the tracker").count == 2, "one session: \(n.stderr.suffix(2000))")
    }

    /// The tracker prepares a VOD a window of media time ahead of the swarm's furthest player,
    /// not whole: two viewers who leave after three segments of a 200-segment VOD cost the
    /// origin that window, and a viewer who plays on moves it.
    @Test func theTrackerPreparesAWindowAheadOfTheSwarmsFurthestPlayerNotTheWholeVOD() async throws {
        let swarm = try await twoNodes(trackerFlags: ["--read-ahead", "20"])
        defer { swarm.stop() }
        let (originPort, portA, portB) = (swarm.originPort, swarm.portA, swarm.portB)
        let list = Self.playlist("left", originPort: originPort, segments: 200)
        for port in [portA, portB] { expectCorrect(try await Self.play(port: port, playlist: list, count: 3), "left", segments: 3) }
        // 4 s segments. Reached: 0 to 2 played, and up to 5 if a node prefetched after serving
        // 2 (a segment sent to the CDN by 302 is not followed by a prefetch); the window takes
        // those starting within 20 s of the end of 2 (up to 7) or of 5 (up to 10).
        var sent = try await Self.settledOriginSegments(originPort, "left", including: 0...7)
        expectPrepared(sent, covering: 0...7, upTo: 12)
        // A viewer who plays on to 29 takes the window to 34, and to 37 if it prefetched to 32
        // (no prefetch follows a segment sent to the CDN by 302).
        expectCorrect(try await Self.play(port: portA, playlist: list, count: 30), "left", segments: 30)
        sent = try await Self.settledOriginSegments(originPort, "left", including: 0...34)
        expectPrepared(sent, covering: 0...34, upTo: 40)
    }

    /// A player resuming mid-VOD through a swarm node costs the origin nothing before where it
    /// resumed: the node's prefetch of a playlist's first segments, when it is opened, takes
    /// them from peers if they are ready, and neither prepares them nor opens a window there.
    /// In a VOD longer than one `prepare` carries (12,000 segments; a 24-hour VOD of 2 s
    /// segments is 43,200), the plan tells the tracker the first part, and the player's node
    /// sends the part it resumed in: the tracker knew nothing past the first 10,000 before.
    @Test(arguments: [(200, 50), (12_000, 11_000)])
    func aPlayerResumingMidVODCostsTheOriginNothingBeforeWhereItResumed(segments: Int, resumed: Int) async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort, ["--read-ahead", "20"])
        defer { t.stop() }
        let (a, portA) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { a.stop() }
        let list = Self.playlist("resumed", originPort: originPort, segments: segments)
        let urls = Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(portA)\(list)"))
        #expect(urls.count == segments)
        // 4 s segments: the one resumed at and the window after it (20 s: 5 more, or 8 after a
        // prefetch).
        expectCorrect(try await Self.fetch([urls[resumed]]), "resumed", segments: 1, from: resumed)
        let sent = try await Self.settledOriginSegments(originPort, "resumed", including: resumed...(resumed + 5))
        #expect(sent.min() == resumed, "\(sent.sorted())")
        #expect(sent.max() ?? 0 <= resumed + 10, "\(sent.sorted())")
    }

    /// A static MPD in a swarm: the tracker reads ahead the Representation the players play
    /// (not the others), and a second node's player takes its segments from peers.
    @Test func aStaticMPDIsReadAheadAndSharedInTheSwarm() async throws {
        let swarm = try await twoNodes(trackerFlags: ["--read-ahead", "20"])
        defer { swarm.stop() }
        let (originPort, portA, portB) = (swarm.originPort, swarm.portA, swarm.portB)
        let name = "dash-swarm"
        // Each node's player reads the MPD through its node and fills the template for "hi".
        func hiSegments(_ port: Int, _ range: Range<Int>) async throws -> [String] {
            let mpd = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/dash/\(name).mpd?segments=200&size=200000")
            #expect(mpd.status == 200)
            let template = String(try #require(mpd.text.firstMatch(of: #/media="([^"]+)"/#)).1).replacing("&amp;", with: "&")
            return range.map { template.replacing("$RepresentationID$", with: "hi").replacing("$Number$", with: String($0)) }
        }
        expectCorrect(try await Self.fetch(try await hiSegments(portA, 0..<6)), name + "-hi", segments: 6)
        // 4 s segments, 0 to 5 played (6 to 8 prefetched at most): the window reaches 10 (or 13).
        let sent = try await Self.settledOriginSegments(originPort, name + "-hi", including: 0...8)
        expectPrepared(sent, covering: 0...8, upTo: 14)
        // Settled above: the origin never saw the Representation not played.
        let seen = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats").text
        #expect(!seen.contains(name + "-lo/seg"), "the Representation not played")
        // B's player plays the same: from peers.
        expectCorrect(try await Self.fetch(try await hiSegments(portB, 0..<6)), name + "-hi", segments: 6)
        let stat = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(portB)/stat").body) as? [String: Any] ?? [:]
        #expect((stat["p2pBytes"] as? Int ?? 0) + (stat["cacheBytes"] as? Int ?? 0) >= 3 * 200_000, "\(stat)")
    }

    /// The origin's copy of a segment changes after the swarm prepared it. A node that has to
    /// fetch a piece of it from the origin sends its player there (302) and tells the tracker,
    /// whose registry checks the piece against the origin itself and prepares the new copy;
    /// the node then serves the new copy. A node still holding the old copy refuses its pieces
    /// to nodes that expect the new one (409), so nobody reports it for bad pieces.
    /// An origin that ignores ranges (200 and the whole object to a piece's range) sends a
    /// node each object once for all the pieces it must fetch: the body that came for the
    /// first is read to its end, every piece kept as it passes, and the others wait for it
    /// rather than ask again (each would have cost the object up to its piece: seven
    /// requests and 1.8 MB for a 400 kB object). The first object's pieces race (at most the
    /// four a response asks at once); once the node has seen the origin ignore ranges, an
    /// object's first piece request goes alone. Those bytes count as the CDN's.
    @Test func aNodeAsksAnOriginThatIgnoresRangesOncePerObject() async throws {
        let swarm = try await oneNode()
        defer { swarm.stop() }
        let originPort = swarm.originPort
        let (c, portC) = try await nodeWithoutPeers(trackerPort: swarm.trackerPort, originPort: originPort)
        defer { c.stop() }
        func asked(_ name: String) async throws -> [String: Any] {
            let r = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=\(name)")
            return try JSONSerialization.jsonObject(with: r.body) as? [String: Any] ?? [:]
        }
        for (n, name) in ["wholeonly-1.ts", "wholeonly-2.ts"].enumerated() {
            _ = try await HTTP.get("http://127.0.0.1:\(originPort)/__version?name=\(name)&noranges=1")
            let path = "/obj/\(name)?size=400000"
            let xresid = "whole-\(n)"
            let url = "http://127.0.0.1:\(portC)/hls.vod.p2p.com/127.0.0.1:\(originPort)\(path)&xresid=\(xresid)"
            let want = try await HTTP.get("http://127.0.0.1:\(originPort)\(path)").body
            let served = try await Live.whenReady(url, timeout: .seconds(20))
            let same = served.body == want
            #expect(served.status == 200 && same, "\(name): \(served.status), \(served.body.count) bytes")
            // The direct fetch above, the tracker's preparation, and C's pieces.
            let seen = try await asked(name)
            let requests = seen["requests"] as? Int ?? 0
            #expect(n == 0 ? (3...6).contains(requests) : requests == 3, "\(name): \(seen)")
            let stat = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(portC)/stat?xresid=\(xresid)").body) as? [String: Any] ?? [:]
            // Every byte C sent counted, as the CDN's once the origin is known to ignore ranges
            // (the first object's racing fetches can leave a piece counted as the cache's).
            let cdn = stat["cdnBytes"] as? Int ?? 0, cache = stat["cacheBytes"] as? Int ?? 0
            #expect(n == 0 ? cdn + cache == 400_000 && cdn >= 400_000 - 65_536 : cdn == 400_000 && cache == 0, "\(name): \(stat)")
            // Kept: the next player's copy comes from C's pieces.
            let again = try await HTTP.get(url)
            let sameAgain = again.body == want
            #expect(again.status == 200 && sameAgain)
            #expect(try await asked(name)["requests"] as? Int == requests)
        }
    }

    /// A seek into an object over 64 MiB whose origin ignores ranges: the node reads the
    /// body up to the piece and 16 MiB on, keeping what passes, then holds it (paused) rather
    /// than reading to the end; a player that goes on through the object (its reads are store
    /// hits) has it read on, so that one body serves it to the end (a read that ended there
    /// was begun again from the first byte at each step past it: 6x the object for a slow
    /// player). A piece before it is held. Every byte is the object's.
    @Test func aLargeObjectWhoseOriginIgnoresRangesIsReadOnceAsItIsPlayed() async throws {
        let swarm = try await oneNode()
        defer { swarm.stop() }
        let originPort = swarm.originPort
        let (c, portC) = try await nodeWithoutPeers(trackerPort: swarm.trackerPort, originPort: originPort)
        defer { c.stop() }
        let name = "wholeonly-large.mp4"
        let size = 100_000_000
        _ = try await HTTP.get("http://127.0.0.1:\(originPort)/__version?name=\(name)&noranges=1")
        let url = "http://127.0.0.1:\(portC)/xdfs.p2p.com/127.0.0.1:\(originPort)/obj/\(name)?size=\(size)"
        // The object's bytes as object_origin.py makes them (version 1).
        let h = name.utf8.reduce(0) { ($0 + Int($1)) % 256 }
        func expected(_ range: ClosedRange<Int>) -> Data { Data(range.map { UInt8(($0 * 7 + h + 13) % 256) }) }
        /// The origin's figures once its byte count stands still (a held read sends nothing).
        func settled() async throws -> (requests: Int, sent: Int) {
            var last = (requests: -1, sent: -1)
            for _ in 0..<100 {
                let r = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=\(name)")
                let o = try JSONSerialization.jsonObject(with: r.body) as? [String: Any] ?? [:]
                let now = (requests: o["requests"] as? Int ?? 0, sent: o["bytes_sent"] as? Int ?? 0)
                if now == last { return now }
                last = now
                try await Task.sleep(for: .milliseconds(300))
            }
            throw TestFailure("the origin kept sending: \(last)")
        }
        func seek(_ range: ClosedRange<Int>) async throws {
            let r = try await Live.whenReady(url, headers: ["Range": "bytes=\(range.lowerBound)-\(range.upperBound)"], timeout: .seconds(60))
            let same = r.body == expected(range)
            #expect(r.status == 206 && same, "\(range): \(r.status), \(r.body.count) bytes")
        }
        try await seek(60_000_000...60_000_099)
        let first = try await settled()
        // The tracker's preparation, and C's one read, held past the piece (+16 MiB).
        #expect(first.requests == 2, "\(first)")
        #expect(first.sent - size < 90_000_000, "C read \(first.sent - size) bytes for a piece at 60 MB, not the whole")
        // A player going on, 10 MB a step, each step a store hit: the same read goes on.
        for at in stride(from: 70_000_000, through: 99_000_000, by: 10_000_000) { try await seek(at...at + 99) }
        try await seek(99_999_900...99_999_999)
        try await seek(1_000...1_099)
        let last = try await settled()
        #expect(last.requests == 2 && last.sent - size <= size, "one copy for C: \(last)")
    }

    @Test func anOriginCopyThatChangedIsPreparedAgainForTheSwarm() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let (originPort, portA, portB) = (swarm.originPort, swarm.portA, swarm.portB)
        let (c, portC) = try await nodeWithoutPeers(trackerPort: swarm.trackerPort, originPort: originPort)
        defer { c.stop() }
        let name = "renewed-swarm"
        let list = Self.playlist(name, originPort: originPort, segments: 3)
        expectCorrect(try await Self.play(port: portA, playlist: list), name, segments: 3)
        _ = try await Self.settledOriginSegments(originPort, name, including: 0...2)
        // A's second play, once every object is ready, stores the pieces: A holds the old copy.
        expectCorrect(try await Self.play(port: portA, playlist: list), name, segments: 3)
        _ = try await HTTP.get("http://127.0.0.1:\(originPort)/__version?name=\(name)/seg1.ts&bump=1")
        let renewed = try await HTTP.get("http://127.0.0.1:\(originPort)/obj/\(name)/seg1.ts?size=200000&token=abc").body
        #expect(renewed != Self.segment(name, 1))
        func segment1(_ port: Int) async throws -> String {
            Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(port)\(list)"))[1]
        }
        let urlC = try await segment1(portC)
        let first = try await HTTP.get(urlC)
        #expect(first.status == 302, "the old checksums no longer match the origin: \(first.status)")
        // Served again once the tracker's registry has prepared the new copy (without it, C
        // would answer 302 for ever).
        let again = try await Live.whenReady(urlC, timeout: .seconds(20))
        #expect(again.status == 200 && again.body == renewed, "the new copy")
        // B learns the new checksums from the tracker; no peer sends it the old copy.
        let b = try await Live.whenReady(try await segment1(portB), timeout: .seconds(20))
        #expect(b.status == 200 && b.body == renewed, "the new copy")
        let stat = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(portB)/stat").body) as? [String: Any] ?? [:]
        #expect(stat["badPieces"] as? Int == 0, "no node was reported for holding the old copy: \(stat)")
        // A never asked the origin, but the tracker told it its copy was dropped: its player
        // gets the new copy too, not the old one A held.
        let a = try await Live.whenReady(try await segment1(portA), timeout: .seconds(20))
        #expect(a.status == 200 && a.body == renewed, "A serves the new copy")
        // A node away while it happened, that announces the object, is told too.
        let away = LoginProof.sign(appID: "swarmgate", peerID: "away", secret: Self.secret)
        let id = Self.objectIDs(name, originPort: originPort, segments: 3)[1]
        let replies = try await WSExchange.run(
            "ws://127.0.0.1:\(swarm.trackerPort)/swarm/v1/ws", send: [.login(away, url: "http://10.9.9.9:8080"), .have([id]), SwarmMessage(type: "ping")],
            replies: 3, hold: .seconds(1))
        let dropped = replies.first { $0.type == "dropped" }
        #expect(dropped?.object == id && dropped?.copy?.count == 16, "\(replies)")
    }

    /// A live playlist's newest segments are prepared as nodes read it, before its players
    /// ask: the first player of each new segment is served from the swarm, not sent to the
    /// origin while its own request prepares it. Only the tail where players start (three
    /// target durations) and its init section are, not the playlist's past.
    @Test func aLivePlaylistsNewestSegmentsArePreparedBeforeItsPlayersAsk() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let name = "livetail"
        func live(_ first: Int) -> String {
            "/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)/live/\(name).m3u8?segments=10&first=\(first)&size=200000&map=1"
        }
        let listA = try await HTTP.get("http://127.0.0.1:\(swarm.portA)\(live(0))")
        #expect(listA.status == 200)
        let sent = try await Self.settledOriginSegments(swarm.originPort, name, including: 7...9)
        #expect(sent == Set(7...9), "\(sent.sorted())")
        let initStats = try await HTTP.get("http://127.0.0.1:\(swarm.originPort)/__stats?name=\(name)/init.mp4")
        let initFetched = (try JSONSerialization.jsonObject(with: initStats.body) as? [String: Any])?["full"] as? Int ?? 0
        #expect(initFetched >= 1, "the init section is prepared too")
        let urls = Self.segmentURLs(listA)
        for k in 7...9 {
            let r = try await HTTP.get(urls[k])
            #expect(r.status == 200 && r.body == Self.segment(name, k), "segment \(k): \(r.status)")
        }
        // The playlist moves on: B reads it with segment 10 new, prepared before B's player asks.
        let listB = try await HTTP.get("http://127.0.0.1:\(swarm.portB)\(live(1))")
        let after = try await Self.settledOriginSegments(swarm.originPort, name, including: 7...10)
        #expect(after == Set(7...10), "\(after.sorted())")
        let r = try await HTTP.get(Self.segmentURLs(listB)[9])
        #expect(r.status == 200 && r.body == Self.segment(name, 10), "segment 10: \(r.status)")
        for port in [swarm.portA, swarm.portB] {
            let fallbacks = try await Self.stat(port)["fallbacks"] as? [String: Int] ?? [:]
            #expect(fallbacks["checksums_not_ready", default: 0] == 0, "no player was sent to the origin: \(fallbacks)")
        }
    }

    /// A live playlist's answer waits (briefly) for the new segments it lists to be ready in
    /// the swarm: players ask for a new segment the moment they see it, and are then served
    /// from the swarm instead of being sent to the origin while the first request prepares it,
    /// from the first node that reads the playlist on. A node that reads it after another made
    /// them ready is not held.
    @Test func aLivePlaylistsAnswerWaitsForTheNewSegmentsItLists() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let name = "livehold"
        for (first, port) in [(0, swarm.portA), (0, swarm.portB), (1, swarm.portB), (1, swarm.portA), (2, swarm.portA)] {
            let list = try await HTTP.get(
                "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)/live/\(name).m3u8?segments=10&first=\(first)&size=200000")
            #expect(list.status == 200)
            // The newest segment, at once, as a player does.
            let newest = try await HTTP.get(try #require(Self.segmentURLs(list).last))
            #expect(newest.status == 200 && newest.body == Self.segment(name, first + 9), "segment \(first + 9) from \(port): \(newest.status)")
        }
        // Two players of one node read the playlist at once, with a new segment: both wait
        // for it (the second for the first one's hold), and neither is sent to the origin.
        let url = "http://127.0.0.1:\(swarm.portB)/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)/live/\(name).m3u8?segments=10&first=3&size=200000"
        async let one = HTTP.get(url)
        async let two = HTTP.get(url)
        for list in try await [one, two] {
            let newest = try await HTTP.get(try #require(Self.segmentURLs(list).last))
            #expect(newest.status == 200 && newest.body == Self.segment(name, 12), "segment 12: \(newest.status)")
        }
        for port in [swarm.portA, swarm.portB] {
            let fallbacks = try await Self.stat(port)["fallbacks"] as? [String: Int] ?? [:]
            #expect(fallbacks["checksums_not_ready", default: 0] == 0, "no player was sent to the origin: \(fallbacks)")
        }
        // The holds are counted: B held each read that listed segments new to it (first=0, 1, 3).
        let holds = try await Self.liveHolds(swarm.portB)
        #expect(holds >= 2, "\(holds)")
        #expect(try await HTTP.get("http://127.0.0.1:\(swarm.portB)/metrics").text.contains("swarmgate_live_hold_milliseconds_total"))
    }

    /// `swarmgate_live_holds_total` of the node at `port`.
    static func liveHolds(_ port: Int) async throws -> Int {
        let metrics = try await HTTP.get("http://127.0.0.1:\(port)/metrics").text
        return Int(try #require(metrics.firstMatch(of: #/\nswarmgate_live_holds_total (\d+)/#)).1) ?? -1
    }

    /// A low-latency playlist (with parts) is not held: its players fetch the next part the
    /// moment it is listed. Its blocking reloads reach the origin with `_HLS_msn` and
    /// `_HLS_part` byte for byte and are answered when the origin answers; its parts, preload
    /// hint and rendition report are proxied. And `--live-hold 0` holds no playlist, while the
    /// live tail is still prepared.
    @Test func aLowLatencyPlaylistIsNotHeldAndLiveHoldZeroHoldsNothing() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let (c, portC) = try await node(trackerPort: swarm.trackerPort, originPort: swarm.originPort, ["--live-hold", "0"])
        defer { c.stop() }
        let origin = "127.0.0.1:\(swarm.originPort)"
        let base = "/hls.vod.p2p.com/\(origin)/live/"
        var lastQuery = ""
        for first in 0...2 {
            // The third read is a blocking reload of a segment the origin has not listed yet.
            lastQuery = "segments=6&first=\(first)&parts=1&size=200000&block=1" + (first == 2 ? "&_HLS_msn=8&_HLS_part=0" : "")
            let list = try await HTTP.get("http://127.0.0.1:\(swarm.portA)\(base)ll.m3u8?\(lastQuery)")
            #expect(list.status == 200 && list.text.contains("#EXT-X-PART:"), "\(list.status)")
            let uris = list.text.matches(of: #/URI="([^"]*)"/#).map { String($0.1) }
            #expect(uris.count == 10, "8 parts, a preload hint and a rendition report: \(uris)")
            #expect(uris.allSatisfy { $0.hasPrefix("http://127.0.0.1:\(swarm.portA)/hls.vod.p2p.com/\(origin)/") && $0.contains("xresid=") }, "\(uris)")
            #expect(uris.last?.contains("/live/ll-alt.m3u8?parts=1&xresid=") == true, "\(uris)")
        }
        let stats = try await HTTP.get("http://127.0.0.1:\(swarm.originPort)/__stats?name=live/ll.m3u8")
        let queries = (try JSONSerialization.jsonObject(with: stats.body) as? [String: Any])?["queries"] as? [String]
        #expect(queries?.last == lastQuery, "\(queries ?? [])")
        #expect(try await Self.liveHolds(swarm.portA) == 0, "a low-latency playlist is not held")
        // A part is a media object: from the swarm when ready, else from the origin by 302.
        let part = try await HTTP.get("http://127.0.0.1:\(swarm.portA)\(base.replacingOccurrences(of: "/live/", with: "/obj/"))ll/seg7.part3.ts?size=50000&token=abc")
        #expect(part.status == 200 || part.headers["location"] == "http://\(origin)/obj/ll/seg7.part3.ts?size=50000&token=abc", "\(part.status)")
        // The same node holds a playlist without parts (so the count above could have moved).
        _ = try await HTTP.get("http://127.0.0.1:\(swarm.portA)\(base)plain.m3u8?segments=6&first=0&size=200000")
        #expect(try await Self.liveHolds(swarm.portA) >= 1)
        // C holds nothing, yet the registry prepares the tail it read: the newest segment is
        // fetched from the origin with no player asking for it.
        let zero = try await HTTP.get("http://127.0.0.1:\(portC)\(base)zero.m3u8?segments=6&first=0&size=200000")
        #expect(zero.status == 200)
        #expect(try await Self.liveHolds(portC) == 0)
        var fetched = 0
        for _ in 0..<100 where fetched == 0 {
            let r = try await HTTP.get("http://127.0.0.1:\(swarm.originPort)/__stats?name=zero/seg5.ts")
            fetched = (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["full"] as? Int ?? 0
            if fetched == 0 { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(fetched >= 1, "the tail of a playlist read with --live-hold 0 is prepared")
        // The origin holds a blocking reload until the segment is out (here 1.5 s), longer
        // than a node's --origin-idle-timeout may be: the reload is answered, not a 504.
        let (d, portD) = try await Live.gateway(["--allow-origin", origin, "--origin-idle-timeout", "0.5"])
        defer { d.stop() }
        let reload = try await HTTP.get("http://127.0.0.1:\(portD)\(base)ll.m3u8?segments=6&first=3&parts=1&block=1.5&_HLS_msn=9")
        #expect(reload.status == 200 && reload.text.contains("#EXT-X-PART:"), "\(reload.status) \(reload.text)")
        // The query names a blocking reload, whatever the path: one served without an
        // extension waits as long, and is rewritten.
        let bare = try await HTTP.get("http://127.0.0.1:\(portD)\(base)ll-bare?segments=6&first=3&parts=1&block=1.5&_HLS_msn=9")
        #expect(bare.status == 200 && bare.text.contains("#EXT-X-PART:") && bare.text.contains("xresid="), "\(bare.status) \(bare.text)")
        // Four players of one node park the same blocking reload: one reaches the origin, and
        // each gets the playlist.
        let shared = "segments=6&first=4&parts=1&block=3&_HLS_msn=10&_HLS_part=2"
        let before = try await Self.stat(portD)
        let answers = try await withThrowingTaskGroup(of: HTTPResult.self) { group in
            for _ in 0..<4 { group.addTask { try await HTTP.get("http://127.0.0.1:\(portD)\(base)ll.m3u8?\(shared)") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 200 && $0.body == answers[0].body && $0.text.contains("seg9.part3.ts") })
        let asked = try await HTTP.get("http://127.0.0.1:\(swarm.originPort)/__stats?name=live/ll.m3u8")
        let all = (try JSONSerialization.jsonObject(with: asked.body) as? [String: Any])?["queries"] as? [String] ?? []
        #expect(all.filter { $0 == shared }.count == 1, "\(all)")
        // Counted so: the origin sent the playlist once, the other three came from the node
        // (each the rewritten list its player got).
        let after = try await Self.stat(portD)
        func grew(_ name: String) -> Int { (after[name] as? Int ?? 0) - (before[name] as? Int ?? 0) }
        let sent = answers[0].body.count
        #expect(grew("cdnBytes") == sent && grew("cacheBytes") == 3 * sent, "\(grew("cdnBytes")) and \(grew("cacheBytes")) for \(sent)")
    }

    /// A node cannot make the registry drop a good copy: on `changed`, the registry fetches the
    /// piece from the origin itself, and a piece that still matches changes nothing; nor does
    /// a URL whose query selects other bytes under the same ETag, nor a piece index below 0.
    @Test func aChangedMessageForAnUnchangedCopyChangesNothing() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let originPort = swarm.originPort
        let name = "unchanged-swarm"
        let list = Self.playlist(name, originPort: originPort, segments: 2)
        expectCorrect(try await Self.play(port: swarm.portA, playlist: list), name, segments: 2)
        _ = try await Self.settledOriginSegments(originPort, name, including: 0...1)
        let urls = Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(swarm.portB)\(list)"))
        let xresid = String(try #require(urls[0].firstMatch(of: #/xresid=([0-9a-f]+)/#)).1)
        func stats(_ k: Int) async throws -> [String: Any] {
            let r = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=\(name)/seg\(k).ts")
            return try JSONSerialization.jsonObject(with: r.body) as? [String: Any] ?? [:]
        }
        func changed(_ k: Int, query: String, piece: Int) -> SwarmMessage {
            var m = SwarmMessage(type: "changed")
            m.ref = ObjectRef(
                key: ObjectKey(xresid: xresid, host: "127.0.0.1:\(originPort)", path: "/obj/\(name)/seg\(k).ts"),
                url: "http://127.0.0.1:\(originPort)/obj/\(name)/seg\(k).ts?\(query)")
            m.piece = piece
            return m
        }
        let before = [try await stats(0), try await stats(1)]
        let liar = LoginProof.sign(appID: "swarmgate", peerID: "liar", secret: Self.secret)
        let sent = [
            SwarmMessage.login(liar, url: "http://10.9.9.9:8080"), changed(0, query: "size=200000&token=abc", piece: 0),
            changed(0, query: "size=200000&token=abc", piece: 0), changed(1, query: "size=1000", piece: 0),
            changed(1, query: "size=200000", piece: -1), SwarmMessage(type: "ping"),
        ]
        let replies = try await WSExchange.run("ws://127.0.0.1:\(swarm.trackerPort)/swarm/v1/ws", send: sent, replies: 2, hold: .seconds(1))
        #expect(replies.map(\.type) == ["welcome", "pong"])
        // One range fetched to check each object (the second `changed` of 0 is within the
        // check's interval; the index below 0 is ignored), no new preparation, and B's player
        // is served from the swarm.
        for k in 0...1 {
            let after = try await stats(k)
            #expect((after["ranges"] as? [String])?.count == ((before[k]["ranges"] as? [String])?.count ?? 0) + 1, "\(k): \(before[k]) \(after)")
            #expect(after["full"] as? Int == before[k]["full"] as? Int, "\(k): \(before[k]) \(after)")
            let b = try await HTTP.get(urls[k])
            #expect(b.status == 200 && b.body == Self.segment(name, k))
        }
    }

    /// Nor with a URL whose query selects other bytes of an object the origin sends without
    /// validators, where nothing tells the two copies apart: the registry checks the piece at
    /// the URL it prepared the copy from, never at the one the node names (it used to prepare
    /// the object again from that URL, and both nodes then served its 1,000 bytes).
    @Test func aChangedMessageNamingAnotherQueryOfAnObjectWithoutValidatorsChangesNothing() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let originPort = swarm.originPort
        let path = "/obj/noval-swarm.ts"
        let proxied = { (port: Int) in "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)\(path)?size=200000&novalidators=1&xresid=noval" }
        let want = try await HTTP.get("http://127.0.0.1:\(originPort)\(path)?size=200000").body
        #expect(try await Live.whenReady(proxied(swarm.portA)).body == want)
        var m = SwarmMessage(type: "changed")
        m.ref = ObjectRef(
            key: ObjectKey(xresid: "noval", host: "127.0.0.1:\(originPort)", path: path),
            url: "http://127.0.0.1:\(originPort)\(path)?size=1000&novalidators=1")
        m.piece = 0
        let liar = LoginProof.sign(appID: "swarmgate", peerID: "query-liar", secret: Self.secret)
        let replies = try await WSExchange.run(
            "ws://127.0.0.1:\(swarm.trackerPort)/swarm/v1/ws", send: [SwarmMessage.login(liar, url: "http://10.9.9.9:8080"), m, SwarmMessage(type: "ping")],
            replies: 2, hold: .seconds(1))
        #expect(replies.map(\.type) == ["welcome", "pong"])
        try await Task.sleep(for: .milliseconds(500))
        for port in [swarm.portA, swarm.portB] {
            let r = try await HTTP.get(proxied(port))
            #expect(r.status == 200 && r.body == want, "\(port): \(r.status), \(r.body.count) bytes")
        }
        let stats = try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=noval-swarm.ts")
        let record = try JSONSerialization.jsonObject(with: stats.body) as? [String: Any] ?? [:]
        #expect((record["bytes_sent"] as? Int ?? 0) < 3 * 200_000 + 70_000, "prepared again: \(record)")
    }

    /// A playlist a node read while its tracker was away reaches the tracker at the node's
    /// login: its player read it once, and its read-ahead starts where the player is.
    @Test func aPlaylistReadWhileTheTrackerWasAwayIsReadAheadOnceItIsBack() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let trackerPort = try GatewayServer.freeLoopbackPort()
        let (a, portA) = try await Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--tracker", "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", "--app-secret-file", secretFile,
        ])
        defer { a.stop() }
        let list = Self.playlist("away-read", originPort: originPort, segments: 200)
        let urls = Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(portA)\(list)"))
        #expect(urls.count == 200)
        let (t, _) = try await tracker(port: trackerPort, dir: Live.cacheFolder(), originPort: originPort, ["--read-ahead", "20"])
        defer { t.stop() }
        _ = try await a.waitForStderr(#/(logged in) to the tracker/#)
        // The player asks for 3 (prefetching 4 to 6): the window takes 4 to 8.
        expectCorrect(try await Self.fetch([urls[3]]), "away-read", segments: 1, from: 3)
        let sent = try await Self.settledOriginSegments(originPort, "away-read", including: 3...8)
        expectPrepared(sent, covering: 3...8, upTo: 10)
    }

    /// A tracker that restarts keeps the playlists it read ahead (its players read them once),
    /// so read-ahead goes on where the players are.
    @Test func readAheadGoesOnAfterTheTrackerRestarts() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let dir = Live.cacheFolder()
        let trackerPort = try GatewayServer.freeLoopbackPort()
        var (t, _) = try await tracker(port: trackerPort, dir: dir, originPort: originPort, ["--read-ahead", "20"])
        let (a, portA) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { a.stop() }
        let list = Self.playlist("restart", originPort: originPort, segments: 200)
        let urls = Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(portA)\(list)"))
        expectCorrect(try await Self.fetch(Array(urls.prefix(3))), "restart", segments: 3)
        _ = try await Self.settledOriginSegments(originPort, "restart", including: 0...7)
        t.stop()
        (t, _) = try await tracker(port: trackerPort, dir: dir, originPort: originPort, ["--read-ahead", "20"])
        defer { t.stop() }
        try await Live.waitForLogins(a, 2)
        // The player goes on to 19 without reading the playlist again: the window reaches 24
        // (27 if it prefetched to 22). Without the playlist kept, only what the player and its
        // prefetch asked for would come: 22 at most.
        expectCorrect(try await Self.fetch(Array(urls.prefix(20))), "restart", segments: 20)
        let sent = try await Self.settledOriginSegments(originPort, "restart", including: 0...24)
        expectPrepared(sent, covering: 0...24, upTo: 30)
    }

    /// With --await-preparation a first player is not sent to the origin for segments the
    /// tracker is preparing: its node waits for them (the tracker's progress says they end
    /// within the deadline) and takes them from the swarm, so the origin sends the VOD once.
    @Test func awaitingPreparationTheOriginSendsAVODOnceForAFirstPlayer() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        // A 3 s deadline rather than 1 s (a quarter of these 4 s segments): the suites run in
        // parallel, and a preparation that starts late under that load still ends in time.
        let (n, port) = try await node(trackerPort: trackerPort, originPort: originPort, ["--await-preparation", "--peer-deadline", "3"])
        defer { n.stop() }
        let segments = 6
        let played = try await Self.play(port: port, playlist: Self.playlist("awaited", originPort: originPort, segments: segments))
        expectCorrect(played, "awaited", segments: segments)
        let stat = try await Self.stat(port)
        #expect((stat["fallbacks"] as? [String: Any])?["checksums_not_ready"] as? Int == 0, "no 302: \(stat)")
        #expect(try await Self.originBytes(originPort, "awaited") == segments * 200_000, "one copy, the tracker's")
        #expect(stat["p2pBytes"] as? Int == segments * 200_000)
    }

    /// With --await-preparation, an origin that has not begun to send a segment by half its
    /// peer deadline (1 s for these 4 s segments) is not waited for any longer: the player is
    /// sent there, as it would have been at once without the flag.
    @Test func awaitingPreparationGivesUpAtHalfTheDeadlineOnAnOriginThatHasNotAnswered() async throws {
        let far = try await farFromOrigin("farwait", nodeFlags: ["--await-preparation"])
        defer { far.stop() }
        let first = try #require(Self.segmentURLs(far.list).first)
        let start = ContinuousClock.now
        let r = try await HTTP.get(first)
        let waited = ContinuousClock.now - start
        #expect(r.status == 302)
        #expect(waited >= .milliseconds(450) && waited < .milliseconds(950), "waited half the deadline: \(waited)")
    }

    @Test func aListedSegmentNotReadyIsRedirectedWithoutWaitingOnTheOrigin() async throws {
        // An origin a second away: every answer of its comes a round trip after the question.
        let far = try await farFromOrigin("far")
        defer { far.stop() }
        let (list, port, originPort) = (far.list, far.port, far.originPort)
        let first = try #require(Self.segmentURLs(list).first)
        // The tracker's registry is preparing it (the playlist queued it); the player is sent
        // to the origin before the origin has sent the registry a single byte of it.
        let r = try await HTTP.get(first)
        #expect(r.status == 302)
        #expect(r.headers.first { $0.key.lowercased() == "location" }?.value == "http://127.0.0.1:\(originPort)/obj/far/seg0.ts?size=200000&token=abc")
        let stats = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(originPort)/__stats?name=far/seg0.ts").body) as? [String: Any]
        #expect(stats?["bytes_sent"] as? Int == 0)
        // An object no playlist listed waits for the origin's answer: a missing one is its 404.
        let missing = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/missing/x.ts")
        #expect(missing.status == 404)
    }

    /// A node that asks the tracker to prepare a playlist is sent the checksums and holders of
    /// the objects that are ready, unasked: with the tracker gone right after, it still serves
    /// a segment it never asked about (from a peer or the origin by range, verified), where a
    /// node that had to ask would send its player to the origin.
    @Test func aPlaylistsReadyChecksumsComeWithItsPreparation() async throws {
        let swarm = try await playedOnA("told", segments: 6)
        defer { swarm.stop() }
        let playlist = try await HTTP.get("http://127.0.0.1:\(swarm.portB)\(swarm.playlist)")
        #expect(playlist.status == 200)
        // The tracker answers B's prepare in milliseconds; then it dies.
        try await Task.sleep(for: .seconds(1))
        swarm.tracker.stop(signal: SIGKILL)
        // Segment 4: not among the three B prefetches with the playlist, never asked about.
        let fifth = try #require(Self.segmentURLs(playlist).dropFirst(4).first)
        let r = try await HTTP.get(fifth)
        #expect(r.status == 200)
        #expect(r.body == Self.segment("told", 4))
    }

    /// Messages over a WebSocket frame (16 KiB) both ways: a 100-segment playlist's `prepare`
    /// (about 20 KB) and the checksums that answer it (about 60 KB). Each goes out as several
    /// frames, never cut into by another message, so the node stays logged in and plays from
    /// peers. (Written as one frame each, they made the receiver close the connection.)
    @Test func messagesLargerThanAFrameDoNotEndTheNodesConnection() async throws {
        let segments = 100
        let swarm = try await playedOnA("long", segments: segments)
        defer { swarm.stop() }
        expectCorrect(try await Self.play(port: swarm.portB, playlist: swarm.playlist), "long", segments: segments)
        #expect(!swarm.b.stderr.contains("tracker connection ended"), "\(swarm.b.stderr.suffix(2000))")
        #expect(try await Self.stat(swarm.portB)["p2pBytes"] as? Int ?? 0 > 0)
    }

    /// A tracker that stops answering holds a player's request for a listed segment that is
    /// not ready for a second at most (the quick checksum timeout), then the player goes to
    /// the origin: never the 12 s a request that waits on the origin may take.
    @Test func aFrozenTrackerHoldsAPlayerUpForASecondAtMost() async throws {
        // An origin a second away keeps the objects preparing for seconds.
        let far = try await farFromOrigin("frozen")
        defer { far.stop() }
        let (list, originPort, t) = (far.list, far.originPort, far.tracker)
        kill(t.process.processIdentifier, SIGSTOP)
        defer { kill(t.process.processIdentifier, SIGCONT) }
        let second = try #require(Self.segmentURLs(list).dropFirst().first)
        let start = ContinuousClock.now
        let r = try await HTTP.get(second)
        let waited = ContinuousClock.now - start
        #expect(r.status == 302)
        #expect(r.headers.first { $0.key.lowercased() == "location" }?.value == "http://127.0.0.1:\(originPort)/obj/frozen/seg1.ts?size=200000&token=abc")
        #expect(waited >= .seconds(1) && waited < .seconds(5), "the 302 took \(waited)")
    }

    /// A tracker that stops answering costs a segment the deadline once when the node must
    /// ask it for the object's holders again (its list of them is over 2 s old): the want's
    /// answer is waited for no longer than the deadline, then the origin is asked, and the
    /// segment's later pieces (25 of 64 KiB, 4 at a time) do not wait for it again. It was
    /// waited for up to the want's own timeout, 2 s.
    @Test func aFrozenTrackersWantCostsAPieceItsDeadlineAtMost() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        let (a, portA) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { a.stop() }
        let (b, portB) = try await node(trackerPort: trackerPort, originPort: originPort, ["--peer-deadline", "0.5"])
        defer { b.stop() }
        let size = 1_600_000
        let list = Self.playlist("wantless", originPort: originPort, segments: 2, size: size)
        expectCorrect(try await Self.play(port: portA, playlist: list), "wantless", segments: 2, size: size)
        // B is not given the playlist (it would prefetch): the segment's URL on B.
        let url = try #require(Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(portA)\(list)")).first)
            .replacingOccurrences(of: "127.0.0.1:\(portA)/", with: "127.0.0.1:\(portB)/")
        // B learns the segment's checksums and holders with its first piece alone...
        let first = try await HTTP.get(url, headers: ["Range": "bytes=0-0"])
        #expect(first.status == 206)
        // ...and once that list of holders is too old, the tracker stops answering.
        try await Task.sleep(for: .milliseconds(2500))
        kill(t.process.processIdentifier, SIGSTOP)
        defer { kill(t.process.processIdentifier, SIGCONT) }
        let start = ContinuousClock.now
        let whole = try await HTTP.get(url)
        let took = ContinuousClock.now - start
        #expect(whole.status == 200 && whole.body == Self.segment("wantless", 0, size: size))
        #expect(took < .milliseconds(1500), "the rest of the segment took \(took) (deadline 0.5 s)")
        let fallbacks = try await Self.stat(portB)["fallbacks"] as? [String: Int] ?? [:]
        #expect(fallbacks["deadline", default: 0] > 0, "\(fallbacks)")
    }

    @Test func aSegmentIsTakenFromPeersOnceWhenItsPlayerAndItsPrefetchWantItTogether() async throws {
        let swarm = try await playedOnA("once", segments: 6)
        defer { swarm.stop() }
        let list = swarm.playlist
        func uploads() async throws -> Int {
            var sum = 0
            for port in [swarm.trackerPort, swarm.portA] { sum += try await Self.stat(port)["uploadBytes"] as? Int ?? 0 }
            return sum
        }
        let before = try await uploads()
        // Every object is ready at the tracker now. B's playlist starts prefetching its first
        // segments while its player asks for them: each piece crosses from a peer once.
        expectCorrect(try await Self.play(port: swarm.portB, playlist: list), "once", segments: 6)
        let uploaded = try await uploads() - before
        let fromPeers = try await Self.stat(swarm.portB)["p2pBytes"] as? Int ?? 0
        #expect(fromPeers > 0)
        #expect(uploaded == fromPeers, "peers sent \(uploaded) bytes, node B took \(fromPeers) from them")
    }

    /// Twenty players asking a node for one object at once share each piece's fetch, and
    /// its bytes count once as fetched (from peers or the CDN), then as this node's: each was
    /// counted as fetched, which put twenty times the bytes the swarm or the CDN sent into
    /// `/stat` (and into `p2pRatio`).
    @Test func playersSharingAFetchCountItsBytesOnce() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let size = 400_000
        let path = "/obj/joined-\(UUID().uuidString.prefix(8)).ts?size=\(size)"
        let want = try await HTTP.get("http://127.0.0.1:\(swarm.originPort)\(path)").body
        // Ready at the tracker, through A; B holds none of it.
        let ready = try await Live.whenReady("http://127.0.0.1:\(swarm.portA)/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)\(path)")
        #expect(ready.status == 200 && ready.body == want)
        let url = "http://127.0.0.1:\(swarm.portB)/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)\(path)"
        let bodies = try await withThrowingTaskGroup(of: HTTPResult.self) { group in
            for _ in 0..<20 { group.addTask { try await HTTP.get(url) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.allSatisfy { $0.status == 200 && $0.body == want })
        let stat = try await Self.stat(swarm.portB)
        let fetched = (stat["p2pBytes"] as? Int ?? 0) + (stat["cdnBytes"] as? Int ?? 0)
        #expect(fetched == size, "\(stat)")
        #expect(stat["cacheBytes"] as? Int == 19 * size, "\(stat)")
    }

    /// Upgrades that never log in, from one address, take 16 of the tracker's places for logins
    /// at most: a node from another address logs in at its first try. With one bound of 64 in
    /// all, a client holding 64 of them (opened again every heartbeat) kept every node out,
    /// with no secret.
    @Test func silentUpgradesFromOneAddressLeaveOthersTheirLogin() async throws {
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: 1)
        defer { t.stop() }
        // 64 upgrades from 127.0.0.2, each answered 101, none sending a login.
        var silent: [Int32] = []
        defer { for fd in silent { close(fd) } }
        for _ in 0..<64 {
            let fd = try Self.connect(from: "127.0.0.2", to: trackerPort)
            silent.append(fd)
            let head = Array(MalformedRequestTests.upgradeHead().utf8)
            _ = head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            #expect(n > 0 && String(decoding: buffer[..<max(0, n)], as: UTF8.self).hasPrefix("HTTP/1.1 101"))
        }
        try await Task.sleep(for: .milliseconds(300))
        // The ones past 16 were told to go (a close frame, then the end of the connection).
        let waiting = silent.filter { fd in
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
        #expect(waiting.count == TrackerEndpoint.maxAwaitingLoginPerSource, "\(waiting.count) still waiting")
        let (n, _) = try await node(trackerPort: trackerPort, originPort: 1)
        defer { n.stop() }
        #expect(!n.stderr.contains("reconnecting") && !n.stderr.contains("refused"), "logged in at its first try: \(n.stderr)")
    }

    /// A TCP connection from `source` (a loopback address) to `port` on 127.0.0.1.
    static func connect(from source: String, to port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket") }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, connected == 0 else {
            close(fd)
            throw TestFailure("connect from \(source) to \(port)")
        }
        return fd
    }

    /// A tracker whose allow list lacks a host its node allows (an operator's two lists that
    /// differ): the node's players are sent to the origin, as while an object is prepared, and
    /// the node says why once. They got a 403 naming the node's own list, which has the host.
    @Test func anOriginOnlyTheTrackerRefusesSendsPlayersToTheOrigin() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: 9)
        defer { t.stop() }
        let (n, port) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { n.stop() }
        for _ in 0..<2 {
            let r = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/refused.ts?size=1000")
            #expect(r.status == 302 && r.headers["location"] == "http://127.0.0.1:\(originPort)/obj/refused.ts?size=1000", "\(r.status) \(r.text)")
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(n.stderr.components(separatedBy: "the tracker refuses an origin this node allows").count == 2, "warned once: \(n.stderr.suffix(1500))")
    }

    /// A player who leaves before its response is sent (an ABR switch, a seek) leaves the
    /// pieces fetched for it in the store: the next player served them counts their bytes as
    /// fetched. They were counted by no one: the response that began a fetch had settled
    /// the source, and its write failed.
    @Test func piecesFetchedForAPlayerWhoLeftCountForTheNextOne() async throws {
        let swarm = try await twoNodes()
        defer { swarm.stop() }
        let (size, piece) = (450_000, 65_536)
        let path = "/obj/left-\(UUID().uuidString.prefix(8)).ts?size=\(size)"
        let want = try await HTTP.get("http://127.0.0.1:\(swarm.originPort)\(path)").body
        // Ready at the tracker, through A; B holds none of it.
        let ready = try await Live.whenReady("http://127.0.0.1:\(swarm.portA)/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)\(path)")
        #expect(ready.status == 200 && ready.body == want)
        func uploads() async throws -> Int {
            var sum = 0
            for port in [swarm.trackerPort, swarm.portA] { sum += try await Self.stat(port)["uploadBytes"] as? Int ?? 0 }
            return sum
        }
        let uploadsBefore = try await uploads()
        // The first player asks B and hangs up at once: B fetches the first piece and the
        // three after it from its peers (the tracker's seed, A), and sends them nowhere.
        let fd = try HTTP.connectLoopback(port: swarm.portB)
        let request = Array("GET /hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)\(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        close(fd)
        let deadline = ContinuousClock.now + .seconds(10)
        var uploaded = 0
        while uploaded < 4 * piece && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            uploaded = try await uploads() - uploadsBefore
        }
        #expect(uploaded >= 4 * piece, "peers sent B the pieces its first player asked for")
        try await Task.sleep(for: .milliseconds(300))
        // What B's socket took for the first player before it saw the hang-up (a piece or
        // two) counts for it; the rest of what came from peers was sent nowhere.
        func delivered(_ stat: [String: Any]) -> (fetched: Int, all: Int) {
            let fetched = (stat["p2pBytes"] as? Int ?? 0) + (stat["cdnBytes"] as? Int ?? 0)
            return (fetched, fetched + (stat["cacheBytes"] as? Int ?? 0))
        }
        let first = delivered(try await Self.stat(swarm.portB))
        #expect(first.all < uploaded, "B sent the first player less than it fetched for it")
        // The next player gets the whole object: every byte of it was fetched once, and counts
        // once as fetched (the pieces fetched for the player who left, for this one).
        let second = try await HTTP.get("http://127.0.0.1:\(swarm.portB)/hls.vod.p2p.com/127.0.0.1:\(swarm.originPort)\(path)")
        #expect(second.status == 200 && second.body == want)
        let stat = try await Self.stat(swarm.portB)
        #expect(delivered(stat).fetched == size, "\(stat)")
        #expect(delivered(stat).all == size + first.all, "\(stat)")
    }

    @Test func whileAPlayerReadsASegmentTheNextThreeComeFromPeersAhead() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        let list = Self.playlist("ahead", originPort: originPort, segments: 8)
        let (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { a.stop() }
        _ = try await Self.play(port: aPort, playlist: list)
        let cache = Live.cacheFolder()
        let (b, bPort) = try await node(trackerPort: trackerPort, originPort: originPort, cache: cache)
        defer { b.stop() }
        let before = try await Self.originBytes(originPort, "ahead")
        let playlist = try await HTTP.get("http://127.0.0.1:\(bPort)\(list)")
        let urls = Self.segmentURLs(playlist)
        #expect(try await HTTP.get(urls[0]).body == Self.segment("ahead", 0))
        // Segment 0 and the three after it are held; nothing further.
        let deadline = ContinuousClock.now + .seconds(10)
        while try Live.dataFiles(in: cache).count < 4 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(500))
        #expect(try Live.dataFiles(in: cache).count == 4)
        for k in 1...3 { #expect(try await HTTP.get(urls[k]).body == Self.segment("ahead", k)) }
        #expect(try await Self.originBytes(originPort, "ahead") == before, "all from peers")
        #expect(try await Self.stat(bPort)["p2pBytes"] as? Int == 4 * 200_000, "prefetched pieces count as the swarm's when served")
    }

    /// The liar sends garbage of a whole piece's length, or longer than any piece: the second
    /// was only skipped, neither dropped nor reported, and asked again first for each piece.
    @Test(arguments: ["", "/long"])
    func aLyingPeerIsDroppedReportedAndBannedWhilePlayersGetCorrectBytes(liarPath: String) async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let dir = Live.cacheFolder()
        let (t, trackerPort) = try await tracker(dir: dir, originPort: originPort)
        defer { t.stop() }
        let segments = 6
        let (seeder, seederPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { seeder.stop() }
        // The registry prepares the VOD (read-ahead from the playlist) before the liar comes.
        _ = try await Self.play(port: seederPort, playlist: Self.playlist("lies", originPort: originPort, segments: segments))
        // The liar logs in with the right secret, claims every segment, and answers every
        // piece request with garbage (object_origin.py's /peer/v1/).
        let ws = "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws"
        let liar = await Self.fakePeer(
            trackerPort: trackerPort, id: "liar", url: "http://127.0.0.1:\(originPort)\(liarPath)", claiming: "lies", originPort: originPort,
            segments: segments)
        defer { liar.cancel() }
        let (player, playerPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { player.stop() }
        let played = try await Self.play(port: playerPort, playlist: Self.playlist("lies", originPort: originPort, segments: segments))
        expectCorrect(played, "lies", segments: segments)
        let stat = try await Self.stat(playerPort)
        #expect(stat["badPieces"] as? Int ?? 0 >= 3, "\(stat)")
        #expect(stat["p2pBytes"] as? Int ?? 0 > 0)
        // Three reports (one per object it lied about), each confirmed by the tracker's own
        // request for the piece: banned, gone from the swarm, refused at login.
        var peers = try await HTTP.get("http://127.0.0.1:\(trackerPort)/peers")
        let deadline = ContinuousClock.now + .seconds(10)
        while peers.text.contains("liar") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            peers = try await HTTP.get("http://127.0.0.1:\(trackerPort)/peers")
        }
        #expect(!peers.text.contains("liar"), "\(peers.text)")
        _ = try await t.waitForStderr(#/(banned=until)[^\n]*bad piece confirmed/#)
        #expect(t.stderr.contains("bad piece reported"))
        // The ban is on the URL the bad bytes came from, whatever id logs in from it: an id is
        // a node's own claim, and a liar logging in under an honest node's id got that node
        // banned. It is in the tracker's database, so a restarted tracker keeps it.
        let liarURL = "http://127.0.0.1:\(originPort)\(liarPath)"
        func login(_ ws: String, _ peer: String, _ url: String) async throws -> SwarmMessage? {
            try await WSExchange.run(ws, send: [.login(LoginProof.sign(appID: "swarmgate", peerID: peer, secret: Self.secret), url: url)], replies: 1).first
        }
        let again = try await login(ws, "liar-again", liarURL)
        #expect(again?.type == "refused" && again?.reason == LoginRefusal.banned.rawValue, "\(String(describing: again))")
        t.stop()
        let (restarted, restartedPort) = try await tracker(dir: dir, originPort: originPort)
        defer { restarted.stop() }
        let restartedWS = "ws://127.0.0.1:\(restartedPort)/swarm/v1/ws"
        for (peer, url, answer) in [("another-id", liarURL, "refused"), ("liar", "http://127.0.0.1:9/honest", "welcome")] {
            let answered = try await login(restartedWS, peer, url)
            #expect(answered?.type == answer, "\(peer) at \(url): \(String(describing: answered))")
        }
        // The operator sees the ban (`GET /bans`) and lifts it (`DELETE /bans?url=`, a node
        // whose disk lied and was mended): the URL is let in at once, and a restart does not
        // bring the ban back. Only a process that runs the tracker has them.
        let bansURL = "http://127.0.0.1:\(restartedPort)/bans"
        let listed = try await HTTP.get(bansURL)
        let bans = (try JSONSerialization.jsonObject(with: listed.body) as? [String: Any])?["bans"] as? [[String: Any]] ?? []
        #expect(listed.status == 200 && bans.count == 1, "\(listed.text)")
        #expect(bans.first?["url"] as? String == SwarmTracker.banKey(liarURL) && bans.first?["offences"] as? Int ?? 0 >= 3, "\(listed.text)")
        #expect(bans.first?["bannedUntil"] is String, "\(listed.text)")
        let metricsURL = "http://127.0.0.1:\(restartedPort)/metrics"
        #expect(try await HTTP.get(metricsURL).text.contains("\nswarmgate_tracker_banned_peers 1.0\n"))
        #expect(try await HTTP.get("http://127.0.0.1:\(playerPort)/bans").status == 404, "a node of a tracker has no bans of its own")
        #expect(try await HTTP.get(bansURL, method: "DELETE").status == 400, "no url")
        let lift = bansURL + "?url=" + liarURL.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let lifted = try await HTTP.get(lift, method: "DELETE")
        #expect(lifted.status == 200 && lifted.text.contains("\"lifted\""), "\(lifted.text)")
        #expect(try await HTTP.get(lift, method: "DELETE").status == 404, "nothing left to lift")
        #expect(try await HTTP.get(bansURL).text.contains("\"bans\":[]"))
        #expect(try await HTTP.get(metricsURL).text.contains("\nswarmgate_tracker_banned_peers 0.0\n"))
        #expect(try await login(restartedWS, "liar-lifted", liarURL)?.type == "welcome", "let in at once")
        restarted.stop()
        let (third, thirdPort) = try await tracker(dir: dir, originPort: originPort)
        defer { third.stop() }
        #expect(try await login("ws://127.0.0.1:\(thirdPort)/swarm/v1/ws", "liar-later", liarURL)?.type == "welcome", "the lift is kept")
    }

    /// A report is no proof: the tracker asks the reported peer for the piece itself, as the
    /// reporter asked, and an intact piece counts nothing against it (three reports from one
    /// node used to ban anyone). One holder and object is asked once per interval, and a
    /// report that names no piece is not acted on.
    @Test func reportsAgainstAPeerThatSendsIntactPiecesCountNothingAgainstIt() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        let name = "accused", segments = 4
        let list = Self.playlist(name, originPort: originPort, segments: segments)
        let cache = Live.cacheFolder()
        let (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort, cache: cache)
        defer { a.stop() }
        // Once every object is ready, A's second play stores its pieces: A holds them all.
        _ = try await Self.play(port: aPort, playlist: list)
        _ = try await Self.settledOriginSegments(originPort, name, including: 0...(segments - 1))
        expectCorrect(try await Self.play(port: aPort, playlist: list), name, segments: segments)
        let held = try Live.dataFiles(in: cache).count
        #expect(held == segments, "A holds \(held) objects")
        let accused = try String(contentsOfFile: cache + "/peer-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        func report(_ object: String, piece: Int?) -> SwarmMessage {
            var m = SwarmMessage(type: "report")
            m.peerId = accused
            m.object = object
            m.piece = piece
            return m
        }
        let ids = Self.objectIDs(name, originPort: originPort, segments: segments)
        var selfReport = report(ids[2], piece: 0)
        selfReport.peerId = "accuser"
        // Audited: one report per object. Not: the same one again, one without a piece, one of
        // a piece the object does not have, one of an object not ready, one of the reporter itself.
        let sent = [SwarmMessage.login(LoginProof.sign(appID: "swarmgate", peerID: "accuser", secret: Self.secret), url: "http://10.9.9.9:8080")]
            + ids.map { report($0, piece: 0) }
            + [report(ids[0], piece: 0), report(ids[1], piece: nil), report(ids[1], piece: 99), report(Self.objectIDs("never-played", originPort: originPort, segments: 1)[0], piece: 0), selfReport]
            + [SwarmMessage(type: "ping")]
        let replies = try await WSExchange.run("ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", send: sent, replies: 2, hold: .seconds(1))
        #expect(replies.map(\.type) == ["welcome", "pong"])
        let deadline = ContinuousClock.now + .seconds(10)
        func disproved() -> Int { t.stderr.matches(of: #/bad piece not confirmed/#).count }
        while disproved() < segments && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(disproved() == segments, "one audit per object: \(t.stderr)")
        #expect(!t.stderr.contains("bad piece confirmed"))
        #expect(t.stderr.matches(of: #/bad piece reported/#).count == segments + 5)
        #expect(t.stderr.matches(of: #/audit=queued/#).count == segments, "\(t.stderr)")
        let peers = try await HTTP.get("http://127.0.0.1:\(trackerPort)/peers")
        #expect(peers.text.contains(accused), "the accused is still in the swarm: \(peers.text)")
        // And still a holder: a new node's player gets A's pieces.
        let (b, bPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { b.stop() }
        expectCorrect(try await Self.play(port: bPort, playlist: list), name, segments: segments)
        #expect(try await Self.stat(aPort)["uploadBytes"] as? Int ?? 0 > 0)
    }

    @Test func aNodeWhosePiecesRotOnDiskNeverSendsThemAndOthersStillGetCorrectBytes() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        let segments = 4
        let list = Self.playlist("rot", originPort: originPort, segments: segments)
        let cache = Live.cacheFolder()
        var (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort, cache: cache)
        _ = try await Self.play(port: aPort, playlist: list)
        a.stop()
        // Every stored piece of every object gets one byte flipped; the node comes back with
        // the same peer id and announces what it holds.
        for file in try Live.dataFiles(in: cache) {
            let h = try #require(FileHandle(forUpdatingAtPath: file))
            let size = try h.seekToEnd()
            for offset in stride(from: UInt64(1000), to: size, by: 65536) {
                try h.seek(toOffset: offset)
                let old = try #require(try h.read(upToCount: 1))
                try h.seek(toOffset: offset)
                h.write(Data([old[0] ^ 0xFF]))
            }
            try h.close()
        }
        (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort, ["--memory-cache-size", "0"], cache: cache)
        defer { a.stop() }
        // Its `have` taken before b asks (its login's session starts empty; on a loaded host
        // the `have` came after b's wants, and b was never told of a: a full CI run failed so).
        func announced() async throws -> Double {
            let metrics = try await HTTP.get("http://127.0.0.1:\(trackerPort)/metrics").text
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("swarmgate_tracker_announced_objects ") }
            return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while try await announced() == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let (b, bPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { b.stop() }
        expectCorrect(try await Self.play(port: bPort, playlist: list), "rot", segments: segments)
        #expect(try await Self.stat(bPort)["badPieces"] as? Int == 0, "the rotten node verified its pieces before sending: none reached b")
        #expect(try await Self.stat(aPort)["uploadBytes"] as? Int == 0)
        #expect(try await Self.stat(aPort)["badPieces"] as? Int ?? 0 > 0, "a found the rot when asked")
    }

    /// Segments of 25 pieces, from peers among which a slow one claims them all: a response's
    /// pieces start a few at a time, and each few waited the deadline on the slow peer (3 s a
    /// segment here, measured); once it has missed it, the object's other pieces go to the
    /// others, so a segment costs the deadline once.
    @Test func aKilledPeerAndASlowPeerCostAtMostTheDeadlinePlusTheCDN() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        let (segments, size) = (4, 1_600_000)
        let list = Self.playlist("faults", originPort: originPort, segments: segments, size: size)
        let (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        _ = try await Self.play(port: aPort, playlist: list)
        // A slow peer (10 KB/s) claims everything; the node that held it all dies.
        let slow = await Self.fakePeer(
            trackerPort: trackerPort, id: "slow", url: "http://127.0.0.1:\(originPort)/slow", claiming: "faults", originPort: originPort,
            segments: segments)
        defer { slow.cancel() }
        a.stop(signal: SIGKILL)
        let (b, bPort) = try await node(trackerPort: trackerPort, originPort: originPort, ["--peer-deadline", "0.5"])
        defer { b.stop() }
        let played = try await Self.play(port: bPort, playlist: list)
        expectCorrect(played, "faults", segments: segments, size: size)
        // Each segment: the deadline on peers once, then the CDN or the other peers.
        for (k, p) in played.enumerated() { #expect(p.seconds < 0.5 + 1.5, "segment \(k) took \(p.seconds) s") }
        let fallbacks = try await Self.stat(bPort)["fallbacks"] as? [String: Int] ?? [:]
        #expect(fallbacks["deadline", default: 0] + fallbacks["peers_failed", default: 0] > 0, "\(fallbacks)")
    }

    /// A node whose checksums are due for revalidation drops them and still serves its player
    /// with them (a node logged in to a tracker): the pieces it fetches are kept all the same,
    /// so it holds them and is a holder. A check of the registry's copy before keeping a
    /// piece (against pieces of a dropped copy) kept none of them then.
    @Test func piecesFetchedWhileTheirChecksumsAreRevalidatedAreKept() async throws {
        let cache = Live.cacheFolder()
        let swarm = try await playedOnA("reval", segments: 2, bFlags: ["--revalidate-after", "1", "--prefetch-segments", "0"], bCache: cache)
        defer { swarm.stop() }
        // B reads the playlist: the tracker tells it of the ready checksums, unasked; B holds
        // no piece yet. Once they are a second old, its player asks for the segments.
        let list = try await HTTP.get("http://127.0.0.1:\(swarm.portB)\(swarm.playlist)")
        let urls = Self.segmentURLs(list)
        try #require(urls.count == 2)
        try await Task.sleep(for: .milliseconds(1500))
        for (k, url) in urls.enumerated() {
            let r = try await HTTP.get(url)
            #expect(r.status == 200 && r.body == Self.segment("reval", k), "segment \(k): \(r.status)")
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while try Live.dataFiles(in: cache).count < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try Live.dataFiles(in: cache).count == 2, "both segments kept")
    }

    /// A copy due for revalidation while the tracker is away (stopped), or hung (stopped
    /// answering, its connection not yet known dead), stays served from the node's cache: its
    /// checksums were dropped (so that the tracker would be asked again), and with no tracker
    /// to ask every later request for it went to the origin until the tracker was back (found
    /// by reviews freezing trackers). They are asked for in the background now, and kept
    /// unless the tracker answers otherwise.
    @Test(arguments: [false, true])
    func aCopyDueForRevalidationIsServedFromTheCacheWhileTheTrackerIsAway(hung: Bool) async throws {
        let cache = Live.cacheFolder()
        let swarm = try await playedOnA("away", segments: 2, bFlags: ["--revalidate-after", "1", "--prefetch-segments", "0"], bCache: cache)
        defer { swarm.stop() }
        expectCorrect(try await Self.play(port: swarm.portB, playlist: swarm.playlist), "away", segments: 2)
        let held = ContinuousClock.now + .seconds(10)
        while try Live.dataFiles(in: cache).count < 2 && ContinuousClock.now < held { try await Task.sleep(for: .milliseconds(50)) }
        let urls = Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(swarm.portB)\(swarm.playlist)"))
        try #require(urls.count == 2)
        try await Task.sleep(for: .milliseconds(1500))
        let tracker = swarm.tracker.process.processIdentifier
        if hung {
            kill(tracker, SIGSTOP)
        } else {
            swarm.tracker.stop()
            _ = try await swarm.b.waitForStderr(#/(tracker connection ended)/#, timeout: .seconds(20))
        }
        defer { if hung { kill(tracker, SIGCONT) } }
        let before = try await Self.originBytes(swarm.originPort, "away")
        for round in 0..<3 {
            for (k, url) in urls.enumerated() {
                let r = try await HTTP.get(url)
                #expect(r.status == 200 && r.body == Self.segment("away", k), "round \(round), segment \(k): \(r.status)")
            }
            try await Task.sleep(for: .milliseconds(700))
        }
        #expect(try await Self.originBytes(swarm.originPort, "away") == before, "every segment from the cache")
    }

    /// A holder that answers nothing (frozen: its connections complete, nothing comes back)
    /// costs one object the deadline, not each: the tracker names it until its session goes
    /// silent (30 s and more), and every new object paid the deadline for it again (found by
    /// a review freezing peers).
    @Test func aFrozenHolderCostsTheDeadlineOnceNotOncePerObject() async throws {
        let swarm = try await playedOnA("frozen", segments: 3, bFlags: ["--peer-deadline", "3", "--prefetch-segments", "0"])
        defer { swarm.stop() }
        let a = swarm.a.process.processIdentifier
        kill(a, SIGSTOP)
        defer { kill(a, SIGCONT) }
        let urls = Self.segmentURLs(try await HTTP.get("http://127.0.0.1:\(swarm.portB)\(swarm.playlist)"))
        try #require(urls.count == 3)
        var took: [Duration] = []
        for (k, url) in urls.enumerated() {
            let asked = ContinuousClock.now
            let r = try await HTTP.get(url)
            took.append(ContinuousClock.now - asked)
            #expect(r.status == 200 && r.body == Self.segment("frozen", k), "segment \(k): \(r.status)")
        }
        #expect(took.filter { $0 >= .milliseconds(1500) }.count <= 1, "the frozen holder was waited for again: \(took)")
    }

    /// A holder whose machine is gone (its connections never complete) costs a piece its
    /// connect timeout (1 s), then the next holder is asked within the deadline: it cost the
    /// piece the rest of the deadline and a CDN fetch, with a live holder listed after it.
    @Test func aHolderThatNeverAnswersIsPassedForTheNextWithinTheDeadline() async throws {
        let segments = 3
        let swarm = try await playedOnA("gone", segments: segments, bFlags: ["--peer-deadline", "3"])
        defer { swarm.stop() }
        let (originPort, trackerPort) = (swarm.originPort, swarm.trackerPort)
        // The tracker's seed holds every segment now, A what it served. A peer whose port
        // never completes a connection claims every segment; its id comes first among
        // holders handed out as often ("0" before "node-").
        let blackhole = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(originPort)/__blackhole").body) as? [String: Int]
        let port = try #require(blackhole?["port"])
        let gone = await Self.fakePeer(
            trackerPort: trackerPort, id: "0-gone", url: "http://127.0.0.1:\(port)", claiming: "gone", originPort: originPort, segments: segments)
        defer { gone.cancel() }
        expectCorrect(try await Self.play(port: swarm.portB, playlist: swarm.playlist), "gone", segments: segments)
        let stat = try await Self.stat(swarm.portB)
        #expect(stat["p2pBytes"] as? Int == segments * 200_000, "every piece from a live holder: \(stat)")
        let fallbacks = stat["fallbacks"] as? [String: Int] ?? [:]
        #expect(fallbacks.values.reduce(0, +) == 0, "\(fallbacks)")
    }

    @Test func withTheTrackerAwayNodesServeFromCDNAndOffloadResumesWhenItReturns() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let dir = Live.cacheFolder()
        let trackerPort = try GatewayServer.freeLoopbackPort()
        var (t, _) = try await tracker(port: trackerPort, dir: dir, originPort: originPort)
        let segments = 4
        let list = Self.playlist("away", originPort: originPort, segments: segments)
        let (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { a.stop() }
        let (b, bPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { b.stop() }
        _ = try await Self.play(port: aPort, playlist: list)
        // Killed once it has prepared the VOD and indexed its pieces (an index written in
        // the 20 ms before a kill -9 is lost, and those pieces fetched again).
        let prepared = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < prepared {
            let r = try await HTTP.get("http://127.0.0.1:\(trackerPort)/jobs")
            let jobs = (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["jobs"] as? [[String: Any]] ?? []
            if jobs.count == segments && jobs.allSatisfy({ $0["state"] as? String == "done" }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .milliseconds(200))
        t.stop(signal: SIGKILL)
        _ = try await b.waitForStderr(#/(reconnecting)/#)
        // CDN only: b has no checksums and no tracker, so its players go to the origin.
        let before = try await Self.originBytes(originPort, "away")
        expectCorrect(try await Self.play(port: bPort, playlist: list), "away", segments: segments)
        #expect(try await Self.originBytes(originPort, "away") - before == segments * 200_000)
        #expect(try await Self.stat(bPort)["p2pBytes"] as? Int == 0)
        // Nor does b take a prepare it cannot pass on: the tracker's registry prepares for it.
        let refused = try await HTTP.post("http://127.0.0.1:\(bPort)/prepare", json: "{\"url\":\"http://127.0.0.1:\(originPort)/obj/away-later.ts\"}")
        #expect(refused.status == 503, "\(refused.status) \(refused.text)")
        // The tracker comes back with its registry and seed; b logs in again and takes pieces from the swarm.
        (t, _) = try await tracker(port: trackerPort, dir: dir, originPort: originPort)
        defer { t.stop() }
        try await Live.waitForLogins(b, 2)
        let resumed = try await Self.originBytes(originPort, "away")
        expectCorrect(try await Self.play(port: bPort, playlist: list), "away", segments: segments)
        #expect(try await Self.originBytes(originPort, "away") == resumed, "everything came from the swarm")
        #expect(try await Self.stat(bPort)["p2pBytes"] as? Int == segments * 200_000)
    }

    @Test func aNodeWithUploadOffServesNoPieces() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (t, trackerPort) = try await tracker(dir: Live.cacheFolder(), originPort: originPort)
        defer { t.stop() }
        let segments = 4
        let list = Self.playlist("quiet", originPort: originPort, segments: segments)
        let (a, aPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { a.stop() }
        // A first player may be sent to the origin for every segment (none was ready yet):
        // each is asked again until A serves it, so that A holds them all.
        let aList = try await HTTP.get("http://127.0.0.1:\(aPort)\(list)")
        for url in Self.segmentURLs(aList) {
            #expect(try await Live.whenReady(url).status == 200)
        }
        _ = try await HTTP.get("http://127.0.0.1:\(aPort)/xdfs.p2p.com/feature?upload=0")
        let (b, bPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { b.stop() }
        expectCorrect(try await Self.play(port: bPort, playlist: list), "quiet", segments: segments)
        #expect(try await Self.stat(aPort)["uploadBytes"] as? Int == 0, "upload=0: no piece leaves the node")
        let bStat = try await Self.stat(bPort)
        #expect(bStat["p2pBytes"] as? Int == segments * 200_000, "the seed delivered instead: \(bStat)")
        // Uploads back on: the next node is served by it too (holders are asked before the seed).
        _ = try await HTTP.get("http://127.0.0.1:\(aPort)/xdfs.p2p.com/feature?upload=1")
        let (c, cPort) = try await node(trackerPort: trackerPort, originPort: originPort)
        defer { c.stop() }
        expectCorrect(try await Self.play(port: cPort, playlist: list), "quiet", segments: segments)
        #expect(try await Self.stat(aPort)["uploadBytes"] as? Int ?? 0 > 0)
    }
}

extension SwarmMessage {
    static func have(_ objects: [String]) -> SwarmMessage {
        var m = SwarmMessage(type: "have")
        m.objects = objects
        return m
    }
}
