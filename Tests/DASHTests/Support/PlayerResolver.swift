import Foundation
import Manifest

/// What Tests/python/dash_resolve.py (an independent player-side resolver) derives from an MPD.
struct ResolvedMPD: Decodable {
    struct Representation: Decodable {
        var key: String
        var id: String?
        /// One URL per combination of BaseURL alternatives, the default one first.
        var `init`: [String]
        var media: [String]
        var index: [String]
    }

    var representations: [Representation]
    var locations: [String]

    /// Runs the resolver on each (file, URL the player fetched it from).
    static func resolve(_ inputs: [(file: URL, url: String)]) async throws -> [String: ResolvedMPD] {
        let (status, out, err) = try await DASHTestEnvironment.runPython(
            "dash_resolve.py", inputs.flatMap { [$0.file.path, $0.url] })
        guard status == 0 else { throw ResolverFailure(description: err) }
        return try JSONDecoder().decode([String: ResolvedMPD].self, from: Data(out.utf8))
    }
}

struct ResolverFailure: Error, CustomStringConvertible {
    var description: String
}

/// Checks that the URLs a player derives from a rewritten MPD are proxy URLs for exactly the
/// URLs it derives from the original.
struct ProxyMappingCheck {
    let gateway: String
    let xresid: XResID

    /// How a rewritten URL relates to the original's URLs.
    enum Outcome: Equatable {
        /// Decodes to the original URL of the same BaseURL combination.
        case exact
        /// Decodes to the original URL of the first combination (alternatives collapsed).
        case first
        case wrong(String)
    }

    /// The URL the player fetches the rewritten MPD from.
    func mpdURL(_ origin: OriginURL) throws -> String {
        try ProxyURL(virtualHost: .hls, origin: origin, xresid: xresid).string(gateway: gateway)
    }

    func check(rewritten: String, original: [String], alternative i: Int) -> Outcome {
        guard let o = try? OriginURL(original[i]) else {
            return rewritten == original[i] ? .exact : .wrong("non-http URL changed: \(original[i]) → \(rewritten)")
        }
        guard rewritten.hasPrefix(gateway + "/") else { return .wrong("not on the gateway: \(rewritten)") }
        let target = String(rewritten.dropFirst(gateway.count))
        guard target.contains("xresid=\(xresid.value)") else { return .wrong("no explicit xresid: \(rewritten)") }
        guard let proxy = try? ProxyURL(requestTarget: target), proxy.virtualHost == .hls, proxy.xresid == xresid else {
            return .wrong("not a proxy URL with the stream's xresid: \(rewritten)")
        }
        if proxy.origin == o { return .exact }
        if let f = try? OriginURL(original[0]), proxy.origin == f { return .first }
        return .wrong("\(rewritten) decodes to \(proxy.origin), expected \(o)")
    }

    /// Problems found comparing every Representation's init, media and index URLs, and how
    /// many alternatives collapsed to the first one.
    func compare(original: ResolvedMPD, rewritten: ResolvedMPD) -> (problems: [String], collapsed: Int) {
        var problems: [String] = []
        var collapsed = 0
        guard original.representations.count == rewritten.representations.count else {
            return (["\(original.representations.count) Representations became \(rewritten.representations.count)"], 0)
        }
        for (o, r) in zip(original.representations, rewritten.representations) {
            for (name, before, after) in [("init", o.`init`, r.`init`), ("media", o.media, r.media), ("index", o.index, r.index)] {
                guard before.count == after.count else {
                    problems.append("\(o.key) \(name): \(before.count) URLs became \(after.count)")
                    continue
                }
                for i in after.indices {
                    switch check(rewritten: after[i], original: before, alternative: i) {
                    case .exact: break
                    case .first: collapsed += 1
                    case .wrong(let why): problems.append("\(o.key) \(name)[\(i)]: \(why)")
                    }
                }
            }
        }
        for (before, after) in zip(original.locations, rewritten.locations) {
            if case .wrong(let why) = check(rewritten: after, original: [before], alternative: 0) {
                problems.append("Location: \(why)")
            }
        }
        return (problems, collapsed)
    }
}
