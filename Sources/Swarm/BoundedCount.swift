import Synchronization

/// A count kept within a bound, taken and given back by its users: a tracker connection's
/// queued prepare objects and waiting `sums`, a gateway's bytes of manifests being read.
public final class BoundedCount: Sendable {
    public let bound: Int
    private let count = Mutex(0)

    public init(_ bound: Int) { self.bound = bound }

    /// Adds `n` if the count stays within the bound; whether it did.
    public func take(_ n: Int) -> Bool {
        count.withLock { c in
            guard c + n <= bound else { return false }
            c += n
            return true
        }
    }

    public func give(_ n: Int) { count.withLock { $0 -= n } }

    /// What is taken now.
    public var taken: Int { count.withLock { $0 } }
}
