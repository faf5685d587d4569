internal import CCurl

/// libcurl loaded and set up once for the whole process, before any thread uses it
/// (`curl_global_init`). The process loads it when first asked to: most commands never fetch.
public enum LibCurl {
    /// Nil once libcurl is loaded and set up, else why it cannot be.
    private static let failure: String? = {
        if let failure = swarmgate_curl_load() { return String(cString: failure) }
        swarmgate_curl_global_init(Int(CURL_GLOBAL_ALL))
        return nil
    }()

    /// Why libcurl cannot be used (not installed, too old), or nil when it can. Commands that
    /// fetch check it first, to stop with that message.
    public static var unavailable: String? { failure }

    /// Call before any use of libcurl; cheap after the first time. A process without libcurl
    /// stops here with its reason (checked by the commands first).
    public static func ensureInitialized() {
        if let failure { fatalError("libcurl: \(failure)") }
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
