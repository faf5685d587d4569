/// The two manifest formats the gateway rewrites.
public enum ManifestFormat: String, Hashable, Sendable {
    case hls
    case dash

    /// What it is, in a message: "an HLS playlist", "a DASH MPD".
    public var described: String {
        switch self {
        case .hls: "an HLS playlist"
        case .dash: "a DASH MPD"
        }
    }

    /// Decides from what the origin answered: the body first (`#EXTM3U`, or an XML document
    /// whose first element is `MPD`), then the content type, then the path's extension as a hint.
    /// Nil: not a manifest (a media object).
    public static func detect(body: some Collection<UInt8>, contentType: String? = nil, path: String? = nil) -> ManifestFormat? {
        let head = Array(body.prefix(4096))
        var i = 0
        if head.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        if startsWithHLSHeader(head[i...]) { return .hls }
        if looksLikeMPD(head[i...]) { return .dash }
        if let t = contentType?.lowercased() {
            if t.contains("mpegurl") { return .hls }
            if t.contains("dash+xml") { return .dash }
        }
        if let p = path?.lowercased() {
            if p.hasSuffix(".m3u8") || p.hasSuffix(".m3u") { return .hls }
            if p.hasSuffix(".mpd") { return .dash }
        }
        return nil
    }

    /// `#EXTM3U`, possibly after comment and blank lines (which the HLS rewriter tolerates).
    static func startsWithHLSHeader(_ b: ArraySlice<UInt8>) -> Bool {
        var i = b.startIndex
        while i < b.endIndex {
            if b[i...].starts(with: "#EXTM3U".utf8) { return true }
            guard b[i] == ASCII.hash || b[i] == ASCII.lf || b[i] == ASCII.cr || b[i] == ASCII.space,
                !b[i...].starts(with: "#EXT".utf8)
            else { return false }
            guard let lf = b[i...].firstIndex(of: ASCII.lf) else { return false }
            i = lf + 1
        }
        return false
    }

    /// Skips an XML declaration, comments and whitespace, and looks for `<MPD` (with or
    /// without a namespace prefix).
    static func looksLikeMPD(_ b: ArraySlice<UInt8>) -> Bool {
        var i = b.startIndex
        while i < b.endIndex {
            let c = b[i]
            if c == ASCII.space || c == ASCII.tab || c == ASCII.cr || c == ASCII.lf { i += 1; continue }
            guard c == UInt8(ascii: "<"), i + 1 < b.endIndex else { return false }
            let next = b[i + 1]
            if next == UInt8(ascii: "?") || next == UInt8(ascii: "!") {
                // Declaration, comment or DOCTYPE: skip to its '>'.
                guard let close = b[i...].firstIndex(of: UInt8(ascii: ">")) else { return false }
                i = close + 1
                continue
            }
            var j = i + 1
            while j < b.endIndex, b[j] != ASCII.space, b[j] != UInt8(ascii: ">"), b[j] != ASCII.lf, b[j] != ASCII.cr, b[j] != ASCII.tab { j += 1 }
            let name = b[(i + 1)..<j]
            let local = name.lastIndex(of: ASCII.colon).map { name[($0 + 1)...] } ?? name
            return local.elementsEqual("MPD".utf8)
        }
        return false
    }
}
