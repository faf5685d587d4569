import Foundation
import Logging
import PieceStore
import Synchronization

/// Per media object, whether its checksums are ready and what they are (SPEC section 3). The
/// registry computes them itself from the CDN copy (see `Preparer`), never takes them from a
/// peer. Reads come from memory; every change is written through to the storage. Entries
/// whose write failed (a full disk) go again with the next write, until one passes.
public final class ChecksumRegistry: Sendable {
    private let storage: any RegistryStorage
    private let entries: Mutex<[String: RegistryEntry]>
    /// Ids of entries changed in memory whose write failed.
    private let unsaved = Mutex<Set<String>>([])
    private let logger: Logger
    private let writeFailures: RepeatedFailureLog

    public init(storage: any RegistryStorage, logger: Logger) throws(RegistryError) {
        self.storage = storage
        self.logger = logger
        writeFailures = RepeatedFailureLog("registry write failed", logger: logger)
        var byID: [String: RegistryEntry] = [:]
        for e in try storage.loadEntries() { byID[e.key.id] = e }
        entries = Mutex(byID)
    }

    public func entry(_ key: ObjectKey) -> RegistryEntry? {
        entries.withLock { $0[key.id] }
    }

    /// The entry of `key` and its checksums, when it is ready.
    public func ready(_ key: ObjectKey) -> (entry: RegistryEntry, checksums: PieceChecksums)? { ready(id: key.id) }

    /// The entry of the object with id `id` and its checksums, when it is ready.
    public func ready(id: String) -> (entry: RegistryEntry, checksums: PieceChecksums)? {
        entries.withLock { e in e[id].flatMap { entry in entry.state == .ready ? entry.checksums.map { (entry, $0) } : nil } }
    }

    /// Which of `ids` are ready, looked up together.
    public func readyIDs(_ ids: [String]) -> Set<String> {
        entries.withLock { e in Set(ids.filter { id in e[id].map { $0.state == .ready && $0.checksums != nil } ?? false }) }
    }

    /// Those of `ids` whose last preparation failed.
    public func failedIDs(_ ids: [String]) -> Set<String> {
        entries.withLock { e in Set(ids.filter { e[$0]?.state == .failed }) }
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
        let updated = entries.withLock { all -> [RegistryEntry] in
            let changed = keys.enumerated().compactMap { i, key -> RegistryEntry? in
                var e = all[key.id] ?? RegistryEntry(key: key)
                guard change(i, &e) else { return nil }
                e.updated = now
                all[key.id] = e
                return e
            }
            guard !changed.isEmpty || !backlog.isEmpty else { return [] }
            // Earlier changes whose write failed, as they are now (those changed again are
            // in `changed`; those left as they were still need writing).
            return changed + backlog.subtracting(changed.map(\.key.id)).compactMap { all[$0] }
        }
        guard !updated.isEmpty else { return }
        do {
            try storage.save(updated)
            writeFailures.succeeded()
        } catch {
            unsaved.withLock { $0.formUnion(updated.map(\.key.id)) }
            writeFailures.failed(["objects": "\(keys.count)", "first": "\(keys[0])", "error": "\(error)"])
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
