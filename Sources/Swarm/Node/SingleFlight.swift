import Synchronization

/// Concurrent requests for one key share one unit of work: the first starts it, the others
/// wait for its result. Once it is done, the next request starts afresh.
public final class SingleFlight<Value: Sendable>: Sendable {
    private let running = Mutex<[String: Task<Value, Never>]>([:])

    public init() {}

    /// The result of `work` for `key`, or of the run already under way for it.
    public func run(_ key: String, _ work: @escaping @Sendable () async -> Value) async -> Value {
        let (task, owner) = running.withLock { r -> (Task<Value, Never>, Bool) in
            if let t = r[key] { return (t, false) }
            let t = Task { await work() }
            r[key] = t
            return (t, true)
        }
        let value = await task.value
        if owner { running.withLock { r in if r[key] == task { r[key] = nil } } }
        return value
    }
}
