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
///
/// Index rows are written behind the pieces: the rows of every object whose bitmap changed are
/// written together, `indexDelay` after the first change (or at `flush()`, which a graceful stop
/// calls), so that storing a piece costs a pwrite and no SQLite transaction of its own. A crash
/// loses at most that window of the index: a piece written since reads as missing and is
/// fetched again, and a piece dropped since reads back, fails verification and is dropped.
public final class PieceStore: Sendable {
    /// What the store knows of one object.
    public struct ObjectInfo: Sendable {
        public let key: ObjectKey
        public let layout: PieceLayout
        public var bitmap: PieceBitmap
        /// Bytes on disk counted against the bound (pieces held or being written).
        public var storedBytes: Int64
        /// Which copy of the object this is: a copy made again under the same id (after an
        /// eviction, a removal or a layout change) has a new one, so that a write begun on the
        /// old copy neither marks nor releases anything of the new.
        var generation: UInt64 = 0
        /// When it was last used (seconds since 1970, later for each use than for any before):
        /// its row's `last_use`, so that a reopened store has the order this one had.
        var lastUse: Double = 0
    }

    struct State {
        var objects: [String: ObjectInfo] = [:]
        /// The objects from the least recently used on (an object is used when a piece of it
        /// is read or written).
        var recency = RecencyList<String>()
        var usedBytes: Int64 = 0
        /// Counts up: each new copy of an object takes the next value as its generation.
        var tick: UInt64 = 0
        /// The latest `lastUse` given.
        var lastStamp: Double = 0

        /// Makes held object `id` the most recently used. Returns whether that changed the
        /// order (it was not the most recent already), so that its row is written again.
        mutating func use(_ id: String) -> Bool {
            guard recency.use(id) else { return false }
            // A microsecond apart at least: objects used within one keep their order.
            lastStamp = max(Date().timeIntervalSince1970, lastStamp + 1e-6)
            objects[id]?.lastUse = lastStamp
            return true
        }
    }

    public let directory: String
    public let capacity: Int64
    /// The directory's lock, held for the store's life.
    private let lock: DirectoryLock
    private let database: DatabasePool
    private let state: Mutex<State>
    private let logger: Logger
    private let onCorruptPiece: @Sendable () -> Void
    private let observer = Mutex<Callback<Change>?>(nil)
    private let unwritten = Mutex(UnwrittenRows())
    /// Where rows are written behind the pieces: SQLite blocks its thread, which must not be
    /// one of Swift's few cooperative threads (a busy node, or a test run, starved the write
    /// behind for seconds there).
    private let indexWrites = DispatchQueue(label: "swarmgate.piece-index", qos: .utility)
    private let indexFailures: RepeatedFailureLog
    /// Where let-go objects' files wait for their unlink, off the lock.
    private let trash: Trash
    /// Evictions for a disk full before the bound: a line a minute at most (every piece stored
    /// on such a disk may evict).
    private let diskEvictions: RepeatedFailureLog
    private let shortages = Atomic<Int>(0)
    /// Whether the last piece met a full disk with nothing to evict.
    private let diskFull = Atomic<Bool>(false)

    /// How many times a piece found the disk short of room before the bound (evicting for it,
    /// or not kept): for `/metrics`.
    public var diskShortages: Int { shortages.load(ordering: .relaxed) }

    /// How long a changed bitmap waits before its row is written with the others changed meanwhile.
    public static let indexDelay: Duration = .milliseconds(20)
    /// How long an object's last use (a read, which changes nothing else of its row) may wait
    /// for its row's write: the order of use matters only to evictions after a restart, and a
    /// busy node reads thousands of objects a second. A bitmap's change writes it earlier.
    public static let useDelay: Duration = .seconds(10)

    /// Objects whose index rows are behind their state in memory.
    struct UnwrittenRows {
        var ids: Set<String> = []
        /// The write behind scheduled: when it is due, and its number (nil: none is).
        var scheduled: (due: ContinuousClock.Instant, number: UInt64)?
        var schedules: UInt64 = 0
        /// Scheduled writes that one due earlier replaced: they do nothing when they run (it
        /// wrote what they would have).
        var superseded: Set<UInt64> = []
    }

    /// What the store now holds differently: an object's first piece kept, or objects gone
    /// (evicted or removed).
    public enum Change: Sendable, Equatable {
        case held(String)
        case gone([String])
    }

    /// Has `handler` hear of every `Change` (one handler; a later call replaces it). The swarm
    /// side announces and withdraws objects with it.
    public func observe(_ handler: @escaping @Sendable (Change) -> Void) {
        observer.withLock { $0 = Callback(handler) }
    }

    /// Opens (or creates) the store in `directory`, bounded to `capacity` bytes of pieces.
    /// Data files without an index row, and rows whose file is gone, are cleaned away.
    /// `onCorruptPiece` hears of every stored piece that failed verification.
    ///
    /// Throws `.inUse` when another process has the directory open: opening it cleans away
    /// what the index does not list yet and evicts down to this store's bound, which took the
    /// running process's newest pieces and, for a smaller bound, most of its cache (a second
    /// `serve` started by hand, which then failed on its port). An index SQLite cannot read (a
    /// damaged file, a row no store writes) is set aside as `index.sqlite.damaged` with the
    /// data files it named: the store starts empty rather than the process not at all.
    public init(directory: String, capacity: Int64, logger: Logger, onCorruptPiece: @escaping @Sendable () -> Void = {}) throws(PieceStoreError) {
        self.directory = directory
        self.capacity = capacity
        self.logger = logger
        self.onCorruptPiece = onCorruptPiece
        indexFailures = RepeatedFailureLog("piece index: rows not written", logger: logger)
        diskEvictions = RepeatedFailureLog(
            "the disk under the piece store is full before its bound; evicted the least recently used to make room", logger: logger,
            level: .warning, repeatsKey: "evictions_since_last_line")
        do {
            try FileManager.default.createDirectory(atPath: directory + "/objects", withIntermediateDirectories: true)
        } catch {
            throw PieceStoreError(.io, "cannot create \(directory)/objects: \(Self.reason(error))")
        }
        lock = try DirectoryLock(directory)
        if let why = lock.unavailable {
            logger.warning("the cache folder cannot be locked: make sure no other process opens it", metadata: ["why": "\(why)"])
        }
        trash = try Trash(folder: directory + "/trash")
        var opened: (database: DatabasePool, rows: [Row])
        do {
            opened = try Self.openIndex(directory)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            logger.error(
                "the piece index is damaged: set aside as index.sqlite.damaged, with the pieces it named; the store starts empty",
                metadata: ["directory": "\(directory)", "error": "\(error)"])
            opened = try Self.setAsideAndOpen(directory)
        } catch {
            throw PieceStoreError(.index, "cannot open \(directory)/index.sqlite: \(error)")
        }
        database = opened.database
        state = Mutex(State())
        load(opened.rows)
        if let disk = diskSpace(), disk.free - disk.reserve + usedBytes < capacity {
            logger.warning("the piece store's bound is more than its disk can hold: it will evict when the disk fills",
                           metadata: ["directory": "\(directory)", "bound": "\(capacity)", "room": "\(disk.free - disk.reserve + usedBytes)"])
        }
    }

    /// Opens the index in `directory` and reads its rows, oldest use first.
    private static func openIndex(_ directory: String) throws -> (database: DatabasePool, rows: [Row]) {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        // A write behind of a store being closed may still hold the lock for a moment.
        config.busyMode = .timeout(5)
        let database = try DatabasePool(path: directory + "/index.sqlite", configuration: config)
        try database.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS pieces_objects (
                    id TEXT PRIMARY KEY, xresid TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL,
                    length INTEGER NOT NULL, piece_size INTEGER NOT NULL, bitmap BLOB NOT NULL,
                    last_use REAL NOT NULL)
                """)
        }
        let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM pieces_objects ORDER BY last_use") }
        return (database, rows)
    }

    /// Sets a damaged index aside (`index.sqlite.damaged`, the last one only) with the data
    /// files it named, and opens a new one.
    private static func setAsideAndOpen(_ directory: String) throws(PieceStoreError) -> (database: DatabasePool, rows: [Row]) {
        let index = directory + "/index.sqlite"
        guard rename(index, index + ".damaged") == 0 else {
            throw PieceStoreError(.index, "cannot set the damaged \(index) aside: \(String(cString: strerror(errno)))")
        }
        for suffix in ["-wal", "-shm"] { unlink(index + suffix) }
        let objects = directory + "/objects"
        for sub in (try? FileManager.default.contentsOfDirectory(atPath: objects)) ?? [] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: objects + "/" + sub)) ?? [] {
                unlink(objects + "/" + sub + "/" + name)
            }
        }
        do {
            return try openIndex(directory)
        } catch {
            throw PieceStoreError(.index, "cannot open \(index): \(error)")
        }
    }

    private func load(_ rows: [Row]) {
        var s = State()
        var stale: [String] = []
        for row in rows {
            guard let id: String = row.converted("id") else { continue }
            // A row no store writes (a value of another type, a length or piece size out of
            // range: `PieceLayout` traps on those) is let go, as one whose file is gone.
            guard let length: Int64 = row.converted("length"), let pieceSize: Int = row.converted("piece_size"), (0..<1 << 50).contains(length), pieceSize > 0,
                let bits: Data = row.converted("bitmap"), let lastUse: Double = row.converted("last_use"),
                let xresid: String = row.converted("xresid"), let host: String = row.converted("host"), let path: String = row.converted("path")
            else {
                stale.append(id)
                continue
            }
            let layout = PieceLayout(length: length, pieceSize: pieceSize)
            var file = stat()
            guard let bitmap = PieceBitmap(count: layout.count, bits: [UInt8](bits)), stat(dataPath(id), &file) == 0 else {
                stale.append(id)
                continue
            }
            s.tick += 1
            let key = ObjectKey(xresid: xresid, host: host, path: path)
            var info = ObjectInfo(key: key, layout: layout, bitmap: bitmap, storedBytes: 0, generation: s.tick)
            info.storedBytes = Self.bytes(of: bitmap, layout)
            // Blocks past what the bitmap counts: pieces written in the index's last moments
            // before a crash (their rows were behind). Not counted, they took disk room the
            // bound never saw, until the object went; their holes are punched again.
            if Int64(file.st_blocks) * 512 > info.storedBytes { releaseUnlisted(id, layout, bitmap) }
            info.lastUse = lastUse
            s.usedBytes += info.storedBytes
            s.objects[id] = info
            s.recency.use(id)
            s.lastStamp = max(s.lastStamp, info.lastUse)
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
        let over = state.withLock { s in evict(&s, toFit: 0, sparing: nil) ?? LetGo() }
        finishEviction(over)
    }

    /// Punches holes where `bitmap` holds no piece of object `id`'s file, a run of missing
    /// pieces at a time.
    private func releaseUnlisted(_ id: String, _ layout: PieceLayout, _ bitmap: PieceBitmap) {
        let fd = open(dataPath(id), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var i = 0
        while i < layout.count {
            guard !bitmap[i] else {
                i += 1
                continue
            }
            var j = i
            while j < layout.count && !bitmap[j] { j += 1 }
            let start = layout.offset(of: i)
            _ = swarmgate_punch_hole(fd, start, layout.offset(of: j - 1) + Int64(layout.size(of: j - 1)) - start)
            i = j
        }
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
        let held = state.withLock { s -> (generation: UInt64, moved: Bool)? in
            guard let info = s.objects[id], info.layout == checksums.layout, info.bitmap[index] else { return nil }
            return (info.generation, s.use(id))
        }
        guard let (generation, moved) = held else { return nil }
        if moved { writeRowLater(id, within: Self.useDelay) }
        let size = checksums.layout.size(of: index)
        precondition(buffer.count >= size)
        let fd = open(dataPath(id), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            // The data file is gone (removed under the store): so is the piece. Another error
            // (out of descriptors) says nothing of the piece, which is kept.
            if errno == ENOENT { unreadable(key, index, generation, "its data file is missing") }
            return nil
        }
        defer { close(fd) }
        let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<size])
        guard Self.preadFully(fd, piece, at: checksums.layout.offset(of: index)) else {
            // Shorter than the index says (a power loss after the index row, before the data
            // reached the disk), or unreadable.
            unreadable(key, index, generation, "its data file is shorter than the piece, or cannot be read")
            return nil
        }
        guard checksums.matches(index, UnsafeRawBufferPointer(piece)) else {
            unreadable(key, index, generation, "it failed verification")
            return nil
        }
        return size
    }

    /// Marks `key` used, as a read of one of its pieces does: the memory cache calls it for
    /// each piece it hands out, so that an object played from memory is not the store's least
    /// recently used, evicted from disk (and withdrawn from the swarm) while it is the most
    /// played.
    ///
    /// A memory hit did not wait on the store before, and must not now: while the lock is
    /// held (an eviction renaming files away, a file opened for writing), the touch is left
    /// out. The order it would have set is a hint, and the next hit sets it.
    public func touch(_ key: ObjectKey) {
        let id = key.id
        let moved = state.withLockIfAvailable { s in s.objects[id] != nil && s.use(id) } ?? false
        if moved { writeRowLater(id, within: Self.useDelay) }
    }

    /// A stored piece of copy `generation` that cannot be served: dropped (so that it is
    /// fetched and stored again) and counted as a corrupt piece. Not if that copy went since
    /// the read looked (evicted, or removed and made again): its file went with it, and the
    /// piece of a new copy is not this read's to judge.
    private func unreadable(_ key: ObjectKey, _ index: Int, _ generation: UInt64, _ why: String) {
        guard dropPiece(key, index, of: generation) else { return }
        logger.warning("stored piece dropped: \(why)", metadata: ["object": "\(key)", "piece": "\(index)"])
        onCorruptPiece()
    }

    // MARK: writing

    /// Stores piece `index` of `key`, which the caller has verified. Returns false when the
    /// bound leaves no room for it even after evicting other objects (the caller then serves
    /// it without keeping it). The piece is held from the return on; its index row follows
    /// within `indexDelay`.
    ///
    /// The disk is shared with the SQLite files beside the pieces (and maybe with others), and
    /// may be smaller than the bound: a piece that would leave less than `diskReserve` free, or
    /// that meets a full disk, first evicts the least recently used objects (what it lacks and
    /// a sixteenth of what the store holds, so that the next pieces do not meet it at once). It
    /// throws `.full` when nothing is left to evict. The store logs the disk filling and having
    /// room again; callers need not log `.full`.
    @discardableResult
    public func store(_ key: ObjectKey, layout: PieceLayout, piece index: Int, bytes: UnsafeRawBufferPointer) throws(PieceStoreError) -> Bool {
        precondition(bytes.count == layout.size(of: index))
        // An object larger than the bound is not kept at all: each of its pieces evicted other
        // objects until its own filled the bound, so one such file emptied the cache.
        guard (layout.length + 4095) & ~4095 <= capacity else { return false }
        let need = Self.diskBytes(layout, index)
        let short = shortOnDisk(need)
        if short > 0, !has(key, piece: index) {
            // An object the disk cannot hold whole, with every other object gone, is not kept
            // either: each of its pieces evicted others for room, until the disk held part of
            // it and nothing else.
            let held = usedBytes
            if held > 0, let disk = diskSpace(), (layout.length + 4095) & ~4095 > disk.free - disk.reserve + held {
                shortages.add(1, ordering: .relaxed)
                return false
            }
            let evicted = makeRoomOnDisk(short, sparing: key.id)
            noteDiskFull(true, evicted: evicted)
            guard evicted > 0 else {
                throw PieceStoreError(.full, "no room for piece \(index) of \(key): the disk under \(directory) is down to its reserve")
            }
        }
        do {
            let kept = try write(key, layout: layout, piece: index, bytes: bytes)
            noteDiskFull(false, evicted: 0)
            return kept
        } catch where error.code == .full {
            // Files the trash was still unlinking give their blocks back first.
            if trash.waitForUnlinks() > 0, let kept = try? write(key, layout: layout, piece: index, bytes: bytes) {
                noteDiskFull(false, evicted: 0)
                return kept
            }
            let evicted = makeRoomOnDisk(need, sparing: key.id)
            noteDiskFull(true, evicted: evicted)
            guard evicted > 0 else { throw error }
            return try write(key, layout: layout, piece: index, bytes: bytes)
        }
    }

    private func write(_ key: ObjectKey, layout: PieceLayout, piece index: Int, bytes: UnsafeRawBufferPointer) throws(PieceStoreError) -> Bool {
        let id = key.id
        let need = Self.diskBytes(layout, index)
        // Reserve room and open the file under the lock, so that eviction never moves away a
        // file that a writer is about to recreate.
        var gone = LetGo()
        let reservation = state.withLock { s -> Reservation in
            if let info = s.objects[id], info.layout != layout { letGo(&s, id, into: &gone) }
            if s.objects[id]?.bitmap[index] == true { return .held }
            guard let evicted = evict(&s, toFit: need, sparing: id) else { return .noRoom }
            gone.add(evicted)
            let fd = openForWriting(id)
            guard fd >= 0 else { return .failed(errno: errno) }
            s.tick += 1
            var info = s.objects[id] ?? ObjectInfo(
                key: key, layout: layout, bitmap: PieceBitmap(count: layout.count), storedBytes: 0, generation: s.tick)
            info.storedBytes += need
            s.objects[id] = info
            _ = s.use(id)
            s.usedBytes += need
            return .opened(fd: fd, generation: info.generation)
        }
        // The old layout's row goes now, as an evicted object's does (the new one's follows).
        finishEviction(gone)
        let fd: Int32
        let generation: UInt64
        switch reservation {
        case .held: return true
        case .noRoom: return false
        case .failed(let err):
            throw PieceStoreError(Self.isOutOfSpace(err) ? .full : .io, "cannot open \(dataPath(id)): errno \(err)")
        case .opened(let f, let g):
            (fd, generation) = (f, g)
        }
        let written = Self.pwriteFully(fd, bytes, at: layout.offset(of: index))
        let err = errno
        guard written else {
            abandon(id, generation, fd: fd, layout: layout, piece: index, reserved: need)
            close(fd)
            throw PieceStoreError(Self.isOutOfSpace(err) ? .full : .io, "cannot write piece \(index) of \(key): errno \(err)")
        }
        close(fd)
        let visible = state.withLock { s -> (first: Bool, set: Bool) in
            // The copy this write began on may be gone (its bytes went to an unlinked file).
            guard var info = s.objects[id], info.generation == generation else { return (false, false) }
            if info.bitmap[index] {
                // Another writer stored the piece meanwhile: its blocks are counted once.
                info.storedBytes -= need
                s.usedBytes -= need
                s.objects[id] = info
                return (false, true)
            }
            let first = info.bitmap.isEmpty
            info.bitmap[index] = true
            s.objects[id] = info
            return (first, true)
        }
        if visible.set { writeRowLater(id) }
        if visible.first { observer.withLock { $0 }?.call(.held(id)) }
        return visible.set
    }

    /// Undoes a write that failed: its reservation, the blocks it wrote (a full disk often
    /// takes part of a piece before it refuses the rest), and the object if it holds nothing.
    private func abandon(_ id: String, _ generation: UInt64, fd: Int32, layout: PieceLayout, piece index: Int, reserved: Int64) {
        let emptied = state.withLock { s -> (file: String?, emptied: Bool)? in
            guard var info = s.objects[id], info.generation == generation else { return nil }
            if !info.bitmap[index] {
                _ = swarmgate_punch_hole(fd, layout.offset(of: index), Int64(layout.size(of: index)))
            }
            info.storedBytes -= reserved
            s.usedBytes -= reserved
            guard info.bitmap.isEmpty && info.storedBytes == 0 else {
                s.objects[id] = info
                return (nil, false)
            }
            s.objects[id] = nil
            s.recency.remove(id)
            return (trash.take(dataPath(id)), true)
        }
        guard let emptied else { return }
        // It held nothing: no one heard of it, so no one hears of it going.
        trash.empty(emptied.file.map { [$0] } ?? [])
        // Kept, it was still used by the write: its row has its new place.
        writeRowLater(id, within: emptied.emptied ? Self.indexDelay : Self.useDelay)
    }

    /// `store(_:layout:piece:bytes:)` for bytes in an array.
    @discardableResult
    public func store(_ key: ObjectKey, layout: PieceLayout, piece index: Int, bytes: [UInt8]) throws(PieceStoreError) -> Bool {
        let result = bytes.withUnsafeBytes { b in Result { () throws(PieceStoreError) in try store(key, layout: layout, piece: index, bytes: b) } }
        return try result.get()
    }

    /// Forgets piece `index` of `key` (it failed verification, or could not be read); of copy
    /// `generation` only, when one is given. Returns whether the piece was held.
    @discardableResult
    public func dropPiece(_ key: ObjectKey, _ index: Int) -> Bool { dropPiece(key, index, of: nil) }

    private func dropPiece(_ key: ObjectKey, _ index: Int, of generation: UInt64?) -> Bool {
        let id = key.id
        // The hole is punched under the lock: a writer storing the piece again meanwhile would
        // otherwise lose it to the hole.
        let dropped = state.withLock { s -> Bool in
            guard var info = s.objects[id], info.bitmap[index], generation.map({ $0 == info.generation }) ?? true else { return false }
            info.bitmap[index] = false
            let n = Self.diskBytes(info.layout, index)
            info.storedBytes -= n
            s.usedBytes -= n
            s.objects[id] = info
            let fd = open(dataPath(id), O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                _ = swarmgate_punch_hole(fd, info.layout.offset(of: index), Int64(info.layout.size(of: index)))
                close(fd)
            }
            return true
        }
        if dropped { writeRowLater(id) }
        return dropped
    }

    /// Forgets everything held of `key` (its checksums changed, or it was removed).
    public func remove(_ key: ObjectKey) { remove([key]) }

    /// Removes these objects together: one write of the index for them all.
    public func remove(_ keys: [ObjectKey]) {
        let gone = state.withLock { s in
            var gone = LetGo()
            for key in keys { letGo(&s, key.id, into: &gone) }
            return gone
        }
        finishEviction(gone)
    }

    // MARK: internals

    /// A file system error as the system names it ("Not a directory"), not Foundation's dump.
    static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        let underlying = (ns.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
        let posix = ns.domain == NSPOSIXErrorDomain ? ns : underlying.flatMap { $0.domain == NSPOSIXErrorDomain ? $0 : nil }
        if let posix { return String(cString: strerror(Int32(posix.code))) }
        return ns.localizedDescription
    }

    private enum Reservation {
        case held, noRoom
        case failed(errno: Int32)
        case opened(fd: Int32, generation: UInt64)
    }

    /// Objects let go under the lock: their ids (their rows go, and the observer hears) and
    /// their files, moved into the trash to be unlinked off the lock.
    struct LetGo {
        var ids: [String] = []
        var files: [String] = []
        /// Bytes counted against the bound that went with them.
        var bytes: Int64 = 0

        mutating func add(_ other: LetGo) {
            ids += other.ids
            files += other.files
            bytes += other.bytes
        }
    }

    /// Forgets `id` and moves its file into the trash. Under the lock, so that a writer never
    /// recreates a file that is about to go.
    private func letGo(_ s: inout State, _ id: String, into gone: inout LetGo) {
        guard let info = s.objects.removeValue(forKey: id) else { return }
        s.recency.remove(id)
        s.usedBytes -= info.storedBytes
        gone.bytes += info.storedBytes
        gone.ids.append(id)
        if let file = trash.take(dataPath(id)) { gone.files.append(file) }
    }

    static func isOutOfSpace(_ err: Int32) -> Bool { err == ENOSPC || err == EDQUOT }

    /// What the store keeps free on its disk for the SQLite files beside the pieces (their
    /// write-ahead logs grow between checkpoints): a quarter of the disk, at most 64 MiB.
    static func diskReserve(diskBytes: Int64) -> Int64 { min(64 << 20, diskBytes / 4) }

    /// How many bytes the store's disk lacks to take `need` more and keep its reserve (0: none,
    /// or the disk cannot be asked). Files still being unlinked give their blocks back before
    /// the disk is said to be short.
    private func shortOnDisk(_ need: Int64) -> Int64 {
        guard let disk = diskSpace(), disk.free - need < disk.reserve else { return 0 }
        trash.waitForUnlinks()
        guard let again = diskSpace() else { return 0 }
        return max(0, again.reserve - (again.free - need))
    }

    /// The bytes free on the store's disk and the reserve kept there; nil when the disk cannot
    /// be asked.
    private func diskSpace() -> (free: Int64, reserve: Int64)? {
        var disk = statvfs()
        guard statvfs(directory, &disk) == 0 else { return nil }
        return (Int64(disk.f_bavail) * Int64(disk.f_frsize), Self.diskReserve(diskBytes: Int64(disk.f_blocks) * Int64(disk.f_frsize)))
    }

    /// Evicts least recently used objects (never `sparing`) until `amount` bytes and a
    /// sixteenth of what the store holds are freed: the disk is short before the bound, and
    /// the slack keeps the next pieces from meeting it at once. Returns how many went; 0 when
    /// none made room (objects holding nothing, met on the way, go too).
    private func makeRoomOnDisk(_ amount: Int64, sparing: String) -> Int {
        let evicted = state.withLock { s in evictLeastRecentlyUsed(&s, freeing: amount + s.usedBytes / 16, sparing: sparing) }
        // The disk needs the blocks back before the piece is written.
        finishEviction(evicted, freeingNow: true)
        return evicted.bytes > 0 ? evicted.ids.count : 0
    }

    /// Logs the disk under the store filling (each time objects are evicted for it, or once
    /// while nothing is left to evict) and having room again.
    private func noteDiskFull(_ full: Bool, evicted: Int) {
        // Every stored piece comes here: on a disk with room, one atomic load.
        guard full || diskFull.load(ordering: .relaxed) else { return }
        if full { shortages.add(1, ordering: .relaxed) }
        let was = diskFull.exchange(full && evicted == 0, ordering: .relaxed)
        if full && evicted > 0 {
            diskEvictions.failed(["objects": "\(evicted)", "directory": "\(directory)"])
        } else if full && !was {
            logger.error("the disk under the piece store is full and the store holds nothing to evict: pieces are served but not kept until there is room",
                         metadata: ["directory": "\(directory)"])
        } else if !full && was {
            logger.notice("the disk under the piece store has room again")
        }
    }

    /// Evicts least recently used objects (never `sparing`) until `need` more bytes fit under
    /// the bound. Returns what was evicted (their rows and files go in `finishEviction`), or
    /// nil when even evicting all others would not make room.
    private func evict(_ s: inout State, toFit need: Int64, sparing: String?) -> LetGo? {
        let spared = sparing.flatMap { s.objects[$0]?.storedBytes } ?? 0
        guard need + spared <= capacity else { return nil }
        return evictLeastRecentlyUsed(&s, freeing: s.usedBytes + need - capacity, sparing: sparing)
    }

    /// Evicts least recently used objects (never `sparing`) until `amount` bytes are freed or
    /// none is left, moving their files into the trash. Objects met on the way that hold and
    /// reserve nothing (every piece dropped) go too.
    private func evictLeastRecentlyUsed(_ s: inout State, freeing amount: Int64, sparing: String?) -> LetGo {
        var gone = LetGo()
        var next = s.recency.oldest
        while gone.bytes < amount, let id = next {
            next = s.recency.newer(than: id)
            if id != sparing { letGo(&s, id, into: &gone) }
        }
        return gone
    }

    /// What follows objects let go under the lock, off it: their files are unlinked (on the
    /// trash's queue; here, when `freeingNow`), their index rows deleted, and the observer told.
    private func finishEviction(_ gone: LetGo, freeingNow: Bool = false) {
        if freeingNow { trash.emptyNow(gone.files) } else { trash.empty(gone.files) }
        guard !gone.ids.isEmpty else { return }
        deleteRows(gone.ids)
        observer.withLock { $0 }?.call(.gone(gone.ids))
        logger.debug("evicted objects", metadata: ["count": "\(gone.ids.count)"])
    }

    /// Deletes the rows of objects no longer held at once, not behind: a row left after its
    /// file went would name pieces that a file made again under the same id lacks. (An object
    /// made again meanwhile gets its current row.) Rows that cannot be deleted now are left to
    /// the writes behind, which retry.
    private func deleteRows(_ ids: [String]) {
        do {
            try writeRows { Set(ids) }
        } catch {
            for id in ids { writeRowLater(id) }
        }
    }

    /// Whether the index's last write behind failed (a full disk, a damaged index file): the
    /// store serves, but what it holds is not kept for a restart until a write passes.
    public var indexIsFailing: Bool { indexFailures.isFailing }

    /// Writes now the index rows that are behind the store's state: what a graceful stop does
    /// before the process ends (a test does it before it reopens the folder). When it returns,
    /// every change made before the call is on disk: rows that a write behind had taken were
    /// committed before this call's transaction began.
    public func flush() throws(PieceStoreError) {
        try writeRows {
            unwritten.withLock { u in
                defer { u.ids = [] }
                return u.ids
            }
        }
    }

    /// Has the row of `id` written within `delay`, with every other row changed meanwhile.
    /// A write that fails (a full disk) is tried again every `indexRetryDelay` until one passes.
    private func writeRowLater(_ id: String, within delay: Duration = PieceStore.indexDelay) {
        _ = unwritten.withLock { $0.ids.insert(id) }
        scheduleWrite(after: delay)
    }

    /// Has the rows behind written after `delay` at the latest: schedules a write behind,
    /// unless one is due by then.
    private func scheduleWrite(after delay: Duration) {
        let due = ContinuousClock.now + delay
        let number = unwritten.withLock { u -> UInt64? in
            if let scheduled = u.scheduled {
                guard due < scheduled.due else { return nil }
                u.superseded.insert(scheduled.number)
            }
            u.schedules += 1
            u.scheduled = (due, u.schedules)
            return u.schedules
        }
        guard let number else { return }
        indexWrites.asyncAfter(deadline: .now() + delay.dispatchInterval) { [self] in writeBehind(number) }
    }

    /// Writes the rows behind, as scheduled write `number` (unless superseded); a write that
    /// fails is tried again after `indexRetryDelay`.
    private func writeBehind(_ number: UInt64) {
        let superseded = unwritten.withLock { u in
            guard u.superseded.remove(number) == nil else { return true }
            u.scheduled = nil
            return false
        }
        guard !superseded else { return }
        do throws(PieceStoreError) {
            try flush()
            indexFailures.succeeded()
        } catch {
            // Failed rows are back in `ids`.
            indexFailures.failed(["error": "\(error)"])
            scheduleWrite(after: Self.indexRetryDelay)
        }
    }

    /// How long a failed write behind waits before it is tried again.
    static let indexRetryDelay: Duration = .seconds(1)

    /// Writes the rows of the ids that `take` hands out, in one transaction; `take` runs inside
    /// it, so that transactions, serialized, also order what they took. Each row is read from
    /// the state inside the transaction, so a later write never stores an older bitmap over a
    /// newer one; an object no longer held loses its row. Ids whose transaction fails are put
    /// back among the unwritten.
    private func writeRows(_ take: () -> Set<String>) throws(PieceStoreError) {
        var taken: Set<String> = []
        do {
            // On the writer's queue, so that a call finding nothing to write has waited for
            // every transaction that took rows before it; with no transaction then.
            try database.writeWithoutTransaction { db in
                taken = take()
                guard !taken.isEmpty else { return }
                do {
                    try db.inTransaction {
                        try putRows(taken, in: db)
                        return .commit
                    }
                } catch {
                    // Back before the writer is let go: a flush waiting for it then finds
                    // them, and writes them or fails (it returned as if they were written).
                    unwritten.withLock { $0.ids.formUnion(taken) }
                    throw error
                }
            }
        } catch {
            throw PieceStoreError(.index, "cannot write \(taken.count) index rows: \(error)")
        }
    }

    /// Writes the current rows of `ids` (deletes those no longer held) in `db`'s transaction.
    private func putRows(_ ids: Set<String>, in db: Database) throws {
        for id in ids {
            guard let info = state.withLock({ $0.objects[id] }) else {
                try db.cachedStatement(sql: "DELETE FROM pieces_objects WHERE id = ?").execute(arguments: [id])
                continue
            }
            try db.cachedStatement(
                sql: """
                    INSERT INTO pieces_objects (id, xresid, host, path, length, piece_size, bitmap, last_use)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET bitmap = excluded.bitmap, last_use = excluded.last_use,
                        length = excluded.length, piece_size = excluded.piece_size
                    """
            ).execute(arguments: [
                id, info.key.xresid, info.key.host, info.key.path, info.layout.length, info.layout.pieceSize,
                Data(info.bitmap.bits), info.lastUse,
            ])
        }
    }

    /// Opens the data file of `id` for writing, creating it (and its folder, the first time).
    /// On failure errno is the failing call's (ENOSPC from either, so a full disk reads as one).
    private func openForWriting(_ id: String) -> Int32 {
        let path = dataPath(id)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd < 0 && errno == ENOENT else { return fd }
        guard mkdir(directory + "/objects/" + id.prefix(2), 0o700) == 0 || errno == EEXIST else { return -1 }
        return open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    }

    func dataPath(_ id: String) -> String {
        "\(directory)/objects/\(id.prefix(2))/\(id)"
    }

    /// Disk blocks piece `index` takes, as counted against the bound: every 4 KiB block its
    /// bytes touch. A piece size that is not a multiple of 4 KiB (a tracker's choice) puts two
    /// pieces in one block; counting it for each is over by a block at most, while its size
    /// rounded up (as before) was under by one for a piece across a block boundary.
    static func diskBytes(_ layout: PieceLayout, _ index: Int) -> Int64 {
        let start = layout.offset(of: index)
        let end = start + Int64(layout.size(of: index))
        return ((end + 4095) & ~4095) - (start & ~4095)
    }

    static func bytes(of bitmap: PieceBitmap, _ layout: PieceLayout) -> Int64 {
        var total: Int64 = 0
        for i in 0..<layout.count where bitmap[i] { total += diskBytes(layout, i) }
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

extension Duration {
    /// The same span for Dispatch (`asyncAfter`), to the nanosecond.
    public var dispatchInterval: DispatchTimeInterval {
        .nanoseconds(Int(components.seconds) * 1_000_000_000 + Int(components.attoseconds / 1_000_000_000))
    }
}
