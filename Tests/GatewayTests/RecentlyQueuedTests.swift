import Foundation
import Testing

@testable import Gateway

/// The memo that queues a playlist's objects once a minute, a live list's tail once per
/// change, and each live object once: bounded, and forgetting the oldest claims first.
@Suite("Recently queued")
struct RecentlyQueuedTests {
    @Test func aNameIsClaimedOncePerInterval() {
        let memo = RecentlyQueued(interval: .seconds(600))
        #expect(memo.claim("a"))
        #expect(!memo.claim("a"))
        #expect(memo.claim("b"))
    }

    /// A list whose read-ahead plan was refused is released, and claimed by its next reader.
    @Test func aReleasedNameIsClaimedAgain() {
        let memo = RecentlyQueued(interval: .seconds(600))
        #expect(memo.claim("a"))
        memo.release("a")
        #expect(memo.claim("a"))
        #expect(!memo.claim("a"))
    }

    /// Past its capacity the memo forgets the older half of its claims, not all of them: the
    /// newest names stay claimed, so their lists are not queued again.
    @Test func pastItsCapacityTheOlderClaimsGoFirst() {
        let memo = RecentlyQueued(interval: .seconds(600), capacity: 4)
        for name in ["a", "b", "c", "d"] { #expect(memo.claim(name)) }
        #expect(memo.claim("e"), "a fifth name")
        #expect(!memo.claim("c") && !memo.claim("d") && !memo.claim("e"), "the newer half and the new name are still claimed")
        #expect(memo.claim("a"), "the oldest was forgotten")
    }

    /// Claims whose interval has passed are what the memo forgets first.
    @Test func expiredClaimsAreForgottenBeforeLiveOnes() async throws {
        let memo = RecentlyQueued(interval: .seconds(3), capacity: 8)
        for name in ["x", "y"] { #expect(memo.claim(name)) }
        try await Task.sleep(for: .milliseconds(3200))
        let live = ["d", "e", "f", "g", "h", "i", "j"]
        for name in live { #expect(memo.claim(name)) }
        // At "j" the memo was full: x and y had expired and went, which left room enough, so
        // none of the six live claims was forgotten (keeping the newer half would drop d and e).
        #expect(live.allSatisfy { !memo.claim($0) })
    }
}
