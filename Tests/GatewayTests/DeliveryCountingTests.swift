import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `/stat` counts the bytes players got, by where they came from (README, the `/stat` row):
/// what the CDN sent once counts once as the CDN's, whoever it was sent to first, and bytes a
/// player never got count for nobody. Real gateways, a real origin, raw sockets for players
/// who leave.
@Suite("Delivery counting")
struct DeliveryCountingTests {
    static func stat(_ port: Int, _ xresid: String) async throws -> (cdn: Int, cache: Int, p2p: Int) {
        let json = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(port)/stat?xresid=\(xresid)").body) as? [String: Any] ?? [:]
        return (json["cdnBytes"] as? Int ?? -1, json["cacheBytes"] as? Int ?? -1, json["p2pBytes"] as? Int ?? -1)
    }

    /// The counts once `settled` holds of them, or as they are after a second: a response's
    /// last bytes count once its channel has handed them to the socket, which a watcher sees
    /// within milliseconds of the player getting them.
    static func stat(_ port: Int, _ xresid: String, once settled: ((cdn: Int, cache: Int, p2p: Int)) -> Bool) async throws -> (cdn: Int, cache: Int, p2p: Int) {
        let deadline = ContinuousClock.now + .seconds(1)
        while true {
            let s = try await stat(port, xresid)
            if settled(s) || ContinuousClock.now >= deadline { return s }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A node that prepares what its players ask for (no `--tracker`) got the object from the
    /// origin once: its first player's bytes count as the CDN's (they counted as the node's
    /// own, and a node that only ever relayed the CDN showed a p2pRatio near 1). A range of
    /// two bytes takes two bytes of that, not the whole piece: the rest counts for the next
    /// player (Safari's first request for media is `bytes=0-1`).
    @Test func aPreparedObjectCountsAsTheCDNsForTheBytesItsPlayersGetFirst() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let size = 600_000
        let url = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/counted.mp4?size=\(size)&xresid=counted"
        let two = try await Live.whenReady(url, headers: ["Range": "bytes=0-1"])
        #expect(two.status == 206 && two.body.count == 2)
        var s = try await Self.stat(port, "counted")
        #expect(s.cdn == 2 && s.cache == 0, "\(s)")
        let whole = try await HTTP.get(url)
        let want = try await HTTP.get("http://127.0.0.1:\(originPort)/obj/counted.mp4?size=\(size)")
        #expect(whole.status == 200 && whole.body == want.body)
        s = try await Self.stat(port, "counted") { $0.cdn + $0.cache >= size + 2 }
        #expect(s.cdn == size && s.cache == 2 && s.p2p == 0, "every byte the origin sent once counts once as its: \(s)")
        _ = try await HTTP.get(url)
        s = try await Self.stat(port, "counted") { $0.cdn + $0.cache >= 2 * size + 2 }
        #expect(s.cdn == size && s.cache == size + 2, "the second player's bytes are the node's: \(s)")
    }

    /// A player who asks for a large object and reads nothing (a seek, an ABR switch, a hang)
    /// is counted nothing: a write counts once the one after it is taken, which is when it
    /// has gone to the socket. Each such request counted 4 MiB (a batch counted as written
    /// once queued), and the pieces it took were then the node's for the next player. (What
    /// the kernel's socket buffer takes counts as sent: on loopback it took a whole 2 MB
    /// object from a reader with a 4 KiB window.)
    @Test func aPlayerWhoReadsNothingIsCountedNothing() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let size = 12_000_000
        let path = "/hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/unread.mp4?size=\(size)&xresid=unread"
        _ = try await Live.whenReady("http://127.0.0.1:\(port)\(path)", headers: ["Range": "bytes=0-0"])
        let fd = try HTTP.connectLoopback(port: port, receiveBuffer: 4096)
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        try await Task.sleep(for: .milliseconds(700))
        var s = try await Self.stat(port, "unread")
        #expect(s.cdn + s.cache <= 1 + (1 << 20), "a player that read nothing: \(s)")
        close(fd)
        try await Task.sleep(for: .milliseconds(300))
        let whole = try await HTTP.get("http://127.0.0.1:\(port)\(path)")
        #expect(whole.status == 200 && whole.body.count == size)
        s = try await Self.stat(port, "unread") { $0.cdn >= size }
        #expect(s.cdn == size, "the next player's bytes are the origin's, once: \(s)")
    }

    /// A HEAD of an object not ready is its 302, but sends no player to the origin for
    /// bytes: no fallback is counted (one was).
    @Test func aHeadIsNoFallback() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        func fallbacks() async throws -> Int {
            let json = try JSONSerialization.jsonObject(with: try await HTTP.get("http://127.0.0.1:\(port)/stat").body) as? [String: Any]
            return (json?["fallbacks"] as? [String: Any])?["checksums_not_ready"] as? Int ?? -1
        }
        let url = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/headed.ts?size=100000&throttle=20000"
        let head = try await HTTP.get(url, method: "HEAD")
        #expect(head.status == 302, "\(head.status)")
        #expect(try await fallbacks() == 0)
        #expect(try await HTTP.get(url).status == 302)
        #expect(try await fallbacks() == 1, "a GET's is counted")
    }

    /// A playlist counts the bytes its player gets (the rewritten list), and a HEAD none: it
    /// counted the origin's body, before the rewrite, for HEAD too.
    @Test func aPlaylistCountsWhatItsPlayerGets() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let url = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/vod/listed.m3u8?segments=3&size=1000&xresid=listed"
        let head = try await HTTP.get(url, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        var s = try await Self.stat(port, "listed")
        #expect(s.cdn == 0 && s.cache == 0, "a HEAD sends no list: \(s)")
        let list = try await HTTP.get(url)
        let original = try await HTTP.get("http://127.0.0.1:\(originPort)/vod/listed.m3u8?segments=3&size=1000")
        #expect(list.status == 200 && list.body.count != original.body.count)
        s = try await Self.stat(port, "listed")
        #expect(s.cdn == list.body.count, "the rewritten list's bytes: \(s), \(list.body.count) sent")
    }
}
