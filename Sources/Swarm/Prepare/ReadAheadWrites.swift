import Dispatch
import PieceStore
import Synchronization

/// The read-ahead window's changes on their way to storage (`ReadAheadWindow.Keeper`), so that
/// a restart goes on reading ahead. Written on a queue of their own (a long VOD's list is a
/// few MB of JSON), so neither the window's lock nor Swift's thread pool waits on SQLite; and
/// coalesced: each playlist's latest state is written, once, when the queue comes to it.
/// Playlists planned and dropped faster than they can be written (streams opening a 24-hour
/// MPD one after another) then cost neither a write nor memory beyond what the window holds.
final class ReadAheadWrites: Sendable {
    private struct Pending {
        /// Playlist name → its objects (nil: dropped), and the order of its latest change.
        var changes: [String: (order: UInt64, refs: [ObjectRef]?)] = [:]
        var next: UInt64 = 0
        /// Whether a write is queued that will take the changes pending.
        var queued = false
    }

    private let pending = Mutex(Pending())
    private let storage: any RegistryStorage
    private let queue: DispatchQueue
    private let failures: RepeatedFailureLog

    /// How long after a failed write the changes are written again (with any newer ones).
    let retryAfter: Duration

    init(
        storage: any RegistryStorage, queue: DispatchQueue = DispatchQueue(label: "swarmgate.read-ahead-playlists"),
        retryAfter: Duration = .seconds(5), failures: RepeatedFailureLog
    ) {
        self.storage = storage
        self.queue = queue
        self.retryAfter = retryAfter
        self.failures = failures
    }

    /// The window planned a playlist (or none) and dropped others; called under the window's
    /// lock, so it only records the change.
    func record(_ planned: (name: String, refs: [ObjectRef])?, dropped: [String]) {
        let queue = pending.withLock { p -> Bool in
            for name in dropped {
                p.next += 1
                p.changes[name] = (p.next, nil)
            }
            if let planned {
                p.next += 1
                p.changes[planned.name] = (p.next, planned.refs)
            }
            guard !p.queued && !p.changes.isEmpty else { return false }
            p.queued = true
            return true
        }
        if queue { self.queue.async { self.write() } }
    }

    /// Writes the changes pending. Those that fail to be written are pending again (unless a
    /// newer change replaced them meanwhile), and written again after `retryAfter`, with the
    /// changes made since.
    private func write() {
        let taken = pending.withLock { p in
            defer {
                p.changes = [:]
                p.queued = false
            }
            return p.changes.sorted { $0.value.order < $1.value.order }
        }
        do {
            try storage.savePlaylists(taken.map { (name: $0.key, refs: $0.value.refs) })
            failures.succeeded()
        } catch {
            failures.failed(["error": "\(error)"])
            let again = pending.withLock { p -> Bool in
                for (name, change) in taken where p.changes[name] == nil { p.changes[name] = change }
                guard !p.queued else { return false }
                p.queued = true
                return true
            }
            if again {
                queue.asyncAfter(deadline: .now() + retryAfter.dispatchInterval) { self.write() }
            }
        }
    }
}
