import Foundation

/// A URL on the gateway that stands for one origin object (SPEC section 1):
/// `GATEWAY/VHOST/ORIGIN-HOST[:PORT]/ORIGIN-PATH?ORIGIN-QUERY&xresid=ID[&xhttps=1][&xkey=1]`.
/// It both builds such URLs and decodes a request target back to the origin URL.
public struct ProxyURL: Hashable, Sendable {
    /// The first path segment of a proxy URL: which service answers.
    public enum VirtualHost: String, Hashable, Sendable {
        /// Playlists, MPDs and every object they reference.
        case hls = "hls.vod.p2p.com"
        /// One whole file served by ranges.
        case file = "xdfs.p2p.com"
    }

    public var virtualHost: VirtualHost
    /// The origin URL, with the gateway's parameters removed from its query.
    public var origin: OriginURL
    public var xresid: XResID
    /// `xkey=1`: an HLS key, fetched fresh from the origin every time, never cached or shared.
    public var isKey: Bool

    /// The `xvars` parameter: the variables of the master playlist that referenced this one
    /// (`PlaylistVariables`), as it came.
    public var variables: String?

    public init(virtualHost: VirtualHost, origin: OriginURL, xresid: XResID, isKey: Bool = false, variables: String? = nil) {
        self.virtualHost = virtualHost
        self.origin = origin
        self.xresid = xresid
        self.isKey = isKey
        self.variables = variables
    }

    /// Decodes a request target (`/VHOST/HOST/PATH?QUERY`). Throws `unknownVirtualHost` for a
    /// first segment that is no VHOST (answered 404) and `invalidProxyURL` / `invalidXResID`
    /// for a malformed request (answered 400).
    public init(requestTarget: String) throws(ManifestError) {
        let b = Array(requestTarget.utf8)
        guard b.first == ASCII.slash else {
            throw ManifestError(.invalidProxyURL, "request target must start with /")
        }
        let queryStart = b.firstIndex(of: ASCII.question) ?? b.endIndex
        let pathBytes = b[1..<queryStart]
        let vhostEnd = pathBytes.firstIndex(of: ASCII.slash) ?? pathBytes.endIndex
        guard let vhost = VirtualHost(rawValue: String(decoding: pathBytes[..<vhostEnd], as: UTF8.self)) else {
            throw ManifestError(.unknownVirtualHost, "unknown virtual host")
        }
        let afterVHost = vhostEnd < pathBytes.endIndex ? pathBytes[(vhostEnd + 1)...] : []
        let hostEnd = afterVHost.firstIndex(of: ASCII.slash) ?? afterVHost.endIndex
        var host = afterVHost[..<hostEnd]
        if host.contains(UInt8(ascii: "%")) {
            // Clients may percent-encode "[", "]" or ":" of an IPv6 host; a host name never has "%".
            guard let decoded = Self.percentDecoded(host) else {
                throw ManifestError(.invalidProxyURL, "origin host is not valid")
            }
            host = decoded[...]
        }
        guard Self.isValidAuthority(host) else {
            throw ManifestError(.invalidProxyURL, host.isEmpty ? "no origin host" : "origin host is not valid")
        }
        var path = Array(afterVHost[hostEnd...])
        if path.isEmpty { path = [ASCII.slash] }
        if DotSegments.present(path) { path = DotSegments.remove(path) }

        var kept: [ArraySlice<UInt8>] = []
        var xresid: ArraySlice<UInt8>?
        var https = false
        var key = false
        var variables: String?
        var failure: ManifestError?
        if queryStart < b.endIndex {
            QueryItems.forEach(b[(queryStart + 1)...]) { item, name in
                guard QueryItems.isGatewayParameter(name) else {
                    kept.append(item)
                    return
                }
                let value = item.count > name.count ? item[(name.endIndex + 1)...] : []
                switch String(decoding: name, as: UTF8.self) {
                case "xresid": xresid = value
                case "xmode":
                    if !value.elementsEqual("ordered".utf8) {
                        failure = ManifestError(.invalidProxyURL, "unknown xmode '\(String(decoding: value, as: UTF8.self))'")
                    }
                case "xhttps":
                    if value.elementsEqual("1".utf8) { https = true } else if !value.elementsEqual("0".utf8) {
                        failure = ManifestError(.invalidProxyURL, "xhttps must be 1 or 0")
                    }
                case "xvars":
                    variables = String(decoding: value, as: UTF8.self)
                default:
                    if value.elementsEqual("1".utf8) { key = true } else if !value.elementsEqual("0".utf8) {
                        failure = ManifestError(.invalidProxyURL, "xkey must be 1 or 0")
                    }
                }
            }
        }
        if let failure { throw failure }
        var query: [UInt8] = []
        for (i, item) in kept.enumerated() {
            if i > 0 { query.append(ASCII.amp) }
            query.append(contentsOf: item)
        }
        // The path as manifests write it (`URLBytes`), so that a client that sends raw bytes
        // (`/{x}.ts`; the HTTP parser refuses raw spaces and non-ASCII) names the object a
        // rewritten manifest's URL names; the query byte for byte.
        let origin = OriginURL(
            isHTTPS: https, authority: String(decoding: host, as: UTF8.self),
            path: URLBytes.string(path, query: false),
            query: kept.isEmpty ? nil : String(decoding: query, as: UTF8.self))
        let id: XResID
        if let xresid {
            id = try XResID(String(decoding: xresid, as: UTF8.self))
        } else {
            id = XResID(derivedFrom: origin)
        }
        self.init(virtualHost: vhost, origin: origin, xresid: id, isKey: key, variables: variables)
    }

    /// The proxy URL on the gateway at `gateway` (e.g. `http://127.0.0.1:8080`). Throws
    /// `reservedParameter` when the origin query already uses a gateway parameter name, since
    /// such a URL could not be decoded back to the same origin URL.
    public func string(gateway: String) throws(ManifestError) -> String {
        var out: [UInt8] = []
        let writer = ProxyWriter(gateway: gateway, virtualHost: virtualHost, xresid: xresid)
        let bytes = Array(origin.string.utf8)
        try bytes.withUnsafeBufferPointer { (b) throws(ManifestError) in
            let c = URIComponents(b)
            let target = ResolvedTarget(
                isHTTPS: origin.isHTTPS, authority: b.view(c.authority!), pathTail: b.view(c.path),
                query: c.query.map { b.view($0) })
            try writer.write(target, isKey: isKey, extra: variables.map(PlaylistVariables.queryItem) ?? [], into: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func percentDecoded(_ s: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            if s[i] == UInt8(ascii: "%") {
                guard i + 2 < s.endIndex, let v = UInt8(String(decoding: s[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) else {
                    return nil
                }
                out.append(v)
                i += 3
            } else {
                out.append(s[i])
                i += 1
            }
        }
        return out
    }

    /// host, host:port or [v6]:port, with nothing that could smuggle another authority in,
    /// and a port (when given) from 1 to 65535: anything else is the client's error (400),
    /// not one for the origin client to find (502).
    public static func isValidAuthority(_ authority: String) -> Bool { isValidAuthority(Array(authority.utf8)[...]) }

    static func isValidAuthority(_ a: ArraySlice<UInt8>) -> Bool {
        let digit = { (c: UInt8) in c >= 0x30 && c <= 0x39 }
        var port: ArraySlice<UInt8> = []
        if a.first == UInt8(ascii: "[") {
            guard let close = a.firstIndex(of: UInt8(ascii: "]")) else { return false }
            var address = in6_addr()
            let inside = String(decoding: a[(a.startIndex + 1)..<close], as: UTF8.self)
            guard inet_pton(AF_INET6, inside, &address) == 1 else { return false }
            let rest = a[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == ASCII.colon else { return false }
                port = rest.dropFirst()
            }
        } else {
            let colon = a.firstIndex(of: ASCII.colon) ?? a.endIndex
            let host = a[..<colon]
            guard !host.isEmpty,
                host.allSatisfy({ URIComponents.isAlpha($0) || digit($0) || $0 == ASCII.dot || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
            else { return false }
            if colon < a.endIndex { port = a[(colon + 1)...] }
        }
        // An empty port after the colon is the scheme's default (RFC 3986 3.2.3).
        guard !port.isEmpty else { return true }
        guard port.count <= 5, port.allSatisfy(digit), let n = Int(String(decoding: port, as: UTF8.self)) else { return false }
        return (1...65535).contains(n)
    }
}

/// Writes proxy URLs as bytes: the fast path the playlist rewriter uses for every URI. The
/// constant parts are prepared once so that a URI costs a few memory copies.
struct ProxyWriter: Sendable {
    /// `GATEWAY/VHOST/`
    let prefix: [UInt8]
    /// The gateway's parameters as they end a proxy URL, indexed by `suffixIndex`: each in a
    /// form with and without the leading "&".
    let suffixes: [[UInt8]]
    /// Query items appended to every URI whose query lacks an item of that name.
    var inherited: [(item: [UInt8], name: [UInt8])] = []

    init(gateway: String, virtualHost: ProxyURL.VirtualHost, xresid: XResID) {
        var g = Array(gateway.utf8)
        while g.last == ASCII.slash { g.removeLast() }
        g.append(ASCII.slash)
        g.append(contentsOf: virtualHost.rawValue.utf8)
        g.append(ASCII.slash)
        prefix = g
        var suffixes: [[UInt8]] = []
        for https in [false, true] {
            for key in [false, true] {
                var s = "xresid=\(xresid.value)"
                if virtualHost == .file { s += "&xmode=ordered" }
                if https { s += "&xhttps=1" }
                if key { s += "&xkey=1" }
                suffixes.append(Array(s.utf8))
                suffixes.append(Array(("&" + s).utf8))
            }
        }
        self.suffixes = suffixes
    }

    /// `xresid=ID` alone.
    var xresidItem: [UInt8] { suffixes[0] }

    @inline(__always)
    static func suffixIndex(https: Bool, key: Bool, ampersand: Bool) -> Int {
        (https ? 4 : 0) + (key ? 2 : 0) + (ampersand ? 1 : 0)
    }

    func write(_ t: ResolvedTarget, isKey: Bool, extra: [UInt8] = [], into out: inout [UInt8]) throws(ManifestError) {
        out.append(contentsOf: prefix)
        try write(afterPrefix: t, isKey: isKey, extra: extra, into: &out)
    }

    /// Everything after `GATEWAY/VHOST/`, when the caller wrote that (and maybe more) itself.
    @inline(__always)
    func write(
        afterPrefix t: ResolvedTarget, isKey: Bool, skippingAuthorityAndHead: Bool = false, extra: [UInt8] = [], into out: inout [UInt8]
    ) throws(ManifestError) {
        if let q = t.query, let name = QueryItems.firstGatewayParameter(in: q) {
            throw ManifestError(.reservedParameter, "the origin query already has the gateway's parameter '\(name)'")
        }
        if skippingAuthorityAndHead {
            URLBytes.appendPath(t.pathTail, to: &out)
        } else {
            out.append(contentsOf: t.authority)
            t.write(pathInto: &out)
        }
        out.append(ASCII.question)
        var ampersand = false
        if let q = t.query, !q.isEmpty {
            URLBytes.appendQuery(q, source: t.source(of: q), to: &out)
            ampersand = true
        }
        if !inherited.isEmpty {
            if ampersand { out.append(ASCII.amp) }
            writeInherited(query: t.query, into: &out)
            ampersand = false
        }
        out.append(contentsOf: suffixes[Self.suffixIndex(https: t.isHTTPS, key: isKey, ampersand: ampersand)])
        out.append(contentsOf: extra)
        if let f = t.fragment {
            out.append(ASCII.hash)
            out.append(contentsOf: f)
        }
    }

    /// Appends `name=value&` for each inherited item the query lacks.
    func writeInherited(query: ByteView?, into out: inout [UInt8]) {
        for (item, name) in inherited {
            if let q = query, QueryItems.contains(name: name, in: q) { continue }
            out.append(contentsOf: item)
            out.append(ASCII.amp)
        }
    }

    /// The target as an absolute origin URL (for keys in `origin` mode), with inherited items.
    func writeOrigin(_ t: ResolvedTarget, into out: inout [UInt8]) {
        out.append(contentsOf: t.isHTTPS ? "https://".utf8 : "http://".utf8)
        out.append(contentsOf: t.authority)
        t.write(pathInto: &out)
        let hasQuery = !(t.query?.isEmpty ?? true)
        let missing = inherited.filter { e in !(t.query.map { QueryItems.contains(name: e.name, in: $0) } ?? false) }
        if hasQuery || !missing.isEmpty {
            out.append(ASCII.question)
            if let q = t.query, hasQuery { URLBytes.appendQuery(q, source: t.source(of: q), to: &out) }
            for (i, e) in missing.enumerated() {
                if hasQuery || i > 0 { out.append(ASCII.amp) }
                out.append(contentsOf: e.item)
            }
        }
        if let f = t.fragment {
            out.append(ASCII.hash)
            out.append(contentsOf: f)
        }
    }
}
