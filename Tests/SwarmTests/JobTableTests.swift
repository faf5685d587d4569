import PieceStore
@testable import Swarm
import TestScratch
import Testing

/// The prepare queue's job table against the scan it replaced: after any run of changes (jobs
/// added, queued, started, made urgent, finished, queued again, dropped), the job it starts
/// next and the finished jobs it drops are the ones a look through every job finds.
@Suite("Job table")
struct JobTableTests {
    func job(_ i: Int, sequence: Int64) -> PrepareJob {
        PrepareJob(key: ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg-\(i).ts"), url: "http://cdn.example.com/seg-\(i).ts", pieceSize: 1024, sequence: sequence)
    }

    /// The next job to start, by looking at every job (as `startJobs` did).
    func scanFirstQueued(_ jobs: [String: PrepareJob], eligible: (String) -> Bool) -> PrepareJob? {
        jobs.values.filter { $0.state == .queued && eligible($0.id) }
            .min { ($0.urgent ? 0 : 1, $0.sequence, $0.id) < ($1.urgent ? 0 : 1, $1.sequence, $1.id) }
    }

    /// The `count` finished jobs not skipped that finished first, by looking at every job
    /// (`finishedAt`: when each finished, by a count of finishes).
    func scanOldestFinished(_ jobs: [String: PrepareJob], _ finishedAt: [String: Int], _ count: Int, skipping skip: (String) -> Bool) -> [String] {
        jobs.values.filter { $0.state.isFinished && !skip($0.id) }
            .sorted { (finishedAt[$0.id]!, $0.id) < (finishedAt[$1.id]!, $1.id) }.prefix(count).map(\.id)
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func theNextJobAndTheOldestFinishedAreThoseAScanFinds(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var table = JobTable()
        var model: [String: PrepareJob] = [:]
        var sequence: Int64 = 0
        var finishedAt: [String: Int] = [:]
        var finishes = 0
        let states: [PrepareJob.State] = [.queued, .running, .paused, .done, .failed, .cancelled]
        for step in 0..<4000 {
            let i = Int.random(in: 0..<300, using: &random)
            let id = job(i, sequence: 0).id
            var changed: PrepareJob?
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                changed = nil  // dropped
            case 1, 2:
                // Added anew (a sequence of its own; sometimes one another job has, as jobs
                // read back from an older queue may).
                sequence += 1
                changed = job(i, sequence: Int.random(in: 0..<5, using: &random) == 0 ? sequence / 2 : sequence)
                changed?.urgent = Bool.random(using: &random)
            default:
                guard var existing = model[id] else { continue }
                if Bool.random(using: &random) { existing.urgent.toggle() }
                existing.state = states.randomElement(using: &random)!
                changed = existing
            }
            table[id] = changed
            // A job's age is when it finished: kept while it stays finished, new when it
            // finishes again.
            if changed?.state.isFinished != true {
                finishedAt[id] = nil
            } else if model[id]?.state.isFinished != true {
                finishes += 1
                finishedAt[id] = finishes
            }
            model[id] = changed
            #expect(table[id]?.state == model[id]?.state)

            let excluded = Set((0..<20).map { _ in job(Int.random(in: 0..<300, using: &random), sequence: 0).id })
            let expected = scanFirstQueued(model) { !excluded.contains($0) }
            let found = table.firstQueued { !excluded.contains($0) }
            #expect(found?.id == expected?.id, "step \(step): started \(found?.id ?? "none"), a scan finds \(expected?.id ?? "none")")
            let count = Int.random(in: 0..<40, using: &random)
            #expect(table.oldestFinished(count) { excluded.contains($0) } == scanOldestFinished(model, finishedAt, count) { excluded.contains($0) }, "step \(step)")
            #expect(table.finishedCount == model.values.filter { $0.state.isFinished }.count)
            #expect(table.queuedCount == model.values.filter { $0.state == .queued }.count, "step \(step)")
        }
        #expect(Set(table.values.map(\.id)) == Set(model.keys))
    }

    /// An old job that finishes last (resumed, or retried by an operator) is the youngest
    /// finished: it was aged by its place in the queue, and past `keepDone` finished jobs it
    /// left `/jobs` the moment it finished.
    @Test func aJobIsAsOldAsItsFinish() {
        var table = JobTable()
        var jobs = (0..<3).map { job($0, sequence: Int64($0 + 1)) }
        jobs[0].state = .paused
        table[jobs[0].id] = jobs[0]
        for i in 1..<3 {
            jobs[i].state = .done
            table[jobs[i].id] = jobs[i]
        }
        jobs[0].state = .done
        table[jobs[0].id] = jobs[0]
        #expect(table.oldestFinished(2) { _ in false } == [jobs[1].id, jobs[2].id])
        // A finished job changed while finished keeps its age; queued again and finished, it
        // is new again.
        jobs[1].state = .failed
        table[jobs[1].id] = jobs[1]
        #expect(table.oldestFinished(1) { _ in false } == [jobs[1].id])
        jobs[1].state = .queued
        table[jobs[1].id] = jobs[1]
        jobs[1].state = .done
        table[jobs[1].id] = jobs[1]
        #expect(table.oldestFinished(3) { _ in false } == [jobs[2].id, jobs[0].id, jobs[1].id])
    }
}
