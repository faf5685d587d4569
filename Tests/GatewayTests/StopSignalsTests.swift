import Foundation
@testable import Gateway
import Logging
import ServiceLifecycle
import Synchronization
import Testing
import UnixSignals

/// `StopSignals` on a real service group, fed signals from a stream of the test's own (the
/// process's own SIGTERM is the end-to-end tests'): the first signal stops the group
/// gracefully, a second one or the graceful limit cancels it, and a signal that comes before
/// the group runs stops it as soon as it does.
@Suite struct StopSignalsTests {
    /// What a service saw.
    final class Seen: Sendable {
        let started = Mutex(false)
        let gracefulShutdown = Mutex(false)
        let cancelled = Mutex(false)
    }

    /// Ends at the graceful shutdown.
    struct Graceful: Service {
        let seen: Seen
        func run() async throws {
            seen.started.withLock { $0 = true }
            try await gracefulShutdown()
            seen.gracefulShutdown.withLock { $0 = true }
        }
    }

    /// Sees the graceful shutdown and goes on until it is cancelled (a response that a player
    /// does not read, a close a frozen peer does not answer).
    struct Stubborn: Service {
        let seen: Seen
        func run() async throws {
            seen.started.withLock { $0 = true }
            // Returns at the graceful shutdown, though the limit may have cancelled the task
            // by the time it runs again (under a full run's load); throws if cancelled first.
            do {
                try await gracefulShutdown()
                seen.gracefulShutdown.withLock { $0 = true }
            } catch {}
            while true {
                do { try await Task.sleep(for: .seconds(60)) } catch {
                    seen.cancelled.withLock { $0 = true }
                    return
                }
            }
        }
    }

    static let logger: Logger = {
        var l = Logger(label: "test")
        l.logLevel = .critical
        return l
    }()

    /// Runs `services` under StopSignals fed by the returned continuation; the task ends when
    /// the run does.
    static func running(_ services: [any Service], limit: Duration) -> (Task<Void, any Error>, AsyncStream<UnixSignal>.Continuation) {
        let (signals, send) = AsyncStream.makeStream(of: UnixSignal.self)
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        let stop = StopSignals(signals: signals, gracefulLimit: limit)
        return (Task { try await stop.run(group, logger: logger) }, send)
    }

    /// Whether `task` ended within `limit`.
    static func ends(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
        let ended = Mutex(false)
        let waiter = Task {
            _ = try? await task.value
            ended.withLock { $0 = true }
        }
        defer { waiter.cancel() }
        let start = ContinuousClock.now
        while !ended.withLock({ $0 }) && ContinuousClock.now - start < limit { try? await Task.sleep(for: .milliseconds(5)) }
        return ended.withLock { $0 }
    }

    static func until(_ condition: () -> Bool) async throws {
        let start = ContinuousClock.now
        while !condition() {
            try #require(ContinuousClock.now - start < .seconds(60), "not within 60 s")
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func aSignalStopsTheGroupGracefully() async throws {
        let seen = Seen()
        let (run, send) = Self.running([Graceful(seen: seen)], limit: .seconds(600))
        try await Self.until { seen.started.withLock { $0 } }
        #expect(await !Self.ends(run, within: .milliseconds(200)), "no signal yet")
        send.yield(.sigterm)
        #expect(await Self.ends(run, within: .seconds(60)))
        try await run.value
        #expect(seen.gracefulShutdown.withLock { $0 })
    }

    /// A second signal cancels a graceful stop that is still going, long before its limit.
    @Test(arguments: [UnixSignal.sigterm, .sigint])
    func aSecondSignalStopsAtOnce(second: UnixSignal) async throws {
        let seen = Seen()
        let (run, send) = Self.running([Stubborn(seen: seen)], limit: .seconds(600))
        try await Self.until { seen.started.withLock { $0 } }
        send.yield(.sigint)
        try await Self.until { seen.gracefulShutdown.withLock { $0 } }
        #expect(await !Self.ends(run, within: .milliseconds(300)), "the graceful stop waits for the service")
        send.yield(second)
        #expect(await Self.ends(run, within: .seconds(60)))
        try await run.value  // a stop asked for: no error
        #expect(seen.cancelled.withLock { $0 })
    }

    /// A graceful stop still going after its limit is cancelled, with no second signal.
    @Test func aStopPastItsLimitIsCancelled() async throws {
        let seen = Seen()
        let (run, send) = Self.running([Graceful(seen: Seen()), Stubborn(seen: seen)], limit: .milliseconds(500))
        try await Self.until { seen.started.withLock { $0 } }
        send.yield(.sigterm)
        try await Self.until { seen.gracefulShutdown.withLock { $0 } }
        #expect(await Self.ends(run, within: .seconds(60)))
        try await run.value
        #expect(seen.cancelled.withLock { $0 })
    }

    /// A signal during the set-up (sent before the run) is kept by its sequence: the services
    /// start and are stopped gracefully at once, whichever of the signal's watcher and the
    /// group starts first (a shutdown asked before the group runs is kept by the group). The
    /// process's own signals before the run: `aSignalDuringTheSetUpStopsTheGatewayCleanly`.
    @Test func aSignalBeforeTheGroupRunsStopsItWhenItDoes() async throws {
        let seen = Seen()
        let (signals, send) = AsyncStream.makeStream(of: UnixSignal.self)
        send.yield(.sigterm)
        let group = ServiceGroup(configuration: .init(services: [Graceful(seen: seen)], logger: Self.logger))
        let run = Task { try await StopSignals(signals: signals, gracefulLimit: .seconds(600)).run(group, logger: Self.logger) }
        #expect(await Self.ends(run, within: .seconds(60)))
        try await run.value
        #expect(seen.started.withLock { $0 } && seen.gracefulShutdown.withLock { $0 })
    }

    /// A group that ends by itself (a service that fails at start) ends the run with its error,
    /// with no signal.
    @Test func aGroupThatFailsEndsTheRunWithItsError() async throws {
        struct Failing: Service {
            struct Failed: Error {}
            func run() async throws { throw Failed() }
        }
        let (run, _) = Self.running([Failing(), Graceful(seen: Seen())], limit: .seconds(600))
        #expect(await Self.ends(run, within: .seconds(60)))
        await #expect(throws: Failing.Failed.self) { try await run.value }
    }
}
