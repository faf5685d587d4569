import Dispatch
import Foundation
import GRDB
import Logging
import PieceStore
import TestScratch
@testable import Swarm
import Synchronization
import Testing

/// The read-ahead window's changes on their way to SQLite: each playlist's latest state is
/// written once, so lists planned and dropped faster than they are written (a flood of streams
/// opening a long MPD once queued 360 lists of 86,400 objects, 4.6 GB) cost nothing.
@Suite("Read-ahead writes")
struct ReadAheadWritesTests {
    let folder = Scratch.path("read-ahead-writes")

    static func list(_ name: String, _ count: Int, token: String = "t1") -> [ObjectRef] {
        (0..<count).map { ObjectRef(key: ObjectKey(xresid: name, host: "cdn.example.com", path: "/seg\($0).m4s"), url: "https://cdn.example.com/seg\($0).m4s?token=\(token)") }
    }

    /// The registry's SQLite file, counting writes, and failing them while `failing` is set
    /// (a disk that fails for a moment, which a real one cannot be made to do on demand).
    final class CountingStorage: RegistryStorage {
        let file: SQLiteRegistryStorage
        let writes = Mutex<[[String]]>([])
        let failing = Atomic<Bool>(false)

        init(_ file: SQLiteRegistryStorage) { self.file = file }

        func loadEntries() throws(RegistryError) -> [RegistryEntry] { try file.loadEntries() }
        func save(_ entries: [RegistryEntry]) throws(RegistryError) { try file.save(entries) }
        func loadJobs() throws(RegistryError) -> [PrepareJob] { try file.loadJobs() }
        func save(jobs: [PrepareJob]) throws(RegistryError) { try file.save(jobs: jobs) }
        func deleteEntries(_ ids: [String]) throws(RegistryError) { try file.deleteEntries(ids) }
        func deleteJobs(_ ids: [String]) throws(RegistryError) { try file.deleteJobs(ids) }
        func loadPlaylists() throws(RegistryError) -> [(name: String, refs: [ObjectRef])] { try file.loadPlaylists() }
        func savePlaylists(_ changes: [(name: String, refs: [ObjectRef]?)]) throws(RegistryError) {
            writes.withLock { $0.append(changes.map(\.name)) }
            if failing.load(ordering: .sequentiallyConsistent) { throw RegistryError("disk failed (test)") }
            try file.savePlaylists(changes)
        }
        func ping() throws(RegistryError) { try file.ping() }
    }

    func storage(_ name: String) throws -> CountingStorage {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return CountingStorage(try SQLiteRegistryStorage(path: folder + "/\(name).sqlite"))
    }

    /// Waits until the writes queued on `queue` so far are done, without blocking a thread.
    static func drained(_ queue: DispatchQueue) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in queue.async { c.resume() } }
    }

    /// A registry row no registry writes (a piece size of 0, a value of another type) loses
    /// its checksums, or is skipped; the others load. It trapped at the tracker's start.
    @Test func aRegistryRowNoRegistryWritesDoesNotStopTheLoad() throws {
        let path = folder + "/rows.sqlite"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storage = try SQLiteRegistryStorage(path: path)
        let keys = (0..<3).map { ObjectKey(xresid: "s", host: "cdn.example.com", path: "/row-\($0).ts") }
        let checksums = PieceChecksums(layout: PieceLayout(length: 100, pieceSize: 64), digests: [PieceDigest](repeating: SHA256.hash([1]), count: 2))!
        try storage.save(keys.map { key in
            var e = RegistryEntry(key: key, state: .ready)
            e.checksums = checksums
            return e
        })
        let db = try DatabaseQueue(path: path)
        try db.write { db in
            try db.execute(sql: "UPDATE registry_objects SET piece_size = 0 WHERE id = ?", arguments: [keys[0].id])
            try db.execute(sql: "UPDATE registry_objects SET host = 7, length = 'long' WHERE id = ?", arguments: [keys[1].id])
        }
        try db.close()
        let loaded = try SQLiteRegistryStorage(path: path).loadEntries()
        #expect(loaded.first { $0.key == keys[0] }.map { $0.checksums == nil && $0.state != .ready } == true)
        #expect(loaded.first { $0.key == keys[2] }?.checksums == checksums)
    }

    @Test func changesMadeWhileAWriteWaitsAreWrittenOnceAsTheirLatestState() async throws {
        let storage = try storage("coalesced")
        let queue = DispatchQueue(label: "test.read-ahead-writes")
        queue.suspend()  // the writer busy elsewhere
        let writes = ReadAheadWrites(storage: storage, queue: queue, failures: RepeatedFailureLog("test", logger: Logger(label: "test")))
        writes.record(("a", Self.list("a", 3)), dropped: [])
        writes.record(("b", Self.list("b", 3)), dropped: [])
        // A flood: a thousand long lists, each dropping the one before.
        for i in 0..<1000 { writes.record(("x\(i)", Self.list("x\(i)", 100)), dropped: i == 0 ? [] : ["x\(i - 1)"]) }
        writes.record(("c", Self.list("c", 3)), dropped: ["x999"])
        writes.record(("a", Self.list("a", 3, token: "t2")), dropped: [])  // newer tokens: now the latest
        queue.resume()
        await Self.drained(queue)

        let written = storage.writes.withLock { $0 }
        #expect(written.count == 1, "one write for all of them")
        #expect(written.first?.count == 1003, "each name once: a, b, c and the thousand, dropped")
        let kept = try storage.loadPlaylists()
        #expect(kept.map(\.name) == ["b", "c", "a"], "the latest state, in the order of the latest changes")
        #expect(kept.last?.refs.first?.url.hasSuffix("token=t2") == true)
    }

    /// A write that failed is tried again on its own (after `retryAfter`), not only when the
    /// next change comes: an idle gateway would keep it in memory, and a restart lose it.
    @Test func changesWhoseWriteFailedAreWrittenAgain() async throws {
        let storage = try storage("failed")
        let queue = DispatchQueue(label: "test.read-ahead-writes")
        let writes = ReadAheadWrites(
            storage: storage, queue: queue, retryAfter: .milliseconds(100), failures: RepeatedFailureLog("test", logger: Logger(label: "test")))
        storage.failing.store(true, ordering: .sequentiallyConsistent)
        queue.suspend()
        writes.record(("a", Self.list("a", 3)), dropped: [])
        writes.record(("b", Self.list("b", 3)), dropped: [])
        queue.resume()
        await Self.drained(queue)
        #expect(try storage.loadPlaylists().isEmpty)
        #expect(storage.writes.withLock { $0.first?.sorted() } == ["a", "b"])

        // The disk is back: the changes are written with no new one.
        storage.failing.store(false, ordering: .sequentiallyConsistent)
        let deadline = ContinuousClock.now + .seconds(10)
        while try storage.loadPlaylists().isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try storage.loadPlaylists().map(\.name) == ["a", "b"])

        writes.record(("c", Self.list("c", 3)), dropped: ["b"])
        await Self.drained(queue)
        #expect(try storage.loadPlaylists().map(\.name) == ["a", "c"])
    }
}
