import Foundation
import Manifest
import Testing

/// `swarmgate rewrite` on MPDs: one file, stdin (recognised by content), a folder, and a refusal.
@Suite struct RewriteCommandTests {
    static let input = mpd("""
        <Period><AdaptationSet><SegmentTemplate media="$Number$.m4s" initialization="init.mp4"/>
          <Representation id="v" bandwidth="1"><BaseURL>v/</BaseURL></Representation></AdaptationSet></Period>
        """)
    static let base = "https://cdn.example.com/show/manifest.mpd?tok=a%2Fb"

    func swarmgate(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
        try DASHTestEnvironment.run(DASHTestEnvironment.swarmgate, ["rewrite"] + arguments, stdin: stdin.map { Data($0.utf8) })
    }

    @Test func oneMPDFileToStdout() throws {
        let folder = try DASHTestEnvironment.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("manifest.mpd")
        try Data(Self.input.utf8).write(to: file)
        let (status, out, err) = try swarmgate(["--base-url", Self.base, "--gateway", "http://gw:9000", "--xresid", "cli-1", file.path])
        #expect(status == 0, "\(err)")
        #expect(out.contains("<BaseURL>http://gw:9000/hls.vod.p2p.com/cdn.example.com/show/v/?xresid=cli-1&amp;xhttps=1</BaseURL>"))
        #expect(out.contains(#"media="$Number$.m4s?xresid=cli-1&amp;xhttps=1""#))
    }

    @Test func stdinIsRecognisedByContent() throws {
        let (status, out, _) = try swarmgate(["--base-url", Self.base, "-"], stdin: Self.input)
        #expect(status == 0)
        let url = try OriginURL(Self.base)
        #expect(out.contains("hls.vod.p2p.com/cdn.example.com/show/v/?xresid=\(XResID(derivedFrom: url).value)&amp;xhttps=1"))
    }

    @Test func aFolderMirrorsItsMPDsAndNamesFailures() throws {
        let folder = try DASHTestEnvironment.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("in/dash")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data(Self.input.utf8).write(to: source.appendingPathComponent("good.mpd"))
        try Data("<!DOCTYPE MPD [<!ENTITY x \"y\">]><MPD/>".utf8).write(to: source.appendingPathComponent("evil.mpd"))
        let output = folder.appendingPathComponent("out")
        let (status, _, err) = try swarmgate([
            "--base-url", "http://cdn.example.com/root/", "--output", output.path, folder.appendingPathComponent("in").path,
        ])
        #expect(status == 1)
        #expect(err.contains("evil.mpd") && err.contains("forbiddenDeclaration"))
        let written = try String(contentsOf: output.appendingPathComponent("dash/good.mpd"), encoding: .utf8)
        #expect(written.contains("<BaseURL>http://127.0.0.1:8080/hls.vod.p2p.com/cdn.example.com/root/dash/v/?xresid="))
        #expect(!FileManager.default.fileExists(atPath: output.appendingPathComponent("dash/evil.mpd").path))
    }
}
