import Foundation
import Testing

import Manifest

/// Conformance over ../shared/corpus/hls: 135 playlists from three other projects' test suites.
/// Each one rewrites, or fails with the named error listed (and justified) here.
@Suite("HLS corpus conformance", .enabled(if: TestEnvironment.corpus != nil))
struct HLSCorpusTests {
    static let files = TestEnvironment.corpusFiles("hls", extensions: [".m3u8", ".m3u"])
    static let gateway = "http://gw.test:8080"

    /// The files a careful player would refuse too, and why.
    static let expectedFailures: [String: (ManifestError.Code, String)] = [
        "videojs-m3u8-parser/empty.m3u8": (.notAPlaylist, "an empty file has no #EXTM3U"),
        "videojs-m3u8-parser/manifestNoExtM3u.m3u8": (.notAPlaylist, "tags with no #EXTM3U header: RFC 8216 4.3.1.1 says clients MUST fail"),
        "videojs-m3u8-parser/start.m3u8": (.notAPlaylist, "starts with EXT-X-VERSION, no #EXTM3U anywhere"),
        "videojs-m3u8-parser/llhls-byte-range.m3u8": (.invalidByteRange, "EXT-X-BYTERANGE:587500@ has an empty offset"),
        "eyevinn-hls-m3u8/master-with-defines-invalid.m3u8": (.undefinedVariable, "IMPORT in a master playlist: there is no parent to import from (RFC 8216bis 4.4.2.3)"),
    ]

    /// Media playlists that IMPORT variables get them from their master, as the gateway and
    /// `swarmgate rewrite` on a folder pass them.
    static let importsFromParent: [String: [String: String]] = [
        "eyevinn-hls-m3u8/media-playlist-with-queryparam.m3u8": ["Define3": "from-parent"],
    ]

    static func name(_ url: URL) -> String {
        url.pathComponents.suffix(2).joined(separator: "/")
    }

    static func playlistURL(_ url: URL) throws -> OriginURL {
        // QUERYPARAM playlists in the corpus read "Define2" from the playlist URL.
        try OriginURL("https://cdn.example.com/corpus/\(name(url))?Define2=from-query")
    }

    static func rewrite(_ url: URL) throws -> (input: [UInt8], result: HLSRewrite) {
        let input = Array(try Data(contentsOf: url))
        var options = HLSRewriter.Options()
        options.gateway = gateway
        options.collectReferences = true
        options.importedVariables = importsFromParent[name(url)] ?? [:]
        return (input, try HLSRewriter(playlistURL: try playlistURL(url), options: options).rewrite(input))
    }

    @Test func theCorpusIsThere() {
        #expect(Self.files.count == 135)
    }

    @Test(arguments: files)
    func rewritesOrFailsAsExpected(file: URL) throws {
        let name = Self.name(file)
        if let (code, why) = Self.expectedFailures[name] {
            #expect(throws: ManifestError.self, "\(why)") { try Self.rewrite(file) }
            do { _ = try Self.rewrite(file) } catch let e as ManifestError { #expect(e.code == code, "\(name): \(e)") }
            return
        }
        let (input, result) = try Self.rewrite(file)
        try BytesOutsideURIs.check(
            original: String(decoding: input, as: UTF8.self), rewritten: String(decoding: result.output, as: UTF8.self),
            base: try Self.playlistURL(file), gateway: Self.gateway)
    }

    @Test func m3u8AgreesOnEverySegmentVariantAndRendition() async throws {
        var cases: [[String: String]] = []
        for file in Self.files where Self.expectedFailures[Self.name(file)] == nil {
            let (input, result) = try Self.rewrite(file)
            cases.append([
                "name": Self.name(file), "original": String(decoding: input, as: UTF8.self),
                "rewritten": String(decoding: result.output, as: UTF8.self),
                "base": try Self.playlistURL(file).string, "gateway": Self.gateway,
            ])
        }
        let (status, out, err) = try await TestEnvironment.runPython(
            "check_hls.py", [], stdin: try JSONSerialization.data(withJSONObject: cases))
        #expect(status == 0, "\(out)\n\(err)")
        #expect(out.contains("checked \(cases.count) playlists, 0 problems"), "\(out)\n\(err)")
    }
}

/// The invariant of an HLS rewrite, checked independently of the rewriter: the output has the
/// same lines and line endings, and a line differs only inside a URI (a URI line, or the
/// quoted value of a URI attribute), where the new value decodes to the old one resolved.
enum BytesOutsideURIs {
    static var uriAttribute: Regex<(Substring, name: Substring, value: Substring)> {
        #/(?<name>URI|SERVER-URI|X-ASSET-URI|X-ASSET-LIST)="(?<value>[^"]*)"/#
    }

    struct Mismatch: Error, CustomStringConvertible {
        var description: String
    }

    static func check(original: String, rewritten: String, base: OriginURL, gateway: String) throws {
        let a = original.split(separator: "\n", omittingEmptySubsequences: false)
        let b = rewritten.split(separator: "\n", omittingEmptySubsequences: false)
        guard a.count == b.count else { throw Mismatch(description: "line count \(a.count) became \(b.count)") }
        for (i, (x, y)) in zip(a, b).enumerated() where x != y {
            let trimmed = x.trimmingCharacters(in: .whitespaces)
            if !trimmed.hasPrefix("#") {
                let lead = x.prefix { $0 == " " || $0 == "\t" }
                let trail = String(x.reversed().prefix { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
                guard y.hasPrefix(lead), y.hasSuffix(trail) else {
                    throw Mismatch(description: "line \(i + 1): whitespace around the URI changed")
                }
                let newURI = String(y.dropFirst(lead.count).dropLast(trail.count))
                try checkURI(String(trimmed.trimmingCharacters(in: .whitespaces)), newURI, base, gateway, line: i + 1)
                continue
            }
            let oldValues = x.matches(of: uriAttribute).map { String($0.output.value) }
            let newValues = y.matches(of: uriAttribute).map { String($0.output.value) }
            guard x.replacing(uriAttribute, with: { "\($0.output.name)=\"@\"" })
                == y.replacing(uriAttribute, with: { "\($0.output.name)=\"@\"" }), oldValues.count == newValues.count
            else {
                throw Mismatch(description: "line \(i + 1): bytes outside URI attributes changed:\n\(x)\n\(y)")
            }
            let isKey = x.hasPrefix("#EXT-X-KEY") || x.hasPrefix("#EXT-X-SESSION-KEY")
            for (o, n) in zip(oldValues, newValues) where o != n {
                if isKey {
                    guard n == resolved(o, base) else { throw Mismatch(description: "line \(i + 1): key \(n)") }
                } else {
                    try checkURI(o, n, base, gateway, line: i + 1)
                }
            }
        }
    }

    /// Resolution by Foundation's URL, not by the code under test; an empty path is written
    /// "/" (RFC 3986 6.2.3: the two are equivalent) and an empty query dropped.
    static func resolved(_ reference: String, _ base: OriginURL) -> String? {
        guard let u = URL(string: reference, relativeTo: URL(string: base.string)),
            var c = URLComponents(string: u.absoluteString)
        else { return nil }
        c.fragment = nil
        if c.percentEncodedPath.isEmpty { c.percentEncodedPath = "/" }
        if c.percentEncodedQuery == "" { c.percentEncodedQuery = nil }
        return c.string
    }

    static func checkURI(_ old: String, _ new: String, _ base: OriginURL, _ gateway: String, line: Int) throws {
        guard new.hasPrefix(gateway + "/hls.vod.p2p.com/") else {
            throw Mismatch(description: "line \(line): \(new) is not a proxy URL")
        }
        var target = String(new.dropFirst(gateway.count))
        if let hash = target.firstIndex(of: "#") { target = String(target[..<hash]) }
        let decoded = try ProxyURL(requestTarget: target)
        guard old.contains("{$") == false, let want = resolved(old, base) else { return }
        guard decoded.origin.string == want else {
            throw Mismatch(description: "line \(line): \(new) decodes to \(decoded.origin), expected \(want)")
        }
    }
}
