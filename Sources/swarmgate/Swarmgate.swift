import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif
import Origin
import PieceStore

/// The `swarmgate` command: one binary for the gateway, the tracker and the offline tools.
@main
struct Swarmgate: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "swarmgate",
        abstract: "An HLS/DASH rewriting gateway with a shared piece cache and a peer swarm.",
        version: version,
        subcommands: [ServeCommand.self, TrackerCommand.self, RewriteCommand.self, PrepareCommand.self, HealthCommand.self]
    )

    /// Stops the command (exit 1, with the reason) when a system library it needs cannot be
    /// loaded: the process loads libcurl and libcrypto when first used, not when it starts, so
    /// that commands which need neither (`rewrite`) start sooner.
    static func requireSystemLibraries(crypto: Bool = true) throws {
        // libcrypto first: libcurl needs it too, and would fail in its name.
        for failure in [crypto ? LibCrypto.unavailable : nil, LibCurl.unavailable].compactMap({ $0 }) {
            StandardError.write("swarmgate: \(failure); install libcurl and OpenSSL (Debian 12: apt install libcurl4 libssl3)\n")
            throw ExitCode(1)
        }
    }

    /// Parses and runs, mapping failures onto SPEC's exit codes: usage errors exit 2 (the
    /// argument parser's own default would be 64), a command's own `ExitCode` passes through,
    /// and any other failure (a listen address in use, a cache folder that cannot be written)
    /// exits 1: it is no usage error, and was reported as one.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }  // --help, --version
            StandardError.write(fullMessage(for: error) + "\n")
            Foundation.exit(exitCode(for: error) == .validationFailure ? 2 : 1)
        }
    }
}

/// The process's standard error, written with write(2): a message that cannot be written (a
/// full disk under the log, a closed descriptor) is lost, and the command goes on. Foundation's
/// `FileHandle.write(_:)` traps on any write error: a gateway whose log disk was full died at
/// start on its banner line.
enum StandardError {
    static func write(_ text: String) {
        Array(text.utf8).withUnsafeBytes { b in
            var done = 0
            while done < b.count {
                let n = Glibc.write(2, b.baseAddress! + done, b.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                done += n
            }
        }
    }
}
