import Foundation
import Testing

/// No Docker engine runs here, so the container files are kept thin and checked for what can
/// drift: every swarmgate command, flag and SWARMGATE_* variable they use must exist.
@Suite("docker/ uses only commands and settings that exist")
struct DockerFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent("docker/\(name)"), encoding: .utf8)
    }

    /// The JSON-array command lines (`["swarmgate", "health", ...]`, `["serve", "--x", ...]`).
    static func commandLines() throws -> [[String]] {
        var lines: [[String]] = []
        for file in ["Dockerfile", "compose.yaml"] {
            for m in try text(file).matches(of: #/\[((?:\s*"[^"]*"\s*,?)+)\]/#) {
                let words = String(m.1).matches(of: #/"([^"]*)"/#).map { String($0.1) }
                lines.append(words.first == "swarmgate" ? Array(words.dropFirst()) : words)
            }
        }
        return lines.filter { ["serve", "health", "rewrite", "prepare", "tracker"].contains($0.first ?? "") }
    }

    @Test func everyCommandAndFlagExists() async throws {
        let lines = try Self.commandLines()
        #expect(lines.contains { $0.first == "health" }, "the HEALTHCHECK uses swarmgate health")
        #expect(lines.contains { $0.first == "serve" })
        #expect(lines.contains { $0.first == "tracker" }, "the compose file runs a tracker")
        for line in lines {
            let help = try await SwarmgateProcess.run([line[0], "--help"])
            #expect(help.status == 0, "swarmgate \(line[0]) does not exist: \(help.stderr)")
            for flag in line.dropFirst() where flag.hasPrefix("--") {
                #expect(help.text.contains(flag), "swarmgate \(line[0]) has no \(flag)")
            }
        }
    }

    @Test func everyEnvironmentVariableIsASetting() async throws {
        let serveHelp = try await SwarmgateProcess.run(["serve", "--help"]).text
        var names: Set<String> = []
        for file in ["Dockerfile", "compose.yaml"] {
            for m in try Self.text(file).matches(of: #/SWARMGATE_([A-Z_]+)/#) { names.insert(String(m.1)) }
        }
        #expect(!names.isEmpty)
        // SAMPLES is the demo's folder; APP_SECRET is the secret, set only through the
        // environment or a file (SPEC section 4), never as a flag.
        for name in names where name != "SAMPLES" && name != "APP_SECRET" {
            let flag = "--" + name.lowercased().replacingOccurrences(of: "_", with: "-")
            #expect(serveHelp.contains(flag), "SWARMGATE_\(name) is no setting of serve (\(flag))")
        }
    }
}
