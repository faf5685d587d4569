import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// A node's side of the swarm, as the gateway uses it: the piece store, the checksum registry
/// (embedded while there is no tracker), the prepare queue, and the filling of missing pieces
/// of ready objects from the origin by range — one origin fetch per missing piece however
/// many requests want it, and every byte verified before it is used.
public final class SwarmNode: Sendable {
    public let store: PieceStore
    public let registry: ChecksumRegistry
    public let prepareQueue: PrepareQueue
    let origin: OriginClient
    let onBadPiece: @Sendable () -> Void
    private let flights = Mutex<[String: Task<[UInt8], any Error>]>([:])
    private let logger: Logger

    /// Opens the piece store in `cacheDirectory` and the registry in `registryPath`.
    public init(
        cacheDirectory: String, cacheSize: Int64, registryPath: String, pieceSize: Int, maxPrepareJobs: Int,
        maxObjectSize: Int64, origin: OriginClient, logger: Logger, onBadPiece: @escaping @Sendable () -> Void = {}
    ) throws(SwarmError) {
        do {
            store = try PieceStore(directory: cacheDirectory, capacity: cacheSize, logger: logger, onCorruptPiece: onBadPiece)
        } catch {
            throw SwarmError("piece store: \(error)")
        }
        let storage: SQLiteRegistryStorage
        do {
            storage = try SQLiteRegistryStorage(path: registryPath)
            registry = try ChecksumRegistry(storage: storage, logger: logger)
            prepareQueue = try PrepareQueue(
                registry: registry, storage: storage, preparer: Preparer(origin: origin, store: store, maxObjectSize: maxObjectSize, logger: logger),
                pieceSize: pieceSize, maxRunning: maxPrepareJobs, logger: logger)
        } catch {
            throw SwarmError("registry: \(error)")
        }
        self.origin = origin
        self.onBadPiece = onBadPiece
        self.logger = logger
    }

    /// Piece `index` of a ready object when the store does not hold it: fetched from `url` by
    /// range, verified against the registry's checksum, kept, returned. Concurrent calls for
    /// one piece share one fetch. A piece that does not verify means the origin's copy
    /// changed: the object's checksums are dropped (it is prepared again) and this throws.
    public func fill(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String) async throws -> [UInt8] {
        let flightID = key.id + "#\(index)"
        let task = flights.withLock { f -> Task<[UInt8], any Error> in
            if let running = f[flightID] { return running }
            let t = Task { try await self.fetchPiece(key, index, checksums: checksums, url: url) }
            f[flightID] = t
            return t
        }
        defer { flights.withLock { f in if f[flightID] == task { f[flightID] = nil } } }
        return try await task.value
    }

    private func fetchPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String) async throws -> [UInt8] {
        let layout = checksums.layout
        let first = layout.offset(of: index)
        let size = layout.size(of: index)
        let request = OriginRequest(url: url, range: .closed(first: first, last: first + Int64(size) - 1), maxBodySize: Int64(layout.length))
        let response = try await origin.fetch(request)
        var bytes: [UInt8]
        switch response.status {
        case 206:
            bytes = try await response.body.collect(upTo: size)
        case 200:
            // An origin without ranges: read up to the piece, drop what comes before it.
            bytes = []
            var skipped: Int64 = 0
            for try await chunk in response.body {
                var c = chunk[...]
                if skipped < first {
                    let n = Int(min(first - skipped, Int64(c.count)))
                    skipped += Int64(n)
                    c = c.dropFirst(n)
                }
                bytes += c.prefix(size - bytes.count)
                if bytes.count == size { break }
            }
        default:
            throw SwarmError("origin answered \(response.status) for piece \(index) of \(key)")
        }
        let verified = bytes.withUnsafeBytes { checksums.matches(index, $0) }
        guard verified else {
            onBadPiece()
            logger.warning("origin piece does not match the registry; preparing the object again", metadata: ["object": "\(key)", "piece": "\(index)"])
            registry.markUnknown(key)
            store.remove(key)
            prepareQueue.enqueue(key, url: url, urgent: true)
            throw SwarmError("piece \(index) of \(key) from the origin does not match its checksum")
        }
        do {
            try store.store(key, layout: layout, piece: index, bytes: bytes)
        } catch {
            logger.warning("filled piece not kept", metadata: ["object": "\(key)", "error": "\(error)"])
        }
        return bytes
    }
}

/// Why the node's swarm side failed.
public struct SwarmError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
