@testable import Gateway
import NIOCore
import Testing

/// The count of signalling connections waiting to log in: 16 at most from one address (an
/// IPv6 one by its /64), 512 in all.
@Suite("Login gate")
struct LoginGateTests {
    @Test func sixteenWaitFromOneAddressAndOthersStillEnter() {
        let gate = LoginGate()
        #expect((0..<TrackerEndpoint.maxAwaitingLoginPerSource).allSatisfy { _ in gate.enter(from: "10.0.0.1") })
        #expect(!gate.enter(from: "10.0.0.1"), "the 17th from one address is refused")
        #expect(!gate.enter(from: "10.0.0.1"), "and a refusal takes no room")
        #expect(gate.enter(from: "10.0.0.2"), "another address still enters")
        gate.leave(from: "10.0.0.1")
        #expect(gate.enter(from: "10.0.0.1"))
        #expect(!gate.enter(from: "10.0.0.1"))
    }

    @Test func atMostFiveHundredTwelveWaitInAll() {
        let gate = LoginGate()
        let sources = TrackerEndpoint.maxAwaitingLogin / TrackerEndpoint.maxAwaitingLoginPerSource
        for s in 0..<sources {
            #expect((0..<TrackerEndpoint.maxAwaitingLoginPerSource).allSatisfy { _ in gate.enter(from: "10.1.0.\(s)") })
        }
        #expect(!gate.enter(from: "10.2.0.1"), "past the bound in all, a new address is refused too")
        gate.leave(from: "10.1.0.0")
        #expect(gate.enter(from: "10.2.0.1"))
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
