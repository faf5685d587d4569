@testable import Gateway
import NIOCore
import Synchronization
import Testing

/// The count of signalling connections waiting to log in: 16 at most from one address (an
/// IPv6 one by its /64), 512 in all, the longest waiting let go for a new one past that.
@Suite("Login gate")
struct LoginGateTests {
    /// Records which connections were let go for newer ones.
    final class Evictions: Sendable {
        let names = Mutex<[String]>([])
        func evict(_ name: String) -> @Sendable () -> Void { { self.names.withLock { $0.append(name) } } }
    }

    @Test func sixteenWaitFromOneAddressAndOthersStillEnter() throws {
        let gate = LoginGate(), evictions = Evictions()
        let tickets = (0..<TrackerEndpoint.maxAwaitingLoginPerSource).compactMap { gate.enter(from: "10.0.0.1", evict: evictions.evict("a\($0)")) }
        #expect(tickets.count == TrackerEndpoint.maxAwaitingLoginPerSource)
        #expect(gate.enter(from: "10.0.0.1", evict: evictions.evict("17th")) == nil, "the 17th from one address is refused")
        #expect(gate.waiting == TrackerEndpoint.maxAwaitingLoginPerSource, "and a refusal takes no room")
        #expect(gate.enter(from: "10.0.0.2", evict: evictions.evict("b")) != nil, "another address still enters")
        gate.leave(try #require(tickets.first))
        #expect(gate.enter(from: "10.0.0.1", evict: evictions.evict("again")) != nil)
        #expect(gate.enter(from: "10.0.0.1", evict: evictions.evict("again2")) == nil)
        #expect(evictions.names.withLock { $0 }.isEmpty)
    }

    /// Past 512 waiting in all, a new connection from another address enters and the one that
    /// waited longest is let go: every place held by a flood from 33 addresses kept each node
    /// out (the next was refused), with no secret.
    @Test func pastFiveHundredTwelveTheLongestWaitingMakesRoom() {
        let gate = LoginGate(), evictions = Evictions()
        let sources = TrackerEndpoint.maxAwaitingLogin / TrackerEndpoint.maxAwaitingLoginPerSource
        var tickets: [UInt64] = []
        for s in 0..<sources {
            for k in 0..<TrackerEndpoint.maxAwaitingLoginPerSource {
                if let t = gate.enter(from: "10.1.0.\(s)", evict: evictions.evict("\(s).\(k)")) { tickets.append(t) }
            }
        }
        #expect(tickets.count == TrackerEndpoint.maxAwaitingLogin)
        #expect(gate.enter(from: "10.2.0.1", evict: evictions.evict("node")) != nil, "a new address enters")
        #expect(evictions.names.withLock { $0 } == ["0.0"], "the first to come was let go")
        #expect(gate.waiting == TrackerEndpoint.maxAwaitingLogin)
        // Its place is free: its own leave later (its connection ending) changes nothing, and
        // its address may bring another.
        gate.leave(tickets[0])
        #expect(gate.waiting == TrackerEndpoint.maxAwaitingLogin)
        #expect(gate.enter(from: "10.1.0.0", evict: evictions.evict("0.again")) != nil)
        #expect(evictions.names.withLock { $0 } == ["0.0", "0.1"])
        // One that logged in leaves: the next takes its place, and nobody is let go.
        gate.leave(tickets[5])
        #expect(gate.enter(from: "10.3.0.1", evict: evictions.evict("other")) != nil)
        #expect(evictions.names.withLock { $0 } == ["0.0", "0.1"])
    }

    /// An IPv6 client picks from a whole /64: its waits count against the /64.
    @Test func anIPv6AddressCountsByItsSlash64() throws {
        let a = LoginGate.source(of: try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 1))
        let b = LoginGate.source(of: try SocketAddress(ipAddress: "2001:db8:1:2:ffff::9", port: 2))
        let c = LoginGate.source(of: try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1))
        #expect(a == b && a != c)
        #expect(LoginGate.source(of: try SocketAddress(ipAddress: "192.0.2.7", port: 1)) == "192.0.2.7")
        // IPv4 clients of a dual-stack listener: each by its own address, as on an IPv4 one.
        #expect(LoginGate.source(of: try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 1)) == "192.0.2.7")
        #expect(LoginGate.source(of: try SocketAddress(ipAddress: "::ffff:192.0.2.8", port: 1)) == "192.0.2.8")
    }
}
