import Manifest

extension GatewayResponder {
    /// Rewrites an MPD fetched from `url` so that every URL a player derives from it comes back
    /// through this gateway with the stream's xresid; with `collectSegments`, a static MPD's
    /// Representations' segments come along, for read-ahead.
    func rewriteDASH(_ body: [UInt8], url: OriginURL, xresid: XResID, collectSegments: Bool = false) throws(ManifestError) -> DASHRewrite {
        var options = DASHRewriter.Options()
        options.gateway = currentPublicURL
        options.xresid = xresid
        options.maxInputSize = configuration.maxManifestSize
        options.inheritQuery = configuration.inheritQuery
        options.collectSegments = collectSegments
        return try DASHRewriter(mpdURL: url, options: options).rewrite(body)
    }

    /// Queues a static MPD's segments for preparation, one Representation after another, as a
    /// VOD playlist's are: each Representation is a list that read-ahead and prefetch follow.
    func prepareAhead(_ lists: [DASHSegmentList], xresid: XResID, mpdQuery: String?) {
        for list in lists {
            let items = list.segments.lazy.compactMap { s in (try? OriginURL(s.url)).map { (origin: $0, duration: s.duration) } }
            // No prefetch when the MPD is read: it lists every Representation, and a player
            // plays one of them.
            prepareAhead(listedObjects(items, xresid: xresid, listQuery: mpdQuery), prefetchFirst: false)
        }
    }
}
