import Foundation
import Logging
import Origin
import PieceStore
import TestScratch
@testable import Swarm
import Synchronization
import Testing

/// The prepare queue over a real SQLite registry file: what it keeps of finished jobs.
@Suite("Prepare queue")
struct PrepareQueueTests {
    let folder = Scratch.path("pq")
    let logger = Logger(label: "test")

    func key(_ i: Int) -> ObjectKey { ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg-\(i).ts") }

    func queue(
        _ storage: any RegistryStorage, registry: ChecksumRegistry, keepDone: Int, origin: OriginClient = OriginClient(),
        trimAfter: Int = 1000, trimInterval: Duration = .seconds(10), giveBackFreeMemory: @escaping @Sendable () -> Void = {}
    ) throws -> PrepareQueue {
        let store = try PieceStore(directory: folder + "/cache", capacity: 1 << 20, logger: logger)
        let preparer = Preparer(origin: origin, store: store, maxObjectSize: 1 << 20, logger: logger)
        return try PrepareQueue(
            registry: registry, storage: storage, preparer: preparer, pieceSize: 1024, maxRunning: 1, keepDone: keepDone,
            trimAfter: trimAfter, trimInterval: trimInterval, giveBackFreeMemory: giveBackFreeMemory, logger: logger)
    }

    /// Queues `k` on `q` from a thread of its own, held before the queuing's registry marks and
    /// writes (`beforeMarks`), as a thread preempted there would be; returns once it is held.
    /// The function returned lets it go on and returns once it has ended. Waits are bounded:
    /// a failing run ends rather than hangs.
    func queuingHeldBeforeItsWrites(_ q: PrepareQueue, _ k: ObjectKey) throws -> () throws -> Void {
        let (reached, go, queued) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        q.beforeMarks.withLock {
            $0 = { _ in
                reached.signal()
                _ = go.wait(timeout: .now() + 60)
            }
        }
        Thread.detachNewThread {
            q.enqueue(k, url: "http://cdn.example.com\(k.path)", urgent: false)
            queued.signal()
        }
        try #require(reached.wait(timeout: .now() + 60) == .success, "the queuing reached its writes")
        q.beforeMarks.withLock { $0 = nil }  // only this queuing is held
        return {
            go.signal()
            try #require(queued.wait(timeout: .now() + 60) == .success, "the queuing ended")
        }
    }

    @Test func finishedJobsBeyondTheLimitAreDroppedAndTheirObjectsStayReady() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = try SQLiteRegistryStorage(path: folder + "/registry.sqlite")
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let layout = PieceLayout(length: 10, pieceSize: 1024)
        let checksums = PieceChecksums(layout: layout, digests: [SHA256.hash(Array(repeating: 1, count: 10))])!
        for i in 0..<30 {
            var job = PrepareJob(key: key(i), url: "http://cdn.example.com/seg-\(i).ts", pieceSize: 1024, sequence: Int64(i + 1))
            job.state = .done
            try storage.save(jobs: [job])
            registry.markReady(key(i), checksums: checksums, etag: nil, lastModified: nil, contentType: nil)
        }
        let q = try queue(storage, registry: registry, keepDone: 10)
        let kept = q.jobs()
        #expect(kept.count == 10)
        #expect(kept.map(\.sequence) == Array(21...30), "the newest are kept")
        #expect(try storage.loadJobs().count == 10, "and only they stay on disk")
        // A dropped job's object is still ready: asking again queues nothing.
        let again = q.enqueue(key(0), url: "http://cdn.example.com/seg-0.ts", urgent: false)
        #expect(again.state == .done)
        #expect(q.jobs().count == 10)
        #expect(registry.checksums(key(0)) == checksums)
    }

    /// Failed and cancelled jobs count among the finished ones kept: a flood of objects an
    /// origin lacks no longer stays in the jobs table for good. Queued jobs are never dropped.
    @Test func failedAndCancelledJobsBeyondTheLimitAreDroppedToo() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = try SQLiteRegistryStorage(path: folder + "/registry-failed.sqlite")
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let states: [PrepareJob.State] = [.failed, .cancelled, .queued]
        for i in 0..<30 {
            var job = PrepareJob(key: key(i), url: "http://cdn.example.com/seg-\(i).ts", pieceSize: 1024, sequence: Int64(i + 1))
            job.state = states[i % 3]
            try storage.save(jobs: [job])
        }
        let q = try queue(storage, registry: registry, keepDone: 10)
        let kept = q.jobs()
        #expect(kept.filter { $0.state == .queued }.count == 10, "queued jobs stay")
        let finished = kept.filter { $0.state != .queued }
        #expect(finished.count == 10 && finished.map(\.sequence).min() ?? 0 > 14, "the newest finished: \(finished.map(\.sequence))")
        #expect(try storage.loadJobs().count == 20)
    }

    /// A request waiting for a job to end (`--await-preparation`) is let go when the job is
    /// paused: it will not end soon. (The queue is not run here, so the job stays queued.)
    @Test func aWaitForAJobsEndEndsWhenTheJobIsPaused() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = try SQLiteRegistryStorage(path: folder + "/registry.sqlite")
        let q = try queue(storage, registry: try ChecksumRegistry(storage: storage, logger: logger), keepDone: 10)
        let job = q.enqueue(key(1), url: "http://cdn.example.com/seg-1.ts", urgent: true)
        let waiting = Task {
            let start = ContinuousClock.now
            await q.ended(key(1), within: .seconds(30))
            return ContinuousClock.now - start
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(q.pause(job.id)?.state == .paused)
        // Without the pause only the timer would end it: at half the limit, 15 s, as no body came.
        #expect(await waiting.value < .seconds(10))
    }

    /// A run stopped before the origin answered (preempted by a player's job, or paused) tells
    /// its object's waiters nothing: the origin did not fail it. A player asking for a
    /// read-ahead object whose run was preempted got a 502 ("the fetch was cancelled") from
    /// the failure such a run left as the origin's answer.
    @Test func aRunStoppedBeforeTheOriginAnsweredLeavesNoFailureBehind() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let silent = try LoopbackListener()  // connections wait in its backlog, never answered
        var configuration = OriginClient.Configuration()
        configuration.addressPolicy = AddressPolicy(allowOrigins: [AllowedOrigin("127.0.0.1:\(silent.port)")!])
        let storage = try SQLiteRegistryStorage(path: folder + "/registry.sqlite")
        let q = try queue(storage, registry: try ChecksumRegistry(storage: storage, logger: logger), keepDone: 10, origin: OriginClient(configuration: configuration))
        let running = Task { try await q.run() }
        defer { running.cancel() }
        func url(_ i: Int) -> String { "http://127.0.0.1:\(silent.port)/seg-\(i).ts" }
        func until(_ condition: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while !condition() {
                guard ContinuousClock.now < deadline else { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let readAhead = q.enqueue(key(0), url: url(0), urgent: false)
        try await until { q.job(readAhead.id)?.state == .running }
        // One job runs at a time, and a player's runs beside a read-ahead one: a second
        // player's sends the read-ahead one back to the queue.
        let beside = q.enqueue(key(3), url: url(3), urgent: true)
        try await until { q.job(beside.id)?.state == .running && q.job(readAhead.id)?.state == .running }
        let player = q.enqueue(key(1), url: url(1), urgent: true)
        try await until { q.job(player.id)?.state == .running && q.job(readAhead.id)?.state == .queued }
        try await Task.sleep(for: .milliseconds(300))  // the stopped run has ended
        #expect(await q.head(key(0), timeout: .zero) == nil, "no answer from the origin yet")
        // A wait for a job's first answer ends without one when the job is paused (running,
        // or waiting in the queue), long before its own 60 s.
        func pausingEndsTheWaitForTheHead(of job: PrepareJob) async throws {
            let waiting = Task { await q.head(job.key, timeout: .seconds(60)) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(q.pause(job.id)?.state == .paused)
            // Bounds the test: a wait still under way after 20 s is cancelled, a failure.
            let watch = Task {
                try? await Task.sleep(for: .seconds(20))
                if Task.isCancelled { return false }
                waiting.cancel()
                return true
            }
            #expect(await waiting.value == nil)
            watch.cancel()
            #expect(await watch.value == false, "the wait ended only when cancelled")
        }
        try await pausingEndsTheWaitForTheHead(of: player)
        #expect(await q.head(key(1), timeout: .zero) == nil, "no answer from the origin yet")
        // The read-ahead job runs again once the players' are paused: a third one waits.
        #expect(q.pause(beside.id)?.state == .paused)
        try await until { q.job(readAhead.id)?.state == .running }
        let waitingJob = q.enqueue(key(2), url: url(2), urgent: false)
        try await Task.sleep(for: .milliseconds(100))
        #expect(q.job(waitingJob.id)?.state == .queued)
        try await pausingEndsTheWaitForTheHead(of: waitingJob)
    }

    /// Checksums the tracker sends together are kept together: each one ready at once, and
    /// all of them on disk for the next start.
    @Test func objectsMadeReadyTogetherAreAllKept() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/registry.sqlite"
        let registry = try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: path), logger: logger)
        let sums = (0..<5).map { i in
            PieceChecksums(layout: PieceLayout(length: 10, pieceSize: 1024), digests: [SHA256.hash(Array(repeating: UInt8(i), count: 10))])!
        }
        registry.markReady(sums.indices.map { ChecksumRegistry.Ready(key: key($0), checksums: sums[$0], etag: "\"v\($0)\"") })
        for i in sums.indices { #expect(registry.checksums(key(i)) == sums[i]) }
        let reopened = try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: path), logger: logger)
        for i in sums.indices {
            #expect(reopened.checksums(key(i)) == sums[i])
            #expect(reopened.entry(key(i))?.etag == "\"v\(i)\"")
        }
        #expect(reopened.checksums(key(5)) == nil)
    }

    /// A long playlist's read-ahead is queued in one call: every object in playback order, on
    /// disk for the next start, each marked preparing; queuing it again changes nothing.
    @Test func aPlaylistsObjectsAreQueuedTogetherInOrder() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/registry.sqlite"
        let storage = try SQLiteRegistryStorage(path: path)
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let q = try queue(storage, registry: registry, keepDone: 10)
        let objects = (0..<2000).map { (key: key($0), url: "http://cdn.example.com/seg-\($0).ts") }
        let jobs = q.enqueue(objects, urgent: false)
        #expect(jobs.map(\.key) == objects.map(\.key))
        #expect(jobs.map(\.sequence) == Array(1...2000))
        #expect(objects.allSatisfy { registry.entry($0.key)?.state == .preparing })
        let again = q.enqueue(Array(objects.prefix(10)) + [(key: key(2000), url: "http://cdn.example.com/seg-2000.ts")], urgent: false)
        #expect(again.map(\.sequence) == Array(1...10) + [2001], "queued ones keep their place; a new one goes last")
        let stored = try SQLiteRegistryStorage(path: path).loadJobs()
        #expect(stored.count == 2001)
        #expect(stored.map(\.key) == objects.map(\.key) + [key(2000)])
        #expect(stored.allSatisfy { $0.state == .queued && !$0.urgent })
    }

    /// Jobs that fail at once (a host the gateway may not fetch), queued while the runner
    /// starts and fails the ones before, on a disk whose writes stall: each object ends
    /// `failed` in the registry and its job `failed` on disk, never `preparing` / `queued`
    /// written over the outcome. (A job could start while its queuing was still being
    /// written, and the write came last.)
    @Test func aJobThatFailsAtOnceLeavesItsObjectFailed() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = ChecksumRegistryTests.FlakyStorage(try SQLiteRegistryStorage(path: folder + "/registry-instant.sqlite"), slowStart: 300)
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let q = try queue(storage, registry: registry, keepDone: 1000)  // the default policy refuses loopback
        let running = Task { try await q.run() }
        defer { running.cancel() }
        let keys = (0..<200).map(key)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                for (i, k) in keys.enumerated() {
                    q.enqueue(k, url: "http://127.0.0.1:1/seg-\(i).ts", urgent: true)
                    usleep(UInt32.random(in: 0...1000))
                }
                done.resume()
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)  // a full run on two cores starts every suite at once
        while q.jobs().contains(where: { !$0.state.isFinished }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(q.jobs().filter { $0.state == .failed }.count == keys.count)
        let states = keys.map { registry.entry($0)?.state }
        #expect(states.allSatisfy { $0 == .failed }, "not failed: \(states.indices.filter { states[$0] != .failed })")
        let onDisk = try SQLiteRegistryStorage(path: folder + "/registry-instant.sqlite")
        #expect(try onDisk.loadJobs().filter { $0.state != .failed }.map(\.key.path) == [], "queued again on disk")
        #expect(try onDisk.loadEntries().filter { $0.state != .failed }.map(\.key.path) == [], "preparing on disk")
    }

    /// A job paused while its queuing is still being written stays paused on disk: the
    /// queuing's write (of the job as it was queued) came last, and the next start ran a job
    /// the operator had paused. The queuing is held before its writes (`beforeMarks`).
    @Test func aJobPausedWhileItsQueuingIsWrittenStaysPausedOnDisk() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/registry-paused.sqlite"
        let storage = try SQLiteRegistryStorage(path: path)
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let q = try queue(storage, registry: registry, keepDone: 10)  // not run: the job stays queued
        let release = try queuingHeldBeforeItsWrites(q, key(7))
        let id = key(7).id.prefixID
        #expect(q.pause(id)?.state == .paused)
        try release()
        #expect(try SQLiteRegistryStorage(path: path).loadJobs().map(\.state) == [.paused])
        #expect(q.job(id)?.state == .paused)
        #expect(registry.entry(key(7))?.state == .preparing, "a paused job's object is still being prepared")
    }

    /// An operator's retry of a failed job that comes while the failure is being recorded
    /// (the registry's write of it is held) runs the job again once it is. It was answered
    /// with the failure and nothing more: the job stayed failed until asked for again.
    @Test func aRetryWhileAFailureIsRecordedRunsTheJobAgain() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = ChecksumRegistryTests.FlakyStorage(try SQLiteRegistryStorage(path: folder + "/registry-settling.sqlite"))
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let q = try queue(storage, registry: registry, keepDone: 10)  // the default policy refuses loopback: each run fails at once
        let ends = Atomic<Int>(0)
        q.onFinished { _ in ends.add(1, ordering: .sequentiallyConsistent) }
        let running = Task { try await q.run() }
        defer { running.cancel() }
        let k = key(9)
        let id = k.id.prefixID
        let url = "http://127.0.0.1:1/seg-9.ts"
        storage.holdFailures.store(true, ordering: .sequentiallyConsistent)
        q.enqueue(k, url: url, urgent: false, retry: true)
        // Generous: in a full run, with every suite starting at once on two cores, a run that
        // fails at once took 15 s to end.
        let deadline = ContinuousClock.now + .seconds(60)
        while q.job(id)?.state != .failed, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(q.job(id)?.state == .failed)
        #expect(ends.load(ordering: .sequentiallyConsistent) == 0, "the failure is being recorded")
        q.enqueue(k, url: url, urgent: false, retry: true)
        storage.holdFailures.store(false, ordering: .sequentiallyConsistent)
        while ends.load(ordering: .sequentiallyConsistent) < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ends.load(ordering: .sequentiallyConsistent) == 2, "the retry ran the job again")
        #expect(q.job(id)?.state == .failed)
        #expect(registry.entry(k)?.state == .failed)
    }

    /// A cancel that lands between a prepare's queuing and its mark in the registry (the
    /// queuing's thread held there, as a preempted one would be): the registry says the object
    /// is unknown, as its cancelled job is. The queuing's mark came last and said preparing.
    /// (The queue is not run here, so the job never starts.)
    @Test func aCancelBetweenAQueuingAndItsMarkLeavesTheObjectUnknown() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = try SQLiteRegistryStorage(path: folder + "/registry-marks.sqlite")
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let q = try queue(storage, registry: registry, keepDone: 10)
        let k = key(5)
        let release = try queuingHeldBeforeItsWrites(q, k)
        #expect(q.cancel(k.id.prefixID)?.state == .cancelled)
        #expect(registry.entry(k)?.state == .unknown, "the cancel's mark")
        try release()
        #expect(q.job(k.id.prefixID)?.state == .cancelled)
        #expect(registry.entry(k)?.state == .unknown, "the registry says what the job is")
    }

    /// Once the queue has drained after `trimAfter` jobs ended, the allocator is asked once to
    /// give back the memory it keeps free; not while jobs are left, and not again for a batch
    /// that ends within `trimInterval`. (Each job here fails at once: the default policy
    /// refuses loopback origins.)
    @Test func aDrainedQueueGivesBackFreeMemoryOnceAfterABatch() async throws {
        let (q, counts) = try trimmingQueue("registry-trim", interval: .seconds(600))
        let running = Task { try await q.run() }
        defer { running.cancel() }
        try await drain(q, 0..<40)
        #expect(counts.trims == 0, "40 jobs: fewer than 50")
        try await drain(q, 40..<100)
        try await counts.wait(for: 1)
        #expect(counts.trims == 1, "once, when 100 had ended")
        #expect(counts.left == 0, "with no job left")
        try await drain(q, 100..<160)
        try await Task.sleep(for: .milliseconds(100))
        #expect(counts.trims == 1, "not again within the interval")
    }

    /// A queue that drains again within the interval is trimmed at the interval's end: before,
    /// it waited for another job to end, which an idle gateway may not see for hours.
    @Test func aQueueDrainedWithinTheIntervalIsTrimmedAtItsEnd() async throws {
        let (q, counts) = try trimmingQueue("registry-trim-later", interval: .seconds(3))
        let running = Task { try await q.run() }
        defer { running.cancel() }
        try await drain(q, 0..<60)
        try await counts.wait(for: 1)
        let first = ContinuousClock.now
        try await drain(q, 60..<120)
        try await counts.wait(for: 2)
        #expect(counts.trims == 2, "once more, for the second batch")
        #expect(ContinuousClock.now - first >= .milliseconds(2900), "at the interval's end, not before")
        #expect(counts.left == 0, "with no job left")
    }

    /// A queue whose memory trims are counted (`trimAfter` 50), with the jobs left at each.
    func trimmingQueue(_ name: String, interval: Duration) throws -> (PrepareQueue, TrimCounts) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = try SQLiteRegistryStorage(path: folder + "/\(name).sqlite")
        let registry = try ChecksumRegistry(storage: storage, logger: logger)
        let counts = TrimCounts()
        let q = try queue(storage, registry: registry, keepDone: 1000, trimAfter: 50, trimInterval: interval) { counts.trimmed() }
        counts.queue.withLock { $0 = q }
        return (q, counts)
    }

    /// Queues `range`'s objects and waits until every job has ended.
    func drain(_ q: PrepareQueue, _ range: Range<Int>) async throws {
        q.enqueue(range.map { (key($0), "http://127.0.0.1:1/seg-\($0).ts") }, urgent: false)
        let deadline = ContinuousClock.now + .seconds(60)  // a full run starts every suite at once
        while q.jobs().contains(where: { !$0.state.isFinished }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(!q.jobs().contains { !$0.state.isFinished }, "the batch ended")
    }
}

/// How many times a queue had the allocator trimmed, and how many jobs were left unfinished
/// at those times.
final class TrimCounts: Sendable {
    let queue = Mutex<PrepareQueue?>(nil)
    private let count = Atomic<Int>(0)
    private let unfinished = Atomic<Int>(0)

    var trims: Int { count.load(ordering: .sequentiallyConsistent) }
    var left: Int { unfinished.load(ordering: .sequentiallyConsistent) }

    func trimmed() {
        count.add(1, ordering: .sequentiallyConsistent)
        unfinished.add(queue.withLock { $0 }?.jobs().count { !$0.state.isFinished } ?? 0, ordering: .sequentiallyConsistent)
    }

    /// Waits up to 10 s for `n` trims.
    func wait(for n: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while trims < n, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }
}
