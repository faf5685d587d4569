import Foundation
import Synchronization

/// What the store comes to hold or lose, told to the tracker in batches: the changes of a few
/// milliseconds go in one `have` or `lost` message each, in the order they happened, so that a
/// node whose players fetch many segments stays far below the tracker's message rate.
final class Announcements: Sendable {
    struct State {
        /// Runs of changes of one kind, oldest first.
        var pending: [(held: Bool, ids: [String])] = []
        var scheduled = false
    }

    static let window: Duration = .milliseconds(20)
    let link: TrackerLink
    private let state = Mutex(State())

    init(link: TrackerLink) { self.link = link }

    func add(held: Bool, _ ids: [String]) {
        let schedule = state.withLock { s -> Bool in
            if let last = s.pending.last, last.held == held {
                s.pending[s.pending.count - 1].ids += ids
            } else {
                s.pending.append((held, ids))
            }
            defer { s.scheduled = true }
            return !s.scheduled
        }
        guard schedule else { return }
        // One sender at a time: changes that come while a batch is being sent go in the next
        // batch of the same task, never in a second task that could overtake the first.
        Task {
            while true {
                try? await Task.sleep(for: Self.window)
                let runs = self.state.withLock { s in
                    if s.pending.isEmpty { s.scheduled = false }
                    defer { s.pending = [] }
                    return s.pending
                }
                guard !runs.isEmpty else { return }
                for run in runs {
                    if run.held { await self.link.announce(run.ids) } else { await self.link.withdraw(run.ids) }
                }
            }
        }
    }
}
