import Foundation

/// Writes a file so that readers see the old file or the whole new one, never a part: the
/// bytes go to a temporary file in the same folder, are flushed, then renamed over the target.
enum AtomicFile {
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
        do {
            try RawFile.writeAll(fd: fd, bytes)
            guard fsync(fd) == 0 else { throw WriteError(description: String(cString: strerror(errno))) }
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            throw WriteError(description: "\(path): \(String(cString: strerror(errno)))")
        }
        ok = true
        // The rename reaches the disk with the folder's own flush (else a power loss may
        // leave the old file, or none).
        let dir = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            close(dir)
        }
    }

    /// Removes the temporaries that runs killed mid-write left in `folder`
    /// (`.NAME.PID.RANDOM.tmp` of a process that no longer exists); those of live runs stay.
    static func removeStaleTemporaries(in folder: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            let parts = name.split(separator: ".")
            guard parts.count >= 4, UInt32(parts[parts.count - 2]) != nil, let pid = pid_t(parts[parts.count - 3]), pid > 0 else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH { unlink(folder + "/" + name) }
        }
    }
}

/// The bytes of an input: a regular file mapped read-only (no copy), or what was read from a
/// pipe. `withBytes` lends them; a mapping is removed when the value goes away.
final class InputBytes: Sendable {
    // nonisolated(unsafe): set once in init, only read afterwards, and the mapping is
    // read-only, so sharing the pointer between threads is safe.
    nonisolated(unsafe) private let mapped: UnsafeRawBufferPointer?
    private let array: [UInt8]

    init(mapping fd: Int32, size: Int) throws {
        array = []
        if size == 0 {
            mapped = nil
            return
        }
        let p = mmap(nil, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)
        guard let p, p != MAP_FAILED else {
            throw InputError(description: "cannot map: \(String(cString: strerror(errno)))")
        }
        mapped = UnsafeRawBufferPointer(start: p, count: size)
    }

    init(_ bytes: [UInt8]) {
        mapped = nil
        array = bytes
    }

    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let mapped { return try body(mapped.bindMemory(to: UInt8.self)) }
        return try array.withUnsafeBufferPointer(body)
    }

    deinit {
        if let mapped { munmap(UnsafeMutableRawPointer(mutating: mapped.baseAddress), mapped.count) }
    }
}

/// Whole-file reads and writes on file descriptors, without intermediate copies: playlists
/// can be tens of megabytes and the rewrite itself takes only milliseconds.
enum RawFile {
    static func readAll(fd: Int32, limit: Int) throws -> InputBytes {
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
            let size = Int(st.st_size)
            guard size <= limit else {
                throw InputError(description: "input is larger than \(limit) bytes [inputTooLarge]")
            }
            return try InputBytes(mapping: fd, size: size)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw InputError(description: "cannot read: \(String(cString: strerror(errno)))") }
            if n == 0 { return InputBytes(bytes) }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit {
                throw InputError(description: "input is larger than \(limit) bytes [inputTooLarge]")
            }
        }
    }

    static func writeAll(fd: Int32, _ bytes: [UInt8]) throws {
        var written = 0
        try bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw WriteError(description: String(cString: strerror(errno)))
                }
                written += n
            }
        }
    }
}

struct InputError: Error, CustomStringConvertible {
    var description: String
}

struct WriteError: Error, CustomStringConvertible {
    var description: String
}
