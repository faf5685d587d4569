/// Where the checksum registry and its prepare jobs are kept. SQLite now
/// (`SQLiteRegistryStorage`); a PostgreSQL backend can follow so that several trackers share
/// one registry. Calls are synchronous and short; callers keep their own in-memory view.
public protocol RegistryStorage: Sendable {
    func loadEntries() throws(RegistryError) -> [RegistryEntry]
    /// Writes `entries` together (one transaction where the storage has them).
    func save(_ entries: [RegistryEntry]) throws(RegistryError)
    /// Deletes the entries of these object ids together.
    func deleteEntries(_ ids: [String]) throws(RegistryError)
    func loadJobs() throws(RegistryError) -> [PrepareJob]
    /// Writes `jobs` together (one transaction where the storage has them).
    func save(jobs: [PrepareJob]) throws(RegistryError)
    func deleteJobs(_ ids: [String]) throws(RegistryError)
    /// The playlists read ahead (`ReadAheadWindow`), least recently planned first.
    func loadPlaylists() throws(RegistryError) -> [(name: String, refs: [ObjectRef])]
    /// Writes changes to the playlists read ahead in one transaction, in order: a playlist's
    /// objects (replacing one of the same name, now the most recently planned), or nil for a
    /// playlist dropped from the window.
    func savePlaylists(_ changes: [(name: String, refs: [ObjectRef]?)]) throws(RegistryError)
    /// Succeeds when the storage answers (for `/ready`).
    func ping() throws(RegistryError)
}

/// Why the registry's storage failed.
public struct RegistryError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
