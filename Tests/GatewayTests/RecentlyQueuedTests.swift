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
        let memo = RecentlyQueued(interval: .seconds(1), capacity: 4)
        for name in ["a", "b", "c"] { #expect(memo.claim(name)) }
        try await Task.sleep(for: .milliseconds(1100))
        for name in ["d", "e", "f", "g"] { #expect(memo.claim(name)) }
        // At "e" the memo was full: a, b and c had expired and went, so d, e, f and g fit,
        // and none of them was forgotten for room.
        #expect(!memo.claim("d") && !memo.claim("e") && !memo.claim("f") && !memo.claim("g"))
    }
}
