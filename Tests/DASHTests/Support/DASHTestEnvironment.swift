import Foundation
import TestScratch

/// What the DASH tests need from outside the package: the shared corpus, the Python checkers
/// in Tests/python and the built `swarmgate` binary. (The corpus and Python parts follow
/// Tests/ManifestTests/Support/TestEnvironment.swift; test targets cannot share a source file.)
enum DASHTestEnvironment {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The `.mpd` files of `../shared/corpus/dash`, sorted; empty (with one printed line) when
    /// the corpus is not beside the checkout.
    static let corpusMPDs: [URL] = {
        let root = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus/dash")
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else {
            print("shared/corpus/dash not found beside the checkout: the DASH conformance suite is skipped")
            return []
        }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension.lowercased() == "mpd" }.sorted { $0.path < $1.path }
    }()

    /// Runs Tests/python/`script`; returns (exit status, stdout, stderr).
    static func runPython(_ script: String, _ arguments: [String]) async throws -> (status: Int32, out: String, err: String) {
        let python = ProcessInfo.processInfo.environment["SWARMGATE_PYTHON"] ?? "python3"
        let r = try await ProgramRun.run("/usr/bin/env", [python, packageRoot.appendingPathComponent("Tests/python/\(script)").path] + arguments)
        return (r.status, r.out, r.err)
    }

    /// The `swarmgate` executable built beside the test bundle.
    static var swarmgate: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("swarmgate").path
    }

    /// Runs a program to completion (one that ends in milliseconds: it waits on the caller's
    /// thread); `stdin` is written to its standard input.
    static func run(_ program: String, _ arguments: [String], stdin: Data? = nil) throws -> (status: Int32, out: String, err: String) {
        let r = try ProgramRun.runBlocking(program, arguments, stdin: stdin)
        return (r.status, r.out, r.err)
    }

    /// A new empty folder among the test run's files (`Scratch`).
    static func temporaryFolder() throws -> URL {
        let url = Scratch.url("swarmgate-dash")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
