import CLinux
import Foundation
import Logging
import PieceStore
import ServiceLifecycle
import Synchronization

/// The prepare jobs of a node or tracker (seed 001): persistent across restarts; paused,
/// resumed and cancelled on request; at most `maxRunning` at once (and urgent ones, a player
/// waiting, beside running read-ahead: see `startJobs`), urgent ones before
/// read-ahead, read-ahead in playback order. A `Service`: its `run()` starts jobs until
/// graceful shutdown, when running jobs stop and keep their progress.
public final class PrepareQueue: Service, Sendable {
    struct State {
        var jobs = JobTable()
        var running: [String: Task<Void, Never>] = [:]
        /// Jobs whose task was told to stop and has not ended yet: not started again until it has.
        var stopping: Set<String> = []
        /// The origin's first answer to each job's current run, once it came.
        var heads: [String: OriginHead] = [:]
        /// Requests waiting for a job's head, by job id and waiter number.
        var headWaiters: [String: [Int: CheckedContinuation<OriginHead?, Never>]] = [:]
        var nextWaiter = 0
        var sequence: Int64 = 0
        /// When each running job's progress was last written (or the job started).
        var progressSaved: [String: ContinuousClock.Instant] = [:]
        /// Requests waiting for a job to end, by job id and waiter number (`ended(_:within:)`).
        var endWaiters: [String: [Int: EndWaiter]] = [:]
        /// When each running job's body began to come, and how much it had then (a resumed
        /// job has some): its rate so far, for whether it ends before a waiter's deadline.
        var bodyStarted: [String: (at: ContinuousClock.Instant, bytes: Int64)] = [:]
        /// Failed jobs, and until when a player's request does not run them again (nor an
        /// operator's, for an object the swarm cannot take): the origin's answer, kept, sends
        /// the player on (each run would cost the origin a request).
        var heldBack: [String: (until: ContinuousClock.Instant, operators: Bool)] = [:]
        /// Jobs just queued whose objects the registry does not yet say are being prepared:
        /// not started until it does, or a run that failed at once would have its failure
        /// overwritten by the `preparing` written after it (and the object sent to the origin
        /// until the entry was let go). Counted, as two requests may queue one job at once.
        var unmarked: [String: Int] = [:]
        /// Jobs whose end (done, failed, cancelled) is being told to the registry: not queued
        /// again until it has been, or the old run's outcome would land on the new run (a done
        /// job, its checksums not yet in the registry, was started over from the first byte).
        var settling: Set<String> = []
        /// Requests that would queue a job again (a player's, an operator's retry) and came
        /// while its end was being recorded: made once it has been.
        var afterSettling: [String: Request] = [:]
        /// Jobs ended since the allocator last gave back its free memory, and when that was.
        var endedSinceTrim = 0
        var lastTrim: ContinuousClock.Instant?
        /// A trim put off to the end of `trimInterval` (the queue drained within it).
        var trimPutOff = false
    }

    /// A request to queue an object: what `enqueue` was asked.
    struct Request {
        let key: ObjectKey
        var url: String
        var urgent: Bool
        var retry: Bool
    }

    /// How long an object the swarm could not take (or a manifest at a media path) is left to
    /// the origin before a player's request has it tried again (its copy may have changed).
    static let uncacheableRetry: Duration = .seconds(600)
    /// How long another failure (the origin's 404 or 503, a timeout) stands for players' requests:
    /// a live segment missing at the origin, or an origin struggling, was asked again for each
    /// player (two requests each, with the player's own); a segment late at a CDN edge is
    /// there soon after.
    static let failureRetry: Duration = .seconds(2)

    struct EndWaiter {
        let deadline: ContinuousClock.Instant
        /// How long the wait was given: the job's rate is judged over at least an eighth of it.
        let limit: Duration
        let continuation: CheckedContinuation<Void, Never>
    }

    /// How often a running job's progress is written: a crash costs at most this much of the
    /// preparation, and a small object is written only when it is queued and when it ends.
    static let progressInterval: Duration = .seconds(1)

    public let maxRunning: Int
    public let pieceSize: Int
    /// Finished jobs kept for `/jobs`; older ones are dropped (the registry keeps what they made).
    public let keepDone: Int
    let registry: ChecksumRegistry
    let storage: any RegistryStorage
    let preparer: Preparer
    private let state: Mutex<State>
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    /// Told of each object whose preparation ended, done or failed (the tracker tells the
    /// nodes waiting for it).
    private let finishedObserver = Mutex<Callback<ObjectRef>?>(nil)
    private let logger: Logger
    private let saveFailures: RepeatedFailureLog
    /// Held through each write or delete of jobs: each writes the jobs as memory holds them
    /// then, so an older state of a job is never written after a newer one.
    private let jobWrites = Mutex<Void>(())
    /// Held through each mark of objects in the registry as their jobs are queued (preparing)
    /// or cancelled (unknown), each job's state read inside: of two marks of one object, the
    /// last written says how its job stands last. (A cancel landing between a queuing's change
    /// and its mark was overwritten by that mark: preparing, of a cancelled job.)
    private let registryMarks = Mutex<Void>(())
    /// Memory the allocator keeps free is given back to the system once the queue has drained
    /// after at least this many jobs ended, and at most once a `trimInterval`. glibc keeps
    /// what a batch freed: after 10,000 objects prepared, a gateway held 20–30 MB more than
    /// it used (90 MB, 69 after `malloc_trim`), for good.
    let trimAfter: Int
    let trimInterval: Duration
    /// Gives the allocator's free memory back (glibc's `malloc_trim`), off the caller's thread.
    let giveBackFreeMemory: @Sendable () -> Void
    /// Tests only: called with the ids of a queuing's changed jobs before their marks, to hold
    /// a queuing there (a thread preempted between the two, which no real part shows on demand).
    let beforeMarks = Mutex<(@Sendable ([String]) -> Void)?>(nil)

    init(
        registry: ChecksumRegistry, storage: any RegistryStorage, preparer: Preparer, pieceSize: Int, maxRunning: Int,
        keepDone: Int = 1000, trimAfter: Int = 1000, trimInterval: Duration = .seconds(10),
        giveBackFreeMemory: @escaping @Sendable () -> Void = PrepareQueue.mallocTrim,
        logger: Logger
    ) throws(RegistryError) {
        self.keepDone = keepDone
        self.trimAfter = trimAfter
        self.trimInterval = trimInterval
        self.giveBackFreeMemory = giveBackFreeMemory
        self.registry = registry
        self.storage = storage
        self.preparer = preparer
        self.pieceSize = pieceSize
        self.maxRunning = maxRunning
        self.logger = logger
        saveFailures = RepeatedFailureLog("cannot save prepare jobs", logger: logger)
        var s = State()
        for var job in try storage.loadJobs() {
            if job.state == .running { job.state = .queued }  // stopped by a shutdown or a crash
            s.jobs[job.id] = job
            s.sequence = max(s.sequence, job.sequence)
        }
        state = Mutex(s)
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        pruneFinished()
    }

    /// Calls `observer` with each object whose preparation ended, done (the registry has its
    /// checksums) or failed.
    public func onFinished(_ observer: @escaping @Sendable (ObjectRef) -> Void) {
        finishedObserver.withLock { $0 = Callback(observer) }
    }

    /// Drops the oldest finished jobs (done, failed or cancelled) past `keepDone`, in memory
    /// and in storage: failed ones too, or a flood of objects an origin lacks (or a node's
    /// prepares for hosts it may not fetch) would stay in the jobs table for good. The
    /// registry still says an object failed, and a prepare queues it again.
    private func pruneFinished() {
        let dropped = state.withLock { s -> [String] in
            // Not one whose end is still being recorded (it would be made anew, and prepared
            // again, by a request meanwhile).
            let settling = s.settling.count { s.jobs[$0]?.state.isFinished == true }
            let excess = s.jobs.finishedCount - settling - keepDone
            guard excess > 0 else { return [] }
            let old = s.jobs.oldestFinished(excess) { s.settling.contains($0) }
            for id in old {
                s.jobs[id] = nil
                s.heads[id] = nil
                s.heldBack[id] = nil
            }
            return old
        }
        guard !dropped.isEmpty else { return }
        jobWrites.withLock { _ in
            // Not one queued again since (its new row stays).
            let gone = state.withLock { s in dropped.filter { s.jobs[$0] == nil } }
            do { try storage.deleteJobs(gone) } catch {
                logger.error("cannot drop finished prepare jobs", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: requests

    /// Queues `key` for preparation from `url`, unless it is ready, queued or running already.
    /// `urgent` moves it before read-ahead jobs. `retry` (an operator's prepare) queues a job
    /// that failed or was cancelled again, as `urgent` does, without moving it up. Returns the
    /// job.
    @discardableResult
    public func enqueue(_ key: ObjectKey, url: String, urgent: Bool, retry: Bool = false) -> PrepareJob {
        enqueue([(key, url)], urgent: urgent, retry: retry)[0]
    }

    /// Queues each of `objects` in order, as `enqueue(_:url:urgent:)` does one, with one write
    /// to the storage for them all (a playlist's read-ahead is thousands of objects at times).
    @discardableResult
    public func enqueue(_ objects: [(key: ObjectKey, url: String)], urgent: Bool, retry: Bool = false) -> [PrepareJob] {
        let (jobs, changed) = state.withLock { s -> ([PrepareJob], [PrepareJob]) in
            var jobs: [PrepareJob] = []
            var changed: [PrepareJob] = []
            for (key, url) in objects {
                let (job, didChange) = Self.enqueue(key, url: url, urgent: urgent, retry: retry, &s, registry: registry, pieceSize: pieceSize)
                jobs.append(job)
                if didChange {
                    if s.running[job.id] == nil { s.heads[job.id] = nil }
                    s.unmarked[job.id, default: 0] += 1
                    changed.append(job)
                }
            }
            return (jobs, changed)
        }
        if !changed.isEmpty {
            // Written before any of them can start: a run's outcome is written after this.
            beforeMarks.withLock { $0 }?(changed.map(\.id))
            markObjects(changed.map(\.id))
            save(changed.map(\.id))
            state.withLock { s in
                for job in changed {
                    s.unmarked[job.id] = s.unmarked[job.id].flatMap { $0 > 1 ? $0 - 1 : nil }
                }
            }
            wake.yield()
        }
        return jobs
    }

    /// One object's part of `enqueue`: its job, and whether it changed.
    private static func enqueue(
        _ key: ObjectKey, url: String, urgent: Bool, retry: Bool, _ s: inout State, registry: ChecksumRegistry, pieceSize: Int
    ) -> (PrepareJob, Bool) {
        if var job = s.jobs[key.id.prefixID] {
            if s.settling.contains(job.id) {
                // Read-ahead would not run a failed or cancelled job again; an operator's retry
                // would, and a player's request a cancelled one (a failure holds players back
                // a while: `heldBack`). Made once the end is recorded, as if it came then (a
                // done job's request then finds it ready and does nothing). The answer now is
                // the job as it ends.
                if urgent || retry {
                    var later = s.afterSettling[job.id] ?? Request(key: key, url: url, urgent: false, retry: false)
                    later.url = url
                    later.urgent = later.urgent || urgent
                    later.retry = later.retry || retry
                    s.afterSettling[job.id] = later
                }
                return (job, false)
            }
            switch job.state {
            case .queued, .running, .paused:
                guard urgent && !job.urgent && job.state != .paused else { return (job, false) }
                job.urgent = true
                s.jobs[job.id] = job
                // A running job is only kept from being preempted (a player may be waiting for
                // it); nothing about it needs writing.
                return (job, job.state == .queued)
            case .done where registry.checksums(key) != nil:
                return (job, false)
            case .failed where !urgent && !retry, .cancelled where !urgent && !retry:
                // Read-ahead does not retry what failed or was cancelled; a player's request
                // does, and so does an operator's prepare.
                return (job, false)
            case .failed where s.heldBack[job.id].map({ ContinuousClock.now < $0.until && (!retry || $0.operators) }) ?? false:
                // Not even a player's, for a while: each would cost the origin a request, and
                // the answer (the origin's head, kept) sends the player on anyway.
                return (job, false)
            case .done, .failed, .cancelled:
                // A done job whose checksums were dropped (the origin's copy changed, and its
                // pieces with it) starts over: its progress is the old copy's.
                if job.state == .done { job.restart() }
                job.state = .queued
                job.urgent = urgent
                job.url = url
                job.error = nil
                s.jobs[job.id] = job
                return (job, true)
            }
        }
        if registry.checksums(key) != nil {
            // Ready, and its job already dropped from the list: nothing to do.
            var done = PrepareJob(key: key, url: url, pieceSize: pieceSize, sequence: 0)
            done.state = .done
            return (done, false)
        }
        s.sequence += 1
        var job = PrepareJob(key: key, url: url, pieceSize: pieceSize, sequence: s.sequence)
        job.urgent = urgent
        s.jobs[job.id] = job
        return (job, true)
    }

    /// Waits until the origin has answered `key`'s job (or `timeout` passed: nil). Woken by
    /// the answer itself, so a player waits for the origin and nothing else.
    public func head(_ key: ObjectKey, timeout: Duration) async -> OriginHead? {
        let id = key.id.prefixID
        if timeout <= .zero { return state.withLock { $0.heads[id] } }
        return await timedWait(timeout, expire: { self.stopWaiting(id, $0) }) { waiter, deadline, c in
            let known = state.withLock { s -> OriginHead?? in
                if let head = s.heads[id] { return .some(head) }
                // The timer may have fired before this wait was registered.
                if Task.isCancelled || ContinuousClock.now >= deadline { return .some(nil) }
                s.headWaiters[id, default: [:]][waiter] = c
                return nil
            }
            if let known { c.resume(returning: known) }
        }
    }

    /// Waits until `key`'s job ends (done, failed, stopped for good) or `limit` passes,
    /// whichever is first; and not a moment longer than its progress needs to show that it
    /// cannot end in time:
    /// - when the origin has not begun to send the body by half the limit, the wait ends then;
    /// - once the body flows (judged over an eighth of the limit, or a quarter of the object),
    ///   a wait whose deadline comes before the job's projected end at its rate ends at once.
    /// Returns at once when no job for `key` is queued or running. A job sent back to the
    /// queue (a player's job took its place) keeps its waiters.
    public func ended(_ key: ObjectKey, within limit: Duration) async {
        let id = key.id.prefixID
        guard limit > .zero else { return }
        let expire: @Sendable (Int) -> Void = { waiter in
            guard self.state.withLock({ $0.bodyStarted[id] != nil }) else { return self.stopWaitingForEnd(id, [waiter]) }
            Task {
                try? await Task.sleep(for: limit / 2)
                self.stopWaitingForEnd(id, [waiter])
            }
        }
        await timedWait(limit / 2, expire: expire, cancel: { self.stopWaitingForEnd(id, [$0]) }) { waiter, halfway, c in
            let waiting = state.withLock { s -> Bool in
                guard let job = s.jobs[id], job.state == .queued || job.state == .running,
                    !Task.isCancelled, ContinuousClock.now < halfway
                else { return false }
                s.endWaiters[id, default: [:]][waiter] = EndWaiter(deadline: halfway + limit / 2, limit: limit, continuation: c)
                return true
            }
            if !waiting { c.resume() }
        }
    }

    /// A wait with a number of its own: `park` keeps the continuation where an event resumes
    /// it (or resumes it at once); `expire`, given the number, ends it after `timeout` (or
    /// decides what happens then), and `cancel` when the waiting task is cancelled, if nothing
    /// ended it before.
    private func timedWait<T: Sendable>(
        _ timeout: Duration, expire: @escaping @Sendable (Int) -> Void, cancel: (@Sendable (Int) -> Void)? = nil,
        park: (Int, ContinuousClock.Instant, CheckedContinuation<T, Never>) -> Void
    ) async -> T {
        let deadline = ContinuousClock.now + timeout
        let waiter = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            expire(waiter)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in park(waiter, deadline, c) }
        } onCancel: {
            (cancel ?? expire)(waiter)
        }
    }

    /// Takes every wait for `id`'s end (resumed by the caller, outside the lock): the job ended,
    /// or will not end soon (paused, cancelled).
    private static func takeEndWaiters(_ id: String, _ s: inout State) -> [CheckedContinuation<Void, Never>] {
        take(nil, of: id, from: &s.endWaiters).map(\.continuation)
    }

    /// Ends these waits for a job's end (timed out, cancelled, or too far from the end).
    private func stopWaitingForEnd(_ id: String, _ waiters: [Int]) {
        let ended = state.withLock { Self.take(waiters, of: id, from: &$0.endWaiters) }
        for w in ended { w.continuation.resume() }
    }

    /// Takes waits `numbers` (all when nil) of `id` out of `table`, dropping an emptied entry.
    private static func take<W>(_ numbers: [Int]?, of id: String, from table: inout [String: [Int: W]]) -> [W] {
        guard let numbers else { return table.removeValue(forKey: id).map { Array($0.values) } ?? [] }
        let taken = numbers.compactMap { table[id]?.removeValue(forKey: $0) }
        if table[id]?.isEmpty == true { table[id] = nil }
        return taken
    }

    /// The waits for `id`'s end whose deadline comes before the job's projected end.
    private static func outrun(_ id: String, _ job: PrepareJob, _ s: State, now: ContinuousClock.Instant) -> [Int] {
        guard let waiters = s.endWaiters[id], let start = s.bodyStarted[id], let length = job.length else { return [] }
        let got = job.bytesDone - start.bytes
        guard got > 0 else { return [] }
        let elapsed = now - start.at
        let projectedEnd = now + elapsed * (Double(length - job.bytesDone) / Double(got))
        // A rate over a moment (one piece after a stall) says little: judged only once it
        // covers an eighth of the wait, or a quarter of the object.
        let judged = 4 * got >= length - start.bytes
        return waiters.filter { (judged || elapsed >= $0.value.limit / 8) && $0.value.deadline < projectedEnd }.map(\.key)
    }

    /// Ends every wait for `id`'s head without an answer (its job was paused or cancelled
    /// before it ran).
    private func stopWaitingForHead(_ id: String) {
        let waiting = state.withLock { Self.take(nil, of: id, from: &$0.headWaiters) }
        for c in waiting { c.resume(returning: nil) }
    }

    /// Ends one wait for a head without an answer (timed out or cancelled).
    private func stopWaiting(_ id: String, _ waiter: Int) {
        let waiting = state.withLock { Self.take([waiter], of: id, from: &$0.headWaiters) }
        for c in waiting { c.resume(returning: nil) }
    }

    /// Records a job's head and hands back the waits it ends (resumed by the caller, outside the lock).
    private static func setHead(_ id: String, _ head: OriginHead, _ s: inout State) -> [CheckedContinuation<OriginHead?, Never>] {
        s.heads[id] = head
        return take(nil, of: id, from: &s.headWaiters)
    }

    /// Every job in queue order.
    public func jobs() -> [PrepareJob] {
        state.withLock { Array($0.jobs.values) }.sorted { ($0.sequence) < ($1.sequence) }
    }

    public func job(_ id: String) -> PrepareJob? { state.withLock { $0.jobs[id] } }

    /// The job of object `key`, if it has one.
    public func job(of key: ObjectKey) -> PrepareJob? { job(key.id.prefixID) }

    /// The state of the job of each object in `ids` (object ids), looked up together; nil
    /// where there is none.
    public func states(ofObjects ids: [String]) -> [PrepareJob.State?] {
        state.withLock { s in ids.map { id in s.jobs[id.prefixID].flatMap { $0.key.id == id ? $0.state : nil } } }
    }

    /// How many jobs run now, of every stream: a prepare whose jobs wait behind them is
    /// moving, if not yet its own.
    public var runningCount: Int { state.withLock { $0.running.count } }

    /// Pauses a queued or running job (a running one stops after its current piece and keeps
    /// its progress). Returns the job, or nil when there is no such job.
    public func pause(_ id: String) -> PrepareJob? {
        let (job, task, waiters) = state.withLock { s -> (PrepareJob?, Task<Void, Never>?, [CheckedContinuation<Void, Never>]) in
            guard var job = s.jobs[id], job.state == .queued || job.state == .running else { return (s.jobs[id], nil, []) }
            job.state = .paused
            s.jobs[id] = job
            return (job, Self.stop(id, &s), Self.takeEndWaiters(id, &s))
        }
        for c in waiters { c.resume() }
        if task == nil { stopWaitingForHead(id) }  // a running job's run ends them as it stops
        task?.cancel()
        if let job { save([job.id]) }
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
        if let job { save([job.id]) }
        wake.yield()
        return job
    }

    /// Cancels a job: it stops, its progress is dropped and the object is unknown again.
    public func cancel(_ id: String) -> PrepareJob? {
        let (job, cancelled, task, waiters) = state.withLock { s -> (PrepareJob?, Bool, Task<Void, Never>?, [CheckedContinuation<Void, Never>]) in
            guard var job = s.jobs[id], job.state != .done, !s.settling.contains(id) else { return (s.jobs[id], false, nil, []) }
            job.state = .cancelled
            job.restart()
            s.jobs[id] = job
            s.settling.insert(id)
            return (job, true, Self.stop(id, &s), Self.takeEndWaiters(id, &s))
        }
        for c in waiters { c.resume() }
        if task == nil { stopWaitingForHead(id) }
        task?.cancel()
        if let job, cancelled {
            // Its pieces go with its progress: now, when no run writes them (a running job's
            // go when its run has stopped).
            if task == nil { preparer.store.remove(job.key) }
            save([job.id])
            markObjects([job.id])
            settled(id)
        }
        wake.yield()
        return job
    }

    /// Marks the objects of the jobs `ids` in the registry as the jobs stand now: preparing
    /// while queued, running or paused; unknown once cancelled. (A done or failed job's mark
    /// is its run's end.)
    private func markObjects(_ ids: [String]) {
        registryMarks.withLock { _ in
            let (preparing, unknown) = state.withLock { s -> ([ObjectKey], [ObjectKey]) in
                var preparing: [ObjectKey] = [], unknown: [ObjectKey] = []
                for id in ids {
                    guard let job = s.jobs[id] else { continue }
                    switch job.state {
                    case .queued, .running, .paused: preparing.append(job.key)
                    case .cancelled: unknown.append(job.key)
                    case .done, .failed: break
                    }
                }
                return (preparing, unknown)
            }
            registry.markPreparing(preparing)
            for key in unknown { registry.markUnknown(key) }
        }
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
        // Stop what runs (taken out of `running` first, so that a stopped job is not taken
        // for a failed one), then write how far each got: it is queued again at the next start.
        let (ids, tasks) = state.withLock { s in
            let ids = Array(s.running.keys)
            return (ids, ids.compactMap { Self.stop($0, &s) })
        }
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
        save(ids)
    }

    /// Takes a running job's task out of `running` and marks it stopping.
    private static func stop(_ id: String, _ s: inout State) -> Task<Void, Never>? {
        guard let task = s.running.removeValue(forKey: id) else { return nil }
        s.stopping.insert(id)
        return task
    }

    /// Starts queued jobs while there is room. An urgent job (a player asked for it) that
    /// finds no room while read-ahead jobs run runs beyond `maxRunning`, by as many as there
    /// are read-ahead jobs running, rather than stop one: a stopped job resumes by range from
    /// its last whole piece, and what the origin had sent past it (for a segment, often all
    /// the rest, already in the socket) it would send again; even one the origin seems not to
    /// have answered may have its whole body on the way (an object of 20 kB came twice). Only
    /// past that is a read-ahead job sent back to the queue: one not answered yet if any, the
    /// one furthest ahead in playback order; it keeps its progress.
    private func startJobs() {
        // Jobs are not written as they start or go back to the queue: a job found running when
        // the storage is read again is queued anyway.
        let preempted = state.withLock { s -> [Task<Void, Never>] in
            var preempted: [Task<Void, Never>] = []
            while true {
                guard var next = s.jobs.firstQueued(where: { !s.stopping.contains($0) && s.unmarked[$0] == nil }) else { break }
                let busy = s.running.count + s.stopping.count
                if busy >= maxRunning {
                    let readAhead = s.running.keys.compactMap { s.jobs[$0] }.filter { !$0.urgent }
                    guard next.urgent, !readAhead.isEmpty else { break }
                    if busy >= maxRunning + readAhead.count {
                        // One not answered yet if any (a run that heard a 404 or a manifest ends
                        // by itself), the one furthest ahead.
                        let unanswered = readAhead.filter { s.bodyStarted[$0.id] == nil && s.heads[$0.id] == nil }
                        guard var victim = (unanswered.isEmpty ? readAhead : unanswered).max(by: { $0.sequence < $1.sequence }) else { break }
                        victim.state = .queued
                        s.jobs[victim.id] = victim
                        if let t = Self.stop(victim.id, &s) { preempted.append(t) }
                    }
                }
                next.state = .running
                s.jobs[next.id] = next
                let job = next
                s.running[job.id] = Task { await self.execute(job) }
                s.progressSaved[job.id] = .now
            }
            return preempted
        }
        for t in preempted { t.cancel() }
    }

    private func execute(_ job: PrepareJob) async {
        let id = job.id
        let outcome: Result<Preparer.Outcome, Preparer.Failure>
        do {
            outcome = .success(
                try await preparer.run(job, onHead: { [weak self] head in self?.heard(id, head) }) { [weak self] progress in
                    self?.record(progress)
                })
        } catch {
            outcome = .failure(error)
        }
        // A job that failed before the origin answered: its failure is the head waiters hear.
        var woken: [CheckedContinuation<OriginHead?, Never>] = []
        var failedHead: OriginHead?
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        defer {
            for c in woken { c.resume(returning: failedHead) }
            // After the registry heard the outcome, so that a waiter finds it there.
            for c in endWaiters { c.resume() }
        }
        let finished = state.withLock { s -> PrepareJob? in
            let stopped = s.stopping.remove(id) != nil
            s.progressSaved[id] = nil
            s.bodyStarted[id] = nil
            // A job sent back to the queue (preempted) runs again soon: its waiters stay.
            if s.jobs[id]?.state != .queued { endWaiters = Self.takeEndWaiters(id, &s) }
            // A run that was stopped (preempted, paused, cancelled) failed because it was
            // stopped, not because of the origin: that is no answer to give its waiters.
            if !stopped, case .failure(let f) = outcome {
                switch f.head {
                case .uncacheable, .manifest:
                    s.heldBack[id] = (.now + Self.uncacheableRetry, true)
                default:
                    s.heldBack[id] = (.now + Self.failureRetry, false)
                }
                if s.heads[id] == nil {
                    failedHead = f.head
                    woken = Self.setHead(id, f.head, &s)
                }
            } else if stopped, s.jobs[id]?.state != .queued {
                // Paused or cancelled: no answer is coming soon, so its waits end without one.
                woken = Self.take(nil, of: id, from: &s.headWaiters)
            }
            guard s.running[id] != nil else { return nil }  // paused, cancelled or preempted
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
            s.settling.insert(id)
            return current
        }
        if finished == nil, state.withLock({ $0.jobs[id]?.state == .cancelled }) {
            // Cancelled while it ran: its pieces go with its progress, now that nothing writes them.
            preparer.store.remove(job.key)
        }
        if let finished {
            defer { pruneFinished() }  // done or failed
            switch outcome {
            case .success(let o):
                registry.markReady(job.key, checksums: o.checksums, etag: o.etag, lastModified: o.lastModified, contentType: o.contentType, sourceURL: job.url)
                logger.info("prepared", metadata: ["object": "\(job.key)", "bytes": "\(o.checksums.layout.length)"])
            case .failure(let f):
                registry.markFailed(job.key, f.description)
                logger.warning("preparation failed", metadata: ["object": "\(job.key)", "error": "\(f)"])
            }
            save([finished.id])
            finishedObserver.withLock { $0 }?.call(ObjectRef(key: job.key, url: job.url))
            settled(id)  // after the end is told: a request meanwhile starts the next run
            trimIfDrained()
        }
        wake.yield()
    }

    /// Counts a job ended (unless `counting` is false); once the queue has drained after
    /// `trimAfter` of them, has the allocator give back its free memory, at most once a
    /// `trimInterval`. A queue that drained within the interval is trimmed at its end, if it
    /// is still drained then (else the next job's end trims it).
    private func trimIfDrained(counting: Bool = true) {
        enum Step { case none, trim, putOff(Duration) }
        let step = state.withLock { s -> Step in
            if counting { s.endedSinceTrim += 1 } else { s.trimPutOff = false }
            guard s.endedSinceTrim >= trimAfter, s.jobs.queuedCount == 0, s.running.isEmpty else { return .none }
            if let last = s.lastTrim, ContinuousClock.now - last < trimInterval {
                guard !s.trimPutOff else { return .none }
                s.trimPutOff = true
                return .putOff(trimInterval - (ContinuousClock.now - last))
            }
            s.endedSinceTrim = 0
            s.lastTrim = .now
            return .trim
        }
        switch step {
        case .none: return
        case .trim: giveBackFreeMemory()
        case .putOff(let wait):
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + wait.dispatchInterval) { [weak self] in
                self?.trimIfDrained(counting: false)
            }
        }
    }

    /// glibc's `malloc_trim`, on a utility thread: it walks every arena.
    public static let mallocTrim: @Sendable () -> Void = {
        DispatchQueue.global(qos: .utility).async { _ = swarmgate_malloc_trim() }
    }

    /// A job's end is recorded: the requests that came meanwhile are made now.
    private func settled(_ id: String) {
        let later = state.withLock { s in
            s.settling.remove(id)
            return s.afterSettling.removeValue(forKey: id)
        }
        if let later { enqueue(later.key, url: later.url, urgent: later.urgent, retry: later.retry) }
    }

    private func heard(_ id: String, _ head: OriginHead) {
        let woken = state.withLock { s -> [CheckedContinuation<OriginHead?, Never>] in
            guard s.running[id] != nil else { return [] }
            // Every run's body is timed, a resumed run's too (its head may be known already).
            if case .available = head { s.bodyStarted[id] = (.now, s.jobs[id]?.bytesDone ?? 0) }
            guard s.heads[id] == nil else { return [] }
            return Self.setHead(id, head, &s)
        }
        for c in woken { c.resume(returning: head) }
    }

    /// Keeps a running job's progress after each piece: in memory at once, on disk once
    /// `progressInterval` has passed since the last time.
    private func record(_ progress: PrepareJob) {
        let id = progress.id
        let (due, outrun) = state.withLock { s -> (Bool, [Int]) in
            guard s.running[id] != nil, var current = s.jobs[id], current.state == .running else { return (false, []) }
            current.bytesDone = progress.bytesDone
            current.digests = progress.digests
            current.length = progress.length
            current.validator = progress.validator
            s.jobs[id] = current
            let now = ContinuousClock.now
            let outrun = Self.outrun(id, current, s, now: now)
            guard now - (s.progressSaved[id] ?? now) >= Self.progressInterval else { return (false, outrun) }
            s.progressSaved[id] = now
            return (true, outrun)
        }
        if !outrun.isEmpty { stopWaitingForEnd(id, outrun) }
        if due { save([id]) }
    }

    /// Writes the jobs of `ids` as memory holds them now (those pruned since are not).
    private func save(_ ids: [String]) {
        jobWrites.withLock { _ in
            let jobs = state.withLock { s in ids.compactMap { s.jobs[$0] } }
            guard !jobs.isEmpty else { return }
            do {
                try storage.save(jobs: jobs)
                saveFailures.succeeded()
            } catch {
                saveFailures.failed(["jobs": "\(jobs.count)", "first": "\(jobs[0].id)", "error": "\(error)"])
            }
        }
    }
}

extension String {
    /// The job id of a key id.
    var prefixID: String { String(prefix(16)) }
}
