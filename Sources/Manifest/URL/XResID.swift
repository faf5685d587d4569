/// The name of a swarm: requests with the same xresid share pieces. Either given by the
/// player (`[A-Za-z0-9._-]{1,128}`) or derived from the origin host and path, never the query.
public struct XResID: Hashable, Sendable, CustomStringConvertible {
    public let value: String

    /// Accepts an explicit xresid, or throws `invalidXResID`.
    public init(_ value: String) throws(ManifestError) {
        guard Self.isValid(value.utf8) else {
            throw ManifestError(.invalidXResID, "xresid must be 1 to 128 of [A-Za-z0-9._-]")
        }
        self.value = value
    }

    /// The default xresid of an origin object: lowercase hex MD5 of the lowercased
    /// `host[:port]` followed by the path, e.g. md5("cdn.example.com/vod/a.m3u8").
    public init(derivedFrom url: OriginURL) {
        var bytes = Array(url.authority.utf8).map(ASCII.lower)
        bytes.append(contentsOf: url.path.utf8)
        value = MD5.hex(bytes)
    }

    /// Whether `v` is 1 to 128 of `[A-Za-z0-9._-]`, and of `also` (the tracker takes peer
    /// ids of the same alphabet and `:`).
    public static func isValid<C: Collection<UInt8>>(_ v: C, also: UInt8? = nil) -> Bool {
        guard (1...128).contains(v.count) else { return false }
        return v.allSatisfy { c in
            URIComponents.isAlpha(c) || (c >= 0x30 && c <= 0x39) || c == 0x2E || c == 0x5F || c == 0x2D || c == also
        }
    }

    public var description: String { value }
}
