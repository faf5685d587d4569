import Foundation
import TestScratch

/// Where the tests find what lives outside the package: the shared corpus beside the checkout,
/// the Python interpreter with the independent checkers, and temporary folders.
enum TestEnvironment {
    /// The package's root folder.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/corpus` beside the checkout, or nil in a user's clone without it.
    static let corpus: URL? = {
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")
        var dir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &dir), dir.boolValue else {
            print("shared/corpus not found beside the checkout: the conformance suites are skipped")
            return nil
        }
        return url
    }()

    /// Every file below `folder` of the corpus with one of `extensions`, sorted.
    static func corpusFiles(_ folder: String, extensions: [String]) -> [URL] {
        guard let root = corpus?.appendingPathComponent(folder),
            let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        else { return [] }
        return walker.compactMap { $0 as? URL }
            .filter { u in extensions.contains { u.lastPathComponent.lowercased().hasSuffix($0) } }
            .sorted { $0.path < $1.path }
    }

    /// The Python interpreter that has `m3u8` and `mpegdash` (scripts/test sets it up).
    static let python: String = ProcessInfo.processInfo.environment["SWARMGATE_PYTHON"] ?? "python3"

    /// Runs a script from Tests/python with the arguments, returning (exit status, stdout, stderr).
    static func runPython(_ script: String, _ arguments: [String], stdin: Data? = nil) async throws -> (Int32, String, String) {
        let script = packageRoot.appendingPathComponent("Tests/python/\(script)").path
        let r = try await ProgramRun.run("/usr/bin/env", [python, script] + arguments, stdin: stdin)
        return (r.status, r.out, r.err)
    }

    /// A new empty folder among the test run's files (`Scratch`).
    static func temporaryFolder() throws -> URL {
        let url = Scratch.url("swarmgate-test")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
