/// The prepare queue's jobs by id, with the queued ones kept in start order and the finished
/// ones oldest first, so that starting the next job and dropping the oldest finished ones look
/// at those jobs alone. Each job's start and end went through every job before: a 10,000-object
/// playlist's read-ahead cost 10,000 looks per object prepared.
struct JobTable {
    /// Where a queued job starts: urgent ones (a player waits) first, then in queue order.
    struct StartOrder: Comparable {
        let rank: UInt8
        let sequence: Int64
        let id: String

        init(_ job: PrepareJob) {
            rank = job.urgent ? 0 : 1
            sequence = job.sequence
            id = job.id
        }

        static func < (a: Self, b: Self) -> Bool { (a.rank, a.sequence, a.id) < (b.rank, b.sequence, b.id) }
    }

    /// A finished job's age: when it finished (its place in the queue was its age, and an old
    /// job resumed or retried was the oldest as it finished, dropped at once past
    /// `keepDone`; jobs loaded at start finish in queue order).
    struct Age: Comparable {
        let finish: Int64
        let id: String

        static func < (a: Self, b: Self) -> Bool { (a.finish, a.id) < (b.finish, b.id) }
    }

    private var byID: [String: PrepareJob] = [:]
    private var queued = SortedKeys<StartOrder>()
    private var finished = SortedKeys<Age>()
    /// When each finished job finished, by a count of jobs finished.
    private var finishedAt: [String: Int64] = [:]
    private var finishes: Int64 = 0

    subscript(id: String) -> PrepareJob? {
        get { byID[id] }
        set {
            assert(newValue.map { $0.id == id } ?? true, "job \(newValue?.id ?? "") kept under id \(id)")  // a debug check: a gateway does not stop for it
            let old = byID[id]
            byID[id] = newValue
            if let old, old.state == .queued { queued.remove(StartOrder(old)) }
            if let newValue, newValue.state == .queued { queued.insert(StartOrder(newValue)) }
            let stillFinished = newValue?.state.isFinished ?? false
            if old?.state.isFinished == true, !stillFinished, let at = finishedAt.removeValue(forKey: id) {
                finished.remove(Age(finish: at, id: id))
            }
            if stillFinished && finishedAt[id] == nil {
                finishes += 1
                finishedAt[id] = finishes
                finished.insert(Age(finish: finishes, id: id))
            }
        }
    }

    var values: Dictionary<String, PrepareJob>.Values { byID.values }

    /// The first queued job, in start order, that `eligible` accepts.
    func firstQueued(where eligible: (String) -> Bool) -> PrepareJob? {
        queued.first { eligible($0.id) }.flatMap { byID[$0.id] }
    }

    /// How many jobs are queued.
    var queuedCount: Int { queued.count }

    /// How many jobs are finished (done, failed, cancelled).
    var finishedCount: Int { finished.count }

    /// The ids of the `count` oldest finished jobs, passing over those `skip` names.
    func oldestFinished(_ count: Int, skipping skip: (String) -> Bool) -> [String] {
        var ids: [String] = []
        for age in finished.keys where !skip(age.id) {
            if ids.count == count { break }
            ids.append(age.id)
        }
        return ids
    }
}

/// Keys kept sorted in an array: found and placed by binary search. Jobs are mostly added in
/// order (a playlist's, one after the other), at the end.
struct SortedKeys<Key: Comparable> {
    private(set) var keys: [Key] = []

    var count: Int { keys.count }

    /// The first index whose key is not less than `key`.
    private func lowerBound(_ key: Key) -> Int {
        var low = 0
        var high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    mutating func insert(_ key: Key) {
        if let last = keys.last, last < key { return keys.append(key) }
        let i = lowerBound(key)
        if i < keys.count && keys[i] == key { return }
        keys.insert(key, at: i)
    }

    mutating func remove(_ key: Key) {
        let i = lowerBound(key)
        if i < keys.count && keys[i] == key { keys.remove(at: i) }
    }

    func first(where predicate: (Key) -> Bool) -> Key? { keys.first(where: predicate) }
}
