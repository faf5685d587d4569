import Foundation
import Manifest
import Swarm
import Testing

/// The piece cache, the checksum registry and prepare jobs through a real gateway process, in
/// front of Tests/python/object_origin.py (deterministic objects, validators, resets, version
/// bumps, and a per-object record of every request it answered).
@Suite("Piece cache", .serialized)
final class PieceCacheTests {
    let origin: LiveProcess
    let originPort: Int
    var originBase: String { "http://127.0.0.1:\(originPort)" }

    init() async throws {
        (origin, originPort) = try await Live.objectOrigin()
    }

    deinit { origin.stop() }

    func gateway(cache: String = Live.cacheFolder(), _ extra: [String] = []) async throws -> (LiveProcess, Int) {
        try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB"] + extra, cache: cache)
    }

    func proxied(_ port: Int, _ path: String, vhost: String = "hls.vod.p2p.com") -> String {
        "http://127.0.0.1:\(port)/\(vhost)/127.0.0.1:\(originPort)\(path)"
    }

    /// The object as the origin serves it now.
    func direct(_ path: String) async throws -> Data {
        let r = try await HTTP.get(originBase + path)
        #expect(r.status == 200)
        return r.body
    }

    /// The origin's record of NAME: requests, full, ranges, if_range, bytes_sent.
    func originStats(_ name: String) async throws -> [String: Any] {
        let r = try await HTTP.get(originBase + "/__stats?name=\(name)")
        return try JSONSerialization.jsonObject(with: r.body) as? [String: Any] ?? [:]
    }

    func jobs(_ port: Int) async throws -> [[String: Any]] {
        let r = try await HTTP.get("http://127.0.0.1:\(port)/jobs")
        return (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["jobs"] as? [[String: Any]] ?? []
    }

    @Test func firstSightIs302ToTheOriginThenReadyObjectsAreServedFromPieces() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let path = "/obj/first.ts?size=300000&token=abc"
        let url = proxied(port, path) + "&xresid=stream-1"
        let first = try HTTP.raw(port: port, target: String(url.dropFirst("http://127.0.0.1:\(port)".count)))
        #expect(first.status == 302)
        #expect(first.headers["location"] == originBase + path, "the origin URL with its query, without xresid")
        #expect(first.text == "{\"code\":404,\"msg\":\"checksum not ready\",\"xresid\":\"stream-1\"}")
        let whole = try await Live.whenReady(url)
        let want = try await direct(path)
        #expect(whole.status == 200)
        #expect(whole.body == want)
        #expect(whole.headers["etag"] == "\"first.ts-v1\"")
        #expect(whole.headers["content-type"] == "video/mp2t")
        // Ranges across piece boundaries (64 KiB pieces), suffix and open ranges, 416.
        for (range, slice) in [("bytes=65530-65545", 65530...65545), ("bytes=0-0", 0...0), ("bytes=131000-262200", 131000...262200)] {
            let r = try await HTTP.get(url, headers: ["Range": range])
            #expect(r.status == 206)
            #expect(r.body == want[slice], "\(range)")
            #expect(r.headers["content-range"] == "bytes \(slice.lowerBound)-\(slice.upperBound)/300000")
        }
        let suffix = try await HTTP.get(url, headers: ["Range": "bytes=-70000"])
        #expect(suffix.body == want.suffix(70000))
        let open = try await HTTP.get(url, headers: ["Range": "bytes=299990-"])
        #expect(open.body == want.suffix(10))
        let bad = try await HTTP.get(url, headers: ["Range": "bytes=300000-"])
        #expect(bad.status == 416)
        #expect(bad.headers["content-range"] == "bytes */300000")
        let head = try await HTTP.get(url, method: "HEAD")
        #expect(head.status == 200 && head.headers["content-length"] == "300000" && head.body.isEmpty)
        // The registry paid for one transfer; everything after came from pieces.
        let stats = try await originStats("first.ts")
        #expect(stats["full"] as? Int == 2, "the preparation and the direct fetch: \(stats)")
        #expect(stats["requests"] as? Int == 2, "the preparation and the direct fetch: \(stats)")
        let s = try await HTTP.get("http://127.0.0.1:\(port)/stat?xresid=stream-1")
        // The origin's one copy counts once as the CDN's, for the players who got its bytes
        // first (the ranges and the whole object above), and as the preparation's fetch.
        #expect(s.text.contains("\"cdnBytes\":300000") && s.text.contains("\"prepareBytes\":300000"), "\(s.text)")
        let m = try await HTTP.get("http://127.0.0.1:\(port)/metrics")
        #expect(m.text.contains("swarmgate_prepare_bytes_total 300000"), "the preparation's origin bytes")
    }

    /// A second process on a cache folder in use is refused before it changes anything. It
    /// cleaned away what the running gateway's index did not list yet and evicted down to its
    /// own bound (most of the cache, for a smaller one), then failed on its port: the running
    /// gateway fetched again from the origin what it thought it held.
    @Test func aSecondProcessOnACacheFolderInUseIsRefusedAndChangesNothing() async throws {
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--memory-cache-size", "0"])
        defer { g.stop() }
        let paths = (0..<4).map { "/obj/in-use-\($0).ts?size=300000" }
        for path in paths { _ = try await Live.whenReady(proxied(port, path)) }
        let files = try Live.dataFiles(in: cache)
        #expect(files.count == 4)
        var asked: [Int] = []
        for i in paths.indices { asked.append(try await originStats("in-use-\(i).ts")["requests"] as? Int ?? -1) }
        let second = try LiveProcess(
            Live.binary, ["serve", "--listen", "127.0.0.1:\(port)", "--cache-dir", cache, "--cache-size", "300KiB", "--allow-origin", "127.0.0.1:\(originPort)"])
        #expect(await second.waitForExit(timeout: .seconds(30)) == 1)
        #expect(second.stderr.contains("\(cache) is in use by another process (pid "), "\(second.stderr)")
        #expect(try Live.dataFiles(in: cache).sorted() == files.sorted())
        for (i, path) in paths.enumerated() {
            let served = try await HTTP.get(proxied(port, path))
            #expect(try await originStats("in-use-\(i).ts")["requests"] as? Int == asked[i], "served from the cache, nothing asked again")
            let want = try await direct(path)
            #expect(served.status == 200 && served.body == want)
        }
        let m = try await HTTP.get("http://127.0.0.1:\(port)/metrics")
        #expect(m.text.contains("swarmgate_piece_failures_total 0"), "\(m.text)")
    }

    @Test func aByteFlippedOnDiskIsNeverServedAndThePieceIsFetchedAgain() async throws {
        let cache = Live.cacheFolder()
        // No memory tier: every read comes from disk and is verified there.
        let (g, port) = try await gateway(cache: cache, ["--memory-cache-size", "0"])
        defer { g.stop() }
        let path = "/obj/flip.ts?size=200000"
        let url = proxied(port, path)
        _ = try await Live.whenReady(url)
        let want = try await direct(path)
        // Flip one byte of piece 1 (64 KiB pieces) in place.
        try flipByte(at: 70_000, inTheOnlyObjectOf: cache)
        let again = try await HTTP.get(url)
        #expect(again.status == 200)
        #expect(again.body == want, "the corrupt piece was not served")
        let stats = try await originStats("flip.ts")
        #expect((stats["ranges"] as? [String])?.contains("bytes=65536-131071") == true, "piece 1 came again, by range: \(stats)")
        let m = try await HTTP.get("http://127.0.0.1:\(port)/metrics")
        #expect(m.text.contains("swarmgate_piece_failures_total 1"), "\(m.text)")
    }

    /// A piece fetched again from the origin (flipped on disk) whose transfer is reset
    /// mid-body: it is asked for once more, and the player's response, under way already,
    /// comes whole rather than cut short.
    @Test func aPieceWhoseOriginTransferIsResetIsAskedForAgain() async throws {
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--memory-cache-size", "0"])
        defer { g.stop() }
        _ = try await Live.whenReady(proxied(port, "/obj/cutshort.ts?size=400000"))
        try flipByte(at: 280_000, inTheOnlyObjectOf: cache)
        // The same object; the origin resets the first answer that reaches byte 300,000,
        // the range of piece 4 (262,144 to 327,679).
        let path = "/obj/cutshort.ts?size=400000&resetafter=300000"
        let again = try await HTTP.get(proxied(port, path))
        #expect(again.status == 200)
        #expect(again.body == (try await direct("/obj/cutshort.ts?size=400000")), "\(again.body.count) bytes")
        let stats = try await originStats("cutshort.ts")
        #expect((stats["ranges"] as? [String])?.filter { $0 == "bytes=262144-327679" }.count == 2, "\(stats)")
    }

    /// A gateway with a 1 s idle timeout (a piece's limit: 3 s) holding `path` (object `name`)
    /// from disk only, one byte of it at `flipAt` flipped there (that piece is fetched again),
    /// and an origin that sends `name` at `throttle` bytes a second from now on. Returns the
    /// gateway, its port and the object's bytes.
    func slowOriginForAFlippedPiece(_ path: String, name: String, flipAt: UInt64, throttle: Int) async throws -> (LiveProcess, Int, Data) {
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--memory-cache-size", "0", "--origin-idle-timeout", "1"])
        do {
            _ = try await Live.whenReady(proxied(port, path))
            let want = try await direct(path)
            try flipByte(at: flipAt, inTheOnlyObjectOf: cache)
            _ = try await HTTP.get(originBase + "/__version?name=\(name)&throttle=\(throttle)")
            return (g, port, want)
        } catch {
            g.stop()
            throw error
        }
    }

    /// A piece fetched again from the origin whose transfer trickles on past its time limit
    /// (three idle timeouts) is asked for once more, on a new connection: the first transfer
    /// ran for as long as the origin kept sending a byte within each idle timeout, and every
    /// player asking for the piece meanwhile (a player's retry too) joined it.
    @Test func aPieceWhoseOriginTransferTricklesIsAskedForAgain() async throws {
        // Piece 1 flipped; the origin then sends at 15 kB/s: piece 1 (64 KiB) takes 4.4 s, a
        // byte every 50 ms, over the limit of 3 s.
        let path = "/obj/trickle.ts?size=200000"
        let (g, port, want) = try await slowOriginForAFlippedPiece(path, name: "trickle.ts", flipAt: 70_000, throttle: 15_000)
        defer { g.stop() }
        let url = proxied(port, path)
        let player = Task { try await HTTP.get(url) }
        let piece1 = "bytes=65536-131071"
        let deadline = ContinuousClock.now + .seconds(10)
        while try await !((originStats("trickle.ts")["ranges"] as? [String] ?? []).contains(piece1)), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        // The trickling transfer runs on at its pace; the next one comes at full speed.
        _ = try await HTTP.get(originBase + "/__version?name=trickle.ts&throttle=0")
        let served = try await player.value
        #expect(served.status == 200 && served.body == want, "\(served.body.count) bytes")
        let stats = try await originStats("trickle.ts")
        #expect((stats["ranges"] as? [String])?.filter { $0 == piece1 }.count == 2, "\(stats)")
    }

    /// The limit on a piece's transfer is on the range's body only: an origin that ignores
    /// ranges answers a piece with its whole body, read once for every piece as players go,
    /// for as long as that takes. With the limit on the whole transfer, the first such answer
    /// (the origin not yet known to ignore ranges) was cut at three idle timeouts, and the
    /// player's response with it.
    @Test func aWholeBodyAnsweredForAPieceIsReadPastThePiecesLimit() async throws {
        // The last piece flipped (the whole body is read up to its end for it); the origin then
        // sends at 100 kB/s: the whole body takes 5 s, over the 3 s limit.
        let path = "/obj/wholeslow.ts?size=500000&noranges=1"
        let (g, port, want) = try await slowOriginForAFlippedPiece(path, name: "wholeslow.ts", flipAt: 480_000, throttle: 100_000)
        defer { g.stop() }
        let served = try await HTTP.get(proxied(port, path))
        #expect(served.status == 200 && served.body == want, "\(served.status), \(served.body.count) bytes")
    }

    /// A Range under an If-Range is sent only if the If-Range names the copy served: its
    /// strong ETag or its Last-Modified; else the whole object comes (RFC 9110 13.1.5), so a
    /// client resuming a download of an older copy does not splice two.
    @Test func aRangeUnderAnIfRangeForAnotherCopyGetsTheWholeObject() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let url = proxied(port, "/obj/ifrange.ts?size=100000")
        let first = try await Live.whenReady(url)
        let etag = try #require(first.headers["etag"])
        let lastModified = try #require(first.headers["last-modified"])
        for (ifRange, honoured) in [(etag, true), (lastModified, true), ("\"ifrange.ts-v0\"", false), ("W/\(etag)", false), ("Mon, 01 Jan 2001 00:00:00 GMT", false)] {
            let r = try await HTTP.get(url, headers: ["Range": "bytes=0-9", "If-Range": ifRange])
            #expect(r.status == (honoured ? 206 : 200) && r.body.count == (honoured ? 10 : 100_000), "\(ifRange): \(r.status), \(r.body.count) bytes")
            #expect(r.body == first.body.prefix(r.body.count))
        }
    }

    /// What is streamed from the origin as it is (a key) takes the whole copy under an
    /// `If-Range`: the gateway does not check the validator there, and the range it asked for
    /// (or cut) could be of another copy than the client's. It was sent as a 206 all the same.
    @Test func aRangeUnderAnIfRangeOnAStreamedKeyGetsTheWholeKey() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let url = proxied(port, "/obj/ifrange.key?size=1000&xkey=1")
        let whole = try await direct("/obj/ifrange.key?size=1000")
        let ranged = try await HTTP.get(url, headers: ["Range": "bytes=0-9"])
        #expect(ranged.status == 206 && ranged.body == whole.prefix(10))
        let guarded = try await HTTP.get(url, headers: ["Range": "bytes=0-9", "If-Range": "\"another-copy\""])
        #expect(guarded.status == 200 && guarded.body == whole, "\(guarded.status), \(guarded.body.count) bytes")
    }

    /// A key is streamed as the origin sent it, coding and all: an origin asked for no coding
    /// may send one all the same, and its bytes went out as if plain. A "key" of megabytes is
    /// refused: keys are bytes, and `xkey=1` on any URL was a way around the cache.
    @Test func aStreamedKeySaysItsCodingAndAHugeOneIsRefused() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let prefix = "/hls.vod.p2p.com/127.0.0.1:\(originPort)"
        let coded = try HTTP.raw(port: port, target: prefix + "/obj/coded.key?size=16&coding=gzip&xkey=1")
        #expect(coded.status == 200 && coded.headers["content-encoding"] == "gzip", "\(coded.headers)")
        let huge = try HTTP.raw(port: port, target: prefix + "/obj/huge.key?size=2000000&xkey=1")
        #expect(huge.status == 502, "\(huge.status)")
    }

    /// A client (or a cache before the gateway) that holds the cached copy is answered 304,
    /// without a body: an If-None-Match naming its ETag (weakly, or among others) or `*`; else
    /// an If-Modified-Since no earlier than its Last-Modified. It got the whole object again.
    @Test func aClientThatHoldsTheCachedCopyIsAnswered304() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let path = "/obj/inm.ts?size=100000"
        let first = try await Live.whenReady(proxied(port, path))
        let etag = try #require(first.headers["etag"])
        let lastModified = try #require(first.headers["last-modified"])
        let cases: [(headers: String, notModified: Bool)] = [
            ("If-None-Match: \(etag)", true),
            ("If-None-Match: W/\(etag)", true),
            ("If-None-Match: \"other\", \(etag)", true),
            ("If-None-Match: *", true),
            ("If-None-Match: \"inm.ts-v0\"", false),
            ("If-Modified-Since: \(lastModified)", true),
            ("If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT", false),
            ("If-None-Match: \"other\"\r\nIf-Modified-Since: \(lastModified)", false),  // If-None-Match decides
            ("If-None-Match: \(etag)\r\nRange: bytes=0-9", true),
        ]
        let target = "/hls.vod.p2p.com/127.0.0.1:\(originPort)\(path)"
        for c in cases {
            let request = "GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\(c.headers)\r\n\r\n"
            let (received, _) = try await RawConnection.exchange(port: port, send: Array(request.utf8), within: .seconds(10))
            let end = try #require(received.firstRange(of: Array("\r\n\r\n".utf8)), "\(c.headers): no head")
            let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
            let body = Data(received[end.upperBound...])
            if c.notModified {
                #expect(head.hasPrefix("HTTP/1.1 304 ") && !head.lowercased().contains("\r\ncontent-length:"), "\(c.headers): \(head)")
                #expect(head.lowercased().contains("etag: \(etag.lowercased())") && body.isEmpty, "\(c.headers): \(head), \(body.count) bytes")
            } else {
                #expect(head.hasPrefix("HTTP/1.1 200 ") && body == first.body, "\(c.headers): \(head), \(body.count) bytes")
            }
        }
    }

    /// Flips the byte at `offset` of the one object stored in `cache`, in place.
    func flipByte(at offset: UInt64, inTheOnlyObjectOf cache: String) throws {
        let files = try Live.dataFiles(in: cache)
        #expect(files.count == 1)
        let h = try #require(FileHandle(forUpdatingAtPath: files[0]))
        try h.seek(toOffset: offset)
        let old = try #require(try h.read(upToCount: 1))
        try h.seek(toOffset: offset)
        h.write(Data([old[0] ^ 0xFF]))
        try h.close()
    }

    /// A gateway without a memory cache that holds `/obj/NAME?size=200000` whole (its answer
    /// then), with a byte of the object's second piece flipped on disk since: the next request
    /// for that piece goes to the origin.
    func heldWithAFlippedPiece(_ name: String) async throws -> (LiveProcess, Int, path: String, before: HTTPResult) {
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--memory-cache-size", "0"])
        let path = "/obj/\(name)?size=200000"
        let before = try await Live.whenReady(proxied(port, path))
        try flipByte(at: 70_000, inTheOnlyObjectOf: cache)
        return (g, port, path, before)
    }

    /// A piece the node must fetch again (a byte of it flipped on disk), from an origin whose
    /// copy changed since it was prepared: the player is sent to the origin (the checksums no
    /// longer stand) rather than given a 502, and the new copy is prepared and served. A copy
    /// that became shorter than the piece (the origin's 416), or larger from an origin that
    /// ignores ranges, is the same; one that is gone is the origin's 404.
    @Test(arguments: ["bump=1", "size=1000", "size=300000&noranges=1", "gone=1", "bump=1&noranges=1", "size=100000&noranges=1"])
    func anOriginCopyThatChangedSendsThePlayerThereAndTheNewCopyIsPrepared(change: String) async throws {
        let name = "renewed-\(change.filter { $0.isLetter || $0.isNumber }).ts"
        let (g, port, path, before) = try await heldWithAFlippedPiece(name)
        defer { g.stop() }
        #expect(before.headers["etag"] == "\"\(name)-v1\"")
        _ = try await HTTP.get(originBase + "/__version?name=\(name)&\(change)")
        let sent = try await HTTP.get(proxied(port, path), headers: ["Range": "bytes=65536-65600"])
        if change == "gone=1" {
            #expect(sent.status == 404, "the origin's answer for the piece: \(sent.status) \(sent.text)")
            return
        }
        #expect(sent.status == 302, "\(sent.status) \(sent.text)")
        #expect(sent.headers["location"] == originBase + path)
        let after = try await Live.whenReady(proxied(port, path))
        let seen = try await originStats(name)
        #expect(after.body == (try await direct(path)), "the new copy, whole: \(after.status) \(after.text.prefix(300)) \(seen)")
        #expect(after.headers["etag"] == "\"\(name)-v\(change.hasPrefix("bump=1") ? 2 : 1)\"")
        let stat = try await HTTP.get("http://127.0.0.1:\(port)/stat")
        #expect(stat.text.contains("\"origin_changed\":1"), "\(stat.text)")
    }

    /// The same object asked for with a query that selects other bytes (the query is not part
    /// of its key), when a piece must come from the origin: that player is sent to the origin
    /// for its URL, and the copy every other player gets stays the one prepared. (The copy was
    /// dropped and prepared again from that URL, and every player got its bytes.)
    @Test func aQueryThatSelectsOtherBytesDoesNotReplaceTheCopy() async throws {
        let name = "kept.ts"
        let (g, port, path, before) = try await heldWithAFlippedPiece(name)
        defer { g.stop() }
        let origin = try await direct(path)
        #expect(before.status == 200 && before.body == origin)
        for other in ["/obj/\(name)?size=100000", "/obj/\(name)?size=300000&noranges=1"] {
            let sent = try await HTTP.get(proxied(port, other), headers: ["Range": "bytes=65536-65600"])
            #expect(sent.status == 302 && sent.headers["location"] == originBase + other, "\(sent.status) \(sent.text)")
        }
        // The registry checks the piece from the URL it prepared the copy from: the same bytes.
        try await Task.sleep(for: .milliseconds(500))
        let after = try await HTTP.get(proxied(port, path))
        #expect(after.status == 200 && after.body == before.body, "\(after.status) \(after.body.count) bytes")
        let jobs = try await jobs(port)
        #expect(jobs.count == 1, "prepared once: \(jobs)")
    }

    /// An object the swarm cannot take (over `--max-object-size`, sent without a length, or in
    /// a content coding such as gzip, whose bytes are not the object's, or marked for one
    /// client only by `Cache-Control: private` or `no-store`, which a shared cache must not
    /// keep: a per-viewer segment would reach every viewer) is the origin's to serve: its
    /// players are sent there by 302, as while an object is prepared, not given a 502; and
    /// the origin is not asked again for each of them.
    @Test(arguments: [
        "size=300000", "size=100000&nolength=1", "size=1000&coding=gzip", "size=1000&cc=max-age=60,%20Private",
        "size=1000&cc=no-store", "size=1000&cc=max-age=60&cc2=private",
    ])
    func anObjectTheSwarmCannotTakeSendsItsPlayersToTheOrigin(query: String) async throws {
        let (g, port) = try await gateway(["--max-object-size", "200000"])
        defer { g.stop() }
        let name = "untaken-\(query.filter { $0.isLetter || $0.isNumber }).ts"
        let path = "/obj/\(name)?\(query)"
        // Not listed in a playlist: the gateway waits for the origin's first answer.
        for _ in 0..<3 {
            let r = try await HTTP.get(proxied(port, path))
            #expect(r.status == 302, "\(r.status) \(r.text)")
            #expect(r.headers["location"] == originBase + path)
        }
        let stats = try await originStats(name)
        #expect(stats["requests"] as? Int == 1, "one preparation asked, not one per player: \(stats)")
        let jobs = try await jobs(port)
        #expect(jobs.count == 1 && jobs.first?["state"] as? String == "failed", "\(jobs)")
    }

    /// An object missing at the origin (its 404) is asked for again only after a moment, not
    /// at each player's request (each cost the origin a request, besides the player's own: a
    /// live segment the origin lacks, a thousand viewers); once it is there, it is served.
    @Test func anObjectMissingAtTheOriginIsNotAskedForAtEachRequest() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let name = "missing-now.ts"
        _ = try await HTTP.get(originBase + "/__version?name=\(name)&gone=1")
        let path = "/obj/\(name)?size=1000"
        for _ in 0..<5 {
            let r = try await HTTP.get(proxied(port, path))
            #expect(r.status == 404, "the origin's answer: \(r.status) \(r.text)")
        }
        let asked = try await originStats(name)["requests"] as? Int ?? 0
        #expect((1...2).contains(asked), "five players, \(asked) origin requests")
        // Listed in a live playlist: its players go to the origin (302), whatever the last
        // preparation heard (the segment may be late at a CDN edge); the gateway does not ask.
        let live = "live-missing"
        _ = try await HTTP.get(originBase + "/__version?name=\(live)/seg5.ts&gone=1")
        let list = try await HTTP.get(proxied(port, "/live/\(live).m3u8?segments=6"))
        let seg5 = try #require(list.text.split(separator: "\n").first { $0.contains("seg5.ts") })
        for _ in 0..<5 {
            let r = try await HTTP.get(String(seg5))
            #expect(r.status == 302, "\(r.status) \(r.text)")
        }
        let liveAsked = try await originStats("\(live)/seg5.ts")["requests"] as? Int ?? 0
        #expect((1...2).contains(liveAsked), "five players, \(liveAsked) origin requests")
        _ = try await HTTP.get(originBase + "/__version?name=\(name)&gone=0")
        var status = 0
        for _ in 0..<200 where status != 200 {
            try await Task.sleep(for: .milliseconds(50))
            status = try await HTTP.get(proxied(port, path)).status
        }
        #expect(status == 200, "served once the origin has it")
    }

    /// A playlist's Cache-Control sent as several lines is passed on as all of them (one line,
    /// RFC 9110 5.3): only the last was, and a `private` before it was lost to the caches in
    /// front of the gateway.
    @Test func aPlaylistsCacheControlLinesAreAllPassedOn() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let r = try await HTTP.get(proxied(port, "/vod/cc.m3u8?segments=2&cc=private&cc2=max-age=60"))
        #expect(r.status == 200 && r.headers["cache-control"] == "private, max-age=60", "\(r.headers)")
    }

    /// Cache-Control that lets shared caches keep an object (public, a max-age, `private`
    /// naming fields only, a quoted comma) leaves it to the swarm.
    @Test func anObjectSharedCachesMayKeepIsTheSwarms() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let path = "/obj/shared.ts?size=1000&cc=public,%20max-age=60,%20private=%22set-cookie,%20x-private%22"
        let r = try await Live.whenReady(proxied(port, path))
        #expect(r.status == 200 && r.body.count == 1000)
    }

    /// An origin that sends an object's head, then resets before its first byte: the first
    /// request is still sent to the origin (not told 502), and the preparation tries again
    /// and ends with the object whole.
    @Test func aResetBeforeTheFirstByteIsTriedAgain() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let path = "/obj/headreset.ts?size=100000&resetafter=0"
        let first = try await HTTP.get(proxied(port, path))
        #expect(first.status == 302, "\(first.status) \(first.text)")
        let r = try await Live.whenReady(proxied(port, path))
        #expect(r.status == 200)
        let same = r.body == (try await direct(path))
        #expect(same, "\(r.body.count) bytes")
        let stats = try await originStats("headreset.ts")
        #expect((stats["requests"] as? Int ?? 0) >= 2, "\(stats)")
    }

    @Test func fiftyConcurrentRequestsForOneColdObjectMakeOneOriginTransfer() async throws {
        let cache = Live.cacheFolder()
        var (g, port) = try await gateway(cache: cache)
        let path = "/obj/crowd.ts?size=500000&throttle=1000000"
        let url = proxied(port, path)
        let first = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await HTTP.get(url).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(first.allSatisfy { $0 == 302 }, "\(first)")
        _ = try await Live.whenReady(url)
        var stats = try await originStats("crowd.ts")
        #expect(stats["requests"] as? Int == 1, "one preparation: \(stats)")
        // The pieces go (an operator wiped the piece files); the registry stays. Fifty players
        // at once: each missing piece is fetched from the origin once, by range.
        g.stop()
        try FileManager.default.removeItem(atPath: cache + "/objects")
        try FileManager.default.removeItem(atPath: cache + "/index.sqlite")
        (g, port) = try await gateway(cache: cache)
        defer { g.stop() }
        let want = try await direct(path)
        let again = proxied(port, path)
        let bodies = try await withThrowingTaskGroup(of: HTTPResult.self) { group in
            for _ in 0..<50 { group.addTask { try await HTTP.get(again) } }
            return try await group.reduce(into: [HTTPResult]()) { $0.append($1) }
        }
        #expect(bodies.allSatisfy { $0.status == 200 && $0.body == want })
        stats = try await originStats("crowd.ts")
        let ranges = (stats["ranges"] as? [String] ?? []).filter { !$0.isEmpty }
        #expect(ranges.count == 8, "8 pieces of 64 KiB, each once: \(ranges)")
        #expect(Set(ranges).count == ranges.count)
    }

    @Test func killedDuringPreparationTheJobResumesWithIfRange() async throws {
        let cache = Live.cacheFolder()
        var (g, port) = try await gateway(cache: cache)
        let path = "/obj/slowprep.ts?size=1000000&throttle=300000"
        let url = proxied(port, path)
        #expect(try await HTTP.get(url).status == 302)
        // Wait for some progress, then kill -9.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let done = try await jobs(port).first?["bytesDone"] as? Int, done >= 131072 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Progress is written at most once a second (PrepareQueue.progressInterval).
        try await Task.sleep(for: .milliseconds(1300))
        #expect(try await jobs(port).first?["state"] as? String == "running")
        g.stop(signal: SIGKILL)
        (g, port) = try await gateway(cache: cache)
        defer { g.stop() }
        let whole = try await Live.whenReady(proxied(port, path))
        #expect(whole.body == (try await direct(path)))
        let stats = try await originStats("slowprep.ts")
        let ranges = stats["ranges"] as? [String] ?? []
        #expect(ranges.count >= 2 && ranges[0] == "" && ranges[1].hasPrefix("bytes=") && ranges[1] != "bytes=0-", "resumed by range: \(ranges)")
        #expect((stats["if_range"] as? [String])?.first == "\"slowprep.ts-v1\"")
    }

    @Test func stoppedDuringPreparationTheJobResumesOnItsOwnAfterRestart() async throws {
        let cache = Live.cacheFolder()
        var (g, port) = try await gateway(cache: cache)
        let path = "/obj/stopprep.ts?size=1000000&throttle=300000"
        #expect(try await HTTP.get(proxied(port, path)).status == 302)
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let done = try await jobs(port).first?["bytesDone"] as? Int, done >= 131072 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        g.stop(signal: SIGTERM)
        (g, port) = try await gateway(cache: cache)
        defer { g.stop() }
        // No request asks for it again: the job was queued, not failed, by the shutdown.
        var state: String?
        while ContinuousClock.now < deadline + .seconds(10) {
            state = try await jobs(port).first?["state"] as? String
            if state == "done" || state == "failed" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(state == "done")
        let served = try await HTTP.get(proxied(port, path))
        let ranges = try await originStats("stopprep.ts")["ranges"] as? [String] ?? []
        #expect(ranges.count == 2 && ranges[0] == "" && ranges[1].hasPrefix("bytes=") && ranges[1] != "bytes=0-", "resumed by range: \(ranges)")
        let want = try await direct(path)
        #expect(served.status == 200 && served.body == want)
    }

    @Test func killedWhileServingNothingCorruptIsServedAfterRestart() async throws {
        let cache = Live.cacheFolder()
        var (g, port) = try await gateway(cache: cache)
        let path = "/obj/midserve.mp4?size=3000000"
        let url = proxied(port, path)
        _ = try await Live.whenReady(url, headers: ["Range": "bytes=0-0"])
        let reading = Task { try? await HTTP.get(url) }
        try await Task.sleep(for: .milliseconds(30))
        g.stop(signal: SIGKILL)
        _ = await reading.value
        (g, port) = try await gateway(cache: cache)
        defer { g.stop() }
        let whole = try await HTTP.get(proxied(port, path))
        #expect(whole.status == 200)
        #expect(whole.body == (try await direct(path)))
    }

    @Test func twiceTheCacheSizeOfObjectsStaysUnderTheBound() async throws {
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--cache-size", "1MiB"])
        defer { g.stop() }
        for i in 0..<8 {
            let path = "/obj/bound-\(i).ts?size=262144"
            let r = try await Live.whenReady(proxied(port, path))
            #expect(r.status == 200)
            #expect(r.body == (try await direct(path)))
            let used = try Live.diskBytes(cache)
            #expect(used <= 1 << 20, "\(used) bytes on disk after object \(i)")
        }
        // The newest objects are held; the oldest were evicted and are filled again by range.
        let again = try await HTTP.get(proxied(port, "/obj/bound-0.ts?size=262144"))
        #expect(again.status == 200)
        #expect(try Live.diskBytes(cache) <= 1 << 20)
    }

    /// An object played from memory stays on disk: each memory hit is a use of its stored
    /// copy. Before, the store saw no read of it, so the object played most became the store's
    /// least recently used, and was the first evicted from disk (and withdrawn from the swarm);
    /// after a restart it came from the origin again.
    @Test func anObjectPlayedFromMemoryIsNotTheFirstEvictedFromDisk() async throws {
        let cache = Live.cacheFolder()
        let name = "hot-\(UUID().uuidString.prefix(8))"
        let hot = "/obj/\(name).ts?size=262144"
        let want = try await direct(hot)
        var (g, port) = try await gateway(cache: cache, ["--cache-size", "1MiB"])
        let first = try await Live.whenReady(proxied(port, hot))
        #expect(first.status == 200 && first.body == want)
        // Four such objects fill the bound: from the fourth on, each evicts one.
        for i in 0..<6 {
            let cold = try await Live.whenReady(proxied(port, "/obj/\(name)-cold\(i).ts?size=262144"))
            #expect(cold.status == 200)
            let again = try await HTTP.get(proxied(port, hot))
            #expect(again.status == 200 && again.body == want)
        }
        let asked = try await originStats("\(name).ts")["requests"] as? Int
        g.stop(signal: SIGTERM)
        (g, port) = try await gateway(cache: cache, ["--cache-size", "1MiB", "--memory-cache-size", "0"])
        defer { g.stop() }
        let after = try await HTTP.get(proxied(port, hot))
        #expect(after.status == 200 && after.body == want)
        #expect(try await originStats("\(name).ts")["requests"] as? Int == asked, "read from disk, not asked of the origin again")
    }

    /// With --await-preparation, a first request waits for the preparation it starts when its
    /// progress says it ends within the peer deadline: the player gets the prepared copy and
    /// the origin sends the object once. One that would not end in time is sent to the origin
    /// as soon as its progress says so, not at the deadline.
    @Test func awaitingPreparationAFirstRequestIsServedFromThePreparedCopy() async throws {
        let (g, port) = try await gateway(cache: Live.cacheFolder(), ["--await-preparation", "--peer-deadline", "3"])
        defer { g.stop() }
        let path = "/obj/awaited.ts?size=1000000"
        let r = try await HTTP.get(proxied(port, path))
        #expect(r.status == 200)
        #expect(try await originStats("awaited.ts")["requests"] as? Int == 1, "only the preparation reached the origin")
        #expect(r.body == (try await direct(path)))
        // 2 MB at 300 kB/s ends in about 7 s, past the 3 s deadline: its first pieces say so.
        let slow = "/obj/awaitslow.ts?size=2000000&throttle=300000"
        let start = ContinuousClock.now
        let redirected = try await HTTP.get(proxied(port, slow))
        let waited = ContinuousClock.now - start
        #expect(redirected.status == 302)
        #expect(waited < .milliseconds(2500), "sent to the origin before the deadline: \(waited)")
    }

    /// The value of an unlabelled metric in the gateway's `/metrics`.
    func metric(_ port: Int, _ name: String) async throws -> Double? {
        let text = try await HTTP.get("http://127.0.0.1:\(port)/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    /// Disk blocks of the data files in a gateway's cache folder as its own mount namespace
    /// sees it (`/proc/PID/root`).
    func dataBlocks(_ g: LiveProcess, _ cache: String) throws -> Int64 {
        try Live.diskBytes("/proc/\(g.process.processIdentifier)/root" + cache)
    }

    /// Asks the gateway on `port` for each of `paths` until it is served (not 302), and checks
    /// every body against the origin's.
    func expectServedWhole(_ port: Int, _ paths: [String]) async throws {
        for path in paths {
            let r = try await Live.whenReady(proxied(port, path))
            #expect(r.status == 200)
            #expect(r.body == (try await direct(path)), "\(path)")
        }
    }

    /// What a gateway logs when its SQLite files could not be written.
    static let databaseFailures = ["registry write failed", "cannot save prepare jobs", "piece index: rows not written"]

    /// A cache folder on a 4 MiB disk with the default 10 GiB bound: the disk fills long before
    /// the bound. The store evicts the least recently used to make room, so the newest objects
    /// are still kept (before, nothing more was kept once the disk was full), and it keeps a
    /// reserve free, so the SQLite files beside the pieces never meet a full disk.
    @Test(.enabled(if: Live.canMountSmallDisks)) func aDiskThatFillsBeforeTheBoundMakesRoomByEvicting() async throws {
        let (g, port, cache) = try await Live.gatewayOnSmallDisk(
            size: "4m", ["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB", "--memory-cache-size", "0"])
        defer { g.stop() }
        let paths = (0..<20).map { "/obj/smalldisk-\($0).ts?size=400000" }  // 8 MB through a 4 MiB disk
        try await expectServedWhole(port, paths)
        #expect(g.stderr.contains("bound is more than its disk can hold"), "said at the start")
        #expect(g.stderr.contains("full before its bound; evicted the least recently used"))
        for failure in Self.databaseFailures { #expect(!g.stderr.contains(failure)) }
        #expect(try await metric(port, "swarmgate_piece_store_disk_short_total") ?? 0 > 0)
        // The store's count is what the disk holds: no blocks of failed writes are left.
        let held = try await metric(port, "swarmgate_piece_store_bytes") ?? 0
        #expect(held > 1_000_000 && held < 4_194_304)
        #expect(Double(try dataBlocks(g, cache)) == held)
        // The newest are served from the disk: no request reaches the origin for them.
        for (n, path) in paths.suffix(2).enumerated() {
            let name = "smalldisk-\(18 + n).ts"
            let before = try await originStats(name)["requests"] as? Int
            let r = try await HTTP.get(proxied(port, path))
            #expect(r.status == 200)
            #expect(r.body == (try await direct(path)))
            #expect(try await originStats(name)["requests"] as? Int == (before ?? 0) + 1, "only the direct fetch: \(name) came from the disk")
        }
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
    }

    /// An object the disk cannot hold whole (with every other object gone) is served without
    /// being kept, and evicts nothing: a piece at a time, it emptied the store for room, then
    /// was kept in part, and the objects players had played came from the origin again.
    @Test(.enabled(if: Live.canMountSmallDisks)) func anObjectLargerThanTheDiskEvictsNothing() async throws {
        let (g, port, _) = try await Live.gatewayOnSmallDisk(
            size: "4m", ["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB", "--memory-cache-size", "0"])
        defer { g.stop() }
        let kept = (0..<3).map { "/obj/beside-large-\($0).ts?size=400000" }
        try await expectServedWhole(port, kept)
        try await expectServedWhole(port, ["/obj/larger-than-disk.ts?size=3500000"])
        for (n, path) in kept.enumerated() {
            let name = "beside-large-\(n).ts"
            let before = try await originStats(name)["requests"] as? Int
            let r = try await HTTP.get(proxied(port, path))
            let want = try await direct(path)
            #expect(r.status == 200 && r.body == want)
            #expect(try await originStats(name)["requests"] as? Int == (before ?? 0) + 1, "only the direct fetch: \(name) came from the disk")
        }
    }

    /// A shared disk that something else has filled: the store has nothing to evict. Every
    /// object is still served whole and correct (from the origin, by range), the store says
    /// once that the disk is full, the registry is still written, and the gateway stays up.
    @Test(.enabled(if: Live.canMountSmallDisks)) func aDiskFullOfOtherFilesStillServesCorrectBytes() async throws {
        let (g, port, cache) = try await Live.gatewayOnSmallDisk(
            size: "1m", taken: 700, ["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB", "--memory-cache-size", "0"])
        defer { g.stop() }
        try await expectServedWhole(port, (0..<4).map { "/obj/otherdisk-\($0).ts?size=300000" })
        #expect(g.stderr.components(separatedBy: "full and the store holds nothing to evict").count == 2, "said once")
        for failure in Self.databaseFailures { #expect(!g.stderr.contains(failure)) }
        #expect(try await metric(port, "swarmgate_piece_store_disk_short_total") ?? 0 >= 4, "one piece of each object at least")
        #expect(try await metric(port, "swarmgate_piece_store_bytes") == 0)
        #expect(try dataBlocks(g, cache) == 0)
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
    }

    /// A disk that something else fills to the last byte after the gateway started: its
    /// SQLite writes fail too. Every object is still served correct, each kind of write
    /// failure is logged once (not once per object), and when the disk has room again the
    /// writes pass and say so.
    @Test(.enabled(if: Live.canMountSmallDisks)) func aDiskFilledToTheLastByteLogsEachFailureOnceAndRecovers() async throws {
        let (g, port, cache) = try await Live.gatewayOnSmallDisk(
            size: "1m", ["--allow-origin", "127.0.0.1:\(originPort)", "--piece-size", "64KiB", "--memory-cache-size", "0"])
        defer { g.stop() }
        // Written through the gateway's own view of its disk (`/proc/PID/root`).
        let filler = "/proc/\(g.process.processIdentifier)/root\(cache)/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        let chunk = [UInt8](repeating: 1, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        try await expectServedWhole(port, (0..<12).map { "/obj/lastbyte-\($0).ts?size=100000" })
        #expect(g.stderr.components(separatedBy: "registry write failed").count == 2, "logged once")
        #expect(g.stderr.components(separatedBy: "cannot save prepare jobs").count <= 2, "logged once at most")
        #expect(unlink(filler) == 0)
        let r = try await Live.whenReady(proxied(port, "/obj/lastbyte-after.ts?size=100000"))
        #expect(r.status == 200)
        #expect(g.stderr.contains("registry write failed: written again"))
        // The entries whose writes failed went with the first write that passed. (Read from a
        // copy: SQLite resolves /proc/PID/root as a symlink, to this process's own root.)
        let root = "/proc/\(g.process.processIdentifier)/root\(cache)"
        let copy = Live.cacheFolder()
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for file in ["registry.sqlite", "registry.sqlite-wal"] {
            try Data(contentsOf: URL(fileURLWithPath: root + "/" + file)).write(to: URL(fileURLWithPath: copy + "/" + file))
        }
        let kept = try SQLiteRegistryStorage(path: copy + "/registry.sqlite").loadEntries()
        #expect(kept.filter { $0.state == .ready && $0.key.path.hasPrefix("/obj/lastbyte-") }.count == 13, "\(kept.map { "\($0.key.path) \($0.state)" })")
    }

    @Test func anETagChangeMidPreparationStartsOverInsteadOfMixingVersions() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        // The first transfer is reset at 200000 bytes, and the object changes right then.
        let path = "/obj/changing.ts?size=400000&resetafter=200000&bumpafter=200000"
        let r = try await Live.whenReady(proxied(port, path))
        let now = try await direct(path)
        #expect(r.body == now, "the new version, whole")
        #expect(r.headers["etag"] == "\"changing.ts-v2\"")
        let stats = try await originStats("changing.ts")
        #expect((stats["if_range"] as? [String])?.first == "\"changing.ts-v1\"", "\(stats)")
    }

    @Test func anOriginWithoutValidatorsIsFetchedAgainFromTheStart() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let path = "/obj/novalid.ts?size=400000&novalidators=1&resetafter=200000"
        let r = try await Live.whenReady(proxied(port, path))
        #expect(r.body == (try await direct(path)))
        let stats = try await originStats("novalid.ts")
        #expect((stats["ranges"] as? [String])?.prefix(2) == ["", ""], "no Range without a validator: \(stats)")
        #expect((stats["if_range"] as? [String])?.isEmpty == true)
    }

    @Test func atMostTheConfiguredNumberOfJobsRunAtOnce() async throws {
        let (g, port) = try await gateway(["--prepare-jobs", "2"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        for i in 0..<5 {
            let posted = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(originBase)/obj/cap-\(i).ts?size=300000&throttle=400000\"}")
            #expect(posted.status == 202)
        }
        var most = 0
        var done = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while done < 5 && ContinuousClock.now < deadline {
            let states = try await jobs(port).compactMap { $0["state"] as? String }
            most = max(most, states.filter { $0 == "running" }.count)
            done = states.filter { $0 == "done" }.count
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(done == 5)
        #expect(most == 2, "running at once: \(most)")
    }

    /// A player's job that finds every slot taken runs beside the read-ahead jobs, as many
    /// more as they are, rather than stop one: a stopped job resumes by range
    /// from its last whole piece, and the origin sends again what it had sent past it. (Each
    /// player's job used to stop every running read-ahead job.) Past that, one
    /// read-ahead job goes back to the queue, the one furthest ahead in playback order.
    @Test func aPlayersJobRunsBesideFlowingReadAheadJobsBeforeItStopsOne() async throws {
        let (g, port) = try await gateway(["--prepare-jobs", "2"])
        defer { g.stop() }
        // An operator's prepare of a playlist is read-ahead, not a player's: its first two
        // segments run (900 kB at 150 kB/s each), the third waits.
        let readAhead = (0..<2).map { "ahead/seg\($0).ts" }
        for name in readAhead { _ = try await HTTP.get(originBase + "/__version?name=\(name)&throttle=150000") }
        let posted = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(originBase)/vod/ahead.m3u8?segments=3&size=900000\"}")
        #expect(posted.status == 202)
        func flowing(_ name: String) async throws -> Bool {
            let s = try await originStats(name)
            return s["inflight"] as? Int == 1 && s["bytes_sent"] as? Int ?? 0 >= 100_000
        }
        func until(_ what: String, _ condition: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while try await !condition() {
                guard ContinuousClock.now < deadline else { throw TestFailure("waited 20 s for \(what)") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        for name in readAhead { try await until("\(name)'s body") { try await flowing(name) } }
        // Players ask for objects nobody prepared (a job of its own each, urgent), throttled so
        // that they still run when the next comes: 1.2 MB at 200 kB/s.
        let players = (1...2).map { "player-\($0).ts" }
        for name in players {
            _ = try await HTTP.get(originBase + "/__version?name=\(name)&throttle=200000")
            let answer = try await HTTP.get(proxied(port, "/obj/\(name)?size=1200000"))
            #expect(answer.status == 302, "\(answer.status) \(answer.text)")
            try await until("\(name)'s body") { try await flowing(name) }
            for ahead in readAhead {
                let stats = try await originStats(ahead)
                #expect(stats["ranges"] as? [String] == [""] && stats["inflight"] as? Int == 1, "\(ahead) still comes, never asked again: \(stats)")
            }
        }
        let running = try await jobs(port).filter { $0["state"] as? String == "running" }.compactMap { $0["url"] as? String }
        #expect(running.count == 4 && readAhead.allSatisfy { name in running.contains { $0.contains(name) } }, "running: \(running)")
        // A third player's job finds four running, the limit and as many as the read-ahead
        // jobs running: the read-ahead job furthest ahead goes back to the queue, and
        // resumes by range once there is room.
        let third = try await HTTP.get(proxied(port, "/obj/player-3.ts?size=1000"))
        #expect(third.status == 302, "\(third.status) \(third.text)")
        try await until("every job done") {
            let states = try await jobs(port).compactMap { $0["state"] as? String }
            return states.count == 6 && states.allSatisfy { $0 == "done" }
        }
        #expect(try await originStats(readAhead[0])["ranges"] as? [String] == [""], "the segment played first runs on")
        let stats = try await originStats(readAhead[1])
        let ranges = stats["ranges"] as? [String] ?? []
        #expect(ranges.count == 2 && ranges.first == "" && ranges.last?.hasPrefix("bytes=") == true, "stopped once, resumed by range: \(stats)")
        for name in players { #expect(try await originStats(name)["ranges"] as? [String] == [""], "a player's job is never stopped for another's") }
        // Served from the pieces, under the playlist's own URL for it.
        let list = try await HTTP.get(proxied(port, "/vod/ahead.m3u8?segments=3&size=900000"))
        let seg1 = try #require(list.text.split(separator: "\n").first { $0.contains(readAhead[1]) })
        let whole = try await HTTP.get(String(seg1))
        let want = try await direct("/obj/\(readAhead[1])?size=900000&token=abc")
        #expect(whole.status == 200 && whole.body == want, "\(whole.status) \(whole.text.prefix(200))")
    }

    /// `--registry-entries` bounds what the registry keeps: an operator's prepare of 150
    /// objects through a registry of 100 lets go of the ones used least, their pieces with
    /// them, and one of them asked for again is a first sight (302) and prepared again. Every
    /// object asked for was kept for good, and a client asking for made-up paths grew the
    /// registry as fast as the origin answered.
    @Test func theRegistryKeepsAtMostItsEntriesAndTheirPiecesOnly() async throws {
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--registry-entries", "100"])
        defer { g.stop() }
        let name = "bounded-\(UUID().uuidString.prefix(8))"
        let query = "segments=150&size=1000"
        let posted = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(originBase)/vod/\(name).m3u8?\(query)\"}")
        #expect(posted.status == 202, "\(posted.text)")
        let deadline = ContinuousClock.now + .seconds(60)
        var states: [String] = []
        while ContinuousClock.now < deadline {
            states = try await jobs(port).compactMap { $0["state"] as? String }
            if states.count == 150 && states.allSatisfy({ $0 == "done" }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(states.count == 150 && states.allSatisfy { $0 == "done" }, "\(Dictionary(grouping: states) { $0 }.mapValues(\.count))")
        // The pieces of those let go are removed in the background.
        var files = try Live.dataFiles(in: cache).count
        let removed = ContinuousClock.now + .seconds(20)
        while files > 100 && ContinuousClock.now < removed {
            try await Task.sleep(for: .milliseconds(50))
            files = try Live.dataFiles(in: cache).count
        }
        #expect(files >= 50 && files <= 100, "\(files) objects' pieces kept")
        let xresid = XResIDs.derived("127.0.0.1:\(originPort)", "/vod/\(name).m3u8")
        let list = try await HTTP.get(proxied(port, "/vod/\(name).m3u8?\(query)&xresid=\(xresid)"))
        let urls = list.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        try #require(urls.count == 150)
        let last = try await HTTP.get(urls[149])
        let want = try await direct("/obj/\(name)/seg149.ts?size=1000&token=abc")
        #expect(last.status == 200 && last.body == want, "the last prepared is kept: \(last.status)")
        let first = try await HTTP.get(urls[0])
        #expect(first.status == 302, "the first was let go: \(first.status)")
        let again = try await Live.whenReady(urls[0])
        let seg0 = try await direct("/obj/\(name)/seg0.ts?size=1000&token=abc")
        #expect(again.status == 200 && again.body == seg0)
        #expect(try await originStats("\(name)/seg0.ts")["requests"] as? Int == 3, "prepared twice, and the player's own request")
    }

    /// A cache opened with a registry that does not hold its objects (an operator deleted the
    /// registry's file, or a node stopped between a removal's two steps) removes their pieces
    /// at start: they could never be served (no checksums to check them against), only
    /// announced to peers, who would be answered 404.
    @Test func piecesTheRegistryDoesNotHoldAreRemovedAtStart() async throws {
        let cache = Live.cacheFolder()
        let name = "orphan-\(UUID().uuidString.prefix(8))"
        var (g, port) = try await gateway(cache: cache)
        for i in 0..<3 {
            let ready = try await Live.whenReady(proxied(port, "/obj/\(name)-\(i).ts?size=100000"))
            #expect(ready.status == 200)
        }
        g.stop(signal: SIGTERM)
        #expect(try Live.dataFiles(in: cache).count == 3)
        // The same registry again: every object kept.
        (g, port) = try await gateway(cache: cache)
        #expect(try await HTTP.get(proxied(port, "/obj/\(name)-0.ts?size=100000")).status == 200)
        g.stop(signal: SIGTERM)
        #expect(try Live.dataFiles(in: cache).count == 3)
        for file in ["registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"] {
            try? FileManager.default.removeItem(atPath: cache + "/" + file)
        }
        (g, port) = try await gateway(cache: cache)
        defer { g.stop() }
        let left = try Live.dataFiles(in: cache)
        #expect(left.isEmpty, "\(left)")
        // Unknown to this registry, the objects are prepared again and served.
        let again = try await Live.whenReady(proxied(port, "/obj/\(name)-1.ts?size=100000"))
        let want = try await direct("/obj/\(name)-1.ts?size=100000")
        #expect(again.status == 200 && again.body == want)
    }

    @Test func aRedirectingOriginKeepsTheObjectsKey() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let path = "/redirect/moved.ts?size=100000"
        let r = try await Live.whenReady(proxied(port, path))
        #expect(r.status == 200)
        #expect(r.body == (try await direct("/obj/moved.ts?size=100000")))
        let list = try await jobs(port)
        #expect(list.count == 1)
        #expect((list.first?["url"] as? String)?.contains("/redirect/moved.ts") == true)
    }

    @Test func aTwoGiBSparseFileIsServedByRangesWithBoundedMemory() async throws {
        // A cache far smaller than the object: preparing it evicts as it goes, so the disk
        // holds at most the bound and not 2 GiB.
        let cache = Live.cacheFolder()
        let (g, port) = try await gateway(cache: cache, ["--piece-size", "1MiB", "--cache-size", "256MiB"])
        defer { g.stop() }
        let size: Int64 = 2 << 30
        let path = "/obj/big.bin?size=\(size)"
        let url = proxied(port, path, vhost: "xdfs.p2p.com")
        let head = try await Live.whenReady(url, headers: ["Range": "bytes=0-0"], timeout: .seconds(300))
        #expect(head.status == 206)
        #expect(head.headers["content-range"] == "bytes 0-0/\(size)")
        for first in [Int64(0), 1_073_741_000, size - 3_000_000] {
            let range = "bytes=\(first)-\(first + 2_999_999)"
            let via = try await HTTP.get(url, headers: ["Range": range])
            let want = try await HTTP.get(originBase + path, headers: ["Range": range])
            #expect(via.status == 206)
            #expect(via.body == want.body, "\(range)")
        }
        let rss = try Live.peakRSS(g)
        #expect(rss < 300 << 20, "peak RSS \(rss >> 20) MiB while preparing and serving 2 GiB")
        let held = try Live.diskBytes(cache)
        #expect(held <= 256 << 20, "the cache holds \(held >> 20) MiB on disk")
    }

    @Test func playlistsAndKeysAreNeverRedirectedNorCached() async throws {
        let samples = Live.packageRoot.appendingPathComponent("samples")
        let (o, oport) = try await Live.origin(serving: samples, token: "t")
        defer { o.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(oport)", "--key-uris", "proxy"])
        defer { g.stop() }
        let playlist = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(oport)/hls-aes/index.m3u8?token=t")
        #expect(playlist.status == 200)
        let key = try #require(playlist.text.firstMatch(of: #/URI="(http[^"]+)"/#).map { String($0.1) })
        #expect(key.contains("xkey=1"))
        for _ in 0..<2 {
            let k = try await HTTP.get(key + "&token=t")
            #expect(k.status == 200)
            #expect(k.body == (try Data(contentsOf: samples.appendingPathComponent("hls-aes/key.bin"))))
            #expect(k.headers["cache-control"] == "no-store")
        }
        let list = try await jobs(port)
        #expect(!list.contains { ($0["url"] as? String)?.contains("key.bin") == true }, "a key is never prepared")
    }

    /// The segment numbers of a VOD's jobs (`/obj/NAME/segK.ts`), once their number has not
    /// changed for half a second and none runs.
    func settledJobSegments(_ port: Int, _ name: String) async throws -> Set<Int> {
        var last: [[String: Any]] = []
        var stableSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let now = try await jobs(port)
            let busy = now.contains { ["queued", "running"].contains($0["state"] as? String ?? "") }
            if now.count != last.count || busy { stableSince = .now }
            last = now
            if ContinuousClock.now - stableSince > .milliseconds(500) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return Set(last.compactMap { ($0["url"] as? String).flatMap { Live.segmentNumber(in: $0, of: name) } })
    }

    /// A VOD playlist is prepared a window of media time ahead of its player, not whole: a
    /// player who leaves early costs the origin that window, and the window follows a player
    /// who seeks. Opening the playlist prepares nothing: the player may start anywhere. An
    /// operator's `POST /prepare` still prepares all of it.
    /// A request with forged variables (`xvars`) claims nothing shared: it is refused before
    /// the playlist's read-ahead is claimed, and one with valid ones claims its own. A
    /// malformed one used to use up the playlist's claim for a minute, so the genuine
    /// players' read-ahead did not happen.
    @Test func aForgedRequestDoesNotTakeThePlaylistsReadAhead() async throws {
        let (g, port) = try await gateway(["--read-ahead", "20"])
        defer { g.stop() }
        let name = "forged-\(UUID().uuidString.prefix(8))"
        let playlist = proxied(port, "/vod/\(name).m3u8?segments=20&size=20000")
        #expect(try await HTTP.get(playlist + "&xvars=%25").status == 400)
        let forged = try #require(PlaylistVariables.encode(["x": "y"]))
        #expect(try await HTTP.get(playlist + "&xvars=" + forged).status == 200)
        let list = try await HTTP.get(playlist)
        let urls = list.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect([200, 302].contains(try await HTTP.get(urls[0]).status))
        #expect(try await settledJobSegments(port, name) == Set(0...5), "the genuine player's window opened")
    }

    @Test func readAheadPreparesAWindowAheadOfThePlayerNotTheWholeVOD() async throws {
        let (g, port) = try await gateway(["--read-ahead", "20"])
        defer { g.stop() }
        let name = "window-\(UUID().uuidString.prefix(8))"
        let playlist = proxied(port, "/vod/\(name).m3u8?segments=100&size=20000")
        let list = try await HTTP.get(playlist)
        #expect(list.status == 200)
        #expect(try await settledJobSegments(port, name).isEmpty)
        // 4 s segments. The player asks for 0: it is prepared, and those starting within 20 s
        // of its end, 1 to 5.
        let urls = list.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(urls.count == 100)
        #expect([200, 302].contains(try await HTTP.get(urls[0]).status))
        #expect(try await settledJobSegments(port, name) == Set(0...5))
        // It seeks to segment 10: that one, then 11 to 15.
        let seeked = try await HTTP.get(urls[10])
        #expect([200, 302].contains(seeked.status))
        let afterSeek = try await settledJobSegments(port, name)
        #expect(afterSeek == Set(0...5).union(10...15), "\(afterSeek.sorted())")
        #expect((try await originStats(name + "/seg16.ts"))["requests"] as? Int ?? 0 == 0, "nothing past the window reached the origin")
        // An operator's prepare is the whole VOD.
        let posted = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(originBase)/vod/\(name).m3u8?segments=100&size=20000\"}")
        #expect(posted.status == 202)
        #expect(try await settledJobSegments(port, name) == Set(0..<100))
    }

    /// A playlist that names its segments with a space and non-ASCII letters (`sp é/seg0.ts`)
    /// is written with them percent-encoded, as players ask for them: the object read-ahead
    /// prepares is the one the player asks for, and the origin sends it once. The rewritten
    /// URL used to carry the raw bytes, so that read-ahead keyed and fetched another object
    /// than the player's percent-encoded request.
    @Test func segmentsNamedWithSpacesAndNonASCIIAreReadAheadUnderThePlayersURL() async throws {
        let (g, port) = try await gateway(["--read-ahead", "20"])
        defer { g.stop() }
        let id = UUID().uuidString.prefix(8)
        let encoded = "sp%20%C3%A9-\(id)"  // "sp é-ID"
        let list = try await HTTP.get(proxied(port, "/vod/\(encoded).m3u8?segments=20&size=20000"))
        #expect(list.status == 200)
        let urls = list.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(urls.count == 20)
        #expect(urls.allSatisfy { $0.contains("/obj/\(encoded)/seg") && !$0.contains(" ") }, "\(urls.prefix(2))")
        #expect([200, 302].contains(try await HTTP.get(urls[0]).status))
        #expect(try await settledJobSegments(port, encoded) == Set(0...5))
        for k in 1...5 {
            let r = try await HTTP.get(urls[k])
            #expect(r.status == 200, "segment \(k) from the cache: \(r.status)")
            // One whole answer from the origin, the job's (a job resumed on a loaded host adds
            // a range, not a second copy); a player's request under another key would add one.
            let stats = try await originStats("\(encoded)/seg\(k).ts")
            #expect(stats["full"] as? Int == 1, "segment \(k): the job's fetch only: \(stats)")
            #expect(r.body == (try await direct("/obj/\(encoded)/seg\(k).ts?size=20000")))
        }
    }

    /// A static MPD is read ahead as a VOD playlist is, each Representation on its own: the
    /// requests of the one a player plays move its window; the others are not prepared.
    @Test func aStaticMPDIsReadAheadPerRepresentation() async throws {
        let (g, port) = try await gateway(["--read-ahead", "20"])
        defer { g.stop() }
        let name = "dash-\(UUID().uuidString.prefix(8))"
        let manifest = try await HTTP.get(proxied(port, "/dash/\(name).mpd?segments=100&size=20000"))
        #expect(manifest.status == 200)
        #expect(try await settledJobSegments(port, name + "-hi").isEmpty)
        // The player fills the rewritten template for "hi", as a player does.
        let template = String(try #require(manifest.text.firstMatch(of: #/media="([^"]+)"/#)).1).replacing("&amp;", with: "&")
        func segment(_ n: Int) -> String {
            template.replacing("$RepresentationID$", with: "hi").replacing("$Number$", with: String(n))
        }
        #expect([200, 302].contains(try await HTTP.get(segment(0)).status))
        // 4 s segments: 0, and those starting within 20 s of its end, 1 to 5.
        #expect(try await settledJobSegments(port, name + "-hi") == Set(0...5))
        #expect([200, 302].contains(try await HTTP.get(segment(10)).status))
        #expect(try await settledJobSegments(port, name + "-hi") == Set(0...5).union(10...15))
        #expect(try await settledJobSegments(port, name + "-lo").isEmpty, "the Representation not played")
    }

    /// Streams that open a long static MPD faster than the node plans its read-ahead are not
    /// all queued: each plan lists every segment under the stream's xresid, and a flood of
    /// 120 streams opening a 24-hour MPD once took a gateway to 4.6 GB and four minutes of
    /// CPU. Past the bound, a stream's MPD is answered as always, not read ahead, and counted.
    @Test func streamsOpeningALongMPDFasterThanItIsPlannedAreNotAllQueued() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let name = "long-\(UUID().uuidString.prefix(8))"
        // 48 hours of 4 s segments in two Representations: 86,400 objects per stream.
        let streams = 30
        let urls = (0..<streams).map { proxied(port, "/dash/\(name).mpd?segments=43200&size=1000&xresid=flood\($0)") }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for url in urls { group.addTask { try await HTTP.get(url).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: streams))
        let metrics = try await HTTP.get("http://127.0.0.1:\(port)/metrics").text
        let skipped = try #require(metrics.firstMatch(of: #/\nswarmgate_read_ahead_skipped_total (\d+)/#)).1
        // The plans queue holds 8, and each takes seconds here: most of the 30 were refused.
        #expect(Int(skipped) ?? 0 >= streams - 8 - 4, "\(skipped) refused")
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
    }

    /// A dynamic MPD's newest segments are prepared as the node reads it, as a live
    /// playlist's are, but only for the Representations its players play: the MPD lists them
    /// all. The tail is the newest segments within three of their durations of the live edge.
    @Test func aDynamicMPDsNewestSegmentsArePreparedForTheRepresentationsPlayed() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let name = "dashlive-\(UUID().uuidString.prefix(8))"
        func mpd(first: Int) async throws -> HTTPResult {
            try await HTTP.get(proxied(port, "/dashlive/\(name).mpd?segments=10&first=\(first)&size=20000"))
        }
        let first = try await mpd(first: 0)
        #expect(first.status == 200)
        #expect(try await settledJobSegments(port, name + "-hi").isEmpty, "no player plays it yet")
        // The player fetches "hi"'s initialization and newest segment from the rewritten
        // template, as a player does.
        let initialization = String(try #require(first.text.firstMatch(of: #/initialization="([^"]+)"/#)).1)
        let media = String(try #require(first.text.firstMatch(of: #/media="([^"]+)"/#)).1)
        func filled(_ template: String, number: Int = 0) -> String {
            template.replacing("&amp;", with: "&").replacing("$RepresentationID$", with: "hi").replacing("$Number$", with: String(number))
        }
        #expect([200, 302].contains(try await HTTP.get(filled(initialization)).status))
        #expect([200, 302].contains(try await HTTP.get(filled(media, number: 9)).status))
        #expect(try await settledJobSegments(port, name + "-hi") == [9])
        // The MPD moves on: segments 1 to 10, 10 new. Its newest three (12 s) are prepared for
        // "hi", none for "lo"; the answer waits for them, so a player that asks for the newest
        // at once gets it from the gateway, not a redirect to the origin.
        #expect(try await mpd(first: 1).status == 200)
        let newest = try await HTTP.get(filled(media, number: 10))
        #expect(newest.status == 200, "\(newest.status)")
        #expect(try await settledJobSegments(port, name + "-hi") == [8, 9, 10])
        #expect(try await settledJobSegments(port, name + "-lo").isEmpty, "the Representation not played")
    }

    /// A live playlist whose durations are not numbers ("nan", "inf") is rewritten and
    /// answered, its tail prepared without durations; the gateway goes on serving.
    @Test(arguments: ["nan", "inf", "-1"])
    func aLivePlaylistWithDurationsThatAreNotNumbersIsServed(duration: String) async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let list = try await HTTP.get(proxied(port, "/live/odd-\(duration).m3u8?segments=4&size=2000&duration=\(duration)"))
        #expect(list.status == 200)
        #expect(list.text.contains("#EXTINF:\(duration),"))
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
    }

    /// A VOD player reads its playlist once: after a restart of its gateway, its next
    /// requests still move the read-ahead window on.
    @Test func readAheadGoesOnAfterTheGatewayRestarts() async throws {
        let cache = Live.cacheFolder()
        var (g, port) = try await gateway(cache: cache, ["--read-ahead", "20"])
        let name = "restarted-\(UUID().uuidString.prefix(8))"
        let list = try await HTTP.get(proxied(port, "/vod/\(name).m3u8?segments=100&size=20000"))
        // The segments' paths on the gateway, which changes port when it restarts.
        let paths = list.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            line.range(of: "/hls.vod.p2p.com/").map { String(line[$0.lowerBound...].dropFirst()) }
        }
        #expect(paths.count == 100)
        #expect([200, 302].contains(try await HTTP.get("http://127.0.0.1:\(port)/\(paths[0])").status))
        #expect(try await settledJobSegments(port, name) == Set(0...5))
        g.stop()
        (g, port) = try await gateway(cache: cache, ["--read-ahead", "20"])
        defer { g.stop() }
        #expect([200, 302].contains(try await HTTP.get("http://127.0.0.1:\(port)/\(paths[10])").status))
        let after = try await settledJobSegments(port, name)
        #expect(after == Set(0...5).union(10...15), "\(after.sorted())")
    }

    /// `prepare --wait` reports an object that failed (exit 1), and a second prepare, once
    /// the origin has it again, prepares it: an operator's prepare retries what failed, as
    /// read-ahead does not.
    @Test func aSecondPrepareRetriesWhatFailed() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        _ = try await HTTP.get(originBase + "/__version?name=retried/seg1.ts&gone=1")
        func prepare() async throws -> LiveProcess {
            let cli = try LiveProcess(Live.binary, ["prepare", originBase + "/vod/retried.m3u8?segments=2&size=1000", "--gateway", "http://127.0.0.1:\(port)", "--wait"])
            _ = await cli.waitForExit(timeout: .seconds(60))
            return cli
        }
        let first = try await prepare()
        #expect(await first.waitForExit(timeout: .zero) == 1 && first.stderr.contains("prepared 1 of 2 objects"), "\(first.stderr)")
        _ = try await HTTP.get(originBase + "/__version?name=retried/seg1.ts&gone=0")
        let second = try await prepare()
        #expect(await second.waitForExit(timeout: .zero) == 0 && second.stderr.contains("prepared 2 of 2 objects"), "\(second.stderr)")
        #expect(try await originStats("retried/seg1.ts")["full"] as? Int == 1)
    }

    /// A prepare of an object on a host the gateway may not fetch is refused at once (403,
    /// with the reason), not queued to fail: it was answered 202 and its job failed later.
    @Test func aPrepareForAHostNotAllowedIsRefusedAtOnce() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        for url in ["http://127.0.0.2:\(originPort)/obj/refused.ts?size=1000", "http://cdn.example.com/vod/refused.m3u8"] {
            let posted = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(url)\"}")
            #expect(posted.status == 403 && posted.text.contains("not in allow_origins"), "\(url): \(posted.status) \(posted.text)")
        }
        // A port no origin can have is the caller's error.
        let malformed = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"http://127.0.0.1:99999/obj/a.ts\"}")
        #expect(malformed.status == 400, "\(malformed.status) \(malformed.text)")
        #expect(try await jobs(port).isEmpty, "nothing queued")
    }

    /// A segment at a path without an extension that a playlist listed goes to the cache at
    /// once, as one with a media extension does. It was asked of the origin first to see what
    /// it was, a GET of the whole object the registry's preparation then repeated (and one
    /// asked with a Range, answered 206, went around the cache).
    @Test func aListedSegmentWithoutAnExtensionIsNotAskedOfTheOriginFirst() async throws {
        // No read-ahead: the registry knows nothing of the segments until a player asks.
        let (g, port) = try await gateway(["--read-ahead", "0"])
        defer { g.stop() }
        let name = "bare-\(UUID().uuidString.prefix(8))"
        let list = try await HTTP.get(proxied(port, "/vod/\(name).m3u8?segments=2&size=100000&ext="))
        let urls = list.text.split(separator: "\n").filter { $0.hasPrefix("http") }.map(String.init)
        #expect(urls.count == 2 && urls[0].contains("/obj/\(name)/seg0?size=100000&token=abc&xresid="), "\(list.text)")
        let first = try HTTP.raw(port: port, target: String(try #require(urls.first).dropFirst("http://127.0.0.1:\(port)".count)))
        #expect(first.status == 302 && first.headers["location"] == originBase + "/obj/\(name)/seg0?size=100000&token=abc")
        let served = try await Live.whenReady(urls[0])
        let want = try await direct("/obj/\(name)/seg0?size=100000&token=abc")
        #expect(served.status == 200 && served.body == want)
        let stats = try await originStats("\(name)/seg0")
        // The preparation's GET, and the test's own; no other.
        #expect(stats["full"] as? Int == 2, "\(stats)")
    }

    /// A segment marked EXT-X-GAP is not at the origin, and players do not load it: read-ahead
    /// leaves it out (it was prepared like any other, a request the origin answers 404, and a
    /// live list's answer waited for it).
    @Test func aGapIsNotPreparedAhead() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let name = "gap-\(UUID().uuidString.prefix(8))"
        let list = try await HTTP.get(proxied(port, "/vod/\(name).m3u8?segments=5&size=1000&gap=2"))
        let urls = list.text.split(separator: "\n").filter { $0.hasPrefix("http") }.map(String.init)
        #expect(urls.count == 5 && list.text.contains("#EXT-X-GAP\n#EXTINF:4.0,\n" + urls[2] + "\n"), "\(list.text)")
        // A player reaches segment 0: the next ones within the window are prepared.
        _ = try await Live.whenReady(urls[0])
        let deadline = ContinuousClock.now + .seconds(10)
        while try await originStats("\(name)/seg4.ts")["requests"] as? Int ?? 0 == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await originStats("\(name)/seg3.ts")["requests"] as? Int ?? 0 > 0)
        #expect(try await originStats("\(name)/seg2.ts")["requests"] as? Int == 0, "the gap was asked for")
    }

    /// A playlist at a path without an extension is prepared as a playlist (the origin's
    /// answer tells), not kept as an object: it stays rewritten for each request.
    @Test func prepareOfAPlaylistWithoutAnExtensionQueuesItsSegments() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let playlist = originBase + "/live/prepared-bare?segments=3&size=1000"
        let posted = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(playlist)\"}")
        #expect(posted.status == 202 && posted.text.contains("\"queued\":3"), "\(posted.status) \(posted.text)")
        let xresid = XResIDs.derived("127.0.0.1:\(originPort)", "/live/prepared-bare")
        let list = try await HTTP.get(proxied(port, "/live/prepared-bare?segments=3&size=1000&xresid=\(xresid)"))
        #expect(list.status == 200 && list.text.contains("/obj/prepared-bare/seg2.ts") && list.text.contains("xresid="), "\(list.text)")
        // An object at such a path is still prepared as one object.
        let object = try await HTTP.post("http://127.0.0.1:\(port)/prepare", json: "{\"url\":\"\(originBase)/obj/prepared-bare-object?size=5000\"}")
        #expect(object.status == 202 && object.text.contains("\"queued\":1") && object.text.contains("\"job\""), "\(object.text)")
    }

    /// `prepare` of an MPD queues every Representation's initialization and segments, each
    /// once, and `--wait` sees them done; each is then served from pieces.
    @Test func prepareQueuesEveryRepresentationOfAnMPD() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let mpd = originBase + "/dash/prepared-mpd.mpd?segments=3&size=100000"
        let cli = try LiveProcess(Live.binary, ["prepare", mpd, "--gateway", "http://127.0.0.1:\(port)", "--wait"])
        #expect(await cli.waitForExit(timeout: .seconds(60)) == 0, "\(cli.stderr)")
        #expect(cli.stderr.contains("prepared 8 of 8 objects"), "\(cli.stderr)")
        for representation in ["lo", "hi"] {
            for object in ["init.mp4", "seg0.ts", "seg1.ts", "seg2.ts"] {
                let stats = try await originStats("prepared-mpd-\(representation)/\(object)")
                #expect(stats["full"] as? Int == 1, "\(representation)/\(object): \(stats)")
            }
        }
        #expect(try await originStats("prepared-mpd-lo/seg3.ts")["requests"] as? Int == 0, "no segment past the end")
        let xresid = XResIDs.derived("127.0.0.1:\(originPort)", "/dash/prepared-mpd.mpd")
        let r = try await HTTP.get(proxied(port, "/obj/prepared-mpd-hi/seg2.ts?size=100000&token=abc&xresid=\(xresid)"))
        let original = try await direct("/obj/prepared-mpd-hi/seg2.ts?size=100000&token=abc")
        #expect(r.status == 200 && r.body == original)
    }

    @Test func prepareQueuesAWholeStreamAndJobsCanBePausedResumedAndCancelled() async throws {
        let samples = Live.packageRoot.appendingPathComponent("samples")
        let (o, oport) = try await Live.origin(serving: samples, token: "t")
        defer { o.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(oport),127.0.0.1:\(originPort)", "--inherit-query", "token", "--prepare-jobs", "1", "--piece-size", "64KiB"])
        defer { g.stop() }
        let gateway = "http://127.0.0.1:\(port)"
        let cli = try LiveProcess(Live.binary, ["prepare", "http://127.0.0.1:\(oport)/hls-ts/master.m3u8?token=t", "--gateway", gateway, "--wait"])
        #expect(await cli.waitForExit(timeout: .seconds(120)) == 0, "\(cli.stderr)")
        let variants = try FileManager.default.contentsOfDirectory(atPath: samples.appendingPathComponent("hls-ts").path).filter { $0.hasSuffix(".ts") }
        var all = try await jobs(port)
        #expect(all.count == variants.count, "every segment of both variants")
        #expect(all.allSatisfy { $0["state"] as? String == "done" })
        // Each is now served from pieces at once, byte for byte.
        let seg = variants.sorted()[0]
        let r = try await HTTP.get("\(gateway)/hls.vod.p2p.com/127.0.0.1:\(oport)/hls-ts/\(seg)?token=t&xresid=\(XResIDs.derived("127.0.0.1:\(oport)", "/hls-ts/master.m3u8"))")
        #expect(r.status == 200)
        #expect(r.body == (try Data(contentsOf: samples.appendingPathComponent("hls-ts/\(seg)"))))

        // Steering one slow job.
        let slow = "http://127.0.0.1:\(originPort)/obj/steer.ts?size=2000000&throttle=200000"
        let posted = try await HTTP.post("\(gateway)/prepare", json: "{\"url\":\"\(slow)\"}")
        #expect(posted.status == 202)
        let id = try #require(try await jobs(port).first { ($0["url"] as? String) == slow }?["id"] as? String)
        try await Task.sleep(for: .milliseconds(800))
        let paused = try await HTTP.post("\(gateway)/jobs/\(id)/pause", json: "")
        #expect(paused.text.contains("\"state\":\"paused\""))
        try await Task.sleep(for: .milliseconds(300))
        let progress = try #require(try await jobs(port).first { $0["id"] as? String == id }?["bytesDone"] as? Int)
        #expect(progress > 0)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await jobs(port).first { $0["id"] as? String == id }?["bytesDone"] as? Int == progress, "a paused job does not move")
        #expect(try await HTTP.post("\(gateway)/jobs/\(id)/resume", json: "").text.contains("\"state\":\"queued\""))
        try await Task.sleep(for: .milliseconds(600))
        let cancelled = try await HTTP.post("\(gateway)/jobs/\(id)/cancel", json: "")
        #expect(cancelled.text.contains("\"state\":\"cancelled\""))
        all = try await jobs(port)
        #expect(all.first { $0["id"] as? String == id }?["state"] as? String == "cancelled")
        #expect(try await HTTP.post("\(gateway)/jobs/nosuchjob/pause", json: "").status == 404)
        let stats = try await originStats("steer.ts")
        #expect((stats["if_range"] as? [String])?.isEmpty == false, "resume continued by range: \(stats)")
    }
}
