internal import CCurl

/// An absolute http(s) URL as libcurl's own parser reads it, so that the host the address
/// policy checks is the host the transfer connects to.
struct CurlURL: Sendable, Hashable {
    /// The URL to hand to libcurl: the caller's text as given, or curl's resolution of a
    /// redirect's `Location`.
    let string: String
    /// The host, lowercased (IPv6 literals in brackets).
    let host: String
    /// The port connected to: the written one, or 80 / 443.
    let port: Int

    /// `host:port`, the key of the per-host limit.
    var hostKey: String { "\(host):\(port)" }

    /// Parses an absolute http or https URL.
    init(_ string: String) throws(OriginError) {
        guard let parsed = Self.parse(string, relativeTo: nil, keepText: true) else {
            throw OriginError(.invalidURL, "not an absolute http(s) URL: \(string)")
        }
        self = parsed
    }

    /// Resolves a redirect's `Location` against `base` (RFC 3986); nil when it is unusable or
    /// not http(s).
    init?(location: String, relativeTo base: CurlURL) {
        guard let parsed = Self.parse(location, relativeTo: base.string, keepText: false) else { return nil }
        self = parsed
    }

    private init(string: String, host: String, port: Int) {
        self.string = string
        self.host = host
        self.port = port
    }

    private static func parse(_ text: String, relativeTo base: String?, keepText: Bool) -> CurlURL? {
        LibCurl.ensureInitialized()
        guard let u = swarmgate_curl_url() else { return nil }
        defer { swarmgate_curl_url_cleanup(u) }
        if let base, swarmgate_curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK { return nil }
        guard swarmgate_curl_url_set(u, CURLUPART_URL, text, 0) == CURLUE_OK,
            let scheme = part(u, CURLUPART_SCHEME)?.lowercased(), scheme == "http" || scheme == "https",
            let host = part(u, CURLUPART_HOST), !host.isEmpty,
            let port = part(u, CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)).flatMap({ Int($0) }),
            let whole = keepText ? text : part(u, CURLUPART_URL)
        else { return nil }
        return CurlURL(string: whole, host: host.lowercased(), port: port)
    }

    private static func part(_ u: OpaquePointer, _ what: CURLUPart, _ flags: UInt32 = 0) -> String? {
        var out: UnsafeMutablePointer<CChar>?
        guard swarmgate_curl_url_get(u, what, &out, flags) == CURLUE_OK, let out else { return nil }
        defer { swarmgate_curl_free(out) }
        return String(cString: out)
    }
}
