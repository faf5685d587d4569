import Testing

@testable import Gateway

/// How long a live playlist's answer may wait for its new segments (`--live-hold`).
@Suite("Live hold")
struct LiveHoldTests {
    @Test func autoIsAQuarterOfASegmentWithinBounds() {
        #expect(GatewayResponder.liveHold(segmentSeconds: 2) == .milliseconds(500))
        #expect(GatewayResponder.liveHold(segmentSeconds: 8) == .seconds(1))
        #expect(GatewayResponder.liveHold(segmentSeconds: 0.5) == .milliseconds(250))
        #expect(GatewayResponder.liveHold(segmentSeconds: nil) == .seconds(1))
        #expect(GatewayResponder.liveHold(segmentSeconds: .nan) == .seconds(1))
    }

    /// A configured hold is that long at most, and never more than half a segment, however
    /// long it was set.
    @Test func aConfiguredHoldIsNeverMoreThanHalfASegment() {
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: 2) == .seconds(1))
        #expect(GatewayResponder.liveHold(.milliseconds(300), segmentSeconds: 2) == .milliseconds(300))
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: nil) == .seconds(5))
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: .infinity) == .seconds(5))
        // Any finite duration a list gives, however absurd (it trapped converting to an Int64).
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: 1e17) == .seconds(5))
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: .greatestFiniteMagnitude) == .seconds(5))
        // A segment of no time: half of it is no hold (it got the whole configured hold).
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: 0) == .zero)
        #expect(GatewayResponder.liveHold(.seconds(5), segmentSeconds: -1) == .zero)
    }
}
