import ArgumentParser
import Foundation
import Gateway
import Manifest

/// `swarmgate rewrite`: rewrites playlists and MPDs on disk (SPEC section 4).
struct RewriteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rewrite",
        abstract: "Rewrite HLS playlists and DASH MPDs offline so that their media comes through a gateway.",
        discussion: """
            INPUT is a file, a folder (every .m3u8/.m3u/.mpd below it) or - (stdin). One file \
            without --output goes to stdout (into a folder --output under its name); a folder is \
            mirrored under --output. Exit status: \
            0 all rewritten, 1 some failed (each named on stderr, the others still written), 2 usage.
            """
    )

    @Option(name: .customLong("base-url"), help: "The origin URL of INPUT (of the folder, for a folder).")
    var baseURL: String

    @Option(help: "The gateway's public URL that rewritten URIs point at.")
    var gateway: String = "http://127.0.0.1:8080"

    @Option(help: "The swarm id for every rewritten URI (default: derived from each playlist's origin host and path).")
    var xresid: String?

    @Option(name: .customLong("inherit-query"), help: "Query parameters of the playlist URL copied onto its URIs: names, comma-separated, or * for all.")
    var inheritQuery: String = ""

    @Option(name: .customLong("key-uris"), help: "EXT-X-KEY URIs: origin (absolute origin URLs) or proxy (through the gateway, xkey=1).")
    var keyURIs: String = "origin"

    @Option(help: "Where to write: a file for one input, a folder for a folder or several inputs.")
    var output: String?

    @Argument(help: "Files, folders, or - for stdin.")
    var inputs: [String]

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("no INPUT given") }
        guard KeyURIMode(rawValue: keyURIs) != nil else {
            throw ValidationError("--key-uris must be 'origin' or 'proxy'")
        }
        if let xresid { _ = try checked { () throws(ManifestError) in try XResID(xresid) } }
        let base = try checked { () throws(ManifestError) in try OriginURL(baseURL) }
        // A port past 65535 is written into every URL, and the gateway refuses them all.
        guard ProxyURL.isValidAuthority(base.authority) else { throw ValidationError("--base-url needs a port from 1 to 65535: '\(baseURL)'") }
        do { try GatewayConfiguration.checkBaseURL(gateway, "--gateway") } catch { throw ValidationError(error.message) }
        if inputs.filter({ $0 == "-" }).count > 1 { throw ValidationError("stdin (-) can be read once") }
    }

    func run() async throws {
        let plan = try RewritePlan(
            inputs: inputs, baseURL: try OriginURL(baseURL), output: output,
            settings: RewriteSettings(
                gateway: gateway, xresid: try xresid.map { try XResID($0) },
                inheritQuery: InheritQuery(setting: inheritQuery), keyURIs: KeyURIMode(rawValue: keyURIs)!))
        let failures = await BatchRewrite(plan: plan).run()
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Turns a ManifestError from checking an argument into a usage error.
func checked<T>(_ body: () throws(ManifestError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw ValidationError(error.message)
    }
}
