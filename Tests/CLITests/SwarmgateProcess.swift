import Foundation
import TestScratch

/// Runs the built `swarmgate` binary, as a user's script would.
enum SwarmgateProcess {
    /// The binary beside the test bundle in the build folder.
    static let binary: URL = {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("swarmgate")
    }()

    struct Result {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// `stderrTo`: a file standard error goes to instead of being collected (`/dev/full`).
    static func run(_ arguments: [String], stdin: Data? = nil, in folder: URL? = nil, stderrTo: String? = nil) async throws -> Result {
        let r = try await ProgramRun.run(
            binary.path, arguments, stdin: stdin, stderr: stderrTo.map { .file($0) } ?? .collect, folder: folder)
        guard !r.signalled else { throw CLIFailure("swarmgate \(arguments.first ?? "") died of signal \(r.status)") }
        return Result(status: r.status, stdout: r.stdout, stderr: r.err)
    }
}

struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
