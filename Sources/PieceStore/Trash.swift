import Foundation
import Synchronization

/// Where the store's lock puts the data files of objects it lets go (evicted, removed, or
/// made again under another layout): a rename within the store's folder, which costs the same
/// for a file of any size, while the unlink that frees the file's blocks runs off the lock.
/// Unlinking a large file takes long (on ext4 here: 2.4 ms for 16 MB, 16 ms for 100 MB, 85 ms
/// for 500 MB), and every read of the store waited for it while the lock was held.
///
/// Files left here by a stop between the rename and the unlink are removed at the next start.
final class Trash: Sendable {
    let folder: String
    /// Unlinks in the order files came, one at a time, off Swift's cooperative threads (an
    /// unlink blocks its thread).
    private let queue = DispatchQueue(label: "swarmgate.piece-trash", qos: .utility)
    private let names = Atomic<UInt64>(0)
    /// Files handed to `empty` and not unlinked yet.
    private let pending = Atomic<Int>(0)

    /// Opens the trash in `folder` (created if missing) and removes what a stop left in it.
    init(folder: String) throws(PieceStoreError) {
        self.folder = folder
        guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
            throw PieceStoreError(.io, "cannot create \(folder): \(String(cString: strerror(errno)))")
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            unlink(folder + "/" + name)
        }
    }

    /// Moves the file at `path` into the trash and returns its name there, or nil when there
    /// was no file. A file that cannot be moved (it should not happen: same folder tree) is
    /// unlinked at once.
    func take(_ path: String) -> String? {
        let name = "\(folder)/\(names.add(1, ordering: .relaxed).newValue)"
        if rename(path, name) == 0 { return name }
        if errno != ENOENT { unlink(path) }
        return nil
    }

    /// Unlinks `files` (from `take`) on the trash's queue.
    func empty(_ files: [String]) {
        guard !files.isEmpty else { return }
        pending.add(files.count, ordering: .relaxed)
        queue.async { [self] in
            for file in files {
                unlink(file)
                pending.subtract(1, ordering: .relaxed)
            }
        }
    }

    /// Unlinks `files` now, on the caller's thread, once the files queued before them are
    /// gone: a disk short of room needs their blocks back before its next write. Returns how
    /// many files were still queued when it was called.
    @discardableResult
    func emptyNow(_ files: [String]) -> Int {
        let waited = pending.load(ordering: .relaxed)
        queue.sync { for file in files { unlink(file) } }
        return waited
    }

    /// Waits for the files queued so far to be unlinked; returns how many were still queued.
    @discardableResult
    func waitForUnlinks() -> Int { emptyNow([]) }
}
