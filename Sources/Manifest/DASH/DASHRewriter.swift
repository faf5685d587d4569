/// Rewrites a DASH MPD so that every URL a player derives from it comes back through the
/// gateway (SPEC section 1, "Rewriting, DASH"). The MPD is parsed with libxml2 under
/// `XMLDocument`'s safety rules, URL attributes and texts are replaced in the tree, and the
/// tree is written back without reformatting, so namespaces, prefixes, unknown elements and
/// attributes, attribute order and comments survive.
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
        /// Whether to list every rewritten URL in the result.
        public var collectReferences = false

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
        writer = DASHReferenceWriter(
            proxy: ProxyWriter(
                gateway: options.gateway, virtualHost: .hls,
                xresid: options.xresid ?? XResID(derivedFrom: mpdURL)))
    }

    /// Rewrites `input`, or throws a `ManifestError` (`notAnMPD`, `forbiddenDeclaration`,
    /// `xmlSyntax`, `xmlLimit`, `inputTooLarge`, `invalidURI`, `reservedParameter`). Never
    /// returns a partial result.
    public func rewrite(_ input: [UInt8]) throws(ManifestError) -> DASHRewrite {
        guard input.count <= options.maxInputSize else {
            throw ManifestError(.inputTooLarge, "MPD is \(input.count) bytes, over the limit of \(options.maxInputSize)")
        }
        let document = try XMLDocument.parse(input)
        guard let root = document.root, root.hasLocalName("MPD"), Self.isMPDNamespace(root.namespaceURI) else {
            throw ManifestError(.notAnMPD, "the root element is not a DASH MPD")
        }
        var run = DASHRewriteRun(rewriter: self, root: root)
        try run.run()
        return DASHRewrite(output: try document.serialized(), references: run.references)
    }

    /// Rewrites text.
    public func rewrite(_ text: String) throws(ManifestError) -> DASHRewrite {
        try rewrite(Array(text.utf8))
    }

    /// No namespace, or the MPD schema's (in any case: early MPDs wrote `urn:mpeg:DASH:schema:MPD:2011`).
    static func isMPDNamespace(_ uri: UnsafePointer<UInt8>?) -> Bool {
        guard let uri else { return true }
        let expected = "urn:mpeg:dash:schema:mpd:2011".utf8
        var i = 0
        for c in expected {
            guard ASCII.lower(uri[i]) == c else { return false }
            i += 1
        }
        return uri[i] == 0
    }
}
