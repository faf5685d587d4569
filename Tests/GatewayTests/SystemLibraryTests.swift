import Foundation
import TestScratch
import Testing

/// libcurl and libcrypto are loaded when first used, not when the process starts: a command
/// that needs neither runs without them, and one that needs them stops with a clear reason
/// (exit 1), never with the dynamic loader's refusal to start or a crash.
@Suite("System libraries loaded when first used")
struct SystemLibraryTests {
    /// The files swarmgate may load libcurl from: the OpenSSL build, else the GnuTLS one.
    static let libcurl = ["libcurl.so.4", "libcurl-gnutls.so.4"]

    /// Runs `swarmgate arguments` on a machine where `libraries` (those of them this one has;
    /// the first it must have) cannot be loaded: in a mount namespace of its own, each file is
    /// covered by /dev/null. Stopped after 30 s. Returns (status, stdout, stderr).
    static func without(_ libraries: [String], _ arguments: [String], stdin: String = "") async throws -> (Int32, String, String) {
        let paths = try libraries.compactMap { try Self.location(of: $0) }
        try #require(try Self.location(of: libraries[0]) != nil, "ldconfig does not know \(libraries[0])")
        let cover = #"n=$1; shift; while [ "$n" -gt 0 ]; do mount --bind /dev/null "$1" || exit 99; shift; n=$((n-1)); done; exec "$@""#
        let r = try await ProgramRun.run(
            "/usr/bin/unshare", ["--map-root-user", "--mount", "sh", "-c", cover, "sh", String(paths.count)] + paths + [Live.binary] + arguments,
            stdin: Data(stdin.utf8), timeout: .seconds(30))
        #expect(r.status != 99, "could not cover \(paths)")
        return (r.signalled ? -1 : r.status, r.out, r.err)
    }

    /// Where the dynamic loader finds `library` (`ldconfig -p`: "libcurl.so.4 (libc6,x86-64) => /lib/…").
    static func location(of library: String) throws -> String? {
        let text = try ProgramRun.runBlocking("/sbin/ldconfig", ["-p"]).out
        return text.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(library + " ") }
            .flatMap { line in line.range(of: "=> ").map { String(line[$0.upperBound...]).trimmingCharacters(in: .whitespaces) } }
    }

    @Test(.enabled(if: Live.canMountSmallDisks), arguments: [libcurl, ["libcrypto.so.3"]])
    func aRewriteNeedsNeitherLibrary(libraries: [String]) async throws {
        let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\nseg0.ts?token=abc\n#EXT-X-ENDLIST\n"
        let (status, out, err) = try await Self.without(libraries, ["rewrite", "--base-url", "https://cdn.example.com/v/index.m3u8", "--xresid", "s1", "-"], stdin: playlist)
        #expect(status == 0, "\(err)")
        #expect(out.contains("/hls.vod.p2p.com/cdn.example.com/v/seg0.ts?token=abc&xresid=s1"), "\(out)")
    }

    @Test(.enabled(if: Live.canMountSmallDisks), arguments: [
        (libcurl, ["serve", "--listen", "127.0.0.1:0"]), (["libcrypto.so.3"], ["serve", "--listen", "127.0.0.1:0"]),
        (libcurl, ["health", "http://127.0.0.1:9"]), (libcurl, ["prepare", "http://cdn.example.com/a.ts"]),
    ])
    func aCommandThatNeedsALibraryStopsWithTheReason(libraries: [String], arguments: [String]) async throws {
        let (status, _, err) = try await Self.without(libraries, arguments)
        #expect(status == 1, "\(err)")
        // Named by what could not be loaded: libcurl needs libcrypto too, and without it
        // would fail first were libcrypto not checked first.
        let name = String(libraries[0].prefix { $0 != "." })
        #expect(err.contains("swarmgate: cannot load \(name) (") && err.contains(libraries[0]) && err.contains("apt install"), "\(err)")
    }

    /// A host with only the GnuTLS build of libcurl (which many have for git) fetches with it.
    @Test(.enabled(if: Live.canMountSmallDisks && (try? location(of: "libcurl-gnutls.so.4")) != nil))
    func theGnuTLSBuildOfLibcurlIsUsedWhenTheOpenSSLOneIsMissing() async throws {
        let (status, _, err) = try await Self.without(["libcurl.so.4"], ["health", "http://127.0.0.1:9"])
        #expect(status == 1 && !err.contains("cannot load") && err.contains("connect"), "libcurl fetched, and found nothing listening: \(err)")
    }
}
