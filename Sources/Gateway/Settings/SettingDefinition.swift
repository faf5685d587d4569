import Foundation

/// One setting of a swarmgate role. Its name is the flag (`--cache-size`), the environment
/// variable (`SWARMGATE_CACHE_SIZE`) and the config-file key (`cache_size`).
public struct SettingDefinition: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case text
        /// Comma-separated on the command line and in the environment, an array in the file.
        case list
        /// `--demo` on the command line; true/false elsewhere.
        case toggle
    }

    public let name: String
    public let kind: Kind
    public let help: String
    public let defaultValue: String?

    public init(_ name: String, kind: Kind = .text, default defaultValue: String? = nil, help: String) {
        self.name = name
        self.kind = kind
        self.help = help
        self.defaultValue = defaultValue
    }

    public var flag: String { "--" + name }
    public var environmentVariable: String { "SWARMGATE_" + name.uppercased().replacingOccurrences(of: "-", with: "_") }
    public var fileKey: String { name.replacingOccurrences(of: "-", with: "_") }
}

/// Every setting, in one place: the command line, the environment and the config file all
/// read these lists.
public enum SettingDefinitions {
    static let shared: [SettingDefinition] = [
        .init("config", help: "A TOML file with settings (flags and SWARMGATE_* variables win over it)."),
        .init("log-level", default: "info", help: "What is logged to stderr: trace, debug, info (a line per request), notice, warning, error or critical."),
        .init("listen", default: "127.0.0.1:8080", help: "HOST:PORT to listen on."),
        .init("allow-origin", kind: .list, help: "Origin hosts that may be fetched (host, host:port, *.suffix); they may be private addresses. Without it, only public addresses."),
        .init("app-id", default: "swarmgate", help: "The app id nodes and tracker share."),
        .init("app-secret-file", help: "A file holding the app secret (or set SWARMGATE_APP_SECRET)."),
        .init("admin-token-file", help: "A file holding the token that /prepare and /jobs ask for as Authorization: Bearer (or set SWARMGATE_ADMIN_TOKEN); without one, they answer loopback callers only."),
        .init("node-message-rate", default: "500", help: "Messages per second one node may send the tracker here (bursts of twice that) before its connection is closed."),
    ]

    /// What nodes and trackers both do: keep pieces and prepare objects from origins.
    static let pieces: [SettingDefinition] = [
        .init("cache-size", default: "10GiB", help: "Hard bound of the piece store."),
        .init("piece-size", default: "256KiB", help: "Bytes per piece of newly prepared objects."),
        .init("max-object-size", default: "4GiB", help: "Largest media object fetched from an origin, e.g. 4GiB."),
        .init("origin-idle-timeout", default: "10", help: "Seconds an origin may send nothing before the request fails (504)."),
        .init("revalidate-after", default: "600", help: "Seconds after which a kept copy is checked against the origin, in the background, when a player (or a node) asks for it (a file replaced under its name); 0: never."),
        .init("read-ahead", default: "60", help: "Seconds of a VOD playlist past the furthest segment its players reached that the registry prepares ahead of them (0: none; all: the whole playlist at once)."),
    ]

    /// `swarmgate serve`.
    public static let serve: [SettingDefinition] = shared + pieces + [
        .init("prepare-jobs", default: "3", help: "Prepare jobs (fetch and hash an object) that run at once."),
        .init("registry-entries", default: "200000", help: "Objects whose checksums the registry keeps (about 1 KB of memory each), the ones used last; an object let go is prepared again when asked for."),
        .init("public-url", help: "The base URL rewritten playlists point at and peers use (default http:// + the listen address)."),
        .init("cache-dir", default: "swarmgate-cache", help: "Folder of the piece cache."),
        .init("memory-cache-size", default: "128MiB", help: "Verified pieces kept in memory as well (0: read every piece from disk)."),
        .init("manifest-memory", default: "256MiB", help: "Bytes of playlists and MPDs being read from origins at once, in all; past it, a request is answered 503 (Retry-After: 1)."),
        .init("tracker", help: "ws://HOST:PORT/swarm/v1/ws of the tracker; without it, an embedded tracker."),
        .init("prefetch-segments", default: "3", help: "Segments after the one a player reads that are fetched from peers in the background (0: none)."),
        .init("peer-url", help: "Where other nodes fetch this node's pieces, when not at the public URL."),
        .init("await-preparation", kind: .toggle, default: "false", help: "A player's request for an object whose preparation is under way waits for it, up to the peer deadline, when its progress says it ends by then (instead of SPEC's 302 to the CDN)."),
        .init("live-hold", default: "auto", help: "Seconds a live playlist's or MPD's answer may wait for the new segments it lists to be ready in the swarm; auto: a quarter of a segment (0.25 to 1 s); never more than half a segment; 0: none."),
        .init("peer-deadline", default: "auto", help: "Seconds the swarm may take to deliver a piece before it comes from the CDN by range; auto: a quarter of the segment's duration (0.5 to 3 s), 1.5 s when unknown."),
        .init("inherit-query", kind: .list, default: "", help: "Query parameters of a playlist URL copied onto its URIs: names, comma-separated (an array in the config file), or *."),
        .init("key-uris", default: "origin", help: "EXT-X-KEY URIs: origin or proxy."),
        .init("cors-origins", kind: .list, default: "*", help: "Web pages whose players may read playlists and segments (CORS): * (any), none, or origins such as https://www.example.com, comma-separated (an array in the config file)."),
        .init("demo", kind: .toggle, default: "false", help: "Also serve samples/ as a local origin and print a URL a player can open."),
    ]

    /// `swarmgate tracker`: signalling, the checksum registry and the swarm's first seed.
    public static let tracker: [SettingDefinition] = shared + pieces + [
        // More than a node's: the registry prepares ahead of every player of the swarm, and
        // a job mostly waits on the origin's round trip.
        .init("prepare-jobs", default: "8", help: "Prepare jobs (fetch and hash an object) that run at once."),
        .init("registry-entries", default: "1000000", help: "Objects whose checksums the registry keeps (about 1 KB of memory each), the ones used last; an object let go is prepared again when a node asks for it."),
        .init("db", default: "swarmgate-tracker.sqlite", help: "The tracker's SQLite database: the checksum registry and its prepare jobs."),
        .init("public-url", help: "The base URL nodes fetch the tracker's seed pieces from (default http:// + the listen address)."),
        .init("cache-dir", default: "swarmgate-tracker-cache", help: "Folder of the pieces the registry prepared: the swarm's first seed."),
    ]
}
