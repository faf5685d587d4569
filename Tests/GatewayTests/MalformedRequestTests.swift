import Foundation
import Testing
import TestScratch

/// A request that HTTP/1.1 cannot parse is answered 400 and its connection closed at once, on
/// both kinds of gateway: one with its embedded tracker (an upgradable server, for WebSocket
/// logins) sent nothing back and held the connection open; a node without one answered.
@Suite("Malformed requests")
struct MalformedRequestTests {
    static let malformed: [(name: String, bytes: [UInt8])] = [
        ("a bare LF", Array("GET /health HTTP/1.1\nHost: x\n\n".utf8)),
        ("a NUL in the target", Array("GET /he".utf8) + [0] + Array("alth HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
        ("an obs-fold", Array("GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n".utf8)),
        ("Content-Length with Transfer-Encoding", Array("POST /prepare HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)),
        ("a TLS hello", [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + Array(repeating: 0x61, count: 50) + Array("\r\n\r\n".utf8)),
        ("a request line of 90 KB", Array("GET /\(String(repeating: "a", count: 90_000)) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
    ]

    /// A gateway with its embedded tracker (an upgradable server) and a node without one,
    /// whose login it refuses (their secrets differ): both kinds of HTTP server.
    static func bothKinds() async throws -> (LiveProcess, Int, LiveProcess, Int) {
        let (g, port) = try await Live.gateway([])
        let secret = Scratch.path("other-secret")
        try "another-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        do {
            let (n, nodePort) = try await Live.gateway(["--tracker", "ws://127.0.0.1:\(port)/swarm/v1/ws", "--app-secret-file", secret])
            return (g, port, n, nodePort)
        } catch {
            g.stop()
            throw error
        }
    }

    /// A WebSocket upgrade request's head for the tracker's endpoint, with `extra` header lines.
    static func upgradeHead(extra: String = "") -> String {
        "GET /swarm/v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(extra)\r\n"
    }

    /// An upgrade request that comes with a body fails its upgrade: the connection is closed
    /// at once (it was left open, with nothing reading it).
    @Test func anUpgradeRequestWithABodyIsClosed() async throws {
        let (g, port) = try await Live.gateway([])
        defer { g.stop() }
        let (_, closed) = try await RawConnection.exchange(port: port, send: Array((Self.upgradeHead(extra: "Content-Length: 1\r\n") + "x").utf8), within: .seconds(10))
        #expect(closed != nil, "not closed within 10 s")
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
    }

    /// A method an endpoint does not take is 405 with the `Allow` it takes (RFC 9110 15.5.6),
    /// and `swarmgate health` says why it fails: the status a gateway answered, or the error.
    @Test func refusedMethodsSayWhatIsAllowedAndHealthSaysWhyItFails() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway([])
        defer { g.stop() }
        let base = "http://127.0.0.1:\(port)"
        for (path, method, allow) in [
            ("/prepare", "GET", "POST"), ("/jobs/status", "GET", "POST"), ("/jobs", "DELETE", "GET, HEAD"),
            ("/hls.vod.p2p.com/cdn.example.com/a.ts", "PUT", "GET, HEAD, OPTIONS"), ("/health", "POST", "GET, HEAD"),
        ] {
            let r = try await HTTP.get(base + path, method: method)
            #expect(r.status == 405 && r.headers["allow"] == allow, "\(method) \(path): \(r.status) \(r.headers)")
        }
        let healthy = try LiveProcess(Live.binary, ["health", base])
        #expect(await healthy.waitForExit(timeout: .seconds(20)) == 0, "\(healthy.stderr)")
        let notAGateway = try LiveProcess(Live.binary, ["health", "http://127.0.0.1:\(originPort)"])
        #expect(await notAGateway.waitForExit(timeout: .seconds(20)) == 1)
        #expect(notAGateway.stderr.contains("/health answered 404"), "\(notAGateway.stderr)")
        // A URL with a user and password (a proxy's basic auth) probes the host after the `@`,
        // and its password is never printed (it failed as an unreadable host, echoing it).
        let withUser = try LiveProcess(Live.binary, ["health", "http://ops:hunter2@127.0.0.1:\(port)/"])
        #expect(await withUser.waitForExit(timeout: .seconds(20)) == 0, "\(withUser.stderr)")
        let refused = try LiveProcess(Live.binary, ["health", "http://ops:hunter2@127.0.0.1:\(originPort)"])
        #expect(await refused.waitForExit(timeout: .seconds(20)) == 1)
        #expect(refused.stderr.contains("http://ops:***@127.0.0.1:\(originPort)/health answered 404"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("hunter2"), "\(refused.stderr)")
    }

    /// A second gateway on a port the first holds says which address it could not take (it
    /// printed a bind() call's errno).
    @Test func aListenAddressInUseIsNamed() async throws {
        let (g, port) = try await Live.gateway([])
        defer { g.stop() }
        let second = try LiveProcess(Live.binary, ["serve", "--listen", "127.0.0.1:\(port)", "--cache-dir", Live.cacheFolder()])
        #expect(await second.waitForExit(timeout: .seconds(20)) == 1, "a failure to run, not a usage error (2)")
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(port): the address is in use"), "\(second.stderr)")
    }

    /// A node with `--tracker` prepares nothing itself: a read-ahead given to it is the
    /// tracker's to use, and it says so (it was ignored in silence); 0 still counts there.
    @Test func aReadAheadThatANodeDoesNotUseIsNamed() async throws {
        let secret = Scratch.path("read-ahead-secret")
        try "a-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let warning = "read-ahead 30 is not used by a node with --tracker"
        for (readAhead, warned) in [("30", true), ("0", false)] {
            let (n, _) = try await Live.gateway(["--tracker", "ws://127.0.0.1:9/swarm/v1/ws", "--app-secret-file", secret, "--read-ahead", readAhead])
            n.stop()
            #expect(n.stderr.contains(warning) == warned, "--read-ahead \(readAhead): \(n.stderr.prefix(600))")
        }
    }

    @Test func malformedRequestsAreAnswered400AndClosedAtOnce() async throws {
        let (g, port, n, nodePort) = try await Self.bothKinds()
        defer { g.stop(); n.stop() }
        for (kind, p) in [("with its tracker", port), ("without", nodePort)] {
            for (name, bytes) in Self.malformed {
                let (received, closed) = try await RawConnection.exchange(port: p, send: bytes, within: .seconds(10))
                let text = String(decoding: received, as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 400 "), "\(kind), \(name): \(text.prefix(80))")
                // Closed within 10 s (an idle connection is closed after 60).
                #expect(closed != nil, "\(kind), \(name): not closed within 10 s")
            }
            // The gateway still answers, and a good request after a good one is not affected.
            #expect(try await HTTP.get("http://127.0.0.1:\(p)/health").status == 200)
        }
        // Hummingbird logs an upgrade torn down under it as an error; none is left for these.
        #expect(!g.stderr.contains(" error "), "\(g.stderr.split(separator: "\n").filter { $0.contains(" error ") }.prefix(3))")
    }

    /// RFC 9112 on both kinds of gateway: a request that does not ask to keep its connection
    /// (HTTP/1.0, or `Connection: close` among other options) is answered and closed (it was
    /// held for the 60 s idle timeout), an HTTP/1.0 one that asks for keep-alive is not; an
    /// HTTP/1.1 request without `Host`, or one with two, is 400 in its place among pipelined
    /// requests (both were 200); `/stat` of a name no stream can have is 400.
    @Test func connectionsAndHostsFollowHTTP1() async throws {
        let (g, port, n, nodePort) = try await Self.bothKinds()
        defer { g.stop(); n.stop() }
        func statuses(_ text: String) -> [String] {
            // A status line follows the body before it with no line end.
            text.matches(of: #/HTTP/1\.[01] (\d{3}) /#).map { String($0.1) }
        }
        for (kind, p) in [("with its tracker", port), ("without", nodePort)] {
            for request in ["GET /health HTTP/1.0\r\n\r\n", "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close, te\r\nTE: trailers\r\n\r\n"] {
                let (received, closed) = try await RawConnection.exchange(port: p, send: Array(request.utf8), within: .seconds(10))
                #expect(statuses(String(decoding: received, as: UTF8.self)) == ["200"], "\(kind), \(request.debugDescription)")
                #expect(closed != nil, "\(kind), \(request.debugDescription): not closed within 10 s")
            }
            let (kept, keptClosed) = try await RawConnection.exchange(
                port: p, send: Array("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".utf8), within: .seconds(2))
            let keptText = String(decoding: kept, as: UTF8.self)
            #expect(statuses(keptText) == ["200"] && keptClosed == nil, "\(kind): keep-alive asked for")
            #expect(keptText.hasPrefix("HTTP/1.0 200 ") && keptText.lowercased().contains("\r\nconnection: keep-alive\r\n"), "\(kind): \(keptText)")

            let pipelined = "GET /health HTTP/1.1\r\nHost:\r\n\r\n" + "GET /health HTTP/1.1\r\n\r\n"
                + "GET /health HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n" + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let (received, closed) = try await RawConnection.exchange(port: p, send: Array(pipelined.utf8), within: .seconds(10))
            let text = String(decoding: received, as: UTF8.self)
            #expect(statuses(text) == ["200", "400", "400", "200"] && closed != nil, "\(kind): \(text)")
            #expect(text.contains("needs a Host header") && text.contains("more than one Host header"), "\(kind): \(text)")

            // Transfer codings: HTTP/1.0 with one is answered and closed, whatever it asked
            // (6.1); one other than chunked alone is 501, and closed.
            let te10 = "POST /prepare HTTP/1.0\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\nGET /health HTTP/1.0\r\n\r\n"
            let (answered10, closed10) = try await RawConnection.exchange(port: p, send: Array(te10.utf8), within: .seconds(10))
            #expect(statuses(String(decoding: answered10, as: UTF8.self)).count == 1 && closed10 != nil, "\(kind): \(String(decoding: answered10, as: UTF8.self))")
            let gzip = "POST /prepare HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
            let (answeredGzip, closedGzip) = try await RawConnection.exchange(port: p, send: Array(gzip.utf8), within: .seconds(10))
            let gzipText = String(decoding: answeredGzip, as: UTF8.self)
            #expect(statuses(gzipText) == ["501"] && closedGzip != nil, "\(kind): \(gzipText)")

            // An upgrade to HTTP/2 (curl --http2) is ignored: answered as HTTP/1.1, where the
            // server with a tracker gave an empty reply, and closed (the decoder reads nothing
            // after an upgrade request: the client's next request hung).
            let h2c = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
                + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let (h2cAnswers, h2cClosed) = try await RawConnection.exchange(port: p, send: Array(h2c.utf8), within: .seconds(10))
            #expect(statuses(String(decoding: h2cAnswers, as: UTF8.self)) == ["200"] && h2cClosed != nil, "\(kind): \(String(decoding: h2cAnswers, as: UTF8.self))")

            let stat = try await HTTP.get("http://127.0.0.1:\(p)/stat?xresid=../../x")
            #expect(stat.status == 400 && String(decoding: stat.body, as: UTF8.self).contains("xresid"), "\(kind): \(stat.status)")
        }
    }

    /// An HTTP/1.0 client gets answers it can read (RFC 9112 6.1, 6.3): a body streamed
    /// without a length (a key whose origin sends none) ends with the connection, not in
    /// chunks, which HTTP/1.0 does not have (the head said HTTP/1.1 and the body came chunked).
    @Test func anHTTP10ClientGetsABodyWithoutALengthUntilTheConnectionCloses() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let key = "/obj/k.key?size=5000&nolength=1"
        let want = try await HTTP.get("http://127.0.0.1:\(originPort)\(key)").body
        for connection in ["keep-alive", "close"] {
            let request = "GET /hls.vod.p2p.com/127.0.0.1:\(originPort)\(key)&xkey=1 HTTP/1.0\r\nConnection: \(connection)\r\n\r\n"
            let (received, closed) = try await RawConnection.exchange(port: port, send: Array(request.utf8), within: .seconds(10))
            let raw = Data(received)
            let split = try #require(raw.range(of: Data("\r\n\r\n".utf8)), "\(String(decoding: raw, as: UTF8.self))")
            let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self).lowercased()
            #expect(head.hasPrefix("http/1.0 200 ") && !head.contains("transfer-encoding") && head.contains("\r\nconnection: close"), "\(head)")
            let body = Data(raw[split.upperBound...])
            let same = body == want
            #expect(same, "\(body.count) bytes of \(want.count)")
            #expect(closed != nil, "the body's end is the connection's")
        }
        // Cut short by the origin (a reset after 1 MB): the connection is reset, not closed,
        // so that the client cannot take the part for the whole.
        let cut = "GET /hls.vod.p2p.com/127.0.0.1:\(originPort)/obj/cut.key?size=3000000&nolength=1&resetafter=1000000&xkey=1 HTTP/1.0\r\n\r\n"
        let (part, reset) = try Self.readUntilEnd(port: port, send: cut)
        #expect(part < 3_000_000 && reset, "\(part) bytes, then \(reset ? "a reset" : "a clean close")")
        // An HTTP/1.1 client's comes chunked, on a connection kept.
        let (chunked, open) = try await RawConnection.exchange(
            port: port, send: Array("GET /hls.vod.p2p.com/127.0.0.1:\(originPort)\(key)&xkey=1 HTTP/1.1\r\nHost: x\r\n\r\n".utf8), within: .seconds(3))
        let text = String(decoding: chunked, as: UTF8.self).lowercased()
        #expect(text.hasPrefix("http/1.1 200 ") && text.contains("transfer-encoding: chunked") && open == nil, "\(text.prefix(300))")
        // A HEAD claims no length it does not know (it said 0), and the next request on the
        // connection is read right after it.
        let headThenGet = "HEAD /hls.vod.p2p.com/127.0.0.1:\(originPort)\(key)&xkey=1 HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let (both, _) = try await RawConnection.exchange(port: port, send: Array(headThenGet.utf8), within: .seconds(10))
        let answers = String(decoding: both, as: UTF8.self).lowercased()
        let heads = answers.components(separatedBy: "http/1.1 ")
        #expect(heads.count == 3 && heads[1].hasPrefix("200 ") && !heads[1].contains("\r\ncontent-length:") && heads[2].hasPrefix("200 ")
            && answers.hasSuffix("}"), "\(answers)")
    }

    /// Sends `send` on a new connection and reads until it ends: how many bytes came, and
    /// whether it ended with a reset rather than a close.
    static func readUntilEnd(port: Int, send text: String) throws -> (bytes: Int, reset: Bool) {
        let fd = try HTTP.connectLoopback(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = Array(text.utf8).withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var total = 0
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 {
                total += n
                continue
            }
            if n == 0 { return (total, false) }
            if errno == ECONNRESET { return (total, true) }
            throw TestFailure("recv failed: errno \(errno) after \(total) bytes")
        }
    }

    /// A request that says `Expect: 100-continue` is told to go on before it sends its body
    /// (curl waits a second for that on a body over 1 KiB): the 100 comes while the client
    /// holds the body back, then the answer.
    @Test func aClientThatExpects100ContinueIsToldToGoOn() async throws {
        let (g, port) = try await Live.gateway([])
        defer { g.stop() }
        let fd = try HTTP.connectLoopback(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func send(_ text: String) { _ = Array(text.utf8).withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) } }
        func receive() -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : ""
        }
        let body = "{\"urls\":[\"http://127.0.0.1:1/x.m3u8\"]}"
        send("POST /prepare HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
        let interim = receive()
        #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n", "\(interim.debugDescription)")
        send(body)
        let answer = receive()
        #expect(answer.hasPrefix("HTTP/1.1 ") && !answer.hasPrefix("HTTP/1.1 100"), "\(answer.prefix(200))")
    }
}
