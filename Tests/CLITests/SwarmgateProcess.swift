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
    static func run(_ arguments: [String], stdin: Data? = nil, in folder: URL? = nil, stderrTo: String? = nil) throws -> Result {
        let p = Process()
        p.executableURL = binary
        p.arguments = arguments
        if let folder { p.currentDirectoryURL = folder }
        let scratch = Scratch.url("sg")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        p.standardOutput = out
        p.standardError = try stderrTo.map { try FileHandle(forWritingTo: URL(fileURLWithPath: $0)) } ?? err
        let input = Pipe()
        p.standardInput = input
        try p.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        p.waitForEnd()
        guard p.endReason == .exit else { throw CLIFailure("swarmgate \(arguments.first ?? "") died of signal \((p.endStatus ?? -1))") }
        try out.close()
        try err.close()
        return Result(
            status: (p.endStatus ?? -1), stdout: try Data(contentsOf: outURL),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }
}

struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
