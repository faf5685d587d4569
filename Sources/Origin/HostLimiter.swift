import Synchronization

/// At most `limit` transfers in flight per origin host; the requests past it wait their turn
/// in arrival order. A permit is held from just before a transfer starts until libcurl is done
/// with it (completed, failed or aborted), not until the consumer has read the body.
final class HostLimiter: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Grant, Never>
    }

    private enum Grant {
        case granted, cancelled, timedOut
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

    /// Waits for a permit for `key` (`host:port`), for at most `wait` when given. Throws
    /// `.cancelled` if the task is cancelled while waiting, `.busy` past `wait`.
    func acquire(_ key: String, within wait: Duration? = nil) async throws(OriginError) {
        let id: UInt64? = state.withLock { s in
            if s.inFlight[key, default: 0] < limit {
                s.inFlight[key, default: 0] += 1
                return nil
            }
            s.nextID += 1
            return s.nextID
        }
        guard let id else { return }
        // The timer fires at the deadline or after: a waiter queued before then is found,
        // and one that would queue after it does not wait.
        let deadline = wait.map { ContinuousClock.now + $0 }
        let timer = deadline.map { deadline in
            Task { [weak self] in
                try? await Task.sleep(until: deadline)
                self?.giveUp(key, id, .timedOut)
            }
        }
        defer { timer?.cancel() }
        let grant = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Grant, Never>) in
                let immediate: Grant? = state.withLock { s in
                    // Cancelled before we queued: the handler below found nothing to cancel.
                    if Task.isCancelled { return .cancelled }
                    if s.inFlight[key, default: 0] < limit {
                        s.inFlight[key, default: 0] += 1
                        return .granted
                    }
                    if let deadline, ContinuousClock.now >= deadline { return .timedOut }
                    s.waiters[key, default: []].append(Waiter(id: id, continuation: c))
                    return nil
                }
                if let immediate { c.resume(returning: immediate) }
            }
        } onCancel: {
            giveUp(key, id, .cancelled)
        }
        switch grant {
        case .granted: return
        case .cancelled: throw OriginError(.cancelled, "cancelled while waiting for a connection slot to \(key)")
        case .timedOut: throw OriginError(.busy, "no connection slot to \(key) within \(wait ?? .zero) (\(limit) in use)")
        }
    }

    /// Ends waiter `id`'s wait for `key` without a permit, if it still waits (a timer that
    /// fires after the permit was granted finds nothing).
    private func giveUp(_ key: String, _ id: UInt64, _ why: Grant) {
        let waiter: Waiter? = state.withLock { s in
            guard let i = s.waiters[key]?.firstIndex(where: { $0.id == id }) else { return nil }
            let w = s.waiters[key]?.remove(at: i)
            if s.waiters[key]?.isEmpty == true { s.waiters[key] = nil }
            return w
        }
        waiter?.continuation.resume(returning: why)
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
        next?.continuation.resume(returning: .granted)
    }
}
