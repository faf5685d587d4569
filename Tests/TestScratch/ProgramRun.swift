import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program the tests run to its end (a Python checker, ffprobe, `swarmgate rewrite`), its
/// standard streams in files, never pipes.
///
/// Reading a pipe to its end waits for every holder of the pipe's write end, not for the
/// child: on Linux, Foundation's `Process.run()` closes in the new child only the descriptors
/// up to the highest one open when it looked, so a pipe another test opens in between reaches
/// that child. A CI run stopped so after 26 minutes, a DASH test blocked reading to the end
/// of the stdout of a Python resolver that reads no input and ends in milliseconds. A file
/// has no such end; the child's exit is known from the kernel (`waitForEnd`).
public struct ProgramRun: Sendable {
    /// Where a stream of the child goes.
    public enum Output: Sendable {
        /// A file of the run's, returned in `stdout` / `stderr`.
        case collect
        /// `/dev/null`.
        case discard
        /// A file of the caller's, such as `/dev/full`.
        case file(String)
    }

    /// The exit code, or the signal that ended the child (`signalled`).
    public let status: Int32
    public let signalled: Bool
    public let stdout: Data
    public let stderr: Data

    public var out: String { String(decoding: stdout, as: UTF8.self) }
    public var err: String { String(decoding: stderr, as: UTF8.self) }

    /// Runs `executable` with `arguments` to its end; `stdin` is what it reads (nothing when
    /// nil). A child still running after `timeout` is killed with its process group (Foundation
    /// starts each child in a group of its own) and `ProgramTimedOut` thrown. Waits on a
    /// thread of its own, not the caller's: tests run on Swift's cooperative threads, as many
    /// as cores (two here), and a test that held one for a whole ffmpeg decode (seconds, six
    /// in a row) or a Python checker left every other test of the process the other one.
    public static func run(
        _ executable: String, _ arguments: [String], stdin: Data? = nil, stdout: Output = .collect,
        stderr: Output = .collect, folder: URL? = nil, environment: [String: String]? = nil,
        timeout: Duration = .seconds(300)
    ) async throws -> ProgramRun {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<ProgramRun, any Error>) in
            Thread {
                done.resume(with: Result {
                    try runBlocking(
                        executable, arguments, stdin: stdin, stdout: stdout, stderr: stderr, folder: folder, environment: environment,
                        timeout: timeout)
                })
            }.start()
        }
    }

    /// `run`, waiting on the calling thread: only where no test waits, such as a static
    /// property's first use.
    public static func runBlocking(
        _ executable: String, _ arguments: [String], stdin: Data? = nil, stdout: Output = .collect,
        stderr: Output = .collect, folder: URL? = nil, environment: [String: String]? = nil,
        timeout: Duration = .seconds(300)
    ) throws -> ProgramRun {
        let files = Scratch.url("run")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        var opened: [FileHandle] = []
        defer { for handle in opened { try? handle.close() } }

        func writing(_ output: Output, _ name: String) throws -> FileHandle {
            let path: String
            switch output {
            case .discard: return FileHandle.nullDevice
            case .file(let given): path = given
            case .collect:
                path = files.appendingPathComponent(name).path
                guard FileManager.default.createFile(atPath: path, contents: nil) else {
                    throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
                }
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            opened.append(handle)
            return handle
        }

        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let folder { p.currentDirectoryURL = folder }
        if let environment { p.environment = environment }
        if let stdin {
            let input = files.appendingPathComponent("in")
            try stdin.write(to: input)
            let handle = try FileHandle(forReadingFrom: input)
            opened.append(handle)
            p.standardInput = handle
        } else {
            p.standardInput = FileHandle.nullDevice
        }
        p.standardOutput = try writing(stdout, "out")
        p.standardError = try writing(stderr, "err")
        try p.run()
        guard p.waitForEnd(timeout: timeout) else {
            kill(-p.processIdentifier, SIGKILL)
            kill(p.processIdentifier, SIGKILL)
            p.waitForEnd(timeout: .seconds(10))
            let said = (try? Data(contentsOf: files.appendingPathComponent("err"))).map { String(decoding: $0, as: UTF8.self) }
            throw ProgramTimedOut(program: ([executable] + arguments).joined(separator: " "), timeout: timeout, stderr: said ?? "")
        }
        func collected(_ output: Output, _ name: String) throws -> Data {
            guard case .collect = output else { return Data() }
            return try Data(contentsOf: files.appendingPathComponent(name))
        }
        return ProgramRun(
            status: p.endStatus ?? -1, signalled: p.endReason == .uncaughtSignal,
            stdout: try collected(stdout, "out"), stderr: try collected(stderr, "err"))
    }
}

/// A program `ProgramRun.run` killed at its timeout.
public struct ProgramTimedOut: Error, CustomStringConvertible {
    public let program: String
    public let timeout: Duration
    public let stderr: String
    public var description: String { "\(program) did not end within \(timeout) and was killed; its stderr:\n\(stderr)" }
}
