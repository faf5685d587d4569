import Hummingbird
import PieceStore
import Synchronization

/// A verified piece as a response sends it: in a sealed memfd (sent with `sendfile`, see
/// `ZeroCopy`), or in memory.
struct HeldPiece: Sendable {
    let sealed: SealedPiece?
    let buffer: ByteBuffer?
    let count: Int

    init(_ buffer: ByteBuffer) {
        self.buffer = buffer
        sealed = nil
        count = buffer.readableBytes
    }

    init(_ sealed: SealedPiece) {
        self.sealed = sealed
        buffer = nil
        count = sealed.count
    }

    /// A response body chunk of `length` bytes from `offset` in the piece: a slice, or the
    /// stand-in for a region of the memfd.
    func chunk(offset: Int, length: Int) -> ByteBuffer {
        if let sealed { return ZeroCopy.marker(sealed, offset: offset, length: length) }
        return buffer!.getSlice(at: buffer!.readerIndex + offset, length: length)!
    }
}

/// Verified pieces kept in memory, under a byte bound, least recently used out first: the hot
/// part of the cache. A piece enters only after it matched its SHA-256 (read from disk or
/// filled from the origin), and is handed out only while the registry still gives the same
/// checksum for it. Every response reading a hot piece shares its storage, so a thousand
/// players of one object hold one copy of it. Where the kernel has memfds, pieces are kept in
/// sealed memfds, which responses send without copying (the bound counts them all the same).
final class HotPieces: Sendable {
    struct ID: Hashable {
        let object: String
        let index: Int
    }

    struct Entry {
        var piece: HeldPiece
        var digest: PieceDigest
        var lastUse: UInt64
    }

    struct State {
        var entries: [ID: Entry] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    let capacity: Int
    /// Whether pieces are kept in sealed memfds.
    let sealing: Bool
    private let state = Mutex(State())

    init(capacity: Int, sealing: Bool = SealedPiece.isAvailable) {
        self.capacity = capacity
        self.sealing = sealing
    }

    /// Bytes of pieces held.
    var bytes: Int { state.withLock { $0.bytes } }

    /// Piece `index` of `key`, if held and still matching `digest`.
    func get(_ key: ObjectKey, _ index: Int, digest: PieceDigest) -> HeldPiece? {
        state.withLock { s in
            let id = ID(object: key.id, index: index)
            guard var e = s.entries[id] else { return nil }
            guard e.digest == digest else {
                s.bytes -= e.piece.count
                s.entries[id] = nil
                return nil
            }
            s.tick += 1
            e.lastUse = s.tick
            s.entries[id] = e
            return e.piece
        }
    }

    /// Keeps a verified piece (sealed, where possible), evicting the least recently used ones
    /// to stay in the bound, and returns it as responses should send it.
    @discardableResult
    func put(_ key: ObjectKey, _ index: Int, digest: PieceDigest, _ buffer: ByteBuffer) -> HeldPiece {
        let size = buffer.readableBytes
        guard size <= capacity else { return HeldPiece(buffer) }
        let piece = sealing ? SealedPiece.seal(buffer).map(HeldPiece.init) ?? HeldPiece(buffer) : HeldPiece(buffer)
        state.withLock { s in
            let id = ID(object: key.id, index: index)
            if let old = s.entries[id] { s.bytes -= old.piece.count }
            while s.bytes + size > capacity, let victim = s.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                s.bytes -= victim.value.piece.count
                s.entries[victim.key] = nil
            }
            s.tick += 1
            s.entries[id] = Entry(piece: piece, digest: digest, lastUse: s.tick)
            s.bytes += size
        }
        return piece
    }
}
