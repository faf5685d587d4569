@testable import Swarm
import Testing

/// The node's marks of slow and dropped peers, and of late wants: each holds for its own
/// time, and past the bound the expired ones are dropped, never a live one.
@Suite("Expiring marks")
struct ExpiringMarksTests {
    @Test func aMarkHoldsForItsTimeAndPastTheBoundOnlyExpiredOnesGo() {
        var marks = SwarmNode.ExpiringMarks()
        marks.bound = 4
        let start = ContinuousClock.now
        marks.mark("slow-1", for: .seconds(1), now: start)
        marks.mark("slow-2", for: .seconds(1), now: start)
        marks.mark("dropped", for: .seconds(3600), now: start)
        #expect(marks.contains("slow-1", now: start + .milliseconds(999)))
        #expect(!marks.contains("slow-1", now: start + .seconds(1)))
        #expect(marks.contains("dropped", now: start + .seconds(3599)))
        #expect(!marks.contains("never-marked", now: start))
        let later = start + .seconds(2)
        marks.mark("new-1", for: .seconds(10), now: later)
        #expect(marks.count == 4, "up to the bound, expired marks are kept")
        marks.mark("new-2", for: .seconds(10), now: later)
        #expect(marks.count == 3, "past it, the two expired ones went")
        for key in ["dropped", "new-1", "new-2"] { #expect(marks.contains(key, now: later), "\(key) is live") }
        marks.mark("new-1", for: .seconds(1), now: later)
        #expect(!marks.contains("new-1", now: later + .seconds(1)), "marked again: the new time holds")
        marks.clear("dropped")
        #expect(!marks.contains("dropped", now: later))
    }
}
