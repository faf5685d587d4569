import Foundation
import Logging
import PieceStore
import ServiceLifecycle
import Synchronization

/// The prepare jobs of a node or tracker (seed 001): persistent across restarts; paused,
/// resumed and cancelled on request; at most `maxRunning` at once, urgent ones (a player is
/// waiting) before read-ahead, read-ahead in playback order. A `Service`: its `run()` starts
/// jobs until graceful shutdown, when running jobs stop and keep their progress.
public final class PrepareQueue: Service, Sendable {
    struct State {
        var jobs: [String: PrepareJob] = [:]
        var running: [String: Task<Void, Never>] = [:]
        var sequence: Int64 = 0
    }

    public let maxRunning: Int
    public let pieceSize: Int
    let registry: ChecksumRegistry
    let storage: any RegistryStorage
    let preparer: Preparer
    private let state: Mutex<State>
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    private let logger: Logger

    init(registry: ChecksumRegistry, storage: any RegistryStorage, preparer: Preparer, pieceSize: Int, maxRunning: Int, logger: Logger) throws(RegistryError) {
        self.registry = registry
        self.storage = storage
        self.preparer = preparer
        self.pieceSize = pieceSize
        self.maxRunning = maxRunning
        self.logger = logger
        var s = State()
        for var job in try storage.loadJobs() {
            if job.state == .running { job.state = .queued }  // stopped by a shutdown or a crash
            s.jobs[job.id] = job
            s.sequence = max(s.sequence, job.sequence)
        }
        state = Mutex(s)
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: requests

    /// Queues `key` for preparation from `url`, unless it is ready, queued or running already.
    /// `urgent` moves it before read-ahead jobs. Returns the job.
    @discardableResult
    public func enqueue(_ key: ObjectKey, url: String, urgent: Bool) -> PrepareJob {
        let (job, changed) = state.withLock { s -> (PrepareJob, Bool) in
            if var job = s.jobs[key.id.prefixID] {
                switch job.state {
                case .queued, .running, .paused:
                    if urgent && !job.urgent && job.state == .queued {
                        job.urgent = true
                        s.jobs[job.id] = job
                        return (job, true)
                    }
                    return (job, false)
                case .done where registry.checksums(key) != nil:
                    return (job, false)
                case .done, .failed, .cancelled:
                    job.state = .queued
                    job.urgent = urgent
                    job.url = url
                    job.error = nil
                    s.jobs[job.id] = job
                    return (job, true)
                }
            }
            s.sequence += 1
            var job = PrepareJob(key: key, url: url, pieceSize: pieceSize, sequence: s.sequence)
            job.urgent = urgent
            s.jobs[job.id] = job
            return (job, true)
        }
        if changed {
            registry.markPreparing(key)
            save(job)
            wake.yield()
        }
        return job
    }

    /// Every job, urgent first, then in queue order.
    public func jobs() -> [PrepareJob] {
        state.withLock { Array($0.jobs.values) }.sorted { ($0.sequence) < ($1.sequence) }
    }

    public func job(_ id: String) -> PrepareJob? { state.withLock { $0.jobs[id] } }

    /// Pauses a queued or running job (a running one stops after its current piece and keeps
    /// its progress). Returns the job, or nil when there is no such job.
    public func pause(_ id: String) -> PrepareJob? {
        let (job, task) = state.withLock { s -> (PrepareJob?, Task<Void, Never>?) in
            guard var job = s.jobs[id], job.state == .queued || job.state == .running else { return (s.jobs[id], nil) }
            job.state = .paused
            s.jobs[id] = job
            return (job, s.running.removeValue(forKey: id))
        }
        task?.cancel()
        if let job { save(job) }
        wake.yield()
        return job
    }

    public func resume(_ id: String) -> PrepareJob? {
        let job = state.withLock { s -> PrepareJob? in
            guard var job = s.jobs[id], job.state == .paused else { return s.jobs[id] }
            job.state = .queued
            s.jobs[id] = job
            return job
        }
        if let job { save(job) }
        wake.yield()
        return job
    }

    /// Cancels a job: it stops, its progress is dropped and the object is unknown again.
    public func cancel(_ id: String) -> PrepareJob? {
        let (job, task) = state.withLock { s -> (PrepareJob?, Task<Void, Never>?) in
            guard var job = s.jobs[id], job.state != .done else { return (s.jobs[id], nil) }
            job.state = .cancelled
            job.restart()
            s.jobs[id] = job
            return (job, s.running.removeValue(forKey: id))
        }
        task?.cancel()
        if let job, job.state == .cancelled {
            save(job)
            registry.markUnknown(job.key)
        }
        wake.yield()
        return job
    }

    // MARK: running

    public func run() async throws {
        wake.yield()
        await withGracefulShutdownHandler {
            for await _ in wakes {
                startJobs()
            }
        } onGracefulShutdown: {
            self.wake.finish()
        }
        // Stop what runs; each keeps the progress it saved after its last piece.
        let tasks = state.withLock { s in Array(s.running.values) }
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
    }

    private func startJobs() {
        let started = state.withLock { s -> [PrepareJob] in
            var out: [PrepareJob] = []
            while s.running.count < maxRunning {
                guard var next = s.jobs.values.filter({ $0.state == .queued })
                    .min(by: { ($0.urgent ? 0 : 1, $0.sequence) < ($1.urgent ? 0 : 1, $1.sequence) })
                else { break }
                next.state = .running
                s.jobs[next.id] = next
                let job = next
                s.running[job.id] = Task { await self.execute(job) }
                out.append(job)
            }
            return out
        }
        for job in started { save(job) }
    }

    private func execute(_ job: PrepareJob) async {
        let id = job.id
        let outcome: Result<Preparer.Outcome, Preparer.Failure>
        do {
            outcome = .success(try await preparer.run(job) { [weak self] progress in self?.record(progress) })
        } catch {
            outcome = .failure(error)
        }
        let finished = state.withLock { s -> PrepareJob? in
            s.running[id] = nil
            guard var current = s.jobs[id], current.state == .running else { return nil }  // paused or cancelled
            switch outcome {
            case .success:
                current.state = .done
                current.digests = []  // the registry holds them now
            case .failure(let f):
                current.state = .failed
                current.error = f.description
            }
            s.jobs[id] = current
            return current
        }
        if let finished {
            switch outcome {
            case .success(let o):
                registry.markReady(job.key, checksums: o.checksums, etag: o.etag, lastModified: o.lastModified, contentType: o.contentType)
                logger.info("prepared", metadata: ["object": "\(job.key)", "bytes": "\(o.checksums.layout.length)"])
            case .failure(let f):
                registry.markFailed(job.key, f.description)
                logger.warning("preparation failed", metadata: ["object": "\(job.key)", "error": "\(f)"])
            }
            save(finished)
        }
        wake.yield()
    }

    /// Keeps a running job's progress (in memory and on disk) after each piece.
    private func record(_ progress: PrepareJob) {
        let job = state.withLock { s -> PrepareJob? in
            guard var current = s.jobs[progress.id], current.state == .running else { return nil }
            current.bytesDone = progress.bytesDone
            current.digests = progress.digests
            current.length = progress.length
            current.validator = progress.validator
            s.jobs[progress.id] = current
            return current
        }
        if let job { save(job) }
    }

    private func save(_ job: PrepareJob) {
        do { try storage.save(job) } catch {
            logger.error("cannot save a prepare job", metadata: ["job": "\(job.id)", "error": "\(error)"])
        }
    }
}

extension String {
    /// The job id of a key id.
    var prefixID: String { String(prefix(16)) }
}
