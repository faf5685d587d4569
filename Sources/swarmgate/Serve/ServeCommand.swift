import ArgumentParser
import Foundation
import Gateway
import Logging

/// `swarmgate serve`: a gateway node (SPEC section 4). Every flag is a setting of the same
/// name (`SettingDefinitions.serve`), also read from `SWARMGATE_*` variables and `--config`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run a gateway node that players point at instead of the CDN.")

    @Option(help: "A TOML file with settings.") var config: String?
    @Option(help: "HOST:PORT to listen on (default 127.0.0.1:8080).") var listen: String?
    @Option(name: .customLong("public-url"), help: "Base URL that rewritten manifests point at.") var publicURL: String?
    @Option(name: .customLong("cache-dir"), help: "Folder of the piece cache.") var cacheDir: String?
    @Option(name: .customLong("cache-size"), help: "Hard bound of the piece cache, e.g. 10GiB.") var cacheSize: String?
    @Option(name: .customLong("memory-cache-size"), help: "Verified pieces kept in memory as well, e.g. 128MiB (0: none).") var memoryCacheSize: String?
    @Option(name: .customLong("piece-size"), help: "Bytes per piece of newly prepared objects (default 256KiB).") var pieceSize: String?
    @Option(name: .customLong("prepare-jobs"), help: "Prepare jobs that run at once (default 3).") var prepareJobs: String?
    @Option(name: .customLong("registry-entries"), help: "Objects whose checksums the registry keeps, the ones used last (default 200000).") var registryEntries: String?
    @Option(help: "ws://HOST:PORT/swarm/v1/ws of the tracker (default: embedded).") var tracker: String?
    @Option(name: .customLong("prefetch-segments"), help: "Segments after the one a player reads fetched from peers ahead (default 3).") var prefetchSegments: String?
    @Option(name: .customLong("read-ahead"), help: "Seconds of a VOD prepared past its furthest player, without --tracker (default 60; 0: none; all: whole).") var readAhead: String?
    @Option(name: .customLong("peer-url"), help: "Where other nodes fetch this node's pieces (default: the public URL).") var peerURL: String?
    @Option(name: .customLong("peer-deadline"), help: "Seconds the swarm may take to deliver a piece before the CDN is asked (default auto: a quarter of the segment).") var peerDeadline: String?
    @Option(name: .customLong("live-hold"), help: "Seconds a live playlist's answer may wait for its new segments in the swarm (default auto: a quarter of a segment; 0: none).") var liveHold: String?
    @Option(name: .customLong("allow-origin"), help: "Origin hosts that may be fetched: host, host:port or *.suffix, comma-separated or the flag repeated.") var allowOrigin: [String] = []
    @Option(name: .customLong("inherit-query"), help: "Playlist query parameters copied onto its URIs: names or *.") var inheritQuery: String?
    @Option(name: .customLong("key-uris"), help: "EXT-X-KEY URIs: origin or proxy.") var keyURIs: String?
    @Option(name: .customLong("manifest-memory"), help: "Bytes of playlists and MPDs being read from origins at once, in all (default 256MiB); past it, 503.") var manifestMemory: String?
    @Option(name: .customLong("cors-origins"), help: "Web pages whose players may read what it serves (CORS): * (default), none, or origins such as https://www.example.com, comma-separated.") var corsOrigins: String?
    @Option(name: .customLong("app-id"), help: "The app id nodes and tracker share.") var appID: String?
    @Option(name: .customLong("app-secret-file"), help: "A file holding the app secret (or set SWARMGATE_APP_SECRET).") var appSecretFile: String?
    @Option(name: .customLong("admin-token-file"), help: "A file holding the token /prepare and /jobs ask for (or set SWARMGATE_ADMIN_TOKEN); without one, loopback callers only.") var adminTokenFile: String?
    @Option(name: .customLong("revalidate-after"), help: "Seconds after which a kept copy is checked against the origin when a player asks for it (default 600; 0: never).") var revalidateAfter: String?
    @Option(name: .customLong("log-level"), help: "What is logged: trace, debug, info (a line per request), notice, warning, error or critical (default info).") var logLevel: String?
    @Option(name: .customLong("node-message-rate"), help: "Messages per second a node may send the embedded tracker, bursts of twice that (default 500).") var nodeMessageRate: String?
    @Option(name: .customLong("max-object-size"), help: "Largest media object fetched from an origin, e.g. 4GiB.") var maxObjectSize: String?
    @Option(name: .customLong("origin-idle-timeout"), help: "Seconds an origin may send nothing before the request fails (504).") var originIdleTimeout: String?
    @Flag(help: "Also serve samples/ as a local origin and print a URL a player can open.") var demo = false
    @Flag(name: .customLong("await-preparation"), help: "Wait for a preparation under way that will end within the peer deadline, instead of a 302 to the CDN.") var awaitPreparation = false

    /// The flags given, by setting name.
    var givenFlags: [String: String] {
        var f: [String: String] = [:]
        f["config"] = config
        f["listen"] = listen
        f["public-url"] = publicURL
        f["cache-dir"] = cacheDir
        f["cache-size"] = cacheSize
        f["memory-cache-size"] = memoryCacheSize
        f["piece-size"] = pieceSize
        f["prepare-jobs"] = prepareJobs
        f["registry-entries"] = registryEntries
        f["tracker"] = tracker
        f["peer-deadline"] = peerDeadline
        f["peer-url"] = peerURL
        f["live-hold"] = liveHold
        f["prefetch-segments"] = prefetchSegments
        f["read-ahead"] = readAhead
        // Repeated flags add up (each may be a comma list), as the setting is a list.
        f["allow-origin"] = allowOrigin.isEmpty ? nil : allowOrigin.joined(separator: ",")
        f["inherit-query"] = inheritQuery
        f["key-uris"] = keyURIs
        f["cors-origins"] = corsOrigins
        f["manifest-memory"] = manifestMemory
        f["app-id"] = appID
        f["app-secret-file"] = appSecretFile
        f["admin-token-file"] = adminTokenFile
        f["node-message-rate"] = nodeMessageRate
        f["log-level"] = logLevel
        f["revalidate-after"] = revalidateAfter
        f["max-object-size"] = maxObjectSize
        f["origin-idle-timeout"] = originIdleTimeout
        if demo { f["demo"] = "true" }
        if awaitPreparation { f["await-preparation"] = "true" }
        return f
    }

    func run() async throws {
        try Swarmgate.requireSystemLibraries()
        let settings: Settings
        let configuration: GatewayConfiguration
        do {
            settings = try Settings(SettingDefinitions.serve, flags: givenFlags, environment: ProcessInfo.processInfo.environment)
            var c = try GatewayConfiguration(settings)
            c.adminToken = try AdminAccess.token(from: settings, environment: ProcessInfo.processInfo.environment)
            configuration = c
        } catch {
            throw ValidationError(error.message)
        }
        var logger = Logger(label: "swarmgate")
        logger.logLevel = configuration.logLevel
        let found: SwarmCredentials?
        do {
            found = try SwarmCredentials.from(settings, environment: ProcessInfo.processInfo.environment, required: configuration.tracker != nil)
        } catch {
            throw ValidationError(error.message)
        }
        guard let credentials = found else {
            throw ValidationError("--tracker needs the app secret: --app-secret-file FILE or SWARMGATE_APP_SECRET")
        }
        if configuration.tracker != nil, settings.given.contains("read-ahead"), configuration.readAhead != .zero {
            StandardError.write(
                "swarmgate: warning: read-ahead \(settings["read-ahead"] ?? "") is not used by a node with --tracker: the tracker's registry "
                    + "prepares ahead of players by its own read-ahead (set it on swarmgate tracker); here only 0 counts (prepare nothing ahead)\n")
        }
        var demoRoot: URL?
        if configuration.demo {
            let samples = ProcessInfo.processInfo.environment["SWARMGATE_SAMPLES"] ?? "samples"
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: samples + "/hls-ts/master.m3u8", isDirectory: &isDir) else {
                throw ValidationError("--demo serves ./samples (or SWARMGATE_SAMPLES): run it from the repository root")
            }
            demoRoot = URL(fileURLWithPath: samples)
        }
        let server = GatewayServer(configuration: configuration, credentials: credentials, logger: logger)
        try await server.run(demoRoot: demoRoot, makeOrigin: { c in
            try OriginClientAdapter(allowOrigins: c.allowOrigins, idleTimeout: c.originIdleTimeout, maxObjectSize: c.maxObjectSize, proxy: true)
        }) { port, demo in
            let publicURL = configuration.publicURLIsDefault
                ? GatewayConfiguration.defaultPublicURLFor(host: configuration.host, port: port) : configuration.publicURL
            var text = "swarmgate \(GatewayResponder.version) listening on \(configuration.host):\(port), public URL \(publicURL)\n"
            if let demo {
                text += "demo origin on http://\(demo)/ serving the samples; open one of these in a player (ffplay, mpv, VLC):\n"
                for path in [
                    "hls-ts/master.m3u8", "hls-fmp4/index.m3u8", "hls-byterange/index.m3u8", "hls-aes/index.m3u8", "dash/manifest.mpd",
                    "live/hls-ts/master.m3u8", "live/hls-fmp4/index.m3u8",
                ] {
                    text += "  \(publicURL)/hls.vod.p2p.com/\(demo)/\(path)\n"
                }
            }
            StandardError.write(text)
        }
    }
}

/// `swarmgate health [URL]`: exit 0 when URL/health answers 200.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health", abstract: "Exit 0 when a gateway's /health answers 200, else 1.")

    @Argument(help: "The gateway's URL.") var url: String = "http://127.0.0.1:8080"

    func run() async throws {
        try Swarmgate.requireSystemLibraries(crypto: false)
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        // A password in the URL (basic auth of a proxy in front) is sent, never printed.
        let shown = Self.withoutPassword(base)
        let probe: OriginClientAdapter
        do { probe = try OriginClientAdapter(allowOrigins: [Self.authority(of: base)]) } catch {
            StandardError.write("swarmgate health: cannot probe '\(Self.withoutPassword(url))': \(Self.redacting(base, in: "\(error)"))\n")
            throw ExitCode(1)
        }
        do {
            let answer = try await probe.fetch(OriginFetch(url: base + "/health", maxBodySize: 1 << 16))
            if answer.status == 200 { return }
            StandardError.write("swarmgate health: \(shown)/health answered \(answer.status)\n")
        } catch {
            StandardError.write("swarmgate health: \(Self.redacting(base, in: "\(error)"))\n")
        }
        throw ExitCode(1)
    }

    /// The URL with the password of its user info (`user:password@`) written as `***`.
    static func withoutPassword(_ url: String) -> String {
        guard let (start, end) = userInfo(of: url), let colon = url[start..<end].firstIndex(of: ":") else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[end...])
    }

    /// `text` with the password of `url`'s user info written as `***` wherever it appears.
    static func redacting(_ url: String, in text: String) -> String {
        guard let (start, end) = userInfo(of: url), let colon = url[start..<end].firstIndex(of: ":") else { return text }
        let password = String(url[url.index(after: colon)..<end])
        return password.isEmpty ? text : text.replacingOccurrences(of: password, with: "***")
    }

    /// The range of `user[:password]` in an `http://user:password@host` URL (before the `@`).
    private static func userInfo(of url: String) -> (String.Index, String.Index)? {
        guard let scheme = url.range(of: "://") else { return nil }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return nil }
        return (authority.startIndex, at)
    }

    /// host[:port] of an http(s) URL, for the probe's allow list (the gateway is usually local).
    static func authority(of url: String) -> String {
        var rest = Substring(url)
        if let r = rest.range(of: "://") { rest = rest[r.upperBound...] }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return String(authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority)
    }
}
