import Foundation
import Testing

/// A real player (ffmpeg, as users have it) plays every sample through the gateway, from an
/// origin that demands a token on every request; every decoded frame (`-f framemd5`) must equal
/// playing the files directly.
@Suite("ffmpeg plays through the gateway", .serialized, .enabled(if: Players.ffmpeg != nil))
final class PlayerTests {
    static let token = "play%2Dtoken"
    let origin: LiveProcess
    let originPort: Int

    init() throws {
        (origin, originPort) = try Live.origin(serving: Live.packageRoot.appendingPathComponent("samples"), token: Self.token)
    }

    deinit { origin.stop() }

    @Test(arguments: [
        ("hls-ts/master.m3u8", "origin"), ("hls-fmp4/index.m3u8", "origin"), ("hls-byterange/index.m3u8", "origin"),
        ("hls-aes/index.m3u8", "origin"), ("hls-aes/index.m3u8", "proxy"), ("dash/manifest.mpd", "origin"),
    ])
    func framesAreIdentical(sample: String, keyURIs: String) async throws {
        let (gateway, port) = try Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token", "--key-uris", keyURIs,
        ])
        defer { gateway.stop() }
        let proxied = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/\(sample)?token=\(Self.token)"
        let direct = Live.packageRoot.appendingPathComponent("samples/\(sample)").path
        let viaGateway = try Players.framemd5(proxied)
        let fromFiles = try Players.framemd5(direct)
        #expect(viaGateway.count > 100, "ffmpeg decoded frames")
        #expect(viaGateway == fromFiles)
    }
}

enum Players {
    static let ffmpeg: String? = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// One line per decoded frame of every stream, with its checksum.
    static func framemd5(_ input: String) throws -> [Substring] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ffmpeg!)
        p.arguments = ["-hide_banner", "-loglevel", "error", "-allowed_extensions", "ALL", "-i", input, "-map", "0", "-f", "framemd5", "-"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw TestFailure("ffmpeg failed on \(input)") }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }
    }
}
