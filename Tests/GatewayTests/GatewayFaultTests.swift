import Foundation
import Testing

/// What a player sees when the origin misbehaves (tests/python/fault_origin.py), on the path
/// that streams from the origin: keys (`xkey=1`), which are never cached. The cache's own
/// faults (resets and changes during preparation) are in PieceCacheTests.
@Suite("Gateway: origin faults", .serialized)
final class GatewayFaultTests {
    let origin: LiveProcess
    let originPort: Int
    let gateway: LiveProcess
    let port: Int

    init() async throws {
        (origin, originPort) = try await Live.faultOrigin()
        (gateway, port) = try await Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--origin-idle-timeout", "1.5", "--max-object-size", "1MiB",
        ])
    }

    deinit {
        gateway.stop()
        origin.stop()
    }

    func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)\(path)\(path.contains("?") ? "&" : "?")xkey=1"
    }

    func count(_ key: String) async throws -> Int {
        let r = try await HTTP.get("http://127.0.0.1:\(originPort)/count/\(key)")
        return Int(r.text.firstMatch(of: #/"requests": ?(\d+)/#).map { String($0.1) } ?? "-1") ?? -1
    }

    @Test func fiveHundredsThenSuccessAreRetried() async throws {
        let r = try await HTTP.get(url("/flaky/gw-flaky/2"))
        #expect(r.status == 200)
        #expect(r.text == "ok")
        #expect(try await count("gw-flaky") == 3)
    }

    @Test func persistentFiveHundredsBecome502() async throws {
        let r = try await HTTP.get(url("/flaky/gw-down/100"))
        #expect(r.status == 502)
        #expect(r.text.contains("\"code\":502"))
    }

    /// An origin's client error about the object is the player's answer; one the gateway
    /// cannot give as the origin did is not: a 401 (which must say how to send credentials,
    /// and the gateway forwards none) is 403, a 405 (which must list the origin's methods) and
    /// a 407 (the origin's own proxy) are 502. Streamed (a key) and through the cache alike.
    @Test func originStatusesThatCannotBePassedOnAreMapped() async throws {
        for (code, expected) in [(401, 403), (405, 502), (407, 502), (404, 404), (410, 410), (403, 403), (408, 502), (414, 502)] {
            for (kind, target) in [
                ("streamed", url("/status/\(code)/k.key")),
                ("cached", "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/status/\(code)/s.ts"),
            ] {
                let r = try await HTTP.get(target)
                #expect(r.status == expected && r.text.contains("origin answered \(code)"), "\(kind) \(code): \(r.status) \(r.text)")
                #expect(r.headers["www-authenticate"] == nil && r.headers["allow"] == nil, "\(kind) \(code): \(r.headers)")
            }
        }
    }

    @Test func aResetMidBodyAbortsTheResponseNeverAShort200() async throws {
        do {
            let r = try await HTTP.get(url("/reset"))
            // If the client library hands anything back, it must not be a clean, short 200.
            #expect(!(r.status == 200 && r.body.count < 100_000), "a short 200 of \(r.body.count) bytes")
        } catch {
            // An aborted transfer: what a player must see.
        }
    }

    @Test func aStalledOriginIs504WithinTheTimeout() async throws {
        let start = ContinuousClock.now
        let r = try await HTTP.get(url("/stall?seconds=30"))
        #expect(r.status == 504)
        #expect(ContinuousClock.now - start < .seconds(6))
    }

    /// A media object no playlist listed, whose origin sends nothing: its first player gets the
    /// timeout, a 504, as the ones after it do (it got a 302 to the silent origin: its wait for
    /// the preparation ran out at the moment the preparation's own timeout did).
    @Test func aStalledOriginOfAnUnlistedObjectIs504ForItsFirstPlayerToo() async throws {
        let start = ContinuousClock.now
        let r = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/stall/first.ts?seconds=30&head=0")
        #expect(r.status == 504, "\(r.status) \(r.text)")
        #expect(ContinuousClock.now - start < .seconds(6))
    }

    /// A playlist whose origin sends a byte within each idle timeout is 504 after three of
    /// them (4.5 s here), at a playlist's path (one fetch its players share) and at any other
    /// (told by its type): it held the request, and every player that joined it, for as long
    /// as the origin liked (a minute here).
    @Test func aPlaylistTricklingInIs504AfterThreeIdleTimeouts() async throws {
        for path in ["/slow/200/list.m3u8?playlist=1&delay=0.3", "/slow/200?playlist=1&delay=0.3"] {
            let start = ContinuousClock.now
            let r = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)\(path)", timeout: 20)
            #expect(r.status == 504 && r.text.contains("whole manifest"), "\(path): \(r.status) \(r.text)")
            #expect(ContinuousClock.now - start < .seconds(9), "\(path)")
        }
    }

    @Test func aBodyOverTheCapIsRefused() async throws {
        let r = try await HTTP.get(url("/bytes/2000000"))
        #expect(r.status == 502)
        #expect(r.text.contains("\"code\":502"))
        let ok = try await HTTP.get(url("/bytes/500000"))
        #expect(ok.status == 200)
        #expect(ok.body.count == 500_000)
    }

    @Test func redirectsAreFollowedAndTheEffectiveURLIsTheBase() async throws {
        let target = "http://127.0.0.1:\(originPort)/hops/0"
        let r = try await HTTP.get(url("/redirect?to=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&code=302"))
        #expect(r.status == 200)
        #expect(r.text == "done")
    }

    /// Sends `path` to the gateway `g` on port `p` on a new connection (`receiveBuffer`: its
    /// SO_RCVBUF), stops the gateway (SIGTERM) once the response's head has arrived, and reads
    /// on, `pause` after each read, until the gateway closes the connection: the head's
    /// status line, the body's length, and whether it was closed cleanly (not reset). The
    /// stop comes once the head has arrived: on a loaded host a fixed sleep could stop the
    /// gateway before it took the connection, which a stop then resets.
    static func readThroughAStop(_ g: LiveProcess, port p: Int, _ path: String, receiveBuffer: Int32? = nil, pause: Duration = .zero) async throws
        -> (status: String, body: Int, closedCleanly: Bool)
    {
        let fd = try HTTP.connectLoopback(port: p, receiveBuffer: receiveBuffer)
        defer { close(fd) }
        let request = "GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        _ = Array(request.utf8).withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
        var received = 0, headLength: Int?, closedCleanly = false
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 {
                received += n
                if headLength == nil {
                    head += buffer[..<n]
                    headLength = head.firstRange(of: Array("\r\n\r\n".utf8)).map { $0.upperBound }
                    if headLength != nil { kill(g.process.processIdentifier, SIGTERM) }
                }
                if pause > .zero { try await Task.sleep(for: pause) }
            } else if n == 0 {
                closedCleanly = true
                break
            } else if errno != EAGAIN && errno != EWOULDBLOCK {
                break  // reset
            } else {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        return (String(decoding: head.prefix(12), as: UTF8.self), received - (headLength ?? received), closedCleanly)
    }

    @Test func gracefulShutdownFinishesTheResponseInFlight() async throws {
        let (g, p) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        let r = try await Self.readThroughAStop(g, port: p, "/hls.vod.p2p.com/127.0.0.1:\(originPort)/slow/40?delay=0.05&xkey=1")
        #expect(r.status == "HTTP/1.1 200", "\(r)")
        #expect(r.closedCleanly && r.body == 40, "the response in flight completes: \(r.body) bytes")
        #expect(await g.waitForExit(timeout: .seconds(15)) == 0)
    }

    /// A large object from the cache, read slowly by its player when the stop comes, is sent
    /// whole before the gateway exits: the server closed the connection once the response's
    /// end was written, dropping the pieces its channel still held (20 MB here, of which the
    /// player got 17).
    @Test func aStopLetsALargeResponseToASlowReaderEnd() async throws {
        let (origin, objectPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, p) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(objectPort)"])
        defer { g.stop() }
        let size = 20_000_000
        let path = "/xdfs.p2p.com/127.0.0.1:\(objectPort)/obj/stopping.mp4?size=\(size)"
        _ = try await Live.whenReady("http://127.0.0.1:\(p)\(path)", headers: ["Range": "bytes=0-0"])
        // About 6 MB/s at most.
        let r = try await Self.readThroughAStop(g, port: p, path, receiveBuffer: 65536, pause: .milliseconds(10))
        #expect(r.status == "HTTP/1.1 200", "\(r)")
        #expect(r.closedCleanly && r.body == size, "the response in flight completes: \(r.body) of \(size) bytes")
        #expect(await g.waitForExit(timeout: .seconds(30)) == 0)
    }

    /// A player's connection to `port` asking for `path` (a large object, once it is ready),
    /// of whose response it reads the head (checked: 200) and nothing more.
    static func unreadResponse(port: Int, _ path: String) async throws -> Int32 {
        _ = try await Live.whenReady("http://127.0.0.1:\(port)\(path)", headers: ["Range": "bytes=0-0"])
        let fd = try HTTP.connectLoopback(port: port, receiveBuffer: 4096)
        let request = "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n"
        _ = Array(request.utf8).withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
        var head = [UInt8](repeating: 0, count: 12)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #expect(recv(fd, &head, head.count, Int32(MSG_WAITALL)) == 12 && String(decoding: head, as: UTF8.self) == "HTTP/1.1 200")
        return fd
    }

    /// A player that stopped reading (a frozen tab, a hung set-top box) does not hold a stop
    /// past the 20 s it gives responses in flight: its connection is closed then, and the
    /// gateway exits. The server waited for that connection for good, and only a SIGKILL
    /// ended the gateway.
    @Test func aPlayerThatStopsReadingDoesNotHoldAStopPastItsLimit() async throws {
        let (origin, objectPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let (g, p) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(objectPort)"])
        defer { g.stop() }
        let fd = try await Self.unreadResponse(port: p, "/xdfs.p2p.com/127.0.0.1:\(objectPort)/obj/unread.mp4?size=20000000")
        defer { close(fd) }
        let (status, took) = await g.terminate(within: .seconds(40))
        #expect(status == 0, "exit status \(String(describing: status)) after \(took)")
        #expect(took >= .seconds(19) && took < .seconds(26), "the stop took \(took)")
        #expect(g.stderr.contains("their connections are closed"))
    }

    /// A player's response that still waits on its origin when those 20 s are up (a head that
    /// does not come, or a playlist trickling in, with `--origin-idle-timeout 120`) does not
    /// hold the stop past them: the wait is cut. The stop waited for the origin's timeout
    /// (120 s for the head; a trickling playlist or a held blocking reload did the same under
    /// the defaults, 30-60 s). With a second signal, not even the 20 s: a stop at once cuts
    /// the wait (the drain spun on its cancelled sleep until its limit, and the trickling
    /// playlist's shared fetch ignored the cancellation).
    @Test(arguments: ["stall/held.ts?seconds=300&head=0", "slow/300?delay=0.5&playlist=1"], [false, true])
    func aResponseWaitingOnItsOriginDoesNotHoldAStopPastItsLimit(path: String, secondSignal: Bool) async throws {
        let (fault, faultPort) = try await Live.faultOrigin()
        defer { fault.stop() }
        let (g, p) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(faultPort)", "--origin-idle-timeout", "120"])
        defer { g.stop() }
        let url = "http://127.0.0.1:\(p)/hls.vod.p2p.com/127.0.0.1:\(faultPort)/\(path)&key=held"
        let waiting = Task { try? await HTTP.get(url, timeout: 200) }
        defer { waiting.cancel() }
        // Until the origin holds the request.
        let asked = ContinuousClock.now
        while ContinuousClock.now - asked < .seconds(20) {
            let inflight = try await HTTP.get("http://127.0.0.1:\(faultPort)/count/held").text.firstMatch(of: #/"inflight": (\d+)/#)
            if let inflight, Int(inflight.1) ?? 0 > 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        if secondSignal {
            kill(g.process.processIdentifier, SIGTERM)
            _ = try await g.waitForStderr(#/(letting the responses in flight end)/#)
            try await Task.sleep(for: .milliseconds(500))
            let (status, took) = await g.terminate(within: .seconds(60))
            #expect(status == 0, "exit status \(String(describing: status)) after \(took)")
            #expect(took < .seconds(12), "the stop took \(took) after the second signal (the drain alone: 20 s)")
            return
        }
        let (status, took) = await g.terminate(within: .seconds(150))
        #expect(status == 0, "exit status \(String(describing: status)) after \(took)")
        #expect(took >= .seconds(19) && took < .seconds(26), "the stop took \(took)")
    }

    /// A second SIGTERM, or a second Ctrl-C, ends a stop at once: a player that stopped
    /// reading held it its 20 s, and the second signal did nothing. The cache is left whole:
    /// the gateway started again on it serves the object from it, without asking the origin.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSecondSignalEndsAStopAtOnce(second: Int32) async throws {
        let (origin, objectPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        let cache = Live.cacheFolder()
        let (g, p) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(objectPort)"], cache: cache)
        defer { g.stop() }
        let path = "/xdfs.p2p.com/127.0.0.1:\(objectPort)/obj/second-\(second).mp4?size=20000000"
        let fd = try await Self.unreadResponse(port: p, path)
        defer { close(fd) }
        kill(g.process.processIdentifier, SIGTERM)
        _ = try await g.waitForStderr(#/(letting the responses in flight end)/#)
        try await Task.sleep(for: .milliseconds(500))
        #expect(!g.process.hasEnded, "the player's response holds the stop")
        let (status, took) = await g.terminate(second, within: .seconds(15))
        #expect(status == 0, "exit status \(String(describing: status)) after \(took)")
        #expect(took < .seconds(12), "the stop took \(took) after the second signal (the drain alone: 20 s)")
        #expect(g.stderr.contains("stopping at once: a second signal"))
        let asked = try await Live.originRequests(objectPort)
        let (again, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(objectPort)"], cache: cache)
        defer { again.stop() }
        let r = try await HTTP.get("http://127.0.0.1:\(port)\(path)", headers: ["Range": "bytes=1000-1999"])
        #expect(r.status == 206 && r.body.count == 1000)
        #expect(try await Live.originRequests(objectPort) == asked, "served from the cache it left, not asked of the origin")
    }

    /// A signal that comes while the gateway opens its cache (its SQLite index, the registry)
    /// stops it cleanly once it runs: exit status 0, and its cache opens again. Signals were
    /// trapped only once the services ran, and such a signal ended the process by itself
    /// (status 15), mid-way through its set-up.
    @Test func aSignalDuringTheSetUpStopsTheGatewayCleanly() async throws {
        for round in 0..<5 {
            let cache = Live.cacheFolder()
            let g = try LiveProcess(Live.binary, ["serve", "--listen", "127.0.0.1:0", "--cache-dir", cache])
            defer { g.stop() }
            // As soon as the index file appears.
            let index = cache + "/index.sqlite", start = ContinuousClock.now
            while !FileManager.default.fileExists(atPath: index) && !g.process.hasEnded {
                try #require(ContinuousClock.now - start < .seconds(20), "round \(round): no index after 20 s")
                try await Task.sleep(for: .microseconds(200))
            }
            kill(g.process.processIdentifier, SIGTERM)
            let status = await g.waitForExit(timeout: .seconds(30))
            #expect(status == 0, "round \(round): exit status \(String(describing: status)); stderr:\n\(g.stderr)")
            let (again, port) = try await Live.gateway([], cache: cache)
            defer { again.stop() }
            #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
        }
    }
}

/// SPEC section 5 without an allow list: only public addresses, checked on the address
/// connected to, redirects included. The origin's own counter shows no request reached it.
@Suite("Gateway: SSRF", .serialized)
final class GatewaySSRFTests {
    let origin: LiveProcess
    let originPort: Int
    let gateway: LiveProcess
    let port: Int

    init() async throws {
        (origin, originPort) = try await Live.origin(serving: Live.packageRoot.appendingPathComponent("samples"), token: "t")
        (gateway, port) = try await Live.gateway([])
    }

    deinit {
        gateway.stop()
        origin.stop()
    }

    @Test func loopbackInEverySpellingIsRefusedAndNeverContacted() async throws {
        let spellings = ["127.0.0.1", "localhost", "0x7f000001", "2130706433", "0177.0.0.1", "127.1", "%5B::1%5D", "%5B::ffff:127.0.0.1%5D"]
        for host in spellings {
            let r = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host):\(originPort)/hls-ts/low-000.ts?token=t")
            #expect(r.status == 403, "\(host): \(r.text)")
            #expect(r.text.contains("\"code\":403"))
        }
        #expect(try await Live.originRequests(originPort) == 0)
    }

    @Test(arguments: ["169.254.169.254", "10.0.0.1", "192.168.1.1", "100.64.0.1", "%5Bfe80::1%5D"])
    func privateAndLinkLocalAreRefusedBeforeConnecting(host: String) async throws {
        let r = try await HTTP.get("http://127.0.0.1:\(port)/hls.vod.p2p.com/\(host)/latest/meta-data")
        #expect(r.status == 403, "\(host): \(r.text)")
    }
}

/// An allowed origin that redirects to a private address: refused, nothing contacted.
@Suite("Gateway: redirects to private addresses", .serialized)
final class GatewayRedirectSSRFTests {
    @Test func anAllowedOriginRedirectingToLoopbackIsRefused() async throws {
        let (fault, faultPort) = try await Live.faultOrigin()
        let (victim, victimPort) = try await Live.origin(serving: Live.packageRoot.appendingPathComponent("samples"), token: "t")
        let (g, p) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(faultPort)"])
        defer {
            g.stop()
            fault.stop()
            victim.stop()
        }
        for target in ["http://127.0.0.1:\(victimPort)/hls-ts/low-000.ts?token=t", "http://localhost:\(victimPort)/x", "http://169.254.169.254/latest"] {
            let to = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let r = try await HTTP.get("http://127.0.0.1:\(p)/xdfs.p2p.com/127.0.0.1:\(faultPort)/redirect?to=\(to)&code=302")
            #expect(r.status == 403, "\(target): \(r.text)")
        }
        #expect(try await Live.originRequests(victimPort) == 0)
    }
}
