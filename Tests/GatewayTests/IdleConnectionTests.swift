import Foundation
import Testing
import TestScratch

/// A client that opens a connection and sends nothing, half a request (or a WebSocket upgrade
/// request without its body), or nothing after its last answer holds a descriptor for a
/// minute at most (each held one for ever, and a
/// thousand of them took a gateway down at the usual limit on open files). A suite of its own:
/// it waits that minute, beside the others.
@Suite("Idle connections")
struct IdleConnectionTests {
    @Test func silentHalfSentAndFinishedConnectionsAreClosedAfterAMinute() async throws {
        let (origin, originPort) = try await Live.objectOrigin()
        defer { origin.stop() }
        // A gateway with its embedded tracker (WebSocket upgrades), and a node without one.
        let (g, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)"])
        defer { g.stop() }
        // (It cannot log in there, with a secret of its own: no matter here.)
        let secret = Scratch.path("idle-secret")
        try "idle-test-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let (n, nodePort) = try await Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--tracker", "ws://127.0.0.1:\(port)/swarm/v1/ws", "--app-secret-file", secret,
        ])
        defer { n.stop() }
        let started = ContinuousClock.now
        let finished = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        let halfSent = "GET /health HTTP/1.1\r\nHo"
        // An upgrade request whose body never comes.
        let upgradeWithoutItsBody = MalformedRequestTests.upgradeHead(extra: "Content-Length: 5\r\n")
        let cases: [(port: Int, send: String)] = [
            (port, finished), (port, ""), (port, halfSent), (port, upgradeWithoutItsBody),
            (nodePort, finished), (nodePort, ""), (nodePort, halfSent),
        ]
        let closed = try await withThrowingTaskGroup(of: (Int, Duration?).self) { group in
            for (i, c) in cases.enumerated() {
                group.addTask { (i, try await RawConnection.closedByPeer(port: c.port, send: c.send, within: .seconds(90))) }
            }
            var all: [Int: Duration?] = [:]
            for try await (i, d) in group { all[i] = d.map { $0 } }
            return all
        }
        for i in cases.indices {
            let after = closed[i] ?? nil
            #expect(after.map { $0 >= .seconds(55) && $0 < .seconds(80) } == true, "case \(i): \(String(describing: after))")
        }
        #expect(ContinuousClock.now - started < .seconds(100))
    }
}

/// A stop of a gateway that runs its tracker, or of a tracker, ends a connection that has
/// not sent its whole first request at once: nothing acted on the server's quiesce before a
/// first request on these (upgradable) connections, and one that had sent nothing (a browser's
/// preconnect, a balancer's TCP check) or half a request held the stop for a minute, past
/// systemd's 30 s.
@Suite("Idle connections at a stop")
struct IdleConnectionsAtAStopTests {
    @Test(arguments: ["", "GET /health HTTP/1.1\r\nHo", "GET /hea"]) func aConnectionWithoutItsFirstRequestDoesNotHoldAStop(sent: String) async throws {
        let (g, port) = try await Live.gateway([])
        defer { g.stop() }
        let fd = try HTTP.connectLoopback(port: port)
        defer { close(fd) }
        if !sent.isEmpty { _ = Array(sent.utf8).withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) } }
        // Once the server has taken the connection: it answers another one's request.
        #expect(try await HTTP.get("http://127.0.0.1:\(port)/health").status == 200)
        let (status, took) = await g.terminate(within: .seconds(90))
        #expect(status == 0, "exit status \(String(describing: status)) after \(took)")
        #expect(took < .seconds(5), "the stop took \(took)")
    }
}

/// A TCP connection on loopback, read without holding a thread.
enum RawConnection {
    /// Connects to `port`, sends `send`, reads (and drops) what comes until the peer closes:
    /// how long after the connection that was, or nil if it was still open `within`.
    static func closedByPeer(port: Int, send: String, within: Duration) async throws -> Duration? {
        try await exchange(port: port, send: Array(send.utf8), within: within).closedAfter
    }

    /// Connects to `port`, sends `send`, and reads until the peer closes: what came, and how
    /// long after the connection it closed (nil if it was still open `within`).
    static func exchange(port: Int, send: [UInt8], within: Duration) async throws -> (received: [UInt8], closedAfter: Duration?) {
        let fd = try HTTP.connectLoopback(port: port)
        defer { close(fd) }
        let opened = ContinuousClock.now
        if !send.isEmpty { _ = send.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) } }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var received: [UInt8] = []
        // Read until the peer closes or `within` has passed, and once more then: a test
        // process whose threads were busy elsewhere may come back only after the limit.
        var last = false
        while !last {
            last = ContinuousClock.now - opened >= within
            while true {
                let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n > 0 {
                    received += buffer[..<n]
                    continue
                }
                if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return (received, ContinuousClock.now - opened) }  // closed, or reset
                break
            }
            if !last { try await Task.sleep(for: .milliseconds(20)) }
        }
        return (received, nil)
    }
}
