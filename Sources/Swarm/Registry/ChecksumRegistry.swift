import Foundation
import Logging
import PieceStore
import Synchronization

/// Per media object, whether its checksums are ready and what they are (SPEC section 3). The
/// registry computes them itself from the CDN copy (see `Preparer`), never takes them from a
/// peer. Reads come from memory; every change is written through to the storage.
public final class ChecksumRegistry: Sendable {
    private let storage: any RegistryStorage
    private let entries: Mutex<[String: RegistryEntry]>
    private let logger: Logger

    public init(storage: any RegistryStorage, logger: Logger) throws(RegistryError) {
        self.storage = storage
        self.logger = logger
        var byID: [String: RegistryEntry] = [:]
        for e in try storage.loadEntries() { byID[e.key.id] = e }
        entries = Mutex(byID)
    }

    public func entry(_ key: ObjectKey) -> RegistryEntry? {
        entries.withLock { $0[key.id] }
    }

    /// The checksums of `key`, when it is ready.
    public func checksums(_ key: ObjectKey) -> PieceChecksums? {
        entries.withLock { e in e[key.id].flatMap { $0.state == .ready ? $0.checksums : nil } }
    }

    /// Records a change to `key`'s entry and writes it through.
    func update(_ key: ObjectKey, _ change: (inout RegistryEntry) -> Void) {
        let updated = entries.withLock { all -> RegistryEntry in
            var e = all[key.id] ?? RegistryEntry(key: key)
            change(&e)
            e.updated = Date()
            all[key.id] = e
            return e
        }
        do { try storage.save(updated) } catch {
            logger.error("registry write failed", metadata: ["object": "\(key)", "error": "\(error)"])
        }
    }

    func markPreparing(_ key: ObjectKey) {
        update(key) { e in
            if e.state != .ready { e.state = .preparing }
        }
    }

    func markReady(_ key: ObjectKey, checksums: PieceChecksums, etag: String?, lastModified: String?, contentType: String?) {
        update(key) { e in
            e.state = .ready
            e.checksums = checksums
            e.etag = etag
            e.lastModified = lastModified
            e.contentType = contentType
            e.error = nil
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

    /// Throws when the storage does not answer (for `/ready`).
    public func ping() throws(RegistryError) { try storage.ping() }
}
