import Hummingbird
import PieceStore
import Synchronization

/// Verified pieces kept in memory, under a byte bound, least recently used out first: the hot
/// part of the cache. A piece enters only after it matched its SHA-256 (read from disk or
/// filled from the origin), and is handed out only while the registry still gives the same
/// checksum for it. Every response reading a hot piece shares its storage, so a thousand
/// players of one object hold one copy of it.
final class HotPieces: Sendable {
    struct ID: Hashable, Sendable {
        let object: String
        let index: Int
    }

    struct Entry {
        var buffer: ByteBuffer
        var digest: PieceDigest
    }

    struct State {
        var entries: [ID: Entry] = [:]
        /// The entries from the least recently used on.
        var recency = RecencyList<ID>()
        var bytes = 0

        mutating func remove(_ id: ID) {
            guard let e = entries.removeValue(forKey: id) else { return }
            recency.remove(id)
            bytes -= e.buffer.readableBytes
        }
    }

    let capacity: Int
    private let state = Mutex(State())

    /// Bytes of the pieces held.
    var bytes: Int { state.withLock { $0.bytes } }

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Piece `index` of `key`, if held and still matching `digest`.
    func get(_ key: ObjectKey, _ index: Int, digest: PieceDigest) -> ByteBuffer? {
        state.withLock { s in
            let id = ID(object: key.id, index: index)
            guard let e = s.entries[id] else { return nil }
            guard e.digest == digest else {
                s.remove(id)
                return nil
            }
            s.recency.use(id)
            return e.buffer
        }
    }

    /// Keeps a verified piece, evicting the least recently used ones to stay in the bound.
    func put(_ key: ObjectKey, _ index: Int, digest: PieceDigest, _ buffer: ByteBuffer) {
        let size = buffer.readableBytes
        guard size <= capacity else { return }
        state.withLock { s in
            let id = ID(object: key.id, index: index)
            s.remove(id)
            while s.bytes + size > capacity, let victim = s.recency.oldest { s.remove(victim) }
            s.entries[id] = Entry(buffer: buffer, digest: digest)
            s.recency.use(id)
            s.bytes += size
        }
    }
}
