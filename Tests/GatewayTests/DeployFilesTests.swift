import Foundation
import Testing
import TestScratch

/// deploy/: the systemd units and the example config files an operator copies. The configs
/// start a real node and a real tracker (with only the addresses and folders of this machine
/// given on top), every flag a unit's `ExecStart` passes exists, and where systemd is
/// installed, `systemd-analyze verify` takes the units.
@Suite("deploy/ starts what it says")
struct DeployFilesTests {
    static func path(_ name: String) -> String { Live.packageRoot.appendingPathComponent("deploy/\(name)").path }

    static func secretFile() throws -> String {
        let secret = Scratch.path("deploy-secret")
        try "deploy-test-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        return secret
    }

    @Test func theExampleConfigsStartANodeAndATracker() async throws {
        let secret = try Self.secretFile()
        let folder = Live.cacheFolder()
        let tracker = try LiveProcess(Live.binary, [
            "tracker", "--config", Self.path("swarmgate-tracker.toml"), "--listen", "127.0.0.1:0",
            "--db", folder + "-registry.sqlite", "--cache-dir", folder + "-seed", "--app-secret-file", secret,
        ])
        defer { tracker.stop() }
        let trackerPort = try await tracker.waitForStderr(#/listening on 127\.0\.0\.1:(\d+)/#)
        // The node logs in to this tracker (the file's app id on both sides).
        let (node, _) = try await Live.gateway([
            "--config", Self.path("swarmgate.toml"), "--tracker", "ws://127.0.0.1:\(trackerPort)/swarm/v1/ws", "--app-secret-file", secret,
        ])
        defer { node.stop() }
        try await Live.waitForLogins(node, 1)
        #expect(node.stderr.contains("public URL http://edge1.example.net:8080"), "\(node.stderr.prefix(400))")
    }

    /// The `ExecStart` lines' commands and flags exist; `systemd-analyze verify` takes each
    /// unit with this build's binary in the installed one's place.
    @Test(arguments: ["swarmgate.service", "swarmgate-tracker.service"])
    func theUnitsRunCommandsThatExist(unit: String) async throws {
        let text = try String(contentsOfFile: Self.path(unit), encoding: .utf8)
        let execStart = try #require(text.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let words = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(words.first == "/usr/local/bin/swarmgate")
        let help = try await ProgramRun.run(Live.binary, [words[1], "--help"], timeout: .seconds(20))
        let helpText = help.out
        #expect(help.status == 0 && !help.signalled)
        for flag in words.dropFirst(2) where flag.hasPrefix("--") {
            #expect(helpText.contains(flag + " "), "swarmgate \(words[1]) has no \(flag)")
        }
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else { return }
        let copy = Scratch.path("unit", suffix: "-" + unit)
        try text.replacingOccurrences(of: "/usr/local/bin/swarmgate", with: Live.binary).write(toFile: copy, atomically: true, encoding: .utf8)
        let verify = try LiveProcess(analyze, ["verify", copy])
        let status = await verify.waitForExit(timeout: .seconds(30))
        #expect(status == 0 && verify.stderr.isEmpty, "\(unit): \(status.map(String.init) ?? "running") \(verify.stderr)")
    }
}
