import Dispatch
import Synchronization

/// Work done in the background one item at a time, with at most `maxQueued` items queued
/// (the one running included); past that, work is refused and its caller forgoes it.
///
/// For read-ahead: planning a list costs CPU and memory in proportion to its length (a static
/// 24-hour MPD of 2 s segments in three Representations is 260,000 objects: about a second of
/// CPU, and a hundred MB while it is planned), lists are planned per stream (xresid), and
/// streams can open faster than that. Unbounded, 120 streams opening one such MPD took a
/// gateway to 4.6 GB and four minutes of CPU.
final class SerialWork: Sendable {
    let maxQueued: Int
    private let queue: DispatchQueue
    private let queued = Mutex(0)

    init(label: String, maxQueued: Int, queue: DispatchQueue? = nil) {
        self.maxQueued = max(1, maxQueued)
        self.queue = queue ?? DispatchQueue(label: label, qos: .utility)
    }

    /// Queues `work` after the work before it; false (and `work` dropped) when `maxQueued`
    /// items are queued already.
    func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        let taken = queued.withLock { n -> Bool in
            guard n < maxQueued else { return false }
            n += 1
            return true
        }
        guard taken else { return false }
        queue.async { [self] in
            work()
            queued.withLock { $0 -= 1 }
        }
        return true
    }
}
