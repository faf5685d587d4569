import Foundation
import GRDB
import PieceStore

/// The registry and its prepare jobs in one SQLite file (WAL), so that a restarted node or
/// tracker keeps its checksums and resumes its jobs.
public final class SQLiteRegistryStorage: RegistryStorage, NonceLog, OffenceLog {
    private let database: DatabasePool

    public init(path: String) throws(RegistryError) {
        do {
            var config = Configuration()
            // Another connection writing (an operator's sqlite3, a second reader opening the
            // file) is waited for, not an error at once, as in the piece store's index.
            config.busyMode = .timeout(5)
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            database = try DatabasePool(path: path, configuration: config)
            try database.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS registry_objects (
                        id TEXT PRIMARY KEY, xresid TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL,
                        state TEXT NOT NULL, length INTEGER, piece_size INTEGER, digests BLOB,
                        etag TEXT, last_modified TEXT, content_type TEXT, error TEXT, updated REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS prepare_jobs (
                        id TEXT PRIMARY KEY, xresid TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL,
                        url TEXT NOT NULL, state TEXT NOT NULL, urgent INTEGER NOT NULL, sequence INTEGER NOT NULL,
                        piece_size INTEGER NOT NULL, length INTEGER, bytes_done INTEGER NOT NULL,
                        validator TEXT, digests BLOB NOT NULL, error TEXT);
                    CREATE TABLE IF NOT EXISTS read_ahead_playlists (
                        name TEXT PRIMARY KEY, refs BLOB NOT NULL, planned REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS login_nonces (nonce TEXT PRIMARY KEY, seen REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS peer_offences (
                        url TEXT PRIMARY KEY, offences INTEGER NOT NULL, last REAL NOT NULL, banned_until REAL);
                    """)
                // Registries from before the source URL was kept gain its column (empty).
                let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(registry_objects)").map { $0["name"] as String }
                if !columns.contains("source_url") {
                    try db.execute(sql: "ALTER TABLE registry_objects ADD COLUMN source_url TEXT")
                }
            }
        } catch {
            throw RegistryError("cannot open the registry at \(path): \(error)")
        }
    }

    public func loadEntries() throws(RegistryError) -> [RegistryEntry] {
        do {
            return try database.read { db in
                // Each value converted or given up (a row no registry writes is skipped, or its
                // checksums are: a value of another type, or a piece size of 0, trapped).
                return try Row.fetchAll(db, sql: "SELECT * FROM registry_objects").compactMap { row -> RegistryEntry? in
                    guard let xresid: String = row.converted("xresid"), let host: String = row.converted("host"), let path: String = row.converted("path"),
                        let stateName: String = row.converted("state"), let state = RegistryEntry.State(rawValue: stateName)
                    else { return nil }
                    var e = RegistryEntry(key: ObjectKey(xresid: xresid, host: host, path: path), state: state)
                    if let length: Int64 = row.converted("length"), let pieceSize: Int = row.converted("piece_size"), let digests: Data = row.converted("digests"),
                        (0..<(1 << 50)).contains(length), pieceSize > 0
                    {
                        e.checksums = PieceChecksums(layout: PieceLayout(length: length, pieceSize: pieceSize), packed: [UInt8](digests))
                    }
                    if e.state == .ready && e.checksums == nil { e.state = .unknown }
                    // Preparation belongs to a job, which resumes on its own.
                    e.etag = row.converted("etag")
                    e.lastModified = row.converted("last_modified")
                    e.contentType = row.converted("content_type")
                    e.sourceURL = row.converted("source_url")
                    e.error = row.converted("error")
                    e.updated = Date(timeIntervalSince1970: row.converted("updated") ?? 0)
                    return e
                }
            }
        } catch {
            throw RegistryError("cannot read the registry: \(error)")
        }
    }

    public func save(_ entries: [RegistryEntry]) throws(RegistryError) {
        do {
            try database.write { db in
                // One statement compiled for every row.
                let insert = try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO registry_objects
                        (id, xresid, host, path, state, length, piece_size, digests, etag, last_modified, content_type, error, updated, source_url)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """)
                for e in entries {
                    try insert.execute(
                        arguments: [
                            e.key.id, e.key.xresid, e.key.host, e.key.path, e.state.rawValue, e.checksums?.layout.length,
                            e.checksums?.layout.pieceSize, e.checksums.map { Data($0.packed) }, e.etag, e.lastModified,
                            e.contentType, e.error, e.updated.timeIntervalSince1970, e.sourceURL,
                        ])
                }
            }
        } catch {
            throw RegistryError("cannot write the registry: \(error)")
        }
    }

    public func deleteEntries(_ ids: [String]) throws(RegistryError) {
        try delete(ids, from: "registry_objects", "registry entries")
    }

    public func loadJobs() throws(RegistryError) -> [PrepareJob] {
        do {
            return try database.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM prepare_jobs ORDER BY sequence").compactMap { row -> PrepareJob? in
                    guard let state = PrepareJob.State(rawValue: row["state"]) else { return nil }
                    let key = ObjectKey(xresid: row["xresid"], host: row["host"], path: row["path"])
                    var job = PrepareJob(key: key, url: row["url"], pieceSize: row["piece_size"], sequence: row["sequence"])
                    job.state = state
                    job.urgent = row["urgent"]
                    job.length = row["length"]
                    job.bytesDone = row["bytes_done"]
                    job.validator = row["validator"]
                    let digests: Data = row["digests"]
                    job.digests = [UInt8](digests)
                    job.error = row["error"]
                    return job
                }
            }
        } catch {
            throw RegistryError("cannot read the prepare jobs: \(error)")
        }
    }

    public func save(jobs: [PrepareJob]) throws(RegistryError) {
        guard !jobs.isEmpty else { return }
        do {
            try database.write { db in
                let insert = try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO prepare_jobs
                        (id, xresid, host, path, url, state, urgent, sequence, piece_size, length, bytes_done, validator, digests, error)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """)
                for j in jobs {
                    try insert.execute(
                        arguments: [
                            j.id, j.key.xresid, j.key.host, j.key.path, j.url, j.state.rawValue, j.urgent, j.sequence,
                            j.pieceSize, j.length, j.bytesDone, j.validator, Data(j.digests), j.error,
                        ])
                }
            }
        } catch {
            throw RegistryError("cannot write prepare jobs: \(error)")
        }
    }

    public func deleteJobs(_ ids: [String]) throws(RegistryError) {
        try delete(ids, from: "prepare_jobs", "prepare jobs")
    }

    /// Deletes the rows of `ids` from `table` in one transaction.
    private func delete(_ ids: [String], from table: String, _ what: String) throws(RegistryError) {
        guard !ids.isEmpty else { return }
        do {
            try database.write { db in
                let delete = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE id = ?")
                for id in ids { try delete.execute(arguments: [id]) }
            }
        } catch {
            throw RegistryError("cannot delete \(what): \(error)")
        }
    }

    public func loadPlaylists() throws(RegistryError) -> [(name: String, refs: [ObjectRef])] {
        do {
            let decoder = JSONDecoder()
            return try database.read { db in
                try Row.fetchAll(db, sql: "SELECT name, refs FROM read_ahead_playlists ORDER BY planned, rowid").compactMap { row in
                    let refs: Data = row["refs"]
                    return (try? decoder.decode([ObjectRef].self, from: refs)).map { (row["name"], $0) }
                }
            }
        } catch {
            throw RegistryError("cannot read the read-ahead playlists: \(error)")
        }
    }

    public func savePlaylists(_ changes: [(name: String, refs: [ObjectRef]?)]) throws(RegistryError) {
        guard !changes.isEmpty else { return }
        do {
            let encoder = JSONEncoder()
            let encoded = try changes.map { change in try change.refs.map { try encoder.encode($0) } }
            let now = Date().timeIntervalSince1970
            try database.write { db in
                for (change, refs) in zip(changes, encoded) {
                    if let refs {
                        // A replaced row is inserted anew, so rowid orders those planned at once.
                        try db.execute(
                            sql: "INSERT OR REPLACE INTO read_ahead_playlists (name, refs, planned) VALUES (?, ?, ?)",
                            arguments: [change.name, refs, now])
                    } else {
                        try db.execute(sql: "DELETE FROM read_ahead_playlists WHERE name = ?", arguments: [change.name])
                    }
                }
            }
        } catch {
            throw RegistryError("cannot write the read-ahead playlists: \(error)")
        }
    }

    public func nonces(since: Date) throws -> [(nonce: String, at: Date)] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT nonce, seen FROM login_nonces WHERE seen >= ?", arguments: [since.timeIntervalSince1970]).map {
                (nonce: $0["nonce"], at: Date(timeIntervalSince1970: $0["seen"]))
            }
        }
    }

    public func record(_ nonce: String, at: Date, forgetBefore: Date) throws {
        try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO login_nonces (nonce, seen) VALUES (?, ?)", arguments: [nonce, at.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM login_nonces WHERE seen < ?", arguments: [forgetBefore.timeIntervalSince1970])
        }
    }

    public func offences() throws -> [String: PeerOffences] {
        try database.read { db in
            var found: [String: PeerOffences] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT url, offences, last, banned_until FROM peer_offences") {
                // A row of another shape (written by hand) is skipped, not trapped on.
                guard let url: String = row.converted("url"), let count: Int = row.converted("offences"),
                    let last: Double = row.converted("last")
                else { continue }
                let until: Double? = row.converted("banned_until")
                found[url] = PeerOffences(count: count, last: Date(timeIntervalSince1970: last), bannedUntil: until.map(Date.init(timeIntervalSince1970:)))
            }
            return found
        }
    }

    public func record(_ record: PeerOffences?, for url: String) throws {
        try database.write { db in
            guard let record else {
                try db.execute(sql: "DELETE FROM peer_offences WHERE url = ?", arguments: [url])
                return
            }
            try db.execute(
                sql: "INSERT OR REPLACE INTO peer_offences (url, offences, last, banned_until) VALUES (?, ?, ?, ?)",
                arguments: [url, record.count, record.last.timeIntervalSince1970, record.bannedUntil?.timeIntervalSince1970])
        }
    }

    public func ping() throws(RegistryError) {
        do {
            _ = try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM registry_objects") }
        } catch {
            throw RegistryError("the registry does not answer: \(error)")
        }
    }
}
