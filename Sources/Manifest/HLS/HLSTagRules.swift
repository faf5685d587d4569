/// What the rewriter does with each tag it knows: which attributes hold URIs, and which kind
/// of playlist the tag belongs to. Tags not listed here pass through untouched.
struct HLSTagRule: Sendable {
    enum Action: Sendable {
        case none
        /// Rewrite the quoted URI attributes listed.
        case uris([(name: StaticString, role: HLSReference.Role)])
        case streamInf
        case byteRange
        case define
        case key(HLSReference.Role)
    }

    var action: Action
    /// The playlist kind that this tag only appears in, if any.
    var kind: HLSPlaylistKind?

    /// Known tags by name (without "#"). A short list scanned by length then bytes: cheaper
    /// than hashing each tag name of a large playlist.
    static let table: [(name: [UInt8], rule: HLSTagRule)] = {
        let rules: [(String, HLSTagRule)] = [
            // EXTINF, by far the most common tag, is handled before this table is consulted.
            ("EXT-X-TARGETDURATION", .init(action: .none, kind: .media)),
            ("EXT-X-MEDIA-SEQUENCE", .init(action: .none, kind: .media)),
            ("EXT-X-DISCONTINUITY-SEQUENCE", .init(action: .none, kind: .media)),
            ("EXT-X-ENDLIST", .init(action: .none, kind: .media)),
            ("EXT-X-PLAYLIST-TYPE", .init(action: .none, kind: .media)),
            ("EXT-X-I-FRAMES-ONLY", .init(action: .none, kind: .media)),
            ("EXT-X-PART-INF", .init(action: .none, kind: .media)),
            ("EXT-X-BYTERANGE", .init(action: .byteRange, kind: .media)),
            ("EXT-X-KEY", .init(action: .key(.key), kind: .media)),
            ("EXT-X-MAP", .init(action: .uris([("URI", .map)]), kind: .media)),
            ("EXT-X-PART", .init(action: .uris([("URI", .part)]), kind: .media)),
            ("EXT-X-PRELOAD-HINT", .init(action: .uris([("URI", .preloadHint)]), kind: .media)),
            ("EXT-X-RENDITION-REPORT", .init(action: .uris([("URI", .renditionReport)]), kind: .media)),
            ("EXT-X-DATERANGE", .init(action: .uris([("X-ASSET-URI", .asset), ("X-ASSET-LIST", .asset)]), kind: .media)),
            ("EXT-X-STREAM-INF", .init(action: .streamInf, kind: .master)),
            ("EXT-X-I-FRAME-STREAM-INF", .init(action: .uris([("URI", .iFrameVariant)]), kind: .master)),
            ("EXT-X-IMAGE-STREAM-INF", .init(action: .uris([("URI", .imageVariant)]), kind: .master)),
            ("EXT-X-MEDIA", .init(action: .uris([("URI", .rendition)]), kind: .master)),
            ("EXT-X-SESSION-DATA", .init(action: .uris([("URI", .sessionData)]), kind: .master)),
            ("EXT-X-SESSION-KEY", .init(action: .key(.sessionKey), kind: .master)),
            ("EXT-X-CONTENT-STEERING", .init(action: .uris([("SERVER-URI", .steering)]), kind: .master)),
            ("EXT-X-DEFINE", .init(action: .define, kind: nil)),
        ]
        return rules.map { (Array($0.0.utf8), $0.1) }
    }()

    static func rule(named name: ByteView) -> HLSTagRule? {
        for entry in table where entry.name.count == name.count && entry.name.elementsEqual(name) {
            return entry.rule
        }
        return nil
    }
}
