import CLinux
import Foundation
import GRDB
import Logging
import Synchronization

/// Verified pieces of media objects on disk, under a hard size bound kept by LRU eviction.
///
/// Each object is one sparse data file named by its key's hash (`objects/ab/<id>`), with the
/// object's pieces at their offsets; an SQLite index (`index.sqlite`) holds each object's
/// layout, validators, piece bitmap and last use. A piece's bit is set only after its bytes
/// are written and were verified by the caller, and every read is verified again against the
/// registry's SHA-256 before it is returned — so neither a `kill -9` mid-write nor a byte
/// flipped on disk can reach a client: such a piece reads as missing and is dropped.
public final class PieceStore: Sendable {
    /// What the store knows of one object.
    public struct ObjectInfo: Sendable {
        public let key: ObjectKey
        public let layout: PieceLayout
        public var bitmap: PieceBitmap
        /// Bytes on disk counted against the bound (pieces held or being written).
        public var storedBytes: Int64
        var lastUse: UInt64
    }

    struct State {
        var objects: [String: ObjectInfo] = [:]
        var usedBytes: Int64 = 0
        var tick: UInt64 = 0
    }

    public let directory: String
    public let capacity: Int64
    private let database: DatabasePool
    private let state: Mutex<State>
    private let logger: Logger
    private let onCorruptPiece: @Sendable () -> Void
    private let observer = Mutex<(@Sendable (Change) -> Void)?>(nil)

    /// What the store now holds differently: an object's first piece kept, or objects gone
    /// (evicted or removed).
    public enum Change: Sendable, Equatable {
        case held(String)
        case gone([String])
    }

    /// Has `handler` hear of every `Change` (one handler; a later call replaces it). The swarm
    /// side announces and withdraws objects with it.
    public func observe(_ handler: @escaping @Sendable (Change) -> Void) {
        observer.withLock { $0 = handler }
    }

    /// Opens (or creates) the store in `directory`, bounded to `capacity` bytes of pieces.
    /// Data files without an index row, and rows whose file is gone, are cleaned away.
    /// `onCorruptPiece` hears of every stored piece that failed verification.
    public init(directory: String, capacity: Int64, logger: Logger, onCorruptPiece: @escaping @Sendable () -> Void = {}) throws(PieceStoreError) {
        self.directory = directory
        self.capacity = capacity
        self.logger = logger
        self.onCorruptPiece = onCorruptPiece
        do {
            try FileManager.default.createDirectory(atPath: directory + "/objects", withIntermediateDirectories: true)
        } catch {
            throw PieceStoreError(.io, "cannot create \(directory)/objects: \(error)")
        }
        do {
            var config = Configuration()
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            database = try DatabasePool(path: directory + "/index.sqlite", configuration: config)
            try database.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS pieces_objects (
                        id TEXT PRIMARY KEY, xresid TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL,
                        length INTEGER NOT NULL, piece_size INTEGER NOT NULL, bitmap BLOB NOT NULL,
                        last_use REAL NOT NULL)
                    """)
            }
        } catch {
            throw PieceStoreError(.index, "cannot open \(directory)/index.sqlite: \(error)")
        }
        state = Mutex(State())
        try load()
    }

    private func load() throws(PieceStoreError) {
        let rows: [Row]
        do {
            rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM pieces_objects ORDER BY last_use") }
        } catch {
            throw PieceStoreError(.index, "cannot read the index: \(error)")
        }
        var s = State()
        var stale: [String] = []
        for row in rows {
            let id: String = row["id"]
            let layout = PieceLayout(length: row["length"], pieceSize: row["piece_size"])
            let bits: Data = row["bitmap"]
            guard let bitmap = PieceBitmap(count: layout.count, bits: [UInt8](bits)), access(dataPath(id), F_OK) == 0 else {
                stale.append(id)
                continue
            }
            s.tick += 1
            let key = ObjectKey(xresid: row["xresid"], host: row["host"], path: row["path"])
            var info = ObjectInfo(key: key, layout: layout, bitmap: bitmap, storedBytes: 0, lastUse: s.tick)
            info.storedBytes = Self.bytes(of: bitmap, layout)
            s.usedBytes += info.storedBytes
            s.objects[id] = info
        }
        // Data files the index does not know (a crash between creating one and its row).
        let root = directory + "/objects"
        for sub in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/" + sub)) ?? [] where s.objects[name] == nil {
                unlink(root + "/" + sub + "/" + name)
            }
        }
        state.withLock { $0 = s }
        if !stale.isEmpty { deleteRows(stale) }
        let over = state.withLock { s -> [String] in evict(&s, toFit: 0, sparing: nil) ?? [] }
        finishEviction(over)
    }

    // MARK: reading

    /// What the store holds of `key`, if anything.
    public func info(_ key: ObjectKey) -> ObjectInfo? {
        state.withLock { $0.objects[key.id] }
    }

    /// What the store holds of the object with this id (`ObjectKey.id`), if anything.
    public func info(id: String) -> ObjectInfo? {
        state.withLock { $0.objects[id] }
    }

    /// Whether piece `index` of `key` is held (verified when written).
    public func has(_ key: ObjectKey, piece index: Int) -> Bool {
        state.withLock { $0.objects[key.id]?.bitmap[index] ?? false }
    }

    public var usedBytes: Int64 { state.withLock { $0.usedBytes } }

    /// The ids of objects with at least one piece held (what a node announces).
    public func heldObjects() -> [String] {
        state.withLock { s in s.objects.filter { !$0.value.bitmap.isEmpty }.map(\.key) }
    }

    /// Reads piece `index` of `key` into `buffer` (at least the piece's size) and verifies it
    /// against `checksums`. Returns the byte count, or nil when the piece is not held or did
    /// not verify (then it is dropped, so that it is fetched again).
    public func readPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let id = key.id
        let held = state.withLock { s -> Bool in
            guard var info = s.objects[id], info.layout == checksums.layout, info.bitmap[index] else { return false }
            s.tick += 1
            info.lastUse = s.tick
            s.objects[id] = info
            return true
        }
        guard held else { return nil }
        let size = checksums.layout.size(of: index)
        precondition(buffer.count >= size)
        let fd = open(dataPath(id), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<size])
        guard Self.preadFully(fd, piece, at: checksums.layout.offset(of: index)) else { return nil }
        guard checksums.matches(index, UnsafeRawBufferPointer(piece)) else {
            logger.warning("stored piece failed verification; dropped", metadata: ["object": "\(key)", "piece": "\(index)"])
            onCorruptPiece()
            dropPiece(key, index)
            return nil
        }
        return size
    }

    // MARK: writing

    /// Stores piece `index` of `key`, which the caller has verified. Returns false when the
    /// bound leaves no room for it even after evicting other objects (the caller then serves
    /// it without keeping it).
    @discardableResult
    public func store(_ key: ObjectKey, layout: PieceLayout, piece index: Int, bytes: UnsafeRawBufferPointer) throws(PieceStoreError) -> Bool {
        precondition(bytes.count == layout.size(of: index))
        let id = key.id
        let need = Self.diskBytes(bytes.count)
        // Reserve room and open the file under the lock, so that eviction never unlinks a file
        // that a writer is about to recreate.
        let reservation = state.withLock { s -> Reservation in
            if let info = s.objects[id], info.layout != layout {
                s.usedBytes -= info.storedBytes
                s.objects[id] = nil
                unlink(dataPath(id))
            }
            if s.objects[id]?.bitmap[index] == true { return .held }
            guard let evicted = evict(&s, toFit: need, sparing: id) else { return .noRoom }
            try? FileManager.default.createDirectory(atPath: (dataPath(id) as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let fd = open(dataPath(id), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return .failed(errno: errno, evicted: evicted) }
            s.tick += 1
            let created = s.objects[id] == nil
            var info = s.objects[id] ?? ObjectInfo(
                key: key, layout: layout, bitmap: PieceBitmap(count: layout.count), storedBytes: 0, lastUse: s.tick)
            info.storedBytes += need
            info.lastUse = s.tick
            s.objects[id] = info
            s.usedBytes += need
            return .opened(fd: fd, evicted: evicted, created: created)
        }
        let fd: Int32
        var created = false
        switch reservation {
        case .held: return true
        case .noRoom: return false
        case .failed(let err, let evicted):
            finishEviction(evicted)
            throw PieceStoreError(.io, "cannot open \(dataPath(id)): errno \(err)")
        case .opened(let f, let evicted, let new):
            finishEviction(evicted)
            fd = f
            created = new
        }
        let written = Self.pwriteFully(fd, bytes, at: layout.offset(of: index))
        let err = errno
        close(fd)
        guard written else {
            release(id, need)
            throw PieceStoreError(.io, "cannot write piece \(index) of \(key): errno \(err)")
        }
        let visible = state.withLock { s -> Bool in
            guard var info = s.objects[id], info.layout == layout else { return false }
            info.bitmap[index] = true
            s.objects[id] = info
            return true
        }
        if visible { try persist(id) }
        if visible && created { observer.withLock { $0 }?(.held(id)) }
        return visible
    }

    /// `store(_:layout:piece:bytes:)` for bytes in an array.
    @discardableResult
    public func store(_ key: ObjectKey, layout: PieceLayout, piece index: Int, bytes: [UInt8]) throws(PieceStoreError) -> Bool {
        let result = bytes.withUnsafeBytes { b in Result { () throws(PieceStoreError) in try store(key, layout: layout, piece: index, bytes: b) } }
        return try result.get()
    }

    /// Forgets piece `index` of `key` (it failed verification).
    public func dropPiece(_ key: ObjectKey, _ index: Int) {
        let id = key.id
        let dropped = state.withLock { s -> PieceLayout? in
            guard var info = s.objects[id], info.bitmap[index] else { return nil }
            info.bitmap[index] = false
            let n = Self.diskBytes(info.layout.size(of: index))
            info.storedBytes -= n
            s.usedBytes -= n
            s.objects[id] = info
            return info.layout
        }
        guard let layout = dropped else { return }
        let fd = open(dataPath(id), O_WRONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = swarmgate_punch_hole(fd, layout.offset(of: index), Int64(layout.size(of: index)))
            close(fd)
        }
        try? persist(id)
    }

    /// Forgets everything held of `key` (its checksums changed, or it was removed).
    public func remove(_ key: ObjectKey) {
        let id = key.id
        let gone = state.withLock { s -> Bool in
            guard let info = s.objects.removeValue(forKey: id) else { return false }
            s.usedBytes -= info.storedBytes
            unlink(dataPath(id))
            return true
        }
        if gone { finishEviction([id]) }
    }

    // MARK: internals

    private enum Reservation {
        case held, noRoom
        case failed(errno: Int32, evicted: [String])
        case opened(fd: Int32, evicted: [String], created: Bool)
    }

    private func release(_ id: String, _ bytes: Int64) {
        state.withLock { s in
            guard var info = s.objects[id] else { return }
            info.storedBytes -= bytes
            s.usedBytes -= bytes
            s.objects[id] = info
        }
    }

    /// Evicts least recently used objects (never `sparing`) until `need` more bytes fit,
    /// unlinking their files. Returns the evicted ids (their rows go in `finishEviction`), or nil when even
    /// evicting all others would not make room.
    private func evict(_ s: inout State, toFit need: Int64, sparing: String?) -> [String]? {
        let spared = sparing.flatMap { s.objects[$0]?.storedBytes } ?? 0
        guard need + spared <= capacity else { return nil }
        var evicted: [String] = []
        while s.usedBytes + need > capacity {
            guard let victim = s.objects.filter({ $0.key != sparing }).min(by: { $0.value.lastUse < $1.value.lastUse }) else {
                return nil
            }
            s.usedBytes -= victim.value.storedBytes
            s.objects[victim.key] = nil
            unlink(dataPath(victim.key))
            evicted.append(victim.key)
        }
        return evicted
    }

    /// Deletes the index rows of objects whose files went under the lock.
    private func finishEviction(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        deleteRows(ids)
        observer.withLock { $0 }?(.gone(ids))
        logger.debug("evicted objects", metadata: ["count": "\(ids.count)"])
    }

    private func deleteRows(_ ids: [String]) {
        do {
            try database.write { db in
                for id in ids { try db.execute(sql: "DELETE FROM pieces_objects WHERE id = ?", arguments: [id]) }
            }
        } catch {
            logger.error("piece index: cannot delete rows", metadata: ["error": "\(error)"])
        }
    }

    /// Writes an object's current row. The bitmap is read inside the write transaction, so
    /// concurrent writers never store an older bitmap over a newer one.
    private func persist(_ id: String) throws(PieceStoreError) {
        do {
            try database.write { db in
                guard let info = state.withLock({ $0.objects[id] }) else {
                    try db.execute(sql: "DELETE FROM pieces_objects WHERE id = ?", arguments: [id])
                    return
                }
                try db.execute(
                    sql: """
                        INSERT INTO pieces_objects (id, xresid, host, path, length, piece_size, bitmap, last_use)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(id) DO UPDATE SET bitmap = excluded.bitmap, last_use = excluded.last_use,
                            length = excluded.length, piece_size = excluded.piece_size
                        """,
                    arguments: [
                        id, info.key.xresid, info.key.host, info.key.path, info.layout.length, info.layout.pieceSize,
                        Data(info.bitmap.bits), Date().timeIntervalSince1970,
                    ])
            }
        } catch {
            throw PieceStoreError(.index, "cannot write the index row of \(id): \(error)")
        }
    }

    func dataPath(_ id: String) -> String {
        "\(directory)/objects/\(id.prefix(2))/\(id)"
    }

    /// Disk blocks a piece of `count` bytes takes, as counted against the bound.
    static func diskBytes(_ count: Int) -> Int64 { Int64((count + 4095) & ~4095) }

    static func bytes(of bitmap: PieceBitmap, _ layout: PieceLayout) -> Int64 {
        var total: Int64 = 0
        for i in 0..<layout.count where bitmap[i] { total += diskBytes(layout.size(of: i)) }
        return total
    }

    static func preadFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Bool {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    static func pwriteFully(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }
}
