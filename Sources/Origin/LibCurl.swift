internal import CCurl

/// libcurl set up once for the whole process, before any thread uses it (`curl_global_init`).
public enum LibCurl {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_ALL))
        return true
    }()

    /// Call before any use of libcurl; cheap after the first time.
    public static func ensureInitialized() {
        _ = initialized
    }

    /// The running libcurl's version text, e.g. "7.88.1".
    public static var version: String {
        ensureInitialized()
        guard let info = swarmgate_curl_version_info() else { return "unknown" }
        return String(cString: info.pointee.version)
    }

    /// The protocols the running libcurl speaks, lowercased ("http", "https", "file"...).
    public static var protocols: [String] {
        ensureInitialized()
        guard let info = swarmgate_curl_version_info(), var p = info.pointee.protocols else { return [] }
        var out: [String] = []
        while let name = p.pointee {
            out.append(String(cString: name))
            p += 1
        }
        return out
    }

    /// Whether the running libcurl was built with HTTP/2.
    public static var supportsHTTP2: Bool {
        ensureInitialized()
        guard let info = swarmgate_curl_version_info() else { return false }
        return info.pointee.features & CURL_VERSION_HTTP2 != 0
    }
}
