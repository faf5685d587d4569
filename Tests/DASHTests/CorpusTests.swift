import Foundation
import Manifest
import Testing

/// Conformance over ../shared/corpus/dash: every MPD rewrites (or gets a named error justified
/// below), the independent player-side resolver maps every Representation's init, media and
/// index URLs of the output back to the original's, and `mpegdash` parses every output.
@Suite struct CorpusTests {
    /// Files that are expected to be refused, with why. All 58 MPDs of the corpus rewrite
    /// today, so the table is empty; a new corpus file that is refused must be justified here.
    static let expectedErrors: [String: (code: ManifestError.Code, why: String)] = [:]

    static let gateway = "http://gw.example.net:8080"
    static let xresid = try! XResID("corpus.stream-1")

    /// The origin URL each corpus file is rewritten as: https, with a query token.
    static func originURL(_ file: URL) throws -> OriginURL {
        try OriginURL("https://media.example.com/dash/\(file.deletingLastPathComponent().lastPathComponent)/\(file.lastPathComponent)?token=a%2Fb")
    }

    @Test func everyMPDRewritesAndMapsBack() async throws {
        let files = DASHTestEnvironment.corpusMPDs
        guard !files.isEmpty else { return }
        let folder = try DASHTestEnvironment.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var options = DASHRewriter.Options()
        options.gateway = Self.gateway
        options.xresid = Self.xresid
        let check = ProxyMappingCheck(gateway: Self.gateway, xresid: Self.xresid)

        var pairs: [(original: (URL, String), rewritten: (URL, String))] = []
        for (i, file) in files.enumerated() {
            let name = file.lastPathComponent
            let origin = try Self.originURL(file)
            let input = try [UInt8](Data(contentsOf: file))
            let rewriter = DASHRewriter(mpdURL: origin, options: options)
            switch Result(catching: { () throws(ManifestError) in try rewriter.rewrite(input) }) {
            case .success(let result):
                #expect(Self.expectedErrors[name] == nil, "\(name) was expected to fail but rewrote")
                let out = folder.appendingPathComponent("\(i)-\(name)")
                try Data(result.output).write(to: out)
                pairs.append(((file, origin.string), (out, try check.mpdURL(origin))))
            case .failure(let error):
                #expect(Self.expectedErrors[name]?.code == error.code, "\(name): \(error)")
            }
        }
        #expect(pairs.count + Self.expectedErrors.count == files.count)

        let resolved = try await ResolvedMPD.resolve(pairs.flatMap { [$0.original, $0.rewritten] }.map { (file: $0.0, url: $0.1) })
        var representations = 0
        var collapsed: [String] = []
        for pair in pairs {
            let name = pair.original.0.lastPathComponent
            let before = try #require(resolved[pair.original.0.path])
            let after = try #require(resolved[pair.rewritten.0.path])
            let (problems, n) = check.compare(original: before, rewritten: after)
            #expect(problems == [], "\(name)")
            representations += before.representations.count
            if n > 0 { collapsed.append("\(name) (\(n))") }
        }
        #expect(representations > 200)
        print("DASH corpus: \(pairs.count) of \(files.count) MPDs rewritten, \(representations) Representations mapped; BaseURL alternatives pinned to the first in: \(collapsed.isEmpty ? "none" : collapsed.joined(separator: ", "))")

        let (status, out, _) = try await DASHTestEnvironment.runPython("check_mpegdash.py", pairs.map { $0.rewritten.0.path })
        #expect(status == 0, "mpegdash could not parse: \(out)")
    }
}
