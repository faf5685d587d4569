import ArgumentParser
import Foundation
import Gateway
import Logging

/// `swarmgate tracker`: the swarm's signalling server (SPEC sections 3 and 4). Every flag is a
/// setting of the same name (`SettingDefinitions.tracker`).
struct TrackerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracker", abstract: "Run the tracker that gateway nodes log in to and find peers through.")

    @Option(help: "A TOML file with settings.") var config: String?
    @Option(help: "HOST:PORT to listen on (default 127.0.0.1:8080).") var listen: String?
    @Option(help: "The tracker's SQLite database: the checksum registry and its prepare jobs.") var db: String?
    @Option(name: .customLong("public-url"), help: "Base URL nodes fetch the tracker's seed pieces from.") var publicURL: String?
    @Option(name: .customLong("cache-dir"), help: "Folder of the pieces the registry prepared (the first seed).") var cacheDir: String?
    @Option(name: .customLong("cache-size"), help: "Hard bound of the seed's piece store, e.g. 10GiB.") var cacheSize: String?
    @Option(name: .customLong("piece-size"), help: "Bytes per piece of newly prepared objects (default 256KiB).") var pieceSize: String?
    @Option(name: .customLong("prepare-jobs"), help: "Prepare jobs that run at once (default 8).") var prepareJobs: String?
    @Option(name: .customLong("registry-entries"), help: "Objects whose checksums the registry keeps, the ones used last (default 1000000).") var registryEntries: String?
    @Option(name: .customLong("max-object-size"), help: "Largest media object fetched from an origin, e.g. 4GiB.") var maxObjectSize: String?
    @Option(name: .customLong("origin-idle-timeout"), help: "Seconds an origin may send nothing before a preparation fails.") var originIdleTimeout: String?
    @Option(name: .customLong("read-ahead"), help: "Seconds of a VOD prepared past its furthest player (default 60; 0: none; all: whole).") var readAhead: String?
    @Option(name: .customLong("allow-origin"), help: "Origin hosts the registry may fetch: host, host:port or *.suffix, comma-separated or the flag repeated.") var allowOrigin: [String] = []
    @Option(name: .customLong("app-id"), help: "The app id nodes and tracker share.") var appID: String?
    @Option(name: .customLong("app-secret-file"), help: "A file holding the app secret (or set SWARMGATE_APP_SECRET).") var appSecretFile: String?
    @Option(name: .customLong("admin-token-file"), help: "A file holding the token /prepare and /jobs ask for (or set SWARMGATE_ADMIN_TOKEN); without one, loopback callers only.") var adminTokenFile: String?
    @Option(name: .customLong("revalidate-after"), help: "Seconds after which a kept copy is checked against the origin when a node asks for it (default 600; 0: never).") var revalidateAfter: String?
    @Option(name: .customLong("log-level"), help: "What is logged: trace, debug, info (a line per request), notice, warning, error or critical (default info).") var logLevel: String?
    @Option(name: .customLong("node-message-rate"), help: "Messages per second one node may send, bursts of twice that (default 500).") var nodeMessageRate: String?

    var givenFlags: [String: String] {
        var f: [String: String] = [:]
        f["config"] = config
        f["listen"] = listen
        f["db"] = db
        f["public-url"] = publicURL
        f["cache-dir"] = cacheDir
        f["cache-size"] = cacheSize
        f["piece-size"] = pieceSize
        f["prepare-jobs"] = prepareJobs
        f["registry-entries"] = registryEntries
        f["max-object-size"] = maxObjectSize
        f["origin-idle-timeout"] = originIdleTimeout
        // Repeated flags add up (each may be a comma list), as the setting is a list.
        f["allow-origin"] = allowOrigin.isEmpty ? nil : allowOrigin.joined(separator: ",")
        f["read-ahead"] = readAhead
        f["app-id"] = appID
        f["app-secret-file"] = appSecretFile
        f["admin-token-file"] = adminTokenFile
        f["node-message-rate"] = nodeMessageRate
        f["log-level"] = logLevel
        f["revalidate-after"] = revalidateAfter
        return f
    }

    func run() async throws {
        try Swarmgate.requireSystemLibraries()
        let environment = ProcessInfo.processInfo.environment
        let settings: Settings
        let found: SwarmCredentials?
        var configuration: GatewayConfiguration
        do {
            settings = try Settings(SettingDefinitions.tracker, flags: givenFlags, environment: environment)
            found = try SwarmCredentials.from(settings, environment: environment, required: true)
            configuration = try GatewayConfiguration(settings)
            configuration.adminToken = try AdminAccess.token(from: settings, environment: environment)
        } catch {
            throw ValidationError(error.message)
        }
        guard let credentials = found else {
            throw ValidationError("the tracker needs the app secret: --app-secret-file FILE or SWARMGATE_APP_SECRET")
        }
        configuration.role = .tracker
        var logger = Logger(label: "swarmgate.tracker")
        logger.logLevel = configuration.logLevel
        let c = configuration
        try await GatewayServer(configuration: c, credentials: credentials, logger: logger).run(makeOrigin: { c in
            try OriginClientAdapter(allowOrigins: c.allowOrigins, idleTimeout: c.originIdleTimeout, maxObjectSize: c.maxObjectSize, proxy: true)
        }) { bound, _ in
            let host = c.host.contains(":") ? "[\(c.host)]" : c.host
            StandardError.write("swarmgate tracker \(GatewayResponder.version) listening on \(host):\(bound), ws://\(host):\(bound)/swarm/v1/ws\n")
        }
    }
}
