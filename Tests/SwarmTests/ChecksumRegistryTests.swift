import Foundation
import GRDB
import Logging
import PieceStore
import TestScratch
@testable import Swarm
import Synchronization
import Testing

/// The checksum registry over a real SQLite file: dropping a copy whose origin copy changed.
@Suite("Checksum registry")
struct ChecksumRegistryTests {
    let folder = Scratch.path("registry")
    let key = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg.ts")

    func checksums(_ byte: UInt8) -> PieceChecksums {
        PieceChecksums(layout: PieceLayout(length: 10, pieceSize: 1024), digests: [SHA256.hash(Array(repeating: byte, count: 10))])!
    }

    func registry() throws -> ChecksumRegistry {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: folder + "/registry.sqlite"), logger: Logger(label: "test"))
    }

    /// A registry written before source URLs were kept opens as it was (its entries without
    /// one), gains the column, and keeps the URLs of the copies prepared from then on.
    @Test func aRegistryFromBeforeSourceURLsOpensAndKeepsThemFromThen() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/old-registry.sqlite"
        let old = checksums(1)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                CREATE TABLE registry_objects (
                    id TEXT PRIMARY KEY, xresid TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL,
                    state TEXT NOT NULL, length INTEGER, piece_size INTEGER, digests BLOB,
                    etag TEXT, last_modified TEXT, content_type TEXT, error TEXT, updated REAL NOT NULL)
                """)
            try db.execute(
                sql: "INSERT INTO registry_objects VALUES (?, 's', 'cdn.example.com', '/seg.ts', 'ready', 10, 1024, ?, NULL, NULL, NULL, NULL, 0)",
                arguments: [key.id, Data(old.packed)])
        }
        let storage = try SQLiteRegistryStorage(path: path)
        let before = try storage.loadEntries()
        #expect(before.count == 1 && before[0].state == .ready && before[0].checksums == old && before[0].sourceURL == nil)
        let registry = try ChecksumRegistry(storage: storage, logger: Logger(label: "test"))
        let newer = ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg2.ts")
        registry.markReady(newer, checksums: checksums(2), etag: nil, lastModified: nil, contentType: nil, sourceURL: "https://cdn.example.com/seg2.ts?token=1")
        let after = try SQLiteRegistryStorage(path: path).loadEntries()
        #expect(after.first { $0.key == newer }?.sourceURL == "https://cdn.example.com/seg2.ts?token=1")
        #expect(after.first { $0.key == key }?.sourceURL == nil)
    }

    /// Of requests that find one copy changed at the same moment, exactly one drops it.
    @Test func aCopyIsDroppedOnceHoweverManyFindItChanged() async throws {
        let registry = try registry()
        let old = checksums(1)
        registry.markReady(key, checksums: old, etag: nil, lastModified: nil, contentType: nil)
        let key = key
        let drops = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 { group.addTask { registry.drop(key, ifCopy: old) } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(drops == 1)
        #expect(registry.checksums(key) == nil)
    }

    /// A drop of the old copy that comes after the new copy was made ready leaves the new one,
    /// on disk as in memory.
    @Test func aLateDropOfTheOldCopyLeavesTheNewOne() throws {
        let registry = try registry()
        let (old, new) = (checksums(1), checksums(2))
        #expect(old.fingerprint != new.fingerprint)
        registry.markReady(key, checksums: old, etag: nil, lastModified: nil, contentType: nil)
        registry.markReady(key, checksums: new, etag: nil, lastModified: nil, contentType: nil)
        #expect(!registry.drop(key, ifCopy: old))
        #expect(registry.checksums(key) == new)
        #expect(try self.registry().checksums(key) == new, "as written")
    }

    /// The registry's SQLite file with saves that fail while `failing` is set, or that are
    /// slow to begin (up to `slowStart` microseconds, at random; those of a failure wait
    /// until `holdFailures` is cleared): a disk that fails or stalls for a moment, which a
    /// real one cannot be made to do on demand.
    final class FlakyStorage: RegistryStorage {
        let file: SQLiteRegistryStorage
        let failing = Atomic<Bool>(false)
        /// While set, a save of entries with a failed one waits (the recording of a failure).
        let holdFailures = Atomic<Bool>(false)
        let slowStart: UInt32

        init(_ file: SQLiteRegistryStorage, slowStart: UInt32 = 0) {
            self.file = file
            self.slowStart = slowStart
        }

        func loadEntries() throws(RegistryError) -> [RegistryEntry] { try file.loadEntries() }
        func save(_ entries: [RegistryEntry]) throws(RegistryError) {
            if failing.load(ordering: .sequentiallyConsistent) { throw RegistryError("disk failed (test)") }
            if slowStart > 0 { usleep(UInt32.random(in: 0...slowStart)) }
            while holdFailures.load(ordering: .sequentiallyConsistent) && entries.contains(where: { $0.state == .failed }) { usleep(1000) }
            try file.save(entries)
        }
        func loadJobs() throws(RegistryError) -> [PrepareJob] { try file.loadJobs() }
        func save(jobs: [PrepareJob]) throws(RegistryError) {
            if slowStart > 0 { usleep(UInt32.random(in: 0...slowStart)) }
            try file.save(jobs: jobs)
        }
        func deleteEntries(_ ids: [String]) throws(RegistryError) { try file.deleteEntries(ids) }
        func deleteJobs(_ ids: [String]) throws(RegistryError) { try file.deleteJobs(ids) }
        func loadPlaylists() throws(RegistryError) -> [(name: String, refs: [ObjectRef])] { try file.loadPlaylists() }
        func savePlaylists(_ changes: [(name: String, refs: [ObjectRef]?)]) throws(RegistryError) {
            try file.savePlaylists(changes)
        }
        func ping() throws(RegistryError) { try file.ping() }
    }

    /// A change whose write failed is written with the next one, even when that next one
    /// changes nothing (a late drop of the old copy): the file never goes back to the old copy.
    @Test func aChangeWhoseWriteFailedIsWrittenWithTheNextEvenIfThatChangesNothing() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = FlakyStorage(try SQLiteRegistryStorage(path: folder + "/registry.sqlite"))
        let registry = try ChecksumRegistry(storage: storage, logger: Logger(label: "test"))
        let (old, new) = (checksums(1), checksums(2))
        registry.markReady(key, checksums: old, etag: nil, lastModified: nil, contentType: nil)
        storage.failing.store(true, ordering: .sequentiallyConsistent)
        registry.markReady(key, checksums: new, etag: nil, lastModified: nil, contentType: nil)
        #expect(try self.registry().checksums(key) == old, "the write failed")
        storage.failing.store(false, ordering: .sequentiallyConsistent)
        #expect(!registry.drop(key, ifCopy: old))
        #expect(try self.registry().checksums(key) == new, "written with the drop that changed nothing")
    }

    /// Changes to the same entries from several threads at once (nodes' prepares, jobs ending,
    /// copies dropped) leave the file as memory holds them, even on a disk whose writes stall:
    /// a write of what memory held before another change never comes after that change's
    /// write. (Each write took its rows when its change was made: after a stall, an older
    /// state could be written last, and the next start would load it.)
    @Test func theFileHoldsTheLastChangeOfEachEntryWhateverTheThreads() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/threads.sqlite"
        let storage = FlakyStorage(try SQLiteRegistryStorage(path: path), slowStart: 300)
        let registry = try ChecksumRegistry(storage: storage, logger: Logger(label: "test"))
        let k = key(0)
        // Rounds of four changes at once, from threads of their own; after each, the file is
        // read again.
        var mismatches: [String] = []
        for round in 0..<40 {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    DispatchQueue.concurrentPerform(iterations: 4) { t in
                        switch (round + t) % 3 {
                        case 0: registry.markReady(k, checksums: checksums(UInt8(t)), etag: "\"\(round)-\(t)\"", lastModified: nil, contentType: nil)
                        case 1: registry.markFailed(k, "404 in round \(round), thread \(t)")
                        default: registry.markPreparing([k])
                        }
                    }
                    done.resume()
                }
            }
            let stored = try SQLiteRegistryStorage(path: path).loadEntries().first
            let memory = registry.entry(k)
            if stored?.state != memory?.state || stored?.etag != memory?.etag || stored?.error != memory?.error {
                mismatches.append("round \(round): file \(String(describing: stored)), memory \(String(describing: memory))")
            }
        }
        #expect(mismatches.count == 0, "of 40 rounds; the first: \(mismatches.first ?? "")")
    }

    func key(_ i: Int) -> ObjectKey { ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg-\(i).ts") }

    /// Waits (10 s at most) until `condition` holds: what the registry lets go is deleted in
    /// the background.
    func settled(_ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    /// The ids the registry's file holds.
    func storedIDs(_ path: String) throws -> Set<String> {
        Set(try SQLiteRegistryStorage(path: path).loadEntries().map(\.key.id))
    }

    /// The registry keeps at most its capacity of ready entries, the ones used last (read or
    /// changed): one not used while half the capacity came after it is let go, from memory and
    /// from the file, and its owner hears of it (to remove its pieces, a failed one's too). Entries of objects not
    /// ready (failed: a client asking for made-up paths) have a table of their own, a tenth
    /// the size (100 at least), and never push a ready one out. Every object was kept for good.
    @Test func theEntriesUsedLastAreKeptUpToTheCapacity() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/bounded.sqlite"
        let told = Mutex<[ObjectKey]>([])
        let registry = try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: path), capacity: 10, logger: Logger(label: "test")) { keys in
            told.withLock { $0 += keys }
        }
        // Object 0 is played all along; the others come one after the other.
        for i in 0..<40 {
            registry.markReady(key(i), checksums: checksums(UInt8(i)), etag: nil, lastModified: nil, contentType: nil)
            #expect(registry.count <= 10, "\(registry.count) kept after \(i)")
            #expect(registry.checksums(key(0)) == checksums(0), "the object played is kept")
        }
        // 300 made-up paths the origin lacks: their failures churn their own table.
        for i in 1000..<1300 { registry.markFailed(key(i), "404") }
        #expect(registry.count <= 10 + 100)
        #expect((1000..<1300).filter { registry.holds(key($0)) }.count < 100)
        let kept = Set((0..<40).filter { registry.holds(key($0)) })
        #expect(kept.isSuperset(of: [0] + Array(35..<40)), "the last ones and the one played: \(kept.sorted())")
        #expect(!kept.contains(1) && !kept.contains(20), "\(kept.sorted())")
        let failedKept = Set((1000..<1300).filter { registry.holds(key($0)) }.map { key($0).id })
        // Deleted and told in the background, off the caller's time.
        let want = Set(kept.map { key($0).id }).union(failedKept)
        try await settled { try storedIDs(path) == want }
        #expect(try storedIDs(path) == want, "the file holds what memory does")
        let letGo = told.withLock { $0 }.map(\.id)
        let failedGone = (1000..<1300).map { key($0).id }.filter { !failedKept.contains($0) }
        #expect(Set(letGo) == Set((0..<40).filter { !kept.contains($0) }.map { key($0).id } + failedGone), "the owner heard of each one let go")
        #expect(letGo.count == Set(letGo).count, "once each")
        // Let go, an object is unknown: asked for again, it is prepared again.
        #expect(registry.checksums(key(1)) == nil)
    }

    /// An object let go while ready and prepared again before its deletion ran is not
    /// deleted with its old copy: its pieces stay for the job that prepares it. The ready
    /// copy stayed among those let go when the entry moved to the other table, and if the new
    /// entry was let go from that table too (heavy churn), the old copy, ready, had its owner
    /// remove the pieces the job was writing. The deletion is held (its first call waits) to
    /// get there.
    @Test func anObjectPreparedAgainBeforeItsDeletionKeepsItsPieces() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let told = Mutex<[ObjectKey]>([])
        let (entered, held) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let first = Atomic<Bool>(true)
        let registry = try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: folder + "/revived.sqlite"), capacity: 2, logger: Logger(label: "test")) { keys in
            if first.exchange(false, ordering: .sequentiallyConsistent) {
                entered.signal()
                _ = held.wait(timeout: .now() + 60)  // bounded: a failing run ends, not hangs
            }
            told.withLock { $0 += keys }
        }
        let (x, z) = (key(1), key(2))
        func ready(_ i: Int) { registry.markReady(key(i), checksums: checksums(UInt8(i)), etag: nil, lastModified: nil, contentType: nil) }
        // Ready ones, one at a time (a capacity of 2): key(0) is let go first, and its
        // deletion waits; then key(1) and key(2), with nothing deleting them yet.
        ready(0)
        ready(1)
        try #require(entered.wait(timeout: .now() + 60) == .success, "the first deletion began")
        ready(2)
        ready(3)
        #expect(!registry.holds(x) && !registry.holds(z), "let go, not yet deleted")
        registry.markPreparing([x])  // a player came back for it
        // Failures the origin answers push it out of the table of entries not ready.
        registry.markPreparing((100..<220).map(key))
        #expect(!registry.holds(x))
        held.signal()
        try await settled { told.withLock { $0.contains(z) } }
        #expect(told.withLock { $0.contains(z) }, "the deletion ran past the objects let go with it")
        #expect(!told.withLock { $0.contains(x) }, "the pieces of the object being prepared were to be removed")
    }

    /// A file of more entries than the capacity (written by a registry with a larger one)
    /// opens with the most recently changed ones, and the rest are deleted from it and from
    /// the store.
    @Test func aFileOfMoreThanTheCapacityKeepsTheNewest() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/shrunk.sqlite"
        let large = try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: path), capacity: 100, logger: Logger(label: "test"))
        for i in 0..<30 {
            large.markReady(key(i), checksums: checksums(UInt8(i)), etag: nil, lastModified: nil, contentType: nil)
            try await Task.sleep(for: .milliseconds(2))  // each a later `updated`
        }
        #expect(try storedIDs(path).count == 30)
        let told = Mutex<Set<String>>([])
        let small = try ChecksumRegistry(storage: try SQLiteRegistryStorage(path: path), capacity: 10, logger: Logger(label: "test")) { keys in
            told.withLock { $0.formUnion(keys.map(\.id)) }
        }
        #expect(small.count == 10)
        #expect((0..<30).filter { small.holds(key($0)) } == Array(20..<30))
        try await settled { try storedIDs(path) == Set((20..<30).map { key($0).id }) }
        #expect(try storedIDs(path) == Set((20..<30).map { key($0).id }))
        #expect(told.withLock { $0 } == Set((0..<20).map { key($0).id }), "their pieces go too")
        // Those loaded are there to be used until half the capacity was (then those not used
        // are let go, as any).
        #expect((26..<30).allSatisfy { small.checksums(key($0)) == checksums(UInt8($0)) })
        #expect(small.count == 10)
        // And it stays bounded from there.
        for i in 30..<50 { small.markReady(key(i), checksums: checksums(UInt8(i)), etag: nil, lastModified: nil, contentType: nil) }
        #expect(small.count <= 10)
        try await settled { try storedIDs(path).count == small.count }
        #expect(try storedIDs(path).count == small.count)
    }
}
