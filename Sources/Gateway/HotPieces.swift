import Hummingbird
import PieceStore
import Synchronization

/// Verified pieces kept in memory, under a byte bound, least recently used out first: the hot
/// part of the cache. A piece enters only after it matched its SHA-256 (read from disk or
/// filled from the origin), and is handed out only while the registry still gives the same
/// checksum for it. Every response reading a hot piece shares its storage, so a thousand
/// players of one object hold one copy of it.
final class HotPieces: Sendable {
    struct ID: Hashable {
        let object: String
        let index: Int
    }

    struct Entry {
        var buffer: ByteBuffer
        var digest: PieceDigest
        var lastUse: UInt64
    }

    struct State {
        var entries: [ID: Entry] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Piece `index` of `key`, if held and still matching `digest`.
    func get(_ key: ObjectKey, _ index: Int, digest: PieceDigest) -> ByteBuffer? {
        state.withLock { s in
            let id = ID(object: key.id, index: index)
            guard var e = s.entries[id] else { return nil }
            guard e.digest == digest else {
                s.bytes -= e.buffer.readableBytes
                s.entries[id] = nil
                return nil
            }
            s.tick += 1
            e.lastUse = s.tick
            s.entries[id] = e
            return e.buffer
        }
    }

    /// Keeps a verified piece, evicting the least recently used ones to stay in the bound.
    func put(_ key: ObjectKey, _ index: Int, digest: PieceDigest, _ buffer: ByteBuffer) {
        let size = buffer.readableBytes
        guard size <= capacity else { return }
        state.withLock { s in
            let id = ID(object: key.id, index: index)
            if let old = s.entries[id] { s.bytes -= old.buffer.readableBytes }
            while s.bytes + size > capacity, let victim = s.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                s.bytes -= victim.value.buffer.readableBytes
                s.entries[victim.key] = nil
            }
            s.tick += 1
            s.entries[id] = Entry(buffer: buffer, digest: digest, lastUse: s.tick)
            s.bytes += size
        }
    }
}
