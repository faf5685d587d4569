import Logging
import ServiceLifecycle
import UnixSignals

/// SIGTERM and SIGINT for a gateway or a tracker, from the start of its set-up to its end. The
/// first one stops the process gracefully (the responses in flight end, 20 s at most); a second
/// one stops it at once, as operators expect of a second Ctrl-C; a graceful stop still going
/// after `gracefulLimit` is ended the same way, so that its steps (the drain, the server, the
/// tracker link) cannot add up past the systemd unit's 30 s and its SIGKILL (the piece index
/// is written at the end of a stop). Stopping at once cancels every service: connections are
/// closed, responses cut; the piece index is still written.
///
/// Trapped before the cache, its SQLite index and the registry are opened: the service group
/// traps signals only when it runs, and a signal in the ~50 ms before ended the process by the
/// signal's default action (status 15 for SIGTERM, 2 for SIGINT), mid-way through opening them. A signal that comes during the
/// set-up stops the process as soon as its services run.
public struct StopSignals: Sendable {
    /// A graceful stop's time, all its steps together, before it is cut short.
    let gracefulLimit: Duration
    private let signals: any AsyncSequence<UnixSignal, Never> & Sendable

    /// Stops on `signals` (a test's own, or `trap()`'s).
    init(signals: any AsyncSequence<UnixSignal, Never> & Sendable, gracefulLimit: Duration = .seconds(25)) {
        self.signals = signals
        self.gracefulLimit = gracefulLimit
    }

    /// Traps SIGTERM and SIGINT from now on; those that come before `run` wait for it.
    public static func trap() async -> StopSignals {
        StopSignals(signals: await UnixSignalsSequence(trapping: .sigterm, .sigint))
    }

    private enum Ended: Sendable {
        case group, secondSignal(UnixSignal), limit, nothing
    }

    /// Runs `group` until its services end: the first signal shuts it down gracefully, a second
    /// one or `gracefulLimit` cancels it. A group so cancelled returns normally: the stop was
    /// asked for.
    func run(_ group: ServiceGroup, logger: Logger) async throws {
        let (firstSignal, signalled) = AsyncStream.makeStream(of: Void.self)
        let signals = self.signals
        let limit = gracefulLimit
        try await withThrowingTaskGroup(of: Ended.self) { tasks in
            tasks.addTask {
                try await group.run()
                return .group
            }
            tasks.addTask {
                var seen = 0
                for await signal in signals {
                    seen += 1
                    guard seen == 1 else { return .secondSignal(signal) }
                    logger.info("stopping", metadata: ["signal": "\(signal)"])
                    signalled.yield()
                    await group.triggerGracefulShutdown()
                }
                return .nothing
            }
            tasks.addTask {
                for await _ in firstSignal { break }
                do { try await Task.sleep(for: limit) } catch { return .nothing }
                return .limit
            }
            while let ended = try await tasks.next() {
                switch ended {
                case .group:
                    tasks.cancelAll()
                    return
                case .secondSignal(let signal):
                    logger.warning("stopping at once: a second signal", metadata: ["signal": "\(signal)"])
                case .limit:
                    logger.warning("stopping at once: the stop took longer than its limit", metadata: ["limit": "\(limit)"])
                case .nothing:
                    continue
                }
                // Cancels the group too; the task group waits for it to end, and what its
                // cancelled services throw is let go.
                tasks.cancelAll()
                return
            }
        }
    }
}
