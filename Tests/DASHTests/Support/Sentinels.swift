import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Notices any open or read of one file (Linux inotify), to prove a parser never touched it.
final class FileAccessWatch {
    private let fd: Int32

    init(_ path: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, path, UInt32(IN_OPEN | IN_ACCESS)) >= 0 else {
            throw SentinelFailure(description: "inotify: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    /// Whether the file was opened or read since the watch began.
    func accessed() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        return read(fd, &buffer, buffer.count) > 0
    }
}

struct SentinelFailure: Error, CustomStringConvertible {
    var description: String
}
