/// An absolute http or https URL on an origin: what the gateway fetches. The path and query are
/// kept byte for byte as written (no re-encoding), except bytes a player would percent-encode
/// (`URLBytes`: a space, non-ASCII), which are; a fragment is dropped, since it never reaches
/// a server.
public struct OriginURL: Hashable, Sendable, CustomStringConvertible {
    public let isHTTPS: Bool
    /// `host[:port]` as written (IPv6 hosts in brackets). Never contains user info.
    public let authority: String
    /// Starts with "/"; dot segments removed.
    public let path: String
    /// The query without its "?", byte for byte; nil when the URL has no "?".
    public let query: String?

    /// Parses an absolute http(s) URL.
    public init(_ string: String) throws(ManifestError) {
        let bytes = Array(string.utf8)
        let c = bytes.withUnsafeBufferPointer { URIComponents($0) }
        guard let s = c.scheme,
            ASCII.equalsIgnoringCase(bytes[s], "http") || ASCII.equalsIgnoringCase(bytes[s], "https")
        else {
            throw ManifestError(.invalidBaseURL, "not an absolute http(s) URL: \(string)")
        }
        guard let a = c.authority, !bytes[a].isEmpty else {
            throw ManifestError(.invalidBaseURL, "no host in URL: \(string)")
        }
        try ResolutionBase.checkAuthority(bytes[a])
        var path = Array(bytes[c.path])
        if path.isEmpty { path = [ASCII.slash] }
        if DotSegments.present(path) { path = DotSegments.remove(path) }
        self.init(
            isHTTPS: ASCII.equalsIgnoringCase(bytes[s], "https"),
            authority: String(decoding: bytes[a], as: UTF8.self),
            path: URLBytes.string(path, query: false),
            query: c.query.map { URLBytes.string(bytes[$0], query: true) })
    }

    /// Builds a URL from parts that are already valid (path starting with "/").
    public init(isHTTPS: Bool, authority: String, path: String, query: String?) {
        self.isHTTPS = isHTTPS
        self.authority = authority
        self.path = path.isEmpty ? "/" : path
        // "a.ts?" and "a.ts" ask a server for the same thing; one form keeps keys stable.
        self.query = query?.isEmpty == true ? nil : query
    }

    init(_ t: ResolvedTarget) {
        var path: [UInt8] = []
        t.write(pathInto: &path)
        self.init(
            isHTTPS: t.isHTTPS,
            authority: String(decoding: t.authority, as: UTF8.self),
            path: String(decoding: path, as: UTF8.self),
            query: t.query.map { q in
                var out: [UInt8] = []
                URLBytes.appendQuery(q, source: t.source(of: q), to: &out)
                return String(decoding: out, as: UTF8.self)
            })
    }

    /// The whole URL.
    public var string: String {
        var s = isHTTPS ? "https://" : "http://"
        s += authority
        s += path
        if let query {
            s += "?"
            s += query
        }
        return s
    }

    public var description: String { string }

    /// The host without port; IPv6 literals keep their brackets.
    public var host: String { Self.splitAuthority(authority).host }

    /// The port written in the URL, if any.
    public var port: Int? { Self.splitAuthority(authority).port }

    /// The port to connect to: the written one, or 80 / 443.
    public var effectivePort: Int { port ?? (isHTTPS ? 443 : 80) }

    static func splitAuthority(_ a: String) -> (host: String, port: Int?) {
        var hostEnd = a.endIndex
        if a.hasPrefix("["), let close = a.firstIndex(of: "]") {
            hostEnd = a.index(after: close)
        } else if let colon = a.lastIndex(of: ":") {
            hostEnd = colon
        }
        let host = String(a[a.startIndex..<hostEnd])
        var rest = a[hostEnd...]
        guard rest.first == ":" else { return (host, nil) }
        rest = rest.dropFirst()
        return (host, Int(rest))
    }

    /// Resolves a reference found in a document fetched from this URL (RFC 3986). Returns nil
    /// for a reference with another scheme (`skd:`, `data:`...), which is not an origin URL.
    public func resolve(_ reference: String) throws(ManifestError) -> OriginURL? {
        let ref = Array(reference.utf8)
        return try ResolutionBase(self).withView { (base) throws(ManifestError) -> OriginURL? in
            try ref.withUnsafeBufferPointer { (r) throws(ManifestError) -> OriginURL? in
                switch try base.resolve(r) {
                case .http(let t): return OriginURL(t)
                case .other: return nil
                }
            }
        }
    }
}
