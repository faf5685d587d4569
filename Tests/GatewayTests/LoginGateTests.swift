@testable import Gateway
import Testing

/// The count of signalling connections waiting to log in, which bounds them at 64.
@Suite("Login gate")
struct LoginGateTests {
    @Test func atMostSixtyFourWaitAndOneLeavingMakesRoom() {
        let gate = LoginGate()
        #expect((0..<TrackerEndpoint.maxAwaitingLogin).allSatisfy { _ in gate.enter() })
        #expect(!gate.enter(), "the 65th is refused")
        #expect(!gate.enter(), "and a refusal takes no room")
        gate.leave()
        #expect(gate.enter())
        #expect(!gate.enter())
    }
}
