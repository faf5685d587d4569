import Logging
import Synchronization

/// Logs a failure that tends to repeat (a full disk under an SQLite file) without a line per
/// attempt: the first failure at once, then at most one line a minute saying how many more
/// there were, and a notice at the first success after them. Used for the piece index here and
/// for the registry's and the prepare jobs' writes.
public final class RepeatedFailureLog: Sendable {
    private struct State {
        var failing = false
        var unlogged = 0
        var lastLogged: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let message: Logger.Message
    /// The shortest time between two lines of a failure that goes on.
    static let interval: Duration = .seconds(60)

    public init(_ message: Logger.Message, logger: Logger) {
        self.message = message
        self.logger = logger
    }

    public func failed(_ metadata: Logger.Metadata) {
        let now = ContinuousClock.now
        let unlogged = state.withLock { s -> Int? in
            s.failing = true
            if let last = s.lastLogged, now - last < Self.interval {
                s.unlogged += 1
                return nil
            }
            defer { (s.unlogged, s.lastLogged) = (0, now) }
            return s.unlogged
        }
        guard let unlogged else { return }
        var meta = metadata
        if unlogged > 0 { meta["failures_since_last_line"] = "\(unlogged)" }
        logger.error(message, metadata: meta)
    }

    /// Failed last, and not succeeded since.
    public var isFailing: Bool { state.withLock(\.failing) }

    public func succeeded() {
        let recovered = state.withLock { s -> Bool in
            guard s.failing else { return false }
            s = State()
            return true
        }
        if recovered { logger.notice("\(message): written again") }
    }
}
