import Manifest

extension GatewayResponder {
    /// Rewrites an MPD fetched from `url` so that every URL a player derives from it comes back
    /// through this gateway with the stream's xresid.
    func rewriteDASH(_ body: [UInt8], url: OriginURL, xresid: XResID) throws(ManifestError) -> [UInt8] {
        var options = DASHRewriter.Options()
        options.gateway = currentPublicURL
        options.xresid = xresid
        options.maxInputSize = configuration.maxManifestSize
        options.inheritQuery = configuration.inheritQuery
        return try DASHRewriter(mpdURL: url, options: options).rewrite(body).output
    }
}
