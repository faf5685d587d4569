/// One entry of `allow_origins` (SPEC section 5): `host`, `host:port`, `*.suffix` or
/// `*.suffix:port`. Without a port any port matches; `*.example.com` matches every name below
/// `example.com` but not `example.com` itself. Names compare without case and without a
/// trailing dot; IPv6 literals are written in brackets (`[::1]:8080`).
public struct AllowedOrigin: Sendable, Hashable, CustomStringConvertible {
    /// The host, lowercased; for a wildcard entry, the suffix with its leading dot (".example.com").
    public let host: String
    public let isWildcard: Bool
    public let port: Int?

    /// Parses an entry; nil when it is empty, has a bad port, or carries a scheme or a path.
    public init?(_ entry: String) {
        var text = Substring(entry.lowercased())
        var port: Int?
        if let colon = text.lastIndex(of: ":"), !text[colon...].contains("]") {
            guard let p = Int(text[text.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
            text = text[..<colon]
        }
        let wildcard = text.hasPrefix("*.")
        if wildcard { text = text.dropFirst() }
        let host = Self.normalize(text)
        guard !host.isEmpty, host != ".", !host.contains(where: { "/?#@* ".contains($0) }) else { return nil }
        if host.hasPrefix("[") != host.hasSuffix("]") { return nil }
        self.host = host
        self.isWildcard = wildcard
        self.port = port
    }

    /// Whether a URL's host (as libcurl parsed it) and port are covered by this entry.
    public func matches(host candidate: String, port candidatePort: Int) -> Bool {
        if let port, port != candidatePort { return false }
        let name = Self.normalize(Substring(candidate.lowercased()))
        return isWildcard ? name.hasSuffix(host) && name.count > host.count : name == host
    }

    public var description: String {
        let h = isWildcard ? "*" + host : host
        return port.map { "\(h):\($0)" } ?? h
    }

    private static func normalize(_ host: Substring) -> String {
        String(host.hasSuffix(".") && host.count > 1 ? host.dropLast() : host)
    }
}
