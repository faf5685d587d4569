import Foundation
import TestScratch
import Testing

/// Players in web pages on other sites read what the gateway serves them only with CORS
/// headers (`--cors-origins`), on every hop of a player's path: the playlist, the 302 to the
/// CDN, the segment from pieces, an error; and a preflight for a `Range` request is answered.
/// The node's own endpoints get none. Every answer on a player's path says `nosniff`.
@Suite("CORS", .serialized)
final class CORSTests {
    let origin: LiveProcess
    let originPort: Int

    init() async throws {
        (origin, originPort) = try await Live.objectOrigin()
    }

    deinit { origin.stop() }

    func gateway(_ extra: [String] = []) async throws -> (LiveProcess, Int) {
        try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"] + extra)
    }

    func proxied(_ port: Int, _ path: String) -> String {
        "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)\(path)"
    }

    @Test func everyHopOfAPlayersPathMayBeReadByAnyPageByDefault() async throws {
        let (g, port) = try await gateway()
        defer { g.stop() }
        let page = ["Origin": "https://player.example"]
        let name = "cors-\(UUID().uuidString.prefix(8))"
        let list = try await HTTP.get(proxied(port, "/vod/\(name).m3u8?segments=2&size=1000"), headers: page)
        let segment = try #require(list.text.split(separator: "\n").first { !$0.hasPrefix("#") }.map(String.init))
        let first = try await HTTP.get(segment, headers: page)
        let ready = try await Live.whenReady(segment, headers: page.merging(["Range": "bytes=10-19"]) { $1 })
        let missing = try await HTTP.get(proxied(port, "/missing/\(name).ts?size=1000"), headers: page)
        for (what, r, status) in [("playlist", list, 200), ("first sight", first, 302), ("from pieces", ready, 206), ("error", missing, 404)] {
            #expect(r.status == status, "\(what): \(r.status)")
            #expect(r.headers["access-control-allow-origin"] == "*", "\(what): \(r.headers)")
            #expect(r.headers["access-control-expose-headers"]?.contains("Content-Range") == true, "\(what)")
            #expect(r.headers["x-content-type-options"] == "nosniff", "\(what)")
        }
        // A preflight, as a browser sends before a Range request on some players.
        let preflight = try await HTTP.get(
            segment, headers: page.merging(["Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"]) { $1 },
            method: "OPTIONS")
        #expect(preflight.status == 204)
        #expect(preflight.headers["access-control-allow-origin"] == "*")
        #expect(preflight.headers["access-control-allow-methods"]?.contains("GET") == true)
        #expect(preflight.headers["access-control-allow-headers"] == "range")
        // The node's own endpoints are not for other sites' pages.
        for path in ["/stat", "/health", "/jobs"] {
            let r = try await HTTP.get("http://127.0.0.1:\(port)\(path)", headers: page)
            #expect(r.headers["access-control-allow-origin"] == nil, "\(path)")
        }
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/stat", method: "OPTIONS").status == 405)
    }

    @Test func listedOriginsAreTheOnlyPagesThatMayRead() async throws {
        let (g, port) = try await gateway(["--cors-origins", "https://a.example,https://b.example:8443"])
        defer { g.stop() }
        let url = proxied(port, "/vod/listed-\(UUID().uuidString.prefix(8)).m3u8?segments=1")
        let listed = try await HTTP.get(url, headers: ["Origin": "https://b.example:8443"])
        #expect(listed.status == 200)
        #expect(listed.headers["access-control-allow-origin"] == "https://b.example:8443")
        #expect(listed.headers["vary"]?.contains("Origin") == true, "a shared cache keeps one answer per page")
        let other = try await HTTP.get(url, headers: ["Origin": "https://c.example"])
        #expect(other.status == 200 && other.headers["access-control-allow-origin"] == nil)
        let noPage = try await HTTP.get(url)
        for r in [other, noPage] { #expect(r.headers["vary"]?.contains("Origin") == true, "a page not listed, or none: \(r.headers)") }
        let preflight = try await HTTP.get(url, headers: ["Origin": "https://c.example", "Access-Control-Request-Method": "GET"], method: "OPTIONS")
        #expect(preflight.headers["access-control-allow-origin"] == nil && preflight.headers["access-control-allow-methods"] == nil)
    }

    @Test func noneSendsNoCORSHeadersAndABadOriginIsRefusedAtStart() async throws {
        let (g, port) = try await gateway(["--cors-origins", "none"])
        defer { g.stop() }
        let r = try await HTTP.get(proxied(port, "/vod/none.m3u8?segments=1"), headers: ["Origin": "https://a.example"])
        #expect(r.status == 200 && r.headers["access-control-allow-origin"] == nil)
        #expect(r.headers["x-content-type-options"] == "nosniff")
        let bad = try await ProgramRun.run(Live.binary, ["serve", "--cors-origins", "https://a.example/path", "--listen", "127.0.0.1:0"])
        #expect(bad.status != 0 && bad.err.contains("cors-origins"), "\(bad.err)")
    }
}
