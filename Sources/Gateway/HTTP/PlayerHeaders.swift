import Foundation
import HTTPTypes

/// Which web pages' players may read what the gateway serves them (`--cors-origins`): a
/// player on a site (hls.js, dash.js, Shaka) fetches playlists and segments from the gateway's
/// origin, not the site's, and its browser hands it nothing without CORS headers.
public enum CORSPolicy: Sendable, Equatable {
    /// Any page (`*`): what a public CDN answers, and the default.
    case any
    /// None: no CORS headers (players in apps, or behind a proxy that adds its own).
    case none
    /// The pages of these origins (`https://www.example.com`), each exactly as browsers send it.
    case only(Set<String>)

    /// The setting's items: `*`; `none` (or nothing); else origins, `scheme://host[:port]`.
    public init(items: [String]) throws(SettingsError) {
        let items = items.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if items.isEmpty || items == ["none"] {
            self = .none
        } else if items.contains("*") {
            self = .any
        } else {
            for item in items where !Self.isOrigin(item) {
                throw SettingsError("cors-origins: '\(item)' is not *, none or an origin such as https://www.example.com (scheme://host[:port], no path)")
            }
            self = .only(Set(items.map { $0.lowercased() }))
        }
    }

    static func isOrigin(_ s: String) -> Bool {
        guard let colon = s.range(of: "://") else { return false }
        let scheme = s[..<colon.lowerBound].lowercased()
        let authority = s[colon.upperBound...]
        return (scheme == "http" || scheme == "https") && !authority.isEmpty
            && !authority.contains(where: { "/?#@ \\".contains($0) })
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if it may read the
    /// answer.
    func allowed(_ origin: String?) -> String? {
        switch self {
        case .any: return "*"
        case .none: return nil
        case .only(let origins):
            guard let origin, origins.contains(origin.lowercased()) else { return nil }
            return origin
        }
    }
}

/// Headers every answer on a player's path (a proxy URL) carries, whatever it is: a playlist,
/// a segment, a key, a 302 to the CDN (a browser checks CORS on each hop), or an error.
enum PlayerHeaders {
    /// Answers that a player's script may read besides the safelisted ones: ranges and
    /// validators, which players and their range requests use.
    static let exposed = "Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified, Date, Age"
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    /// Adds them to `headers`, for a request from `origin` (its `Origin` header).
    static func add(to headers: inout HTTPFields, origin: String?, policy: CORSPolicy) {
        // An origin's page (text/html at a media path) must not run as the gateway's own:
        // browsers guess no type, and /jobs and the upload switch answer loopback callers.
        headers[contentTypeOptions] = "nosniff"
        // Under a list, every answer depends on the page, allowed or not, or sent by none (a
        // `<video>`, Safari's own HLS): a shared cache before the gateway keeps one per page.
        if case .only = policy { headers.append(HTTPField(name: .vary, value: "Origin")) }
        guard let allowed = policy.allowed(origin) else { return }
        headers[.accessControlAllowOrigin] = allowed
        headers[.accessControlExposeHeaders] = exposed
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`) on a
    /// player's path: GET and HEAD, with the headers asked for (a player's `Range`), for a day.
    /// Its own fields: `add`'s come with every answer on a player's path.
    static func preflight(origin: String?, requestHeaders: String?, policy: CORSPolicy) -> HTTPFields {
        var headers: HTTPFields = [.allow: "GET, HEAD, OPTIONS"]
        guard policy.allowed(origin) != nil else { return headers }
        headers[.accessControlAllowMethods] = "GET, HEAD, OPTIONS"
        // Field names only (a token list): what the browser asked, nothing else passed on.
        if let asked = requestHeaders, !asked.isEmpty,
            asked.utf8.allSatisfy({ $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
        {
            headers[.accessControlAllowHeaders] = asked
        }
        headers[.accessControlMaxAge] = "86400"
        return headers
    }
}
