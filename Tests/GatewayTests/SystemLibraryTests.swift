import Foundation
import Testing

/// libcurl and libcrypto are loaded when first used, not when the process starts: a command
/// that needs neither runs without them, and one that needs them stops with a clear reason
/// (exit 1), never with the dynamic loader's refusal to start or a crash.
@Suite("System libraries loaded when first used")
struct SystemLibraryTests {
    /// Runs `swarmgate arguments` on a machine where `library` cannot be loaded: in a mount
    /// namespace of its own, the file is covered by /dev/null. Returns (status, stdout, stderr).
    static func without(_ library: String, _ arguments: [String], stdin: String = "") throws -> (Int32, String, String) {
        let path = try #require(
            ["/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib64/", "/usr/lib64/"].map { $0 + library }
                .first { FileManager.default.fileExists(atPath: $0) }, "\(library) is not where this test looks")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        p.arguments = ["--map-root-user", "--mount", "sh", "-c", #"mount --bind /dev/null "$1" || exit 99; shift; exec "$@""#, "sh", path, Live.binary] + arguments
        let (input, output, errors) = (Pipe(), Pipe(), Pipe())
        (p.standardInput, p.standardOutput, p.standardError) = (input, output, errors)
        try p.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus != 99, "could not cover \(path)")
        return (p.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test(.enabled(if: Live.canMountSmallDisks), arguments: ["libcurl.so.4", "libcrypto.so.3"])
    func aRewriteNeedsNeitherLibrary(library: String) throws {
        let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\nseg0.ts?token=abc\n#EXT-X-ENDLIST\n"
        let (status, out, err) = try Self.without(library, ["rewrite", "--base-url", "https://cdn.example.com/v/index.m3u8", "--xresid", "s1", "-"], stdin: playlist)
        #expect(status == 0, "\(err)")
        #expect(out.contains("/hls.vod.p2p.com/cdn.example.com/v/seg0.ts?token=abc&xresid=s1"), "\(out)")
    }

    @Test(.enabled(if: Live.canMountSmallDisks), arguments: [
        ("libcurl.so.4", ["serve", "--listen", "127.0.0.1:0"]), ("libcrypto.so.3", ["serve", "--listen", "127.0.0.1:0"]),
        ("libcurl.so.4", ["health", "http://127.0.0.1:9"]), ("libcurl.so.4", ["prepare", "http://cdn.example.com/a.ts"]),
    ])
    func aCommandThatNeedsALibraryStopsWithTheReason(library: String, arguments: [String]) throws {
        let (status, _, err) = try Self.without(library, arguments)
        #expect(status == 1, "\(err)")
        #expect(err.contains("swarmgate: cannot load") && err.contains(library) && err.contains("apt install"), "\(err)")
    }
}
