import Foundation
import GRDB
import Logging
import PieceStore
import Synchronization
import Testing
import TestScratch

/// The piece store on a real folder and a real SQLite index.
@Suite("PieceStore")
struct PieceStoreTests {
    let folder = Scratch.path("ps")
    let logger = Logger(label: "test")
    let key = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/a/seg.ts")

    /// An object of `length` deterministic bytes cut into `pieceSize` pieces, with its checksums.
    func object(length: Int, pieceSize: Int) -> ([UInt8], PieceChecksums) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let layout = PieceLayout(length: Int64(length), pieceSize: pieceSize)
        let digests = (0..<layout.count).map { i in
            SHA256.hash(Array(bytes[Int(layout.offset(of: i))..<Int(layout.offset(of: i)) + layout.size(of: i)]))
        }
        return (bytes, PieceChecksums(layout: layout, digests: digests)!)
    }

    func piece(_ bytes: [UInt8], _ c: PieceChecksums, _ i: Int) -> [UInt8] {
        Array(bytes[Int(c.layout.offset(of: i))..<Int(c.layout.offset(of: i)) + c.layout.size(of: i)])
    }

    /// A store in `folder` that held piece 0 of each of `keys` (of `bytes`), its index written
    /// as a graceful stop writes it, and is gone.
    func storedAndClosed(_ keys: [ObjectKey], _ bytes: [UInt8], _ c: PieceChecksums) throws {
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        for k in keys { try store.store(k, layout: c.layout, piece: 0, bytes: piece(bytes, c, 0)) }
        try store.flush()
    }

    func read(_ store: PieceStore, _ key: ObjectKey, _ i: Int, _ c: PieceChecksums) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: c.layout.pieceSize)
        let n = out.withUnsafeMutableBytes { store.readPiece(key, i, checksums: c, into: $0) }
        return n.map { Array(out[..<$0]) }
    }

    /// The store's observer is called for every object held and gone, without end: kept as
    /// a bare function behind the store's lock, it gained a pair of re-abstraction thunks at
    /// each call, and a node whose store had taken some 37,000 objects overflowed its stack
    /// calling it. (Run on a thread with a small stack, so that the old code fails within
    /// thousands of calls rather than tens of thousands.)
    @Test func theObserverIsCalledForEveryChangeWithoutEnd() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try PieceStore(directory: folder + "/observed", capacity: 1 << 30, logger: logger)
        let counts = Mutex((held: 0, gone: 0))
        store.observe { change in
            counts.withLock { c in
                switch change {
                case .held: c.held += 1
                case .gone(let ids): c.gone += ids.count
                }
            }
        }
        let (bytes, checksums) = object(length: 10, pieceSize: 1024)
        let rounds = 5000
        let failure = await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            let thread = Thread {
                for i in 0..<rounds {
                    let k = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg-\(i).ts")
                    do {
                        guard try store.store(k, layout: checksums.layout, piece: 0, bytes: bytes) else { return done.resume(returning: "piece \(i) not kept") }
                    } catch {
                        return done.resume(returning: "\(error)")
                    }
                    store.remove(k)
                }
                done.resume(returning: nil)
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
        #expect(failure == nil)
        let (held, gone) = counts.withLock { ($0.held, $0.gone) }
        #expect(held == rounds && gone == rounds)
    }

    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hash(Array("abc".utf8)).description == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash([]).description == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let h = SHA256Hasher()
        h.update(Array("ab".utf8))
        h.update(Array("c".utf8))
        #expect(h.finish() == SHA256.hash(Array("abc".utf8)))
    }

    /// The bitmap the index file holds for `key` (read by a connection of its own), if a row.
    func indexedBitmap(_ key: ObjectKey) throws -> [UInt8]? {
        let db = try DatabaseQueue(path: folder + "/index.sqlite")
        defer { try? db.close() }
        return try db.read { db in
            try Data.fetchOne(db, sql: "SELECT bitmap FROM pieces_objects WHERE id = ?", arguments: [key.id]).map { [UInt8]($0) }
        }
    }

    @Test func piecesRoundTripAndSurviveAReopen() throws {
        let (bytes, c) = object(length: 100_000, pieceSize: 16384)
        do {
            let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
            for i in 0..<c.layout.count { #expect(try store.store(key, layout: c.layout, piece: i, bytes: piece(bytes, c, i))) }
            for i in 0..<c.layout.count { #expect(read(store, key, i, c) == piece(bytes, c, i), "held from the return of store") }
            try store.flush()  // what a graceful stop does
        }
        let reopened = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        for i in 0..<c.layout.count { #expect(read(reopened, key, i, c) == piece(bytes, c, i)) }
        #expect(reopened.usedBytes == Int64(6 * 16384 + 4096))
    }

    /// Rows are written behind the pieces, without a flush: every bit reaches the index file.
    @Test func theIndexCatchesUpWithStoredPiecesOnItsOwn() async throws {
        let (bytes, c) = object(length: 100_000, pieceSize: 16384)
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        let other = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/a/other.ts")
        for i in 0..<c.layout.count {
            try store.store(key, layout: c.layout, piece: i, bytes: piece(bytes, c, i))
            if i.isMultiple(of: 2) { try store.store(other, layout: c.layout, piece: i, bytes: piece(bytes, c, i)) }
        }
        let all = store.info(key)!.bitmap.bits
        let even = store.info(other)!.bitmap.bits
        #expect(all != even)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, try indexedBitmap(key) != all || indexedBitmap(other) != even {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try indexedBitmap(key) == all)
        #expect(try indexedBitmap(other) == even)
        // A dropped piece leaves the row too, and a removed object loses it.
        store.dropPiece(key, 3)
        store.remove(other)
        let dropped = store.info(key)!.bitmap.bits
        #expect(dropped != all)
        let again = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < again, try indexedBitmap(key) != dropped {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try indexedBitmap(key) == dropped)
        #expect(try indexedBitmap(other) == nil)
    }

    func indexedLastUse(_ key: ObjectKey) throws -> Double? {
        let db = try DatabaseQueue(path: folder + "/index.sqlite")
        defer { try? db.close() }
        return try db.read { db in try Double.fetchOne(db, sql: "SELECT last_use FROM pieces_objects WHERE id = ?", arguments: [key.id]) }
    }

    /// A read's new place in the order of use may wait 10 s (`useDelay`) for its row, but a
    /// change of a bitmap is not held up by it: its row comes within `indexDelay`, and the
    /// read's with it.
    @Test func aChangedBitmapIsNotHeldUpByAReadsLaterWrite() async throws {
        let (bytes, c) = object(length: 16384, pieceSize: 16384)
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        let keys = (0..<3).map { ObjectKey(xresid: "s", host: "h", path: "/\($0)") }
        for k in keys.prefix(2) { try store.store(k, layout: c.layout, piece: 0, bytes: bytes) }
        try store.flush()
        try await Task.sleep(for: .milliseconds(300))  // past the write behind those stores scheduled
        let stored = try #require(try indexedLastUse(keys[1]))
        #expect(try #require(try indexedLastUse(keys[0])) < stored)
        _ = read(store, keys[0], 0, c)  // its row due within 10 s
        try store.store(keys[2], layout: c.layout, piece: 0, bytes: bytes)  // within 20 ms
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline, try indexedBitmap(keys[2]) == nil {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try indexedBitmap(keys[2]) != nil, "the new object's row came well before 10 s")
        #expect(try #require(try indexedLastUse(keys[0])) > stored, "and the read's with it")
    }

    @Test func aCorruptPieceReadsAsMissingAndIsDropped() throws {
        let (bytes, c) = object(length: 50_000, pieceSize: 16384)
        let counted = Counter()
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger) { counted.add() }
        for i in 0..<c.layout.count { try store.store(key, layout: c.layout, piece: i, bytes: piece(bytes, c, i)) }
        let file = try FileManager.default.subpathsOfDirectory(atPath: folder + "/objects").first { $0.count > 10 }!
        let h = FileHandle(forUpdatingAtPath: folder + "/objects/" + file)!
        try h.seek(toOffset: 20_000)
        h.write(Data([0x55]))
        try h.close()
        #expect(read(store, key, 1, c) == nil)
        #expect(!store.has(key, piece: 1))
        #expect(counted.value == 1)
        #expect(read(store, key, 0, c) == piece(bytes, c, 0), "the other pieces are untouched")
    }

    /// A data file cut short (a power loss after the index row, before the data reached the
    /// disk) or removed under the store: its pieces read as missing, are dropped and counted,
    /// and are stored again when fetched again. They were kept as held, so every read went to
    /// the origin and what came back was never stored.
    @Test(arguments: [true, false])
    func aPieceItsFileNoLongerHoldsIsDroppedAndStoredAgain(removed: Bool) throws {
        let (bytes, c) = object(length: 50_000, pieceSize: 16384)
        let counted = Counter()
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger) { counted.add() }
        for i in 0..<c.layout.count { try store.store(key, layout: c.layout, piece: i, bytes: piece(bytes, c, i)) }
        let file = try FileManager.default.subpathsOfDirectory(atPath: folder + "/objects").first { $0.count > 10 }!
        if removed {
            try FileManager.default.removeItem(atPath: folder + "/objects/" + file)
        } else {
            #expect(truncate(folder + "/objects/" + file, 20_000) == 0)
        }
        #expect(read(store, key, 2, c) == nil)
        #expect(!store.has(key, piece: 2))
        #expect(counted.value == 1)
        #expect((read(store, key, 0, c) == piece(bytes, c, 0)) == !removed, "a piece below the cut is still there")
        try store.store(key, layout: c.layout, piece: 2, bytes: piece(bytes, c, 2))
        #expect(read(store, key, 2, c) == piece(bytes, c, 2), "stored again")
    }

    /// An index that cannot be written (here its table is gone; a damaged file, a full disk)
    /// is said to be failing, which the gateway's /ready reports, until a write passes.
    @Test func anIndexThatCannotBeWrittenIsSaidToBeFailing() async throws {
        let (bytes, c) = object(length: 50_000, pieceSize: 16384)
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        try store.store(key, layout: c.layout, piece: 0, bytes: piece(bytes, c, 0))
        try store.flush()
        #expect(!store.indexIsFailing)
        let db = try DatabaseQueue(path: folder + "/index.sqlite")
        try await db.write { try $0.execute(sql: "ALTER TABLE pieces_objects RENAME TO elsewhere") }
        try store.store(key, layout: c.layout, piece: 1, bytes: piece(bytes, c, 1))
        let deadline = ContinuousClock.now + .seconds(10)
        while !store.indexIsFailing && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(store.indexIsFailing)
        try await db.write { try $0.execute(sql: "ALTER TABLE elsewhere RENAME TO pieces_objects") }
        let healed = ContinuousClock.now + .seconds(10)
        while store.indexIsFailing && ContinuousClock.now < healed { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!store.indexIsFailing, "the write tried again passed")
        #expect(read(store, key, 1, c) == piece(bytes, c, 1), "served meanwhile")
    }

    /// A cache folder that is a file is named with the system's reason, not Foundation's dump.
    @Test func aCacheFolderThatIsAFileIsRefusedWithTheSystemsReason() throws {
        _ = FileManager.default.createFile(atPath: folder, contents: Data("x".utf8))
        do {
            _ = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
            Issue.record("a file taken for a folder")
        } catch {
            #expect(error.description == "io: cannot create \(folder)/objects: Not a directory", "\(error)")
        }
    }

    @Test func aPieceWrittenButNotIndexedIsNeverServed() throws {
        // A data file with bytes but no index row: what a kill -9 between the write and the
        // index update leaves. Reopening removes it.
        let (bytes, c) = object(length: 40_000, pieceSize: 16384)
        try storedAndClosed([key], bytes, c)
        let id = key.id
        let stray = folder + "/objects/" + id.prefix(2) + "/" + String(repeating: "f", count: 64)
        #expect(FileManager.default.createFile(atPath: stray, contents: Data(bytes)))
        let reopened = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        #expect(!FileManager.default.fileExists(atPath: stray))
        #expect(read(reopened, key, 1, c) == nil)
        #expect(read(reopened, key, 0, c) == piece(bytes, c, 0))
    }

    /// An index SQLite cannot read is set aside, with the data files it named, and the store
    /// starts empty: the store (and the gateway with it) would not open at all.
    @Test func aDamagedIndexIsSetAsideAndTheStoreStartsEmpty() throws {
        let (bytes, c) = object(length: 40_000, pieceSize: 16384)
        try storedAndClosed([key], bytes, c)
        let index = folder + "/index.sqlite"
        // Every row in the file itself (as a stop leaves it), then its header overwritten.
        let db = try DatabaseQueue(path: index)
        _ = try db.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        try db.close()
        let handle = try #require(FileHandle(forWritingAtPath: index))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 100))
        try handle.close()
        let reopened = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        #expect(reopened.info(key) == nil && reopened.usedBytes == 0)
        #expect(FileManager.default.fileExists(atPath: index + ".damaged"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/objects/" + key.id.prefix(2) + "/" + key.id), "its pieces went with it")
        #expect(try reopened.store(key, layout: c.layout, piece: 1, bytes: piece(bytes, c, 1)))
        #expect(read(reopened, key, 1, c) == piece(bytes, c, 1))
    }

    /// A row no store writes (a piece size of 0, a length of another type) is let go: it
    /// trapped in `PieceLayout`, and the gateway could not start.
    @Test(arguments: ["piece_size = 0", "length = -1", "length = 'long'", "last_use = 'x'"])
    func anIndexRowNoStoreWritesIsLetGo(change: String) throws {
        let (bytes, c) = object(length: 40_000, pieceSize: 16384)
        let other = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/a/other.ts")
        try storedAndClosed([key, other], bytes, c)
        let db = try DatabaseQueue(path: folder + "/index.sqlite")
        try db.write { try $0.execute(sql: "UPDATE pieces_objects SET \(change) WHERE id = ?", arguments: [key.id]) }
        try db.close()
        let reopened = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        #expect(reopened.info(key) == nil)
        #expect(read(reopened, other, 0, c) == piece(bytes, c, 0), "the other rows stand")
    }

    /// Pieces written in the index's last moments before a crash (their rows behind) are not
    /// in the bitmap a restart reads: their blocks are given back. They took disk room the
    /// bound never counted, until their object went.
    @Test func blocksOfPiecesTheIndexNeverListedAreGivenBack() throws {
        let (bytes, c) = object(length: 65_536, pieceSize: 16384)
        try storedAndClosed([key], bytes, c)
        // Pieces 2 and 3 written, their bits lost (a kill -9 within the index's delay).
        let path = folder + "/objects/" + key.id.prefix(2) + "/" + key.id
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        let tail = Array(bytes[32768...])
        _ = tail.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 32768) }
        fsync(fd)
        close(fd)
        func allocated() -> Int64 {
            var st = stat()
            return stat(path, &st) == 0 ? Int64(st.st_blocks) * 512 : -1
        }
        #expect(allocated() >= 3 * 16384)
        let reopened = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        #expect(allocated() == 16384 && reopened.usedBytes == 16384)
        #expect(read(reopened, key, 0, c) == piece(bytes, c, 0) && read(reopened, key, 2, c) == nil)
    }

    /// An object larger than the bound is served without being kept (README): its pieces
    /// evicted every other object, then the store held what fit of it.
    @Test func anObjectLargerThanTheBoundEvictsNothing() throws {
        let store = try PieceStore(directory: folder, capacity: 4 * 16384, logger: logger)
        let (small, s) = object(length: 32768, pieceSize: 16384)
        for i in 0..<2 { try store.store(key, layout: s.layout, piece: i, bytes: piece(small, s, i)) }
        let large = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/a/large.mp4")
        let (bytes, c) = object(length: 5 * 16384, pieceSize: 16384)
        for i in 0..<c.layout.count { #expect(try !store.store(large, layout: c.layout, piece: i, bytes: piece(bytes, c, i))) }
        #expect(store.info(large) == nil)
        #expect(read(store, key, 0, s) == piece(small, s, 0) && read(store, key, 1, s) == piece(small, s, 1))
    }

    /// A piece size that is not a multiple of 4 KiB (a tracker's choice) counts each piece by
    /// the blocks its bytes touch: piece 1 of 20,000-byte pieces spans blocks 4 to 9, six, and
    /// was counted as five (its size rounded up), so that scattered pieces passed the bound.
    @Test func aPieceIsCountedByTheBlocksItTouches() throws {
        let store = try PieceStore(directory: folder, capacity: 1 << 20, logger: logger)
        let (bytes, c) = object(length: 60_000, pieceSize: 20_000)
        try store.store(key, layout: c.layout, piece: 1, bytes: piece(bytes, c, 1))
        #expect(store.usedBytes == 6 * 4096)
        var st = stat()
        #expect(stat(folder + "/objects/" + key.id.prefix(2) + "/" + key.id, &st) == 0 && Int64(st.st_blocks) * 512 <= store.usedBytes)
        try store.store(key, layout: c.layout, piece: 0, bytes: piece(bytes, c, 0))
        #expect(store.dropPiece(key, 1))
        #expect(store.usedBytes == 5 * 4096)
    }

    /// Two writers storing an object's pieces while a third removes it again and again, on
    /// threads of their own. Every piece held reads back, and the count is the held pieces'
    /// blocks: two writers of one piece both reserve room, and the one that finds the piece
    /// stored gives its reservation back (before, 4 held pieces were counted as 6 MiB). A
    /// write begun on a removed copy marks nothing of the new one (`generation`); this test
    /// does not reach that window reliably.
    @Test func storesRacingEachOtherAndRemovalsCountEachHeldPieceOnce() throws {
        let (bytes, c) = object(length: 4 << 20, pieceSize: 1 << 20)
        let corrupt = Counter()
        let store = try PieceStore(directory: folder, capacity: 1 << 26, logger: logger) { corrupt.add() }
        let pieces = (0..<4).map { piece(bytes, c, $0) }
        let key = self.key
        DispatchQueue.concurrentPerform(iterations: 3) { t in
            for i in 0..<300 {
                if t == 0 {
                    store.remove(key)
                } else {
                    _ = try? store.store(key, layout: c.layout, piece: (i + t) % 4, bytes: pieces[(i + t) % 4])
                }
            }
        }
        for i in 0..<4 where store.has(key, piece: i) { #expect(read(store, key, i, c) == pieces[i]) }
        #expect(corrupt.value == 0, "no held piece failed verification")
        let held = store.info(key)
        #expect(store.usedBytes == (held?.storedBytes ?? 0))
        #expect(held.map { PieceStoreTests.heldBytes($0, c.layout) } ?? 0 == store.usedBytes, "the count is the held pieces' blocks")
    }

    /// A reader racing an object's removal and its storing again (an eviction, a changed
    /// copy): a read that looked before the removal and opened the file after it finds no
    /// file, or the new copy's file before its piece is written. That is not a corrupt piece:
    /// before, it was counted as one, logged, and the new copy's piece was dropped with it.
    @Test func aReadRacingARemovalIsNotACorruptPiece() throws {
        let (bytes, c) = object(length: 64 << 10, pieceSize: 64 << 10)
        let corrupt = Counter()
        let store = try PieceStore(directory: folder, capacity: 1 << 26, logger: logger) { corrupt.add() }
        let key = self.key
        try store.store(key, layout: c.layout, piece: 0, bytes: bytes)
        let wrong = Counter()
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            for _ in 0..<5000 {
                if t == 0 {
                    store.remove(key)
                    _ = try? store.store(key, layout: c.layout, piece: 0, bytes: bytes)
                } else if let got = read(store, key, 0, c), got != bytes {
                    wrong.add()
                }
            }
        }
        #expect(wrong.value == 0, "every piece read is the object's")
        #expect(corrupt.value == 0, "no read counted a corrupt piece")
        #expect(read(store, key, 0, c) == bytes, "the last copy's piece is held")
    }

    /// An evicted or removed object's file goes to the store's trash under the lock (a rename,
    /// whatever its size) and is unlinked off it: none is left in the objects' folder, and the
    /// trash empties on its own. What a stop left in the trash is removed at the next start.
    @Test func evictedAndRemovedFilesLeaveNothingBehind() async throws {
        let (bytes, c) = object(length: 16384, pieceSize: 16384)
        let keys = (0..<8).map { ObjectKey(xresid: "s", host: "h", path: "/\($0)") }
        do {
            let store = try PieceStore(directory: folder, capacity: 3 * 16384, logger: logger)
            for k in keys { try store.store(k, layout: c.layout, piece: 0, bytes: bytes) }
            store.remove(keys[7])
            let held = keys.filter { store.has($0, piece: 0) }
            #expect(held == Array(keys[5..<7]))
            #expect(try dataFiles().sorted() == held.map(\.id).sorted(), "only the held objects' files are in the objects' folder")
            let deadline = ContinuousClock.now + .seconds(10)
            while try !trashed().isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(try trashed().isEmpty, "the trash emptied")
            for k in held { #expect(read(store, k, 0, c) == bytes) }
            try store.flush()
        }
        let stray = folder + "/trash/left-by-a-stop"
        #expect(FileManager.default.createFile(atPath: stray, contents: Data(bytes)))
        let reopened = try PieceStore(directory: folder, capacity: 3 * 16384, logger: logger)
        #expect(try trashed().isEmpty, "the reopened store emptied the trash")
        #expect(read(reopened, keys[6], 0, c) == bytes)
    }

    func dataFiles() throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: folder + "/objects").filter { $0.count > 10 }.map { String($0.split(separator: "/").last!) }
    }

    func trashed() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: folder + "/trash") }

    static func heldBytes(_ info: PieceStore.ObjectInfo, _ layout: PieceLayout) -> Int64 {
        (0..<layout.count).filter { info.bitmap[$0] }.reduce(0) { $0 + Int64((layout.size(of: $1) + 4095) & ~4095) }
    }

    /// A reopened store evicts in the order of use the closed one would have: reads and the
    /// memory cache's touches are uses, and rows written together keep their order. Before, a
    /// row's last use was the time it was last written, so after a restart the object read
    /// most was evicted first if it was stored first.
    @Test func theOrderOfUseSurvivesAReopen() throws {
        let (bytes, c) = object(length: 16384, pieceSize: 16384)
        let keys = (0..<5).map { ObjectKey(xresid: "s", host: "h", path: "/\($0)") }
        do {
            let store = try PieceStore(directory: folder, capacity: 3 * 16384, logger: logger)
            for k in keys.prefix(3) {
                try store.store(k, layout: c.layout, piece: 0, bytes: bytes)
                try store.flush()
            }
            store.touch(keys[1])
            _ = read(store, keys[0], 0, c)  // 2, 1, 0 from the least recently used; 1 and 0 written together
            store.touch(ObjectKey(xresid: "s", host: "h", path: "/not-held"))
            try store.flush()
        }
        let reopened = try PieceStore(directory: folder, capacity: 3 * 16384, logger: logger)
        try reopened.store(keys[3], layout: c.layout, piece: 0, bytes: bytes)
        #expect(!reopened.has(keys[2], piece: 0), "the least recently used went")
        #expect(reopened.has(keys[0], piece: 0) && reopened.has(keys[1], piece: 0))
        try reopened.store(keys[4], layout: c.layout, piece: 0, bytes: bytes)
        #expect(!reopened.has(keys[1], piece: 0), "then the one touched before the read")
        #expect(reopened.has(keys[0], piece: 0) && reopened.info(ObjectKey(xresid: "s", host: "h", path: "/not-held")) == nil)
    }

    @Test func theBoundIsKeptByEvictingTheLeastRecentlyUsed() throws {
        let store = try PieceStore(directory: folder, capacity: 3 * 16384, logger: logger)
        let (bytes, c) = object(length: 16384, pieceSize: 16384)
        let keys = (0..<5).map { ObjectKey(xresid: "s", host: "h", path: "/\($0)") }
        for k in keys.prefix(3) { try store.store(k, layout: c.layout, piece: 0, bytes: bytes) }
        _ = read(store, keys[0], 0, c)  // 0 is now more recent than 1
        try store.store(keys[3], layout: c.layout, piece: 0, bytes: bytes)
        #expect(store.usedBytes <= 3 * 16384)
        #expect(store.has(keys[0], piece: 0))
        #expect(!store.has(keys[1], piece: 0), "the least recently used went")
        #expect(store.has(keys[3], piece: 0))
        // An object whose every piece was dropped holds nothing: the next eviction that meets
        // it lets it go (before, it stayed listed for good).
        _ = read(store, keys[2], 0, c)  // 0, 3, 2 from the least recently used
        #expect(store.dropPiece(keys[0], 0))
        #expect(store.info(keys[0]) != nil)
        try store.store(keys[1], layout: c.layout, piece: 0, bytes: bytes)  // room for it
        try store.store(keys[4], layout: c.layout, piece: 0, bytes: bytes)  // evicts
        #expect(store.info(keys[0]) == nil, "the empty one went, met first")
        #expect(!store.has(keys[3], piece: 0), "then the least recently used that held bytes")
        for n in [1, 2, 4] { #expect(store.has(keys[n], piece: 0)) }
        // An object larger than the whole bound is not kept, and nothing is evicted for it.
        let (big, bc) = object(length: 4 * 16384, pieceSize: 4 * 16384)
        #expect(try store.store(ObjectKey(xresid: "s", host: "h", path: "/big"), layout: bc.layout, piece: 0, bytes: big) == false)
        for n in [1, 2, 4] { #expect(store.has(keys[n], piece: 0)) }
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
