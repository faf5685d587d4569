import Foundation
import Manifest

/// One fixture MPD rewritten, and both versions read by the independent player-side resolver.
struct FixtureRun {
    static let gateway = "http://gw.example.net:8080"
    static let xresid = try! XResID("stream-1")
    static let check = ProxyMappingCheck(gateway: gateway, xresid: xresid)

    let output: String
    let references: [DASHReference]
    let original: ResolvedMPD
    let rewritten: ResolvedMPD
    /// Rewritten URLs that do not map back to the original's.
    let problems: [String]
    /// Rewritten URLs of a non-default BaseURL combination that map to the default one.
    let collapsed: Int

    init(_ mpd: String, url: String = "http://origin.example.com/vod/movie/manifest.mpd") async throws {
        let origin = try OriginURL(url)
        var options = DASHRewriter.Options()
        options.gateway = Self.gateway
        options.xresid = Self.xresid
        options.collectReferences = true
        let result = try DASHRewriter(mpdURL: origin, options: options).rewrite(mpd)
        output = String(decoding: result.output, as: UTF8.self)
        references = result.references
        let folder = try DASHTestEnvironment.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let before = folder.appendingPathComponent("original.mpd")
        let after = folder.appendingPathComponent("rewritten.mpd")
        try Data(mpd.utf8).write(to: before)
        try Data(result.output).write(to: after)
        let resolved = try await ResolvedMPD.resolve([(before, url), (after, try Self.check.mpdURL(origin))])
        original = resolved[before.path]!
        rewritten = resolved[after.path]!
        (problems, collapsed) = Self.check.compare(original: original, rewritten: rewritten)
    }

    /// The rewritten URLs of one kind for the Representation with this id (default combination).
    func rewrittenURL(_ id: String, _ kind: KeyPath<ResolvedMPD.Representation, [String]>) -> String? {
        rewritten.representations.first { $0.id == id }?[keyPath: kind].first
    }

    /// The original URL of one kind for the Representation with this id (default combination).
    func originalURL(_ id: String, _ kind: KeyPath<ResolvedMPD.Representation, [String]>) -> String? {
        original.representations.first { $0.id == id }?[keyPath: kind].first
    }
}

/// A proxy URL on the fixtures' gateway for `origin` (`https://` origins get `xhttps=1`).
func proxied(_ origin: String) throws -> String {
    try ProxyURL(virtualHost: .hls, origin: try OriginURL(origin), xresid: FixtureRun.xresid).string(gateway: FixtureRun.gateway)
}
