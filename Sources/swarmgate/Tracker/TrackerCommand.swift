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
    @Option(help: "The tracker's SQLite database.") var db: String?
    @Option(name: .customLong("allow-origin"), help: "Origin hosts the registry may fetch: host, host:port or *.suffix, comma-separated.") var allowOrigin: String?
    @Option(name: .customLong("app-id"), help: "The app id nodes and tracker share.") var appID: String?
    @Option(name: .customLong("app-secret-file"), help: "A file holding the app secret (or set SWARMGATE_APP_SECRET).") var appSecretFile: String?

    var givenFlags: [String: String] {
        var f: [String: String] = [:]
        f["config"] = config
        f["listen"] = listen
        f["db"] = db
        f["allow-origin"] = allowOrigin
        f["app-id"] = appID
        f["app-secret-file"] = appSecretFile
        return f
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: Settings
        let found: SwarmCredentials?
        do {
            settings = try Settings(SettingDefinitions.tracker, flags: givenFlags, environment: environment)
            found = try SwarmCredentials.from(settings, environment: environment, required: true)
        } catch {
            throw ValidationError(error.message)
        }
        guard let credentials = found else {
            throw ValidationError("the tracker needs the app secret: --app-secret-file FILE or SWARMGATE_APP_SECRET")
        }
        let listen = settings["listen"] ?? "127.0.0.1:8080"
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]) else {
            throw ValidationError("listen must be HOST:PORT, not '\(listen)'")
        }
        var logger = Logger(label: "swarmgate.tracker")
        logger.logLevel = .info
        for name in ["db", "allow-origin"] where givenFlags[name] != nil {
            logger.warning("setting has no effect yet: the tracker does not host the checksum registry yet", metadata: ["setting": "\(name)"])
        }
        let host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        try await TrackerServer(host: host, port: port, credentials: credentials, logger: logger).run { bound in
            FileHandle.standardError.write(Data("swarmgate tracker \(GatewayResponder.version) listening on \(host):\(bound), ws://\(host):\(bound)/swarm/v1/ws\n".utf8))
        }
    }
}
