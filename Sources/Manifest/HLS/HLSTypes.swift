/// Whether a playlist lists variants (master / multivariant) or media segments. Told apart by
/// its tags, never by its URL.
public enum HLSPlaylistKind: String, Hashable, Sendable {
    case master
    case media
}

/// How `EXT-X-KEY` / `EXT-X-SESSION-KEY` URIs are rewritten.
public enum KeyURIMode: String, Hashable, Sendable, CaseIterable {
    /// Absolute origin URLs: the player fetches keys straight from the origin (the default).
    case origin
    /// Proxy URLs marked `xkey=1`: fetched fresh from the origin on every request, never stored.
    case proxy
}

/// A byte range of a resource: `length` bytes from `offset`.
public struct ByteRange: Hashable, Sendable {
    public var length: UInt64
    public var offset: UInt64
}

/// One URI a rewritten playlist points at, in the order it appears (playback order for
/// segments): what the gateway prepares and prefetches.
public struct HLSReference: Hashable, Sendable {
    /// What the URI is for, named after the tag that carries it.
    public enum Role: String, Hashable, Sendable {
        case variant, iFrameVariant, imageVariant, rendition, sessionData, steering
        case segment, map, part, preloadHint, renditionReport, asset
        case key, sessionKey
    }

    public var role: Role
    public var origin: OriginURL
    /// 1-based line of the playlist.
    public var line: Int
    public var byteRange: ByteRange?
    /// `EXTINF` duration in seconds, for segments.
    public var duration: Double?
    /// A segment marked `EXT-X-GAP` (RFC 8216bis 4.4.4.7): not at the origin, and not loaded
    /// by players.
    public var gap = false
}

/// The result of rewriting one HLS playlist.
public struct HLSRewrite: Sendable {
    /// The rewritten playlist: the input with only URI tokens changed.
    public var output: [UInt8]
    public var kind: HLSPlaylistKind
    /// Variables this playlist defines (for `IMPORT` in the playlists it references).
    public var variables: [String: String]
    /// Every rewritten URI, when `collectReferences` was set.
    public var references: [HLSReference]
}
