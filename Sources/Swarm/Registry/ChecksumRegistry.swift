import Foundation
import Logging
import PieceStore
import Synchronization

/// Per media object, whether its checksums are ready and what they are (SPEC section 3). The
/// registry computes them itself from the CDN copy (see `Preparer`), never takes them from a
/// peer. Reads come from memory; every change is written through to the storage. Entries
/// whose write failed (a full disk) go again with the next write, until one passes.
///
/// At most `capacity` ready entries are kept, the ones used last (`RecentTable`), and a tenth
/// as many others (failed, being prepared: a client asking for made-up paths churns only
/// those): every object a player ever asked for was kept for good, and grew a tracker's memory
/// and file without end (about 1 KB and 600 bytes each). An entry let go is deleted from the
/// storage and its pieces removed (`evicted`), a chunk at a time on a queue of its own (see
/// `evict`); it is prepared again if a player comes back for it.
public final class ChecksumRegistry: Sendable {
    /// The entries: ready ones and the others, each the ones used last.
    struct Entries {
        var ready: RecentTable<RegistryEntry>
        var other: RecentTable<RegistryEntry>
        /// Let go, and being deleted now (rows and pieces).
        var evicting: Set<String> = []
        /// Of those, made again meanwhile: their rows are written again after the delete.
        var revived: Set<String> = []

        init(capacity: Int) {
            ready = RecentTable(capacity: capacity)
            other = RecentTable(capacity: max(100, capacity / 10))
        }

        var count: Int { ready.count + other.count }
        var hasLetGo: Bool { ready.hasLetGo || other.hasLetGo }
        func peek(_ id: String) -> RegistryEntry? { ready.peek(id) ?? other.peek(id) }
        mutating func use(_ id: String) -> RegistryEntry? { ready.use(id) ?? other.use(id) }

        mutating func put(_ e: RegistryEntry) {
            let id = e.key.id
            if evicting.contains(id) { revived.insert(id) }
            if e.state == .ready {
                other.remove(id)
                ready.put(id, e)
            } else {
                ready.remove(id)
                other.put(id, e)
            }
        }
    }

    private let storage: any RegistryStorage
    private let entries: Mutex<Entries>
    /// Ids of entries changed in memory whose write failed.
    private let unsaved = Mutex<Set<String>>([])
    /// Held through each write of entries (`write(_:context:)`) and each delete.
    private let writing = Mutex<Void>(())
    /// Told of the objects let go but those being prepared (to remove their pieces), on the
    /// eviction queue.
    private let evicted: @Sendable ([ObjectKey]) -> Void
    /// Where what is let go is deleted: SQLite writes, not on Swift's few cooperative threads.
    private let evictions = DispatchQueue(label: "swarmgate.registry.evictions", qos: .utility)
    private let evictionScheduled = Atomic<Bool>(false)
    /// Let-go entries whose delete failed (a full disk), tried again with the next ones.
    private let undeleted = Mutex<Set<String>>([])
    private let logger: Logger
    private let writeFailures: RepeatedFailureLog
    /// Entries let go per turn of the eviction queue.
    static let evictionChunk = 250

    /// Opens the registry over `storage`, keeping `capacity` ready entries (at least 2) and a
    /// tenth as many others; of more stored, the most recently changed (the rest let go at
    /// once). `evicted` hears of the objects let go (but those being prepared), on a queue of the
    /// registry's own.
    public init(
        storage: any RegistryStorage, capacity: Int = 1_000_000, logger: Logger, evicted: @escaping @Sendable ([ObjectKey]) -> Void = { _ in }
    ) throws(RegistryError) {
        self.storage = storage
        self.logger = logger
        self.evicted = evicted
        let capacity = max(2, capacity)
        writeFailures = RepeatedFailureLog("registry write failed", logger: logger)
        let stored = try storage.loadEntries().sorted { $0.updated > $1.updated }
        var e = Entries(capacity: capacity)
        e.ready.load(stored.filter { $0.state == .ready }.map { ($0.key.id, $0) })
        e.other.load(stored.filter { $0.state != .ready }.map { ($0.key.id, $0) })
        let past = e.hasLetGo
        entries = Mutex(e)
        if past {
            logger.info("registry entries past its capacity let go", metadata: ["capacity": "\(capacity)"])
            scheduleEvictions()
        }
    }

    /// How many entries are kept.
    public var count: Int { entries.withLock { $0.count } }

    /// Whether an entry of `key` is kept, without counting a use.
    func holds(_ key: ObjectKey) -> Bool { entries.withLock { $0.peek(key.id) != nil } }

    /// Runs `body` on the entries, then has what a turn let go deleted.
    private func withEntries<T>(_ body: (inout Entries) -> T) -> T {
        let (result, letGo) = entries.withLock { e in (body(&e), e.hasLetGo) }
        if letGo { scheduleEvictions() }
        return result
    }

    private func scheduleEvictions() {
        guard evictionScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        evictions.async { self.evict() }
    }

    /// Deletes what is let go, a chunk at a time: its pieces and its rows. Not under the
    /// entries' lock (a chunk's unlinks and deletes took 18 ms on average, 50 at most: every
    /// request would wait, and a tracker letting half a million go would starve them); an
    /// entry made again while its chunk is under way (`revived`) has its row written again
    /// after it, and its pieces made since are fetched again when served (they are verified).
    private func evict() {
        evictionScheduled.store(false, ordering: .sequentiallyConsistent)
        // Deletes that failed before, a chunk at a time too.
        var retry = Array(undeleted.withLock { u in
            defer { u = [] }
            return u
        })
        var retryScheduled = false
        while true {
            let again = retry.prefix(Self.evictionChunk)
            retry.removeFirst(again.count)
            let (gone, ids, more) = entries.withLock { e -> ([RegistryEntry], [String], Bool) in
                var chunk = e.ready.takeLetGo(upTo: Self.evictionChunk).map(\.value)
                chunk += e.other.takeLetGo(upTo: Self.evictionChunk - chunk.count).map(\.value)
                let gone = chunk.filter { e.peek($0.key.id) == nil }
                let ids = gone.map(\.key.id) + again.filter { e.peek($0) == nil }
                e.evicting.formUnion(ids)
                return (gone, ids, e.hasLetGo)
            }
            // Not the pieces of an object being prepared: its job goes on, and makes the entry
            // again when it ends. (A failed or dropped one's are of no use.)
            let withPieces = gone.filter { $0.state != .preparing }.map(\.key)
            if !withPieces.isEmpty { evicted(withPieces) }
            var failure: RegistryError?
            // Under the writes' lock: a write that read one of these entries before it was let
            // go is not done after the delete (its row would stay).
            writing.withLock { _ in
                do { try storage.deleteEntries(ids) } catch { failure = RegistryError("\(error)") }
            }
            let revived = entries.withLock { e -> [String] in
                e.evicting.subtract(ids)
                let back = e.revived.intersection(ids)
                e.revived.subtract(back)
                return Array(back)
            }
            if !revived.isEmpty { write(revived, context: ["revived": "\(revived.count)"]) }
            if let failure {
                // Kept on disk meanwhile, and tried again in a while (or at the next start,
                // past the capacity).
                undeleted.withLock { $0.formUnion(ids) }
                writeFailures.failed(["evicted": "\(ids.count)", "error": "\(failure)"])
                if !retryScheduled { evictions.asyncAfter(deadline: .now() + 5) { self.scheduleEvictions() } }
                retryScheduled = true
            }
            if !more && retry.isEmpty { return }
        }
    }

    /// Counts these objects as used (nodes want or announce them: the swarm plays them).
    public func touch(_ ids: some Sequence<String>) {
        withEntries { e in for id in ids { _ = e.use(id) } }
    }

    public func entry(_ key: ObjectKey) -> RegistryEntry? {
        withEntries { $0.use(key.id) }
    }

    /// The entry of `key` and its checksums, when it is ready.
    public func ready(_ key: ObjectKey) -> (entry: RegistryEntry, checksums: PieceChecksums)? { ready(id: key.id) }

    /// The entry of the object with id `id` and its checksums, when it is ready.
    public func ready(id: String) -> (entry: RegistryEntry, checksums: PieceChecksums)? {
        withEntries { e in e.use(id).flatMap { entry in entry.state == .ready ? entry.checksums.map { (entry, $0) } : nil } }
    }

    /// Which of `ids` are ready, looked up together (not counted as used: a status poll).
    public func readyIDs(_ ids: [String]) -> Set<String> {
        entries.withLock { e in Set(ids.filter { id in e.peek(id).map { $0.state == .ready && $0.checksums != nil } ?? false }) }
    }

    /// Those of `ids` whose last preparation failed (not counted as used).
    public func failedIDs(_ ids: [String]) -> Set<String> {
        entries.withLock { e in Set(ids.filter { e.peek($0)?.state == .failed }) }
    }

    /// The checksums of `key`, when it is ready.
    public func checksums(_ key: ObjectKey) -> PieceChecksums? { ready(key)?.checksums }

    /// The answer a ready `key` gets (to a node's `sums`, or a player's request here).
    public func readyAnswer(_ key: ObjectKey) -> ChecksumAnswer? {
        ready(key).map { ChecksumAnswer(ready: $0.entry, checksums: $0.checksums) }
    }

    /// Records a change to `key`'s entry and writes it through.
    func update(_ key: ObjectKey, _ change: (inout RegistryEntry) -> Void) {
        update([key]) { _, e in
            change(&e)
            return true
        }
    }

    /// Records a change to each of `keys`' entries and writes them through in one go. An entry
    /// whose `change` returns false is left as it was, in memory and on disk.
    private func update(_ keys: [ObjectKey], _ change: (Int, inout RegistryEntry) -> Bool) {
        guard !keys.isEmpty else { return }
        let now = Date()
        let changed = withEntries { all -> [String] in
            keys.enumerated().compactMap { i, key -> String? in
                var e = all.use(key.id) ?? RegistryEntry(key: key)
                guard change(i, &e) else { return nil }
                e.updated = now
                all.put(e)
                return key.id
            }
        }
        // Even with nothing changed: earlier changes whose write failed go with it.
        write(changed, context: ["objects": "\(keys.count)", "first": "\(keys[0])"])
    }

    /// Writes the entries of `ids` as memory holds them when the write begins, with those whose
    /// write failed before, one write at a time: two changes to one entry made in one order are
    /// never written in the other (a write of what memory held earlier cannot come last).
    private func write(_ ids: [String], context: Logger.Metadata) {
        writing.withLock { _ in
            let backlog = unsaved.withLock { u in
                defer { u = [] }
                return u
            }
            // Those let go since are not written (their rows are deleted).
            let rows = entries.withLock { e in backlog.union(ids).compactMap { e.peek($0) } }
            guard !rows.isEmpty else { return }
            do {
                try storage.save(rows)
                writeFailures.succeeded()
            } catch {
                unsaved.withLock { $0.formUnion(rows.map(\.key.id)) }
                writeFailures.failed(context.merging(["error": "\(error)"]) { $1 })
            }
        }
    }

    /// Objects queued for preparation (one write for them all).
    func markPreparing(_ keys: [ObjectKey]) {
        update(keys) { _, e in
            if e.state != .ready { e.state = .preparing }
            return true
        }
    }

    /// An object's checksums and validators, as a ready entry holds them.
    struct Ready {
        var key: ObjectKey
        var checksums: PieceChecksums
        var etag: String? = nil
        var lastModified: String? = nil
        var contentType: String? = nil
        var sourceURL: String? = nil
    }

    func markReady(_ key: ObjectKey, checksums: PieceChecksums, etag: String?, lastModified: String?, contentType: String?, sourceURL: String? = nil) {
        markReady([Ready(key: key, checksums: checksums, etag: etag, lastModified: lastModified, contentType: contentType, sourceURL: sourceURL)])
    }

    /// Several objects ready at once: one write.
    func markReady(_ ready: [Ready]) {
        update(ready.map(\.key)) { i, e in
            e.state = .ready
            e.checksums = ready[i].checksums
            e.etag = ready[i].etag
            e.lastModified = ready[i].lastModified
            e.contentType = ready[i].contentType
            e.sourceURL = ready[i].sourceURL
            e.error = nil
            return true
        }
    }

    func markFailed(_ key: ObjectKey, _ reason: String) {
        update(key) { e in
            e.state = .failed
            e.checksums = nil
            e.error = reason
        }
    }

    /// Forgets the checksums of `key` (the origin's copy changed, or its job was cancelled).
    func markUnknown(_ key: ObjectKey) {
        update(key) { e in
            e.state = .unknown
            e.checksums = nil
        }
    }

    /// Forgets the checksums of `key` if they are `copy` (the origin's copy changed), in one
    /// step: of requests that find the same copy changed at once, one drops it, and none drops
    /// the new copy that a preparation made ready meanwhile. Returns whether it dropped them.
    func drop(_ key: ObjectKey, ifCopy copy: PieceChecksums) -> Bool {
        var dropped = false
        update([key]) { _, e in
            guard e.state == .ready, e.checksums == copy else { return false }
            e.state = .unknown
            e.checksums = nil
            dropped = true
            return true
        }
        return dropped
    }

    /// Throws when the storage does not answer (for `/ready`).
    public func ping() throws(RegistryError) { try storage.ping() }
}
