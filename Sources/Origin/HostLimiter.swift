import Synchronization

/// At most `limit` transfers in flight per origin host; the requests past it wait their turn
/// in arrival order. A permit is held from just before a transfer starts until libcurl is done
/// with it (completed, failed or aborted), not until the consumer has read the body.
final class HostLimiter: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var inFlight: [String: Int] = [:]
        var waiters: [String: [Waiter]] = [:]
        var nextID: UInt64 = 0
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits for a permit for `key` (`host:port`). Throws `.cancelled` if the task is
    /// cancelled while waiting.
    func acquire(_ key: String) async throws(OriginError) {
        let id: UInt64? = state.withLock { s in
            if s.inFlight[key, default: 0] < limit {
                s.inFlight[key, default: 0] += 1
                return nil
            }
            s.nextID += 1
            return s.nextID
        }
        guard let id else { return }
        let granted = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { s in
                    // Cancelled before we queued: the handler below found nothing to cancel.
                    if Task.isCancelled { return false }
                    if s.inFlight[key, default: 0] < limit {
                        s.inFlight[key, default: 0] += 1
                        return true
                    }
                    s.waiters[key, default: []].append(Waiter(id: id, continuation: c))
                    return nil
                }
                if let immediate { c.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { s in
                guard let i = s.waiters[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters[key]?.remove(at: i)
            }
            waiter?.continuation.resume(returning: false)
        }
        if !granted { throw OriginError(.cancelled, "cancelled while waiting for a connection slot to \(key)") }
    }

    /// Gives a permit back: the next waiter for `key`, if any, takes it over.
    func release(_ key: String) {
        let next: Waiter? = state.withLock { s in
            if var queue = s.waiters[key], !queue.isEmpty {
                let w = queue.removeFirst()
                s.waiters[key] = queue.isEmpty ? nil : queue
                return w
            }
            let n = s.inFlight[key, default: 1] - 1
            s.inFlight[key] = n > 0 ? n : nil
            return nil
        }
        next?.continuation.resume(returning: true)
    }
}
