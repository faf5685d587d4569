import Foundation
import Testing

/// `swarmgate serve` as a real process in front of a real loopback origin that demands a
/// token on every request (`--inherit-query token` carries it to every child URI).
@Suite("Gateway end to end", .serialized)
final class GatewayEndToEndTests {
    static let token = "s3cr3t%2Ftoken"
    let origin: LiveProcess
    let originPort: Int
    let gateway: LiveProcess
    let port: Int
    var base: String { "http://127.0.0.1:\(port)" }
    var originAuthority: String { "127.0.0.1:\(originPort)" }
    var samples: URL { Live.packageRoot.appendingPathComponent("samples") }

    init() async throws {
        (origin, originPort) = try await Live.origin(serving: Live.packageRoot.appendingPathComponent("samples"), token: Self.token)
        (gateway, port) = try await Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token",
        ])
    }

    deinit {
        gateway.stop()
        origin.stop()
    }

    func proxied(_ path: String, query: String = "token=\(token)") -> String {
        "\(base)/hls.vod.p2p.com/\(originAuthority)/\(path)?\(query)"
    }

    /// A line per request at the default level; `--log-level warning` leaves them out (an
    /// edge box's log was a line per segment, with no way to quiet it).
    @Test func theLogLevelChoosesTheLinesPerRequest() async throws {
        _ = try await HTTP.get(base + "/health")
        let (quiet, quietPort) = try await Live.gateway(["--log-level", "warning"])
        defer { quiet.stop() }
        _ = try await HTTP.get("http://127.0.0.1:\(quietPort)/health")
        _ = try await HTTP.get("http://127.0.0.1:\(quietPort)/health")
        try await Task.sleep(for: .milliseconds(300))
        #expect(gateway.stderr.contains("request.route=/health"))
        #expect(!quiet.stderr.contains("request.route="), "\(quiet.stderr.prefix(400))")
    }

    @Test func healthReadyMetricsAndStat() async throws {
        let h = try await HTTP.get(base + "/health")
        #expect(h.status == 200)
        #expect(h.text.contains("\"status\":\"ok\""))
        #expect(h.text.contains("\"version\":\"0.1.0\""))
        #expect(h.text.contains("\"uptime_s\":"))
        #expect(try await HTTP.get(base + "/ready").status == 200)
        _ = try await Live.whenReady(proxied("hls-ts/low-000.ts"))
        let m = try await HTTP.get(base + "/metrics")
        #expect(m.status == 200)
        #expect(m.text.contains("swarmgate_requests_total{route=\"/hls.vod.p2p.com/*\",status=\"302\"}"))
        #expect(m.text.contains("swarmgate_requests_total{route=\"/hls.vod.p2p.com/*\",status=\"200\"}"))
        #expect(m.text.contains("swarmgate_bytes_total{source=\"cache\"}"))
        let size = try Data(contentsOf: samples.appendingPathComponent("hls-ts/low-000.ts")).count
        let s = try await HTTP.get(base + "/stat?xresid=\(XResIDs.derived(originAuthority, "/hls-ts/low-000.ts"))")
        // Prepared by this node's own registry from the origin: its first player's bytes are
        // the CDN's (and its preparation's, in prepareBytes).
        #expect(s.text.contains("\"cdnBytes\":\(size)"), "\(s.text)")
        #expect(s.text.contains("\"cacheBytes\":0"), "\(s.text)")
        #expect(s.text.contains("\"prepareBytes\":\(size)"), "\(s.text)")
    }

    @Test func theUploadSwitch() async throws {
        #expect(try await HTTP.get(base + "/xdfs.p2p.com/feature").text == "{\"ret\":0,\"msg\":\"ok\",\"download\":true,\"upload\":true}")
        #expect(try await HTTP.get(base + "/xdfs.p2p.com/feature?upload=0").text == "{\"ret\":0,\"msg\":\"ok\",\"download\":true,\"upload\":false}")
        #expect(try await HTTP.get(base + "/xdfs.p2p.com/feature").text.contains("\"upload\":false"))
        let bad = try await HTTP.get(base + "/xdfs.p2p.com/feature?upload=2")
        #expect(bad.status == 400)
        #expect(bad.text.contains("\"ret\":-1"))
        _ = try await HTTP.get(base + "/xdfs.p2p.com/feature?upload=1")
    }

    @Test func playlistsAreRewrittenWithTheTokenCarriedToEveryChild() async throws {
        let master = try await HTTP.get(proxied("hls-ts/master.m3u8"))
        #expect(master.status == 200)
        #expect(master.headers["content-type"] == "application/vnd.apple.mpegurl")
        let variant = try #require(master.text.split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init))
        #expect(variant.hasPrefix("\(base)/hls.vod.p2p.com/\(originAuthority)/hls-ts/low.m3u8?token=\(Self.token)&xresid="))
        let media = try await HTTP.get(variant)
        #expect(media.status == 200)
        let segment = try #require(media.text.split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init))
        // The media playlist queued its segments for preparation: 302 until this one is ready.
        let bytes = try await Live.whenReady(segment)
        #expect(bytes.status == 200)
        #expect(bytes.body == (try Data(contentsOf: samples.appendingPathComponent("hls-ts/low-000.ts"))))
    }

    @Test func rangesPerRFC9110() async throws {
        let file = try Data(contentsOf: samples.appendingPathComponent("hls-byterange/index.ts"))
        let url = proxied("hls-byterange/index.ts")
        _ = try await Live.whenReady(url)
        let a = try await HTTP.get(url, headers: ["Range": "bytes=100-199"])
        #expect(a.status == 206)
        #expect(a.body == file[100...199])
        #expect(a.headers["content-range"] == "bytes 100-199/\(file.count)")
        let suffix = try await HTTP.get(url, headers: ["Range": "bytes=-10"])
        #expect(suffix.status == 206)
        #expect(suffix.body == file.suffix(10))
        let open = try await HTTP.get(url, headers: ["Range": "bytes=\(file.count - 5)-"])
        #expect(open.body == file.suffix(5))
        let bad = try await HTTP.get(url, headers: ["Range": "bytes=\(file.count + 10)-"])
        #expect(bad.status == 416)
        #expect(bad.headers["content-range"] == "bytes */\(file.count)")
        #expect(try await HTTP.get(url, headers: ["Range": "bytes=oops"]).status == 400)
    }

    @Test(arguments: [
        ("/www.example.com/cdn/a.ts", 404),
        ("/hls.vod.p2p.com/", 400),
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xresid=bad%20id", 400),
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xmode=random", 400),
        ("/xdfs.p2p.com/127.0.0.1:1/a.mp4", 403),
        ("/hls.vod.p2p.com/localhost/a.ts", 403),
        ("/hls.vod.p2p.com/169.254.169.254/latest/meta-data", 403),
        ("/hls.vod.p2p.com/10.0.0.1/a.ts", 403),
        ("/hls.vod.p2p.com/0x7f000001/a.ts", 403),
        ("/hls.vod.p2p.com/2130706433/a.ts", 403),
        ("/hls.vod.p2p.com/[::1]/a.ts", 403),
    ])
    func statusTable(path: String, status: Int) async throws {
        let r = try await HTTP.get(base + path)
        #expect(r.status == status, "\(path): \(r.text)")
        #expect(r.text.contains("\"code\":\(status)"), "\(r.text)")
    }

    @Test func aRequestLineOver8KiBIs414() async throws {
        let r = try await HTTP.get(proxied("hls-ts/" + String(repeating: "a", count: 9000) + ".ts"))
        #expect(r.status == 414)
    }

    @Test func theOriginsOwnErrorsComeBackAsJSON() async throws {
        let missing = try await HTTP.get(proxied("hls-ts/nope.ts"))
        #expect(missing.status == 404)
        let noToken = try await HTTP.get(proxied("hls-ts/low-000.ts", query: "other=1"))
        #expect(noToken.status == 403)
        #expect(noToken.text.contains("origin answered 403"))
    }

    /// `--allow-origin` given twice allows both hosts (it kept only the last).
    @Test func aRepeatedAllowOriginAddsUp() async throws {
        let (first, firstPort) = try await Live.objectOrigin()
        defer { first.stop() }
        let (second, secondPort) = try await Live.objectOrigin()
        defer { second.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(firstPort)", "--allow-origin", "127.0.0.1:\(secondPort)"])
        defer { g.stop() }
        for origin in [firstPort, secondPort] {
            let r = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(origin)/vod/both.m3u8?segments=2")
            #expect(r.status == 200, "origin \(origin): \(r.status) \(r.text)")
        }
    }
}
