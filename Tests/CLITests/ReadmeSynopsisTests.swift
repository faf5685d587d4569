import Foundation
import Testing

/// The README's command synopsis is what users copy: every flag it shows must exist.
@Suite("README synopsis")
struct ReadmeSynopsisTests {
    /// The flags the README's synopsis block shows per command (`swarmgate serve [--x …]` and
    /// its indented continuation lines).
    static func synopsis() throws -> [String: Set<String>] {
        let readme = try String(contentsOf: DockerFilesTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        var flags: [String: Set<String>] = [:]
        var command: String?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if let m = line.wholeMatch(of: #/swarmgate ([a-z]+)\s.*/#) {
                command = String(m.1)
            } else if command == nil || !line.hasPrefix("      ") {
                command = nil
                continue
            }
            for f in line.matches(of: #/\[(--[a-z-]+)/#) { flags[command!, default: []].insert(String(f.1)) }
        }
        return flags
    }

    @Test func everyFlagTheSynopsisShowsExists() async throws {
        let synopsis = try Self.synopsis()
        #expect(synopsis["serve"]?.contains("--node-message-rate") == true && synopsis["tracker"]?.contains("--db") == true)
        for (command, flags) in synopsis {
            let help = try await SwarmgateProcess.run([command, "--help"])
            #expect(help.status == 0, "swarmgate \(command): \(help.stderr)")
            for flag in flags { #expect(help.text.contains(flag + " "), "swarmgate \(command) has no \(flag)") }
        }
    }

    /// `--log-level warning` leaves out the line per request; a level that does not exist is
    /// a usage error.
    @Test(arguments: ["serve", "tracker"])
    func theLogLevelIsASetting(command: String) async throws {
        let r = try await SwarmgateProcess.run([command, "--log-level", "loud", "--listen", "127.0.0.1:0"])
        #expect(r.status == 2 && r.stderr.contains("log-level must be trace, debug, info"), "\(r.stderr)")
    }

    /// A tracker-side setting given on either command line reaches the settings (and is checked).
    @Test(arguments: ["serve", "tracker"])
    func theNodeMessageRateFlagIsASetting(command: String) async throws {
        let r = try await SwarmgateProcess.run([command, "--node-message-rate", "0", "--listen", "127.0.0.1:0"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("node-message-rate must be 1 to 1000000"), "\(r.stderr)")
    }
}
