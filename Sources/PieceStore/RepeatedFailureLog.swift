import Logging
import Synchronization

/// Logs a failure that tends to repeat (a full disk under an SQLite file) without a line per
/// attempt: the first failure at once, then at most one line a minute saying how many more
/// there were, and a notice at the first success after them. Used for the piece index here and
/// for the registry's and the prepare jobs' writes; and, at warning level and never succeeded,
/// for the evictions a full disk forces.
public final class RepeatedFailureLog: Sendable {
    private struct State {
        var failing = false
        var unlogged = 0
        var lastLogged: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let message: Logger.Message
    private let level: Logger.Level
    /// The metadata key that counts the occurrences no line was written for.
    private let repeatsKey: String
    /// The shortest time between two lines of a failure that goes on.
    static let interval: Duration = .seconds(60)

    public init(_ message: Logger.Message, logger: Logger, level: Logger.Level = .error, repeatsKey: String = "failures_since_last_line") {
        self.message = message
        self.logger = logger
        self.level = level
        self.repeatsKey = repeatsKey
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
        if unlogged > 0 { meta[repeatsKey] = "\(unlogged)" }
        logger.log(level: level, message, metadata: meta)
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
