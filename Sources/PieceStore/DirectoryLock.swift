import Foundation

/// A store directory's lock (`lock` in it, with the holder's process id): one process at a
/// time opens a store. A POSIX record lock, so the process that holds it may open the store
/// again (a test reopening it while the first store's writes behind finish); the kernel lets
/// it go when the process ends, however it ends.
final class DirectoryLock: Sendable {
    private let fd: Int32
    /// Why the lock is not held though the store opens: a file system without POSIX locks (an
    /// NFS mount without its lock daemon, some FUSE ones), where the store ran before there
    /// was a lock. Nil: held.
    let unavailable: String?

    init(_ directory: String) throws(PieceStoreError) {
        let path = directory + "/lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PieceStoreError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_SETLK, &request) == 0 else {
            let err = errno
            var holder = flock()
            holder.l_type = Int16(F_WRLCK)
            holder.l_whence = Int16(SEEK_SET)
            let pid = fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != Int16(F_UNLCK) ? " (pid \(holder.l_pid))" : ""
            if err == EACCES || err == EAGAIN {
                close(fd)
                throw PieceStoreError(.inUse, "\(directory) is in use by another process\(pid): one process at a time keeps a cache directory")
            }
            unavailable = "cannot lock \(path): \(String(cString: strerror(err)))"
            return
        }
        unavailable = nil
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 { _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
    }

    deinit { close(fd) }
}
