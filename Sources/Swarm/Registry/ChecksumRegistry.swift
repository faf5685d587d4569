import Foundation
import Logging
import PieceStore
import Synchronization

/// Per media object, whether its checksums are ready and what they are (SPEC section 3). The
/// registry computes them itself from the CDN copy (see `Preparer`), never takes them from a
/// peer. Reads come from memory; every change is written through to the storage. Entries
/// whose write failed (a full disk) go again with the next write, until one passes.
///
/// At most `capacity` entries are kept, the ones used last (`RecentTable`): every object a
/// player ever asked for, kept for good, grew a tracker's memory and file without end (about
/// 1 KB and 600 bytes each), and a client asking for made-up paths grew them as fast as the
/// origin answered 404s. An entry let go is deleted from the storage and its owner told
/// (`onEvicted`); the object is prepared again if a player comes back for it.
public final class ChecksumRegistry: Sendable {
    private let storage: any RegistryStorage
    /// The entries, the ones used last (an entry being prepared is carried over, its job
    /// under way).
    private let entries: Mutex<RecentTable<RegistryEntry>>
    /// Ids of entries changed in memory whose write failed.
    private let unsaved = Mutex<Set<String>>([])
    private let evictedObserver = Mutex<(@Sendable ([ObjectKey]) -> Void)?>(nil)
    private let logger: Logger
    private let writeFailures: RepeatedFailureLog
    public let capacity: Int

    /// Opens the registry over `storage`, keeping at most `capacity` entries (at least 2): of
    /// more stored, the most recently changed.
    public init(storage: any RegistryStorage, capacity: Int = 1_000_000, logger: Logger) throws(RegistryError) {
        self.storage = storage
        self.logger = logger
        self.capacity = max(2, capacity)
        writeFailures = RepeatedFailureLog("registry write failed", logger: logger)
        let stored = try storage.loadEntries().sorted { $0.updated > $1.updated }
        var g = RecentTable<RegistryEntry>(capacity: self.capacity) { $0.state == .preparing }
        let dropped = g.load(stored.map { ($0.key.id, $0) })
        entries = Mutex(g)
        if !dropped.isEmpty {
            logger.info("registry entries past its capacity dropped", metadata: ["dropped": "\(dropped.count)", "capacity": "\(self.capacity)"])
            try storage.deleteEntries(dropped)
        }
    }

    /// Has `observer` hear of the objects whose entries were let go (their pieces are of no
    /// use without checksums).
    public func onEvicted(_ observer: @escaping @Sendable ([ObjectKey]) -> Void) {
        evictedObserver.withLock { $0 = observer }
    }

    /// How many entries are kept.
    public var count: Int { entries.withLock { $0.count } }

    /// Whether an entry of `key` is kept, without counting a use.
    func holds(_ key: ObjectKey) -> Bool { entries.withLock { $0.peek(key.id) != nil } }

    public func entry(_ key: ObjectKey) -> RegistryEntry? {
        entries.withLock { $0.use(key.id) }
    }

    /// The entry of `key` and its checksums, when it is ready.
    public func ready(_ key: ObjectKey) -> (entry: RegistryEntry, checksums: PieceChecksums)? { ready(id: key.id) }

    /// The entry of the object with id `id` and its checksums, when it is ready.
    public func ready(id: String) -> (entry: RegistryEntry, checksums: PieceChecksums)? {
        entries.withLock { e in e.use(id).flatMap { entry in entry.state == .ready ? entry.checksums.map { (entry, $0) } : nil } }
    }

    /// Which of `ids` are ready, looked up together.
    public func readyIDs(_ ids: [String]) -> Set<String> {
        entries.withLock { e in Set(ids.filter { id in e.use(id).map { $0.state == .ready && $0.checksums != nil } ?? false }) }
    }

    /// Those of `ids` whose last preparation failed.
    public func failedIDs(_ ids: [String]) -> Set<String> {
        entries.withLock { e in Set(ids.filter { e.use($0)?.state == .failed }) }
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
        let backlog = unsaved.withLock { u in
            defer { u = [] }
            return u
        }
        let (updated, evicted) = entries.withLock { all -> ([RegistryEntry], [ObjectKey]) in
            let changed = keys.enumerated().compactMap { i, key -> RegistryEntry? in
                var e = all.use(key.id) ?? RegistryEntry(key: key)
                guard change(i, &e) else { return nil }
                e.updated = now
                all.put(e.key.id, e)
                return e
            }
            // Earlier changes whose write failed, as they are now (those changed again are
            // in `changed`; those left as they were still need writing, unless let go since).
            let unwritten = backlog.subtracting(changed.map(\.key.id)).compactMap { all.peek($0) }
            return (changed + unwritten, all.takeLetGo().values.map(\.key))
        }
        if !updated.isEmpty {
            do {
                try storage.save(updated)
                writeFailures.succeeded()
            } catch {
                unsaved.withLock { $0.formUnion(updated.map(\.key.id)) }
                writeFailures.failed(["objects": "\(keys.count)", "first": "\(keys[0])", "error": "\(error)"])
            }
        }
        guard !evicted.isEmpty else { return }
        // Half the capacity at a time, up to half a million rows: not on the caller's time (a
        // player's request, a node's message). An entry made again meanwhile is kept.
        Task.detached(priority: .utility) { [self] in
            let gone = evicted.filter { !holds($0) }
            // Not deleted (a full disk): kept on disk, and dropped past the capacity at the next start.
            do { try storage.deleteEntries(gone.map(\.id)) } catch {
                writeFailures.failed(["evicted": "\(gone.count)", "error": "\(error)"])
            }
            evictedObserver.withLock { $0 }?(gone)
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
