import Foundation

/// Writes a file so that readers see the old file or the whole new one, never a part: the
/// bytes go to a temporary file in the same folder, are flushed, then renamed over the target.
enum AtomicFile {
    struct WriteError: Error, CustomStringConvertible {
        var description: String
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let temporary = (folder.isEmpty ? "." : folder) + "/.\((path as NSString).lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw WriteError(description: "\(temporary): \(String(cString: strerror(errno)))") }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        var written = 0
        let failure: Int32? = bytes.withUnsafeBytes { raw -> Int32? in
            while written < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += n
            }
            return fsync(fd) == 0 ? nil : errno
        }
        close(fd)
        if let failure { throw WriteError(description: String(cString: strerror(failure))) }
        guard rename(temporary, path) == 0 else {
            throw WriteError(description: "\(path): \(String(cString: strerror(errno)))")
        }
        ok = true
    }
}
