/// One URL (or URL template) a rewritten MPD points at: what the gateway prepares and
/// prefetches. Listed in document order when `collectReferences` is set.
public struct DASHReference: Hashable, Sendable {
    /// What the URL is for, named after the element or attribute that carries it.
    public enum Role: String, Hashable, Sendable {
        case baseURL, initialization, media, index, bitstreamSwitching
        case xlink, location, patchLocation
    }

    public var role: Role
    /// The absolute origin URL; segment templates keep their identifiers (`$Number$`...).
    public var origin: String
    /// `Representation@id` when the URL belongs to one Representation.
    public var representationID: String?
    /// 1-based line of the element that carries it, in the input.
    public var line: Int
}

/// The result of rewriting one DASH MPD.
public struct DASHRewrite: Sendable {
    /// The rewritten MPD, UTF-8.
    public var output: [UInt8]
    /// Every rewritten URL, when `collectReferences` was set.
    public var references: [DASHReference]
    /// Each Representation's objects in playback order, when `collectSegments` was set: all of
    /// them for a static MPD, the live tail of a dynamic one (`Options.now`). Representations
    /// whose segments cannot be listed are left out.
    public var segments: [DASHSegmentList] = []
    /// Whether the MPD is `type="dynamic"` (live: its segment list grows).
    public var isDynamic = false
}
