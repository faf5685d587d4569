import Logging
import Manifest

/// The typed settings of a running gateway, read from `Settings`.
public struct GatewayConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The base URL rewritten manifests point at.
    public var publicURL: String
    /// Where other nodes fetch this node's pieces, when not at `publicURL` (players and peers
    /// on different networks, as in docker/compose.yaml).
    public var peerURL: String?
    /// Whether `publicURL` was derived from the listen address (and so follows the port
    /// actually bound, when that was 0).
    public var publicURLIsDefault: Bool
    public var inheritQuery: InheritQuery
    public var keyURIs: KeyURIMode
    public var allowOrigins: [String]
    /// Which web pages' players may read answers on players' paths (`--cors-origins`).
    public var corsOrigins: CORSPolicy = .any
    public var cacheDirectory: String
    public var demo: Bool
    /// Playlists and MPDs larger than this are refused (SPEC section 5).
    public var maxManifestSize = 16 << 20
    /// Bytes of playlists and MPDs being read from origins at once, in all.
    public var manifestMemory = 256 << 20
    /// Media objects larger than this are refused (SPEC section 5).
    public var maxObjectSize: Int64 = 4 << 30
    /// How long an origin may send nothing before the request fails.
    public var originIdleTimeout: Duration = .seconds(10)
    /// The piece cache's hard bound, in bytes.
    public var cacheSize: Int64 = 10 << 30
    /// Verified pieces kept in memory, in bytes (0: every read comes from disk, verified).
    public var memoryCacheSize = 128 << 20
    /// Bytes per piece of new objects.
    public var pieceSize = 256 << 10
    /// Prepare jobs that run at once.
    public var prepareJobs = 3
    /// Objects whose checksums the registry keeps, the ones used last.
    public var registryEntries = 200_000
    /// `ws://HOST:PORT/swarm/v1/ws` of the tracker to log in to; nil: the embedded one.
    public var tracker: String?
    /// The registry's SQLite file (`--db` of the tracker; default: in the cache folder).
    public var registryFile: String?
    public var registryPath: String { registryFile ?? cacheDirectory + "/registry.sqlite" }
    /// How long the swarm may take to deliver a piece before it comes from the origin by range;
    /// nil ("auto"): a quarter of the segment's duration (0.5 to 3 s), 1.5 s when unknown.
    public var peerDeadline: Duration?
    /// Segments after the one a player reads that are fetched from peers in the background.
    public var prefetchSegments = 3
    /// Seconds of a VOD playlist, past the furthest object its players reached, that this
    /// process's registry prepares ahead of them; nil ("all"): the whole playlist at once.
    public var readAhead: Duration? = .seconds(60)
    /// How long a live playlist's (or MPD's) answer may wait for the new segments it lists to
    /// be ready in the swarm; nil ("auto"): a quarter of a segment, 0.25 to 1 s; zero: no wait
    /// (the tails are still prepared, unless `readAhead` is zero).
    public var liveHold: Duration?
    /// Whether a player's request for an object whose preparation is under way waits for it
    /// (up to the object's peer deadline, when its progress says it ends by then) rather than
    /// going to the CDN by 302 at once.
    public var awaitPreparation = false
    /// Messages per second one node's connection to this process's tracker may send (bursts
    /// of twice that) before it is closed. A node sends a few per segment its players fetch.
    public var nodeMessageRate = 500.0
    /// How old a kept copy may be before a player's request has it checked against the
    /// origin (in the background); nil: never.
    public var revalidateAfter: Duration? = .seconds(600)
    /// The least severe log line written (info: one line per request).
    public var logLevel = Logger.Level.info
    /// What the process is: a gateway node, or a tracker (signalling, the checksum registry
    /// and the first seed; it serves no players).
    public var role = Role.node
    /// The token the operator's endpoints ask for (`AdminAccess`); nil: loopback callers only.
    public var adminToken: String?

    public enum Role: Sendable { case node, tracker }

    public init(
        host: String = "127.0.0.1", port: Int = 8080, publicURL: String? = nil, inheritQuery: InheritQuery = .none,
        keyURIs: KeyURIMode = .origin, allowOrigins: [String] = [], cacheDirectory: String = "swarmgate-cache",
        demo: Bool = false
    ) {
        self.host = host
        self.port = port
        self.publicURL = publicURL ?? Self.defaultPublicURL(host: host, port: port)
        self.publicURLIsDefault = publicURL == nil
        self.inheritQuery = inheritQuery
        self.keyURIs = keyURIs
        self.allowOrigins = allowOrigins
        self.cacheDirectory = cacheDirectory
        self.demo = demo
    }

    /// `http://HOST:PORT` for a listen address (a wildcard host becomes 127.0.0.1).
    public static func defaultPublicURLFor(host: String, port: Int) -> String { defaultPublicURL(host: host, port: port) }

    /// A URL that proxy or piece paths are appended to: http(s)://HOST[:PORT][/PATH], a port
    /// from 1 to 65535, no user, query or fragment (each would end up inside every URL written).
    public static func checkBaseURL(_ url: String, _ setting: String) throws(SettingsError) {
        let origin: OriginURL
        do { origin = try OriginURL(url) } catch { throw SettingsError("\(setting): \(error.message)") }
        guard !url.contains("?"), !url.contains("#") else {
            throw SettingsError("\(setting) must not have a query or a fragment: '\(url)'")
        }
        guard ProxyURL.isValidAuthority(origin.authority) else {
            throw SettingsError("\(setting) needs a host, and a port from 1 to 65535: '\(url)'")
        }
    }

    static func defaultPublicURL(host: String, port: Int) -> String {
        let h = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        return "http://\(h.contains(":") ? "[\(h)]" : h):\(port)"
    }

    public init(_ s: Settings) throws(SettingsError) {
        let listen = s["listen"] ?? "127.0.0.1:8080"
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw SettingsError("listen must be HOST:PORT, not '\(listen)'") }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        // A host is named (`:8080` reached the socket layer's own error, exit 1).
        guard !host.isEmpty else { throw SettingsError("listen must be HOST:PORT (0.0.0.0 for every IPv4 address), not '\(listen)'") }
        guard let keys = KeyURIMode(rawValue: s["key-uris"] ?? "origin") else {
            throw SettingsError("key-uris must be origin or proxy")
        }
        if let url = s["public-url"] { try Self.checkBaseURL(url, "public-url") }
        self.init(
            host: host, port: port, publicURL: s["public-url"], inheritQuery: InheritQuery(setting: s["inherit-query"] ?? ""),
            keyURIs: keys, allowOrigins: s.list("allow-origin"), cacheDirectory: s["cache-dir"] ?? "swarmgate-cache",
            demo: try s.toggle("demo"))
        if let size = try s.size("max-object-size") {
            guard size > 0 else { throw SettingsError("max-object-size must be above 0: every media object would be refused") }
            maxObjectSize = size
        }
        corsOrigins = try CORSPolicy(items: s.list("cors-origins"))
        if let size = try s.size("cache-size") { cacheSize = size }
        if let t = s["tracker"] {
            guard t.hasPrefix("ws://") || t.hasPrefix("wss://") else { throw SettingsError("tracker must be a ws:// or wss:// URL, not '\(t)'") }
            tracker = t
        }
        if let size = try s.size("memory-cache-size") { memoryCacheSize = Int(size) }
        if let size = try s.size("manifest-memory") {
            guard size >= 1 << 20 else { throw SettingsError("manifest-memory must be 1MiB or more") }
            manifestMemory = Int(size)
        }
        if let size = try s.size("piece-size") {
            guard (16 << 10)...(16 << 20) ~= size else { throw SettingsError("piece-size must be between 16KiB and 16MiB") }
            pieceSize = Int(size)
        }
        if let n = s["prepare-jobs"] {
            guard let jobs = Int(n), (1...64).contains(jobs) else { throw SettingsError("prepare-jobs must be 1 to 64, not '\(n)'") }
            prepareJobs = jobs
        }
        if let n = s["registry-entries"] {
            guard let entries = Int(n), (100...100_000_000).contains(entries) else {
                throw SettingsError("registry-entries must be 100 to 100000000, not '\(n)'")
            }
            registryEntries = entries
        }
        registryFile = s["db"]
        if let url = s["peer-url"] {
            try Self.checkBaseURL(url, "peer-url")
            peerURL = url
        }
        if let t = s["peer-deadline"], t != "auto" {
            guard let seconds = Double(t), seconds >= 0, seconds <= 60 else { throw SettingsError("peer-deadline must be auto or seconds (0 to 60), not '\(t)'") }
            peerDeadline = .milliseconds(Int64(seconds * 1000))
        }
        if let t = s["live-hold"], t != "auto" {
            guard let seconds = Double(t), seconds >= 0, seconds <= 10 else { throw SettingsError("live-hold must be auto or seconds (0 to 10), not '\(t)'") }
            liveHold = .milliseconds(Int64(seconds * 1000))
        }
        if let t = s["revalidate-after"] {
            guard let seconds = Double(t), seconds >= 0, seconds <= 31_536_000 else {
                throw SettingsError("revalidate-after must be seconds (0 to 31536000; 0: never), not '\(t)'")
            }
            revalidateAfter = seconds == 0 ? nil : .milliseconds(Int64(seconds * 1000))
        }
        if let l = s["log-level"] {
            guard let level = Logger.Level(rawValue: l.lowercased()) else {
                throw SettingsError("log-level must be trace, debug, info, notice, warning, error or critical, not '\(l)'")
            }
            logLevel = level
        }
        if let n = s["node-message-rate"] {
            guard let rate = Double(n), rate >= 1, rate <= 1_000_000 else { throw SettingsError("node-message-rate must be 1 to 1000000, not '\(n)'") }
            nodeMessageRate = rate
        }
        awaitPreparation = try s.toggle("await-preparation")
        if let n = s["prefetch-segments"] {
            guard let w = Int(n), (0...32).contains(w) else { throw SettingsError("prefetch-segments must be 0 to 32, not '\(n)'") }
            prefetchSegments = w
        }
        if let t = s["read-ahead"] {
            if t == "all" {
                readAhead = nil
            } else {
                guard let seconds = Double(t), seconds >= 0, seconds <= 86_400 else {
                    throw SettingsError("read-ahead must be seconds (0 to 86400) or all, not '\(t)'")
                }
                readAhead = .milliseconds(Int64(seconds * 1000))
            }
        }
        if let t = s["origin-idle-timeout"] {
            // Bounded: a huge or infinite value trapped converting to milliseconds (a crash loop
            // under a supervisor, not an error naming the setting).
            guard let seconds = Double(t), seconds > 0, seconds <= 86_400 else {
                throw SettingsError("origin-idle-timeout must be seconds (above 0, at most 86400), not '\(t)'")
            }
            originIdleTimeout = .milliseconds(Int64(seconds * 1000))
        }
    }
}
