/// Rewrites a DASH MPD so that every URL a player derives from it comes back through the
/// gateway (SPEC section 1, "Rewriting, DASH"). libxml2 checks the document under
/// `XMLGate`'s safety rules; `MPDScanner` then finds the positions of the elements that matter,
/// and the output is the input with new URL values spliced in (`MPDWriter`): every other byte
/// (namespaces, prefixes, unknown elements and attributes, attribute order, comments, the XML
/// declaration) stays as it was.
///
/// Why not libxml2's tree and `xmlSaveToBuffer`: building, writing and freeing the tree cost
/// three times the SAX check, most of it malloc; on a 50,000-SegmentURL MPD that alone was
/// only ~15x faster than Python `mpegdash`, against a target of 20x.
///
/// How references are written (absolute proxy URLs, or relative with the xresid in their own
/// query so that BaseURL alternatives keep working) is explained on `DASHReferenceWriter`;
/// how a segment template inherited by Representations with different BaseURLs is handled,
/// on `DASHRewriteRun.settle(_:)`.
public struct DASHRewriter: Sendable {
    /// How the rewrite is done.
    public struct Options: Sendable {
        /// The gateway's public URL that proxy URLs start with.
        public var gateway: String = "http://127.0.0.1:8080"
        /// The stream's swarm; nil derives it from the MPD URL (host + path).
        public var xresid: XResID?
        /// Inputs larger than this are refused (SPEC: MPDs at most 16 MiB).
        public var maxInputSize = 16 << 20
        /// Parameters of the MPD URL's query copied onto every URL derived from the MPD that
        /// lacks them (anti-leech tokens), as for HLS.
        public var inheritQuery: InheritQuery = .none
        /// Whether to list every rewritten URL in the result.
        public var collectReferences = false
        /// Whether to list each Representation's segments, templates expanded
        /// (`DASHRewrite.segments`): what read-ahead and prefetch follow. All of a static MPD's;
        /// of a dynamic one, its live tail (`now`).
        public var collectSegments = false
        /// The wall clock (seconds since 1970) a dynamic MPD's live edge is worked out against.
        /// With `collectSegments`, a dynamic MPD's current Period (the last that has started)
        /// lists each Representation's initialization and newest segments available now
        /// (`LiveTail`); without a clock, a dynamic MPD lists nothing.
        public var now: Double?

        public init() {}
    }

    public let mpdURL: OriginURL
    public let options: Options
    let writer: DASHReferenceWriter

    /// `mpdURL` is the effective URL the MPD was fetched from (after redirects): the chain of
    /// BaseURLs starts there.
    public init(mpdURL: OriginURL, options: Options = Options()) {
        self.mpdURL = mpdURL
        self.options = options
        var proxy = ProxyWriter(gateway: options.gateway, virtualHost: .hls, xresid: options.xresid ?? XResID(derivedFrom: mpdURL))
        proxy.inherited = options.inheritQuery.items(of: mpdURL.query)
        writer = DASHReferenceWriter(proxy: proxy)
    }

    /// Rewrites `input`, or throws a `ManifestError` (`notAnMPD`, `forbiddenDeclaration`,
    /// `xmlSyntax`, `xmlLimit`, `inputTooLarge`, `invalidURI`, `reservedParameter`). Never
    /// returns a partial result.
    public func rewrite(_ input: [UInt8]) throws(ManifestError) -> DASHRewrite {
        guard input.count <= options.maxInputSize else {
            throw ManifestError(.inputTooLarge, "MPD is \(input.count) bytes, over the limit of \(options.maxInputSize)")
        }
        try XMLGate.check(input)
        let document = try MPDScanner.scan(input)
        let root = MPDNode(document, 0)
        guard root.hasLocalName("MPD"), Self.isMPDNamespace(root.namespaceURI) else {
            throw ManifestError(.notAnMPD, "the root element is not a DASH MPD")
        }
        var run = DASHRewriteRun(rewriter: self, root: root)
        try run.run()
        return DASHRewrite(output: document.serialized(), references: run.references, segments: run.segments, isDynamic: run.isDynamic)
    }

    /// Rewrites text.
    public func rewrite(_ text: String) throws(ManifestError) -> DASHRewrite {
        try rewrite(Array(text.utf8))
    }

    /// No namespace, or the MPD schema's (in any case: early MPDs wrote `urn:mpeg:DASH:schema:MPD:2011`).
    static func isMPDNamespace(_ uri: [UInt8]?) -> Bool {
        guard let uri else { return true }
        return uri.count == 29 && uri.map(ASCII.lower).elementsEqual("urn:mpeg:dash:schema:mpd:2011".utf8)
    }
}
